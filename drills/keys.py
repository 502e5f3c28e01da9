"""Answer keys, derived from the analyzers: `python -m tracetriage.drills.keys` rewrites drills/bank/keys.toml.

A key holds only what the grader compares against (the cause, the suspects, the numbers); the
evidence the feedback quotes is read from the trace's analysis at grading time. A test derives
every key again and compares it with the stored one, so the bank and the analyzers cannot drift.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tracetriage.analyzers.whatif.levers import FUSE
from tracetriage.drills import evidence
from tracetriage.drills.bank import KEYS_PATH, REPO_ROOT, Drill, all_drills
from tracetriage.drills.ladder import keys as ladder_keys
from tracetriage.drills.ladder.parts import KINDS as LADDER_KINDS
from tracetriage.drills.levers import AT_ROOF, lever_key

TRIAGE_IDLE_FLOOR = 0.10    # an idle cause is "what the time waits on" when it takes 10% of the span
SUSPECT_COVER = 0.6         # suspects: the top ops that together hold 60% of the device time (at most 2)


def derive(drill: Drill) -> dict:
    """The drill's key as bank/keys.toml stores it."""
    return _no_none(_derive(drill))


def _derive(drill: Drill) -> dict:
    if drill.kind in LADDER_KINDS:
        return ladder_keys.derive(drill)
    if drill.kind == "ledger":
        return ledger_key(drill)
    if drill.kind == "timer":
        return timer_key(drill)
    if drill.kind == "collapse":
        d = evidence.diff_facts(drill.trace_path(), drill.after_path())
        return {"speedup": d.speedup, "explained_by": collapse_class(drill, d.explained_by),
                **levers(evidence.facts(drill.trace_path()))}
    f = evidence.facts(drill.trace_path())
    if drill.kind == "idle_cause":
        return {"cause": f.dominant, **levers(f)}
    if drill.kind == "triage":
        return {"suspects": suspects(f), "bound": bound(f), "numbers": triage_numbers(f), **levers(f)}
    if drill.kind == "ranges":
        p = f.phases
        # the prefill only: the floor drill (M00.03) shows the same traces and asks the per-token time and the
        # lever, which answer the decode's regime
        return {"prefill_range": p["prefill_range"], "decode_range": p["decode_range"], "ttft_ms": p["ttft_ms"],
                "prefill_regime": answer_regime(p["prefill_regime"]),
                "confusable": {"ttft_ms": phase_confusions(p)["ttft_ms"]}}
    if drill.kind == "incident":
        return incident(drill, f)
    if drill.kind == "roofline":
        compute = f.regime == "compute"
        achieved = f.achieved_tflops if compute else f.achieved_gbps
        peak = (f.kernels[0]["peak_tflops"] if compute else f.peak_gbps) if f.kernels else None
        return {"regime": answer_regime(f.regime), "achieved": achieved,
                "achieved_unit": "TFLOP/s" if compute else "GB/s",
                "confusable": {"achieved": distinct(achieved, [("the device's peak", peak)])}, **levers(f)}
    if drill.kind == "waste":
        return {"regime": answer_regime(f.regime), **levers(f)}
    if drill.kind == "shapes":
        return shapes_key(drill, f)
    if drill.kind == "floor":
        return floor_key(drill, f)
    raise ValueError(drill.kind)


# The diff names what shrank; the collapse drill asks "launches or bytes": a launch-overhead idle that a CUDA graph
# removed is the launches.
COLLAPSE_CLASS = {"launches": "launches", "bytes": "bytes", "launch_overhead": "launches"}


def collapse_class(drill: Drill, explained_by: str) -> str:
    """The answer class of what explains a pair's speedup; a pair explained otherwise (faster kernels, host work,
    mixed) cannot be a collapse drill's, whose question offers launches or bytes."""
    if explained_by not in COLLAPSE_CLASS:
        raise ValueError(f"{drill.id}: the pair's speedup is explained by {explained_by!r}, not launches or bytes")
    return COLLAPSE_CLASS[explained_by]


