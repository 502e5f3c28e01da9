"""Answers to the ladder's drills built from their keys (tests/test_drills.py's answer_for, for the new kinds): the
key's own answer when right, another answer of its kind when wrong."""
from __future__ import annotations

OTHER_VERDICT = {"lever": "sideshow", "sideshow": "lever", "harm": "lever", "worth": "not worth it",
                 "not_worth": "worth it"}
SAY_VERDICT = {"lever": "the lever", "sideshow": "a sideshow", "harm": "active harm", "worth": "worth it",
               "not_worth": "not worth it"}


def _other_set(universe: list[str], key: list[str]) -> list[str]:
    """A wrong set: the names the key leaves out (or, when it holds them all, none)."""
    rest = [x for x in universe if x not in key]
    return rest or ["none"]


def answer_for(kind: str, key: dict, right: bool) -> dict:
    if kind == "view_copy":
        return {"copies": key["copies"] if right else _other_set(key["ops"], key["copies"]),
                "copy_bytes": f"{key['copy_mb'] * (1 if right else 5)} MB",
                "rule": "a view is new strides over the same storage" if right else "a copy when the shape changes"}
    if kind == "bytes_ledger":
        return {"new_bytes": f"{key['new_mb'] * (1 if right else 5)} MB",
                "views": key["views"] if right else _other_set(key["lines"], key["views"]),
                "hurts": key["hurts"] if right else next(x for x in key["lines"] if x not in key["hurts_close"])}
    if kind == "occupancy":
        f = 1 if right else 5
        return {"occupancy_pct": key["occupancy_pct"] * f, "achieved": f"{key['achieved'] * f} {key['achieved_unit']}",
                "verdict": SAY_VERDICT[key["verdict"]] if right else OTHER_VERDICT[key["verdict"]]}
    if kind == "transpose":
        return {"strided": (key["strided"] or ["none"]) if right else _other_set(key["operands"], key["strided"]),
                "sector_bytes": f"{key['sector_mb'] * (1 if right else 5)} MB",
                "verdict": SAY_VERDICT[key["verdict"]] if right else OTHER_VERDICT[key["verdict"]]}
    if kind == "ridge":
        return {"ridge": key["ridge"] * (1 if right else 5),
                "below": (key["below"] or ["none"]) if right else _other_set(key["kernels"], key["below"]),
                "flips": (key["flips"] or ["none"]) if right else _other_set(key["kernels"], key["flips"])}
    if kind == "intensity":
        f = 1 if right else 10
        return {"intensity": key["intensity"] * f,
                "compute_bound_on": (key["compute_bound_on"] or ["none"]) if right else
                _other_set(key["cards"], key["compute_bound_on"]),
                "batch_at_ridge": key["batch_at_ridge"] * f}
    raise AssertionError(kind)
