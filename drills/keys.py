"""Answer keys, derived from the analyzers: `python -m drills.keys` rewrites drills/bank/keys.toml.

A key holds only what the grader compares against (the cause, the suspects, the numbers); the
evidence the feedback quotes is read from the trace's analysis at grading time. A test derives
every key again and compares it with the stored one, so the bank and the analyzers cannot drift.
"""
from __future__ import annotations

import sys

from drills import evidence
from drills.bank import KEYS_PATH, Drill, all_drills
from drills.levers import lever_key

TRIAGE_IDLE_FLOOR = 0.10    # an idle cause is "what the time waits on" when it takes 10% of the span
SUSPECT_COVER = 0.6         # suspects: the top ops that together hold 60% of the device time (at most 2)


def derive(drill: Drill) -> dict:
    if drill.kind == "collapse":
        d = evidence.diff_facts(drill.trace_path(), drill.after_path())
        return {"speedup": d.speedup, "explained_by": d.explained_by, **levers(evidence.facts(drill.trace_path()))}
    f = evidence.facts(drill.trace_path())
    if drill.kind == "idle_cause":
        return {"cause": f.dominant, **levers(f)}
    if drill.kind == "triage":
        return {"suspects": suspects(f), "bound": bound(f), "numbers": triage_numbers(f), **levers(f)}
    if drill.kind == "ranges":
        p = f.phases
        return {"prefill_range": p["prefill_range"], "decode_range": p["decode_range"], "ttft_ms": p["ttft_ms"],
                "per_token_ms": p["per_token_ms"], "decode_regime": p["decode_regime"]}
    if drill.kind == "incident":
        return incident(drill, f)
    if drill.kind == "roofline":
        compute = f.regime == "compute"
        return {"regime": f.regime, "achieved": f.achieved_tflops if compute else f.achieved_gbps,
                "achieved_unit": "TFLOP/s" if compute else "GB/s", **levers(f)}
    raise ValueError(drill.kind)


def incident(drill: Drill, f: evidence.Facts) -> dict:
    """The phase that misses its target by the larger factor is the ticket's; the fix to refuse targets the other."""
    p = f.phases
    if not p:
        raise ValueError(f"{drill.id}: no prefill and decode found in {drill.trace}")
    ttft, itl = p["ttft_ms"], p["per_token_median_ms"]
    over = {"prefill": ttft / drill.slo["ttft_ms"], "decode": itl / drill.slo["per_token_ms"]}
    phase = max(over, key=over.get)
    other = "decode" if phase == "prefill" else "prefill"
    return {"ttft_ms": ttft, "per_token_ms": itl, "phase": phase, "phase_regime": p[f"{phase}_regime"],
            "over_target": round(over[phase], 2), "refuse": other, "found_from": p["found_from"]}


def suspects(f: evidence.Facts) -> list[str]:
    out, cover = [], 0.0
    for h in f.hotspots[:2]:
        out.append(h["name"])
        cover += h["share"]
        if cover >= SUSPECT_COVER:
            break
    return out


def bound(f: evidence.Facts) -> str:
    if f.dominant and f.dominant != "other" and f.cause_share[f.dominant] >= TRIAGE_IDLE_FLOOR:
        return f.dominant
    return f.regime


def levers(f: evidence.Facts) -> dict:
    """The lever part's key: the report's Next on the trace and the lever that would waste the week."""
    return lever_key(f.next_kind, f.next_lever, f.waste_lever, f.already_pinned)


def triage_numbers(f: evidence.Facts) -> list[dict]:
    """Numbers a supporting sentence may quote, each with its unit and the words that say which quantity it is:
    the top ops' shares, the idle share, the span, the dominant cause's share and gaps, the achieved rates."""
    nums = [{"value": 100 * h["share"], "unit": "%", "about": [h["name"].split("::")[-1], "device time", "time"]}
            for h in f.hotspots[:2]]
    nums += [{"value": 100 * f.idle_share, "unit": "%", "about": ["idle", "idles"]},
             {"value": f.span_ms, "unit": "ms", "about": ["span", "wall", "total", "takes", "long"]}]
    if f.dominant:
        e = f.cause_evidence[f.dominant]
        words = CAUSE_WORDS[f.dominant]
        nums.append({"value": 100 * f.cause_share[f.dominant], "unit": "%", "about": words})
        if e.get("median_gap_us"):
            nums.append({"value": e["median_gap_us"], "unit": "µs", "about": ["gap", "gaps", "drain", "drains", "median",
                                                                               "each", "idle"]})
        if e.get("gaps"):
            nums.append({"value": float(e["gaps"]), "unit": "", "about": ["gaps", "drains", "times", "syncs", "calls",
                                                                         "stalls"]})
        for c in (e.get("copies") or [])[:1]:
            if c.get("gbps"):
                nums.append({"value": c["gbps"], "unit": "GB/s", "about": ["copy", "copies", "memcpy", "pcie",
                                                                           "transfer", "pinned", "pageable", "h2d"]})
    if f.achieved_tflops:
        nums.append({"value": f.achieved_tflops, "unit": "TFLOP/s", "about": ["tflop", "flop", "compute", "reach"]})
    if f.achieved_gbps:
        nums.append({"value": f.achieved_gbps, "unit": "GB/s", "about": ["bandwidth", "memory", "hbm", "move"]})
    return [{**n, "value": round(float(n["value"]), 1)} for n in nums]


# The words a sentence uses for a cause's share (the vocabulary's names would do too; these suffice to tell
# which quantity a number is).
CAUSE_WORDS = {"launch_overhead": ["launch", "launches", "overhead"], "host_work": ["host", "python", "cpu"],
               "synchronization": ["sync", "syncs", "synchronization", "item", "drain"],
               "data_transfer": ["copy", "copies", "transfer", "memcpy"], "other": ["other"]}


def derive_all() -> dict:
    return {d.id: derive(d) for d in all_drills()}


def main() -> int:
    import tomli_w

    keys = derive_all()
    text = ("# Answer keys derived from the analyzers by `python -m drills.keys`; do not edit by hand.\n"
            "# tests/test_drills.py derives them again and fails when these drift.\n\n" + tomli_w.dumps(keys))
    KEYS_PATH.write_text(text)
    print(f"wrote {len(keys)} keys to {KEYS_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