def ledger_key(drill: Drill) -> dict:
    """The fusion byte ledger of the trace's median chain (what the fuse lever computes), the capture's own count
    where the pair was measured (traces/realworld/measured.json: the ByteLedger's minimum, one pass), and what
    fusing bought: the median over repeats where measured, else the pair's traced spans."""
    led = evidence.ledger(drill.trace_path())
    d = evidence.diff_facts(drill.trace_path(), drill.after_path())
    # The fused call makes as many passes as it runs kernels in the after trace, not as the ledger's model guesses
    # (one more per reduction used again): the Triton softmax holds each 16 KB row on chip and reads x once (its
    # 33.6 µs a call is 4.0 TB/s for one pass, 8 TB/s, above the HBM peak, for three); Inductor's RMSNorm runs a
    # reduction kernel and then the pointwise one, two passes, as the model has it.
    passes = min(led.passes, max(1, round(d.after_launches / led.chains))) if led.chains else led.passes
    fused_bytes = led.fused_bytes - (led.passes - passes) * led.reread_bytes
    eager, fused = round(led.eager_bytes / 1e9, 4), round(fused_bytes / 1e9, 4)
    key = {"eager_gb": eager, "fused_gb": fused, "ops": led.ops, "passes": passes, "chains": led.chains,
           "speedup": d.speedup, "fuse_ratio": led.fuse_ratio,
           "confusable": {"eager_bytes": distinct(eager, [("the fused call's bytes", fused)]),
                          "fused_bytes": distinct(fused, [("the eager call's bytes", eager)])}}
    measured = measured_pair(drill)
    if measured:
        # the key is what `drill show` prints (the pair's traced spans); the medians of the unprofiled repeats,
        # which show never displays, are accepted beside it
        counted = measured["variants"]["before"]["record"]["ledger"]
        key.update(fused_gb_counted=round(counted["fused_bytes"] / 1e9, 4),
                   speedup_measured=round(1 / measured["ratio"][FUSE]["median"], 4),
                   speedup_wall=round(1 / measured["wall_ratio"][FUSE]["median"], 4))
    return key


def measured_pair(drill: Drill) -> dict | None:
    """The scenario of traces/realworld/measured.json whose before trace the drill shows, if any."""
    import json

    name = Path(drill.trace).name.split("--")[0]
    if "realworld/" not in drill.trace:
        return None
    return json.loads((REPO_ROOT / "traces" / "realworld" / "measured.json").read_text())["scenarios"].get(name)


def shapes_key(drill: Drill, f: evidence.Facts) -> dict:
    """A kernel has no single speed: the TFLOP/s of two shapes of one op, and what bounds the small one."""
    by = {r["name"]: r for r in f.ranges}
    small, large = (by[n] for n in drill.shapes)
    peak = f.kernels[0]["peak_tflops"] if f.kernels else None
    return {"tflops_small": small["tflops"], "tflops_large": large["tflops"],
            "small_regime": answer_regime(small["regime"]), "large_regime": answer_regime(large["regime"]),
            "speed_ratio": round(large["tflops"] / small["tflops"], 1),
            "confusable": {"tflops_small": distinct(small["tflops"], [("the large shape's rate", large["tflops"]),
                                                                      ("the device's peak", peak)]),
                           "tflops_large": distinct(large["tflops"], [("the small shape's rate", small["tflops"]),
                                                                      ("the device's peak", peak)])}}


def floor_key(drill: Drill, f: evidence.Facts) -> dict:
    """The decode floor: the bytes one token must read (the weights and the KV cache, as the capture declares
    them) over the device's HBM peak, against the measured per-token time; the lever is the report's Next."""
    per_token = f.declared.get("weight_bytes", 0) + kv_cache_bytes(f.declared.get("model") or {})
    if not per_token or not f.peak_gbps:
        raise ValueError(f"{drill.id}: {drill.trace} declares no weight bytes, or its device has no HBM peak")
    floor_ms = per_token / (f.peak_gbps * 1e9) * 1e3
    p = f.phases
    weights_ms = f.declared.get("weight_bytes", 0) / (f.peak_gbps * 1e9) * 1e3
    confusable = {"floor_ms": distinct(floor_ms, [("the floor of the weights alone, without the KV cache", weights_ms),
                                                  ("the measured per-token time", p["per_token_ms"])]),
                  "per_token_ms": distinct(p["per_token_ms"], [("the floor", floor_ms), ("the TTFT", p["ttft_ms"])])}
    return {"gb_per_token": round(per_token / 1e9, 3), "weight_gb": round(f.declared.get("weight_bytes", 0) / 1e9, 3),
            "peak_gbps": f.peak_gbps, "floor_ms": round(floor_ms, 4), "per_token_ms": p["per_token_ms"],
            "per_token_median_ms": p["per_token_median_ms"], "over_floor": round(p["per_token_ms"] / floor_ms, 1),
            "decode_regime": answer_regime(p["decode_regime"]), "confusable": confusable, **levers(f)}


