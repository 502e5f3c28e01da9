"""The ladder's keys, derived from the analyzers (tracetriage.drills.ladder.facts): `python -m tracetriage.drills.keys`
stores them with the others in drills/bank/keys.toml, and the tests derive them again.

A key holds what the grader compares against; the evidence the feedback quotes is read again at grading time.
Nothing here is written by hand: a drill that the plan meant to teach one thing and the trace shows another
keys what the trace shows.
"""
from __future__ import annotations

import re

from tracetriage.drills.bank import Drill
from tracetriage.drills.ladder import facts

SAME_VALUE = 0.02        # a confusion within 2% of the key cannot be told from it by its value (drills.keys)
CLOSE_LINES = 0.15       # a line within 15% of the slowest line's wall hurts as much: either is the answer
COPY_PAYS = 0.05         # the copy-first trace must spend 5% less kernel time for the copy to pay (the pairs' kernel
                         # times repeat within ~2% over the capture's five runs; 5% is outside that)


def derive(drill: Drill) -> dict:
    k = drill.kind
    if k == "view_copy":
        return view_copy_key(drill)
    if k == "bytes_ledger":
        return bytes_ledger_key(drill)
    if k == "occupancy":
        return occupancy_key(drill)
    if k == "transpose":
        return transpose_key(drill)
    if k == "ridge":
        return ridge_key(drill)
    if k == "intensity":
        return intensity_key(drill)
    raise ValueError(k)


def distinct(key: float | None, others: list) -> list:
    return [[what, round(float(v), 4)] for what, v in others if v and key and abs(v / key - 1) > SAME_VALUE]


# --- M01.02 view or copy ---------------------------------------------------------------------------------------

def view_copy_key(drill: Drill) -> dict:
    """Each op_NN range's verdict from its [memory] events: a range that leaves new storage copies."""
    rows = facts.range_ledgers(drill.trace_path())
    if not rows or not rows[0]["memory_recorded"]:
        raise ValueError(f"{drill.id}: {drill.trace} has no [memory] events (profile_memory=True)")
    copies = [r for r in rows if not r["view"]]
    nbytes = sum(r["kept_bytes"] for r in copies)
    temps = sum(r["temp_bytes"] for r in copies)
    mb = round(nbytes / 1e6, 4)
    return {"ops": [r["name"] for r in rows], "copies": [r["name"] for r in copies], "copy_mb": mb,
            "rule": "strides",
            "confusable": {"copy_bytes": distinct(mb, [("the copies' bytes with their temporaries",
                                                         (nbytes + temps) / 1e6)])}}


# --- M01.01 the tensor memory accountant --------------------------------------------------------------------------

def bytes_ledger_key(drill: Drill) -> dict:
    """The block's lines as a byte ledger: the storage they keep, the views, and the line with the longest wall."""
    rows = facts.range_ledgers(drill.trace_path())
    if not rows or not rows[0]["memory_recorded"]:
        raise ValueError(f"{drill.id}: {drill.trace} has no [memory] events (profile_memory=True)")
    kept = sum(r["kept_bytes"] for r in rows)
    host = sum(r["kept_host_bytes"] for r in rows)
    temps = sum(r["temp_bytes"] for r in rows)
    slowest = max(rows, key=lambda r: r["wall_us"])
    close = [r["name"] for r in rows if r["wall_us"] >= (1 - CLOSE_LINES) * slowest["wall_us"]]
    mb = round(kept / 1e6, 4)
    return {"lines": [r["name"] for r in rows], "new_mb": mb, "views": [r["name"] for r in rows if r["view"]],
            "hurts": slowest["name"], "hurts_close": close,
            "confusable": {"new_bytes": distinct(mb, [("the storage with the temporaries", (kept + temps) / 1e6),
                                                      ("the device's storage alone", (kept - host) / 1e6),
                                                      ("the host's storage alone", host / 1e6)])}}


# --- M03.01 occupancy is not the goal ---------------------------------------------------------------------------------

def occupancy_key(drill: Drill) -> dict:
    k = facts.kernel_launch(drill.trace_path(), drill.trace)
    compute = k["roof"] == "compute"
    achieved = k["tflops"] if compute else k["gbps"]
    if achieved is None:
        raise ValueError(f"{drill.id}: the kernel's bytes and FLOPs are neither in the trace nor in the capture")
    peak = k["peak_tflops"] if compute else k["peak_gbps"]
    occ_others = [("the theoretical occupancy (the limits alone, whatever the grid)", k["theoretical_pct"])]
    if k["kineto_pct"] is not None and abs(k["kineto_pct"] - k["occupancy_pct"]) > 1.0:   # (Kineto rounds to 1%)
        occ_others.append(("Kineto's estimate, whose calculator gives 0 to a block over 48 KiB of shared memory",
                           k["kineto_pct"]))
    return {"occupancy_pct": k["occupancy_pct"], "theoretical_pct": k["theoretical_pct"], "limiter": k["limiter"],
            "achieved": achieved, "achieved_unit": "TFLOP/s" if compute else "GB/s", "roof": k["roof"],
            "roof_share": k["roof_share"], "verdict": k["verdict"],
            "confusable": {"occupancy_pct": distinct(k["occupancy_pct"], occ_others),
                           "achieved": distinct(achieved, [("the device's peak", peak)])}}


# --- M03.02 coalescing and the transpose tax ------------------------------------------------------------------------

OPERAND = re.compile(r"[A-Za-z_]\w*")