KV_BYTES_PER_VALUE = 2   # the floor drills' models run in bf16 (their captures' dtype): two bytes a value


def kv_cache_bytes(model: dict) -> int:
    """The KV cache at full context, from the model's shape as the capture declares it (and `drill show` prints):
    a key and a value of the model's width, per layer, for each position up to max_seq."""
    if not {"n_layer", "dim", "max_seq"} <= set(model):
        return 0
    return 2 * model["n_layer"] * model["max_seq"] * model["dim"] * KV_BYTES_PER_VALUE


def timer_key(drill: Drill) -> dict:
    """The honest timer: the median and spread of a variant's unprofiled repeats (measured.json's wall times),
    and whether two variants' repeats overlap (noise) or not (a real difference)."""
    import json

    m = json.loads((REPO_ROOT / "traces" / "realworld" / "measured.json").read_text())
    runs = m["scenarios"][drill.scenario]["wall_ms"]
    a, b = (sorted(runs[v]["runs"]) for v in drill.variants)
    med = runs[drill.variants[0]]["median"]
    real = a[-1] < b[0] or b[-1] < a[0]    # one variant's slowest repeat is under the other's fastest
    other_med = runs[drill.variants[1]]["median"]
    spread, other_spread = 100 * (a[-1] - a[0]) / med, 100 * (b[-1] - b[0]) / other_med
    confusable = {"median_ms": distinct(med, [("the mean of the repeats", sum(a) / len(a)),
                                              ("the other variant's median", other_med)]),
                  "spread_pct": distinct(spread, [("the other variant's spread", other_spread),
                                                  # max − min left in ms, not divided by the median
                                                  ("the spread in ms, not as a share of the median",
                                                   a[-1] - a[0])])}
    return {"median_ms": round(med, 4), "spread_pct": round(spread, 2), "other_median_ms": round(other_med, 4),
            "other_spread_pct": round(other_spread, 2), "verdict": "real" if real else "noise", "repeats": len(a),
            "confusable": confusable}


def incident(drill: Drill, f: evidence.Facts) -> dict:
    """The phase that misses its target by the larger factor is the ticket's; the fix to refuse targets the other."""
    p = f.phases
    if not p:
        raise ValueError(f"{drill.id}: no prefill and decode found in {drill.trace}")
    ttft, itl = p["ttft_ms"], p["per_token_median_ms"]
    over = {"prefill": ttft / drill.slo["ttft_ms"], "decode": itl / drill.slo["per_token_ms"]}
    phase = max(over, key=over.get)
    other = "decode" if phase == "prefill" else "prefill"
    return {"ttft_ms": ttft, "per_token_ms": itl, "per_token_mean_ms": p["per_token_ms"], "phase": phase,
            "phase_regime": answer_regime(p[f"{phase}_regime"]), "over_target": round(over[phase], 2),
            "refuse": other, "found_from": p["found_from"], "confusable": phase_confusions(p, median=True)}


MEAN_APART = 0.15   # the grader's tolerance for a right number (grader.CLOSE)


def phase_confusions(p: dict, median: bool = False) -> dict:
    """TTFT and the per-token time are each other's confusion (swapped, or the prefill's time given per token)."""
    itl = p["per_token_median_ms"] if median else p["per_token_ms"]
    # where the question asks the median step, the mean `drill show` prints beside it is the same steps' other
    # statistic (pulled up by a set-up step): another quantity, near the key, where the two differ by more than a
    # reading's tolerance (15%); closer, a number between them is a reading of either
    mean = [("the mean of the same decode steps", p["per_token_ms"])] \
        if median and abs(p["per_token_ms"] / itl - 1) > MEAN_APART else []
    return {"ttft_ms": distinct(p["ttft_ms"], [("the per-token time", itl)]),
            "per_token_ms": distinct(itl, [("the TTFT", p["ttft_ms"]), *mean])}


SAME_VALUE = 0.02   # a confusion within 2% of the key cannot be told from it by its value: not one


def distinct(key: float | None, others: list) -> list:
    """The quantities an answer could be mistaken for, [what, value] rounded, leaving out those the key's own value
    cannot be told from."""
    return [[what, round(float(v), 4)] for what, v in others
            if v and key and abs(v / key - 1) > SAME_VALUE]


def answer_regime(regime: str | None) -> str | None:
    """The analyzers' regime as an answer class (compute | memory | overhead): a span or kernel far below both
    roofs (latency-bound: a tiny grid, launch latency, the library's choice) is the course's overhead."""
    return "overhead" if regime == "latency" else regime


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
    return answer_regime(f.regime)


def levers(f: evidence.Facts) -> dict:
    """The lever part's key: the report's Next on the trace and the lever that would waste the week."""
    peak = f.kernels[0].get("peak_tflops") if f.kernels else None
    at_roof = f.regime == "compute" and bool(f.achieved_tflops and peak and f.achieved_tflops >= AT_ROOF * peak)
    return lever_key(f.next_kind, f.next_lever, f.waste_lever, f.already_pinned, f.waste_levers, at_roof)


def triage_numbers(f: evidence.Facts) -> list[dict]:
    """Numbers a supporting sentence may quote, each with its unit and the words that say which quantity it is:
    the top ops' shares, the idle share, the span, the dominant cause's share and gaps, the achieved rates."""
    nums = [{"value": 100 * h["share"], "unit": "%", "about": [h["name"].split("::")[-1], "device time", "time"]}
            for h in f.hotspots[:2]]
    # the busy share is the idle share's other side (the span line prints both): a number about the idle, not the
    # top op's share it would otherwise be read as ("busy 97%" is not aten::mm's 87%)
    nums += [{"value": 100 * f.idle_share, "unit": "%", "about": ["idle", "idles"]},
             {"value": 100 * (1 - f.idle_share), "unit": "%", "about": ["busy", "utilization", "utilisation",
                                                                      "not idle"]},
             {"value": f.span_ms, "unit": "ms", "about": ["span", "wall", "total", "takes", "long"]}]
    if f.dominant:
        e = f.cause_evidence[f.dominant]
        words = CAUSE_WORDS[f.dominant]
        nums.append({"value": 100 * f.cause_share[f.dominant], "unit": "%", "about": words})
        # the same idle as time ("9.4 ms in cudaStreamSynchronize"): its share of the span, in ms
        nums.append({"value": f.cause_share[f.dominant] * f.span_ms, "unit": "ms", "about": words})
        if e.get("median_gap_us"):
            nums.append({"value": e["median_gap_us"], "unit": "µs",
                         "about": ["gap", "gaps", "drain", "drains", "median", "each", "idle"]})
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
# (and the host calls `drill show` names in the longest gaps, as a student quotes them: "idle 9.4 ms while the host is
# in cudaStreamSynchronize")
CAUSE_WORDS = {"launch_overhead": ["launch", "launches", "overhead", "cudalaunchkernel", "culaunchkernel"],
               "host_work": ["host", "python", "cpu"],
               "synchronization": ["sync", "syncs", "synchronization", "item", "drain", "synchronize",
                                   "cudastreamsynchronize", "cudadevicesynchronize", "cudaeventsynchronize"],
               "data_transfer": ["copy", "copies", "transfer", "memcpy", "cudamemcpyasync", "cudamemcpy"],
               "other": ["other"]}


def derive_all() -> dict:
    return {d.id: derive(d) for d in all_drills()}


def _no_none(key: dict) -> dict:
    """A TOML key: None values (and empty confusion lists) left out."""
    out = {}
    for k, v in key.items():
        if isinstance(v, dict):
            v = {p: c for p, c in v.items() if c}
        if v is not None and v != {}:
            out[k] = v
    return out


def main() -> int:
    import tomli_w

    keys = derive_all()
    text = ("# Answer keys derived from the analyzers by `python -m tracetriage.drills.keys`; do not edit by hand.\n"
            "# tests/test_drills.py derives them again and fails when these drift.\n\n" + tomli_w.dumps(keys))
    KEYS_PATH.write_text(text)
    print(f"wrote {len(keys)} keys to {KEYS_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