def operands(code: str) -> list[str]:
    """The operand names of the last line's expression, in order: 'out = x.t() + y' -> ['x', 'y'];
    'a @ b.t().contiguous()' -> ['a', 'b']."""
    line = code.strip().splitlines()[-1]
    rhs = line.split("=", 1)[1] if re.match(r"\s*\w+\s*=[^=]", line) else line
    found = (OPERAND.match(t.strip()) for t in re.split(r"\s[+@*-]\s", rhs))
    return [m.group(0) for m in found if m]


def transpose_key(drill: Drill) -> dict:
    """The first trace reads through the view, the second copies first: which operand the consumer reads against its
    layout (analyses.strided), the sectors that read asks for, and whether the copy paid (the two traces' kernel
    time)."""
    before, after = facts.layout_facts(drill.trace_path()), facts.layout_facts(drill.after_path())
    code = facts.capture_facts(drill.trace).get("code", "")
    names = operands(code)
    consumer = next((o for o in before["ops"] if o["kind"] in ("elementwise", "matmul")), None)
    if consumer is None:
        raise ValueError(f"{drill.id}: no consumer op with strides in {drill.trace}")
    strided = [r for r in consumer["reads"] if r["inner_stride"] > 1]
    said = sorted({names[r["arg"]] for r in strided if r["arg"] < len(names)})
    sectors = sum(r["sector_bytes"] for r in strided)
    useful = sum(r["useful_bytes"] for r in strided) or (consumer["reads"][-1]["useful_bytes"]
                                                        if consumer["reads"] else 0)
    pays = after["kernel_busy_us"] < (1 - COPY_PAYS) * before["kernel_busy_us"]
    return {"operands": names, "strided": said, "sector_mb": round(sectors / 1e6, 4),
            "useful_mb": round(useful / 1e6, 4),
            "transposed_free": consumer["transposed_free"], "consumer": consumer["op"],
            "before_kernel_us": before["kernel_busy_us"], "after_kernel_us": after["kernel_busy_us"],
            "verdict": "worth" if pays else "not_worth",
            "confusable": {"sector_bytes": distinct(sectors / 1e6, [("the operand's own bytes", useful / 1e6)])}}


# --- M00.02 the ridge-point workbook ------------------------------------------------------------------------------

def ridge_key(drill: Drill) -> dict:
    """Six kernels on four cards' rooflines: each kernel's intensity (its FLOPs over its bytes, from its shapes)
    against each card's ridge for its dtype (the datasheet's peaks)."""
    ops = facts.costed_ops(drill.trace_path())[:6]
    cards = facts.cards(list((drill.params or {}).get("cards", [])), facts.device_name(drill.trace_path()))
    own = cards[0]
    sides = {f"k{i}": [c["name"] for c in cards if o["intensity"] < facts.ridge(c, o["dtype"])]
             for i, o in enumerate(ops, 1)}
    below = [k for k, cs in sides.items() if own["name"] in cs]
    flips = [k for k, cs in sides.items() if 0 < len(cs) < len(cards)]
    r = facts.ridge(own, "bf16")
    return {"ridge": round(r, 2), "device": own["name"], "cards": [c["name"] for c in cards],
            "kernels": [f"k{i}" for i in range(1, len(ops) + 1)],
            "intensity": [round(o["intensity"], 3) for o in ops], "below": below, "flips": flips,
            # the report prints its own ridge from the peaks measured on the machine: the question asks the datasheet's
            "confusable": {"ridge": distinct(r, [("the fp32 ridge", facts.ridge(own, "fp32")),
                                                 ("the tf32 ridge", facts.ridge(own, "tf32")),
                                                 ("the report's ridge, from the peaks measured on the machine",
                                                  facts.report_ridge(drill.trace_path(), "bf16"))])}}


# --- M01.06 decode intensity from scratch -------------------------------------------------------------------------

def intensity_key(drill: Drill) -> dict:
    """A decode step's matmuls: their FLOPs over the weights they read (2 x batch over the bytes per parameter), the
    cards it is compute-bound on, and the batch at which it meets the trace's own device's ridge."""
    m = facts.decode_matmuls(drill.trace_path())
    intensity = m["flops"] / m["weight_bytes"]
    cards = facts.cards(list((drill.params or {}).get("cards", [])), facts.device_name(drill.trace_path()))
    above = [c["name"] for c in cards if intensity >= facts.ridge(c, m["dtype"])]
    own_ridge = facts.ridge(cards[0], m["dtype"])
    batch = own_ridge * m["batch"] / intensity
    measured = facts.report_ridge(drill.trace_path(), m["dtype"])
    whole = m["flops"] / (m["weight_bytes"] + m["other_bytes"])
    return {"intensity": round(intensity, 3), "whole_step_intensity": round(whole, 3), "dtype": m["dtype"],
            "batch": m["batch"], "params_per_step": round(m["params_per_step"]), "cards": [c["name"] for c in cards],
            "compute_bound_on": above, "ridge": round(own_ridge, 2), "batch_at_ridge": round(batch, 1),
            # the batch at the report's ridge (from the peaks measured on the machine) is as right: the question's
            # "ridge of the trace's own card" is either card's ridge, the datasheet's or the one measured on it
            "batch_at_ridge_measured": round(measured * m["batch"] / intensity, 1) if measured else None,
            "confusable": {"intensity": distinct(intensity, [("the matmuls' intensity with their activations "
                                                              "counted", whole)]),
                           "batch_at_ridge": distinct(batch, [("the ridge itself", own_ridge)])}}
