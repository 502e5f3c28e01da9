"""What must hold in every report, whatever the trace: checked on the `report --json` object.

    problems = invariants.check(serialize.report(analysis))    # [] when the report is physically sound

The invariant test walks every trace in the repository with it (tests/test_invariants.py), and the
corpus runner (tools.corpus) on every public trace:

- time adds up: kernel busy + idle = the span, the idle causes add up to the idle, the idle share is
  idle over span, the hotspots' shares add up to at most 100% (to 100% when all are listed);
- no roofline point sits above 1.05x its peak (the physical one: the datasheet's where measured ceilings
  sit under it): such a point is an attribution error and never printed;
- the Next lever acts on something the trace has (the idle cause it removes is there, the bound it
  speaks of holds kernel time, the what-if's fix finds something to change);
- every number of the five lines is on the baseline its line names: the Measured line's GPU span and
  kernel count, the Idle line's share and time of that span, and the Next line's prediction on the traced
  span (host and GPU) the what-if replays, or on the range's own span under --range, with the same
  kernel count as the Measured line.

It reads only the JSON contract (docs/json.md), never the analysis objects, so it checks what a user gets.
"""
from __future__ import annotations

import re

from tracetriage.analyzers.model.units import a_or_an, duration_us, share
from tracetriage.analyzers.model.verdicts import EXPERIMENT_FOR_CAUSE

ABOVE_PEAK = 1.05       # the roofline's own tolerance (tracetriage.analyzers.analyses.roofline.ABOVE_PEAK)
_US_TOL = 0.01          # the JSON's µs carry 3 decimals: sums of rounded figures differ by a few ns
_KIND_NEEDS = {         # the Next kind -> the regime_detail figure that must be > 0 for it to act on anything
    "cheaper_arithmetic": "compute_us", "fewer_bytes": "memory_us", "better_kernels": "latency_us",
}
_CAUSE_KINDS = {e.value: c.value for c, e in EXPERIMENT_FOR_CAUSE.items()}   # the Next kind -> the cause it acts on
_PREDICTED = re.compile(r"\(predicted ([−+]?\d+%) of (the traced span \(host and GPU\)|the range's (\S+ \S+) span), "
                        r"(\S+ \S+) → (\S+ \S+)")
_KERNELS_MEASURED = re.compile(r"\(([\d,]+) kernels")
_KERNELS_NEXT = re.compile(r"between ([\d,]+) kernels")


def check(out: dict) -> list[str]:
    """The invariants a report breaks, in words (empty: none)."""
    if out.get("regime") is None:      # no GPU timeline (CPU-only, another accelerator): nothing to add up
        return []
    return _time_adds_up(out) + _no_point_above_peak(out) + _next_acts_on_the_trace(out) + _one_baseline(out)


def _time_adds_up(out: dict) -> list[str]:
    bad = []
    span, busy, idle = out["span_us"], out["kernel_busy_us"], out["idle_us"]
    if abs(busy + idle - span) > _US_TOL:
        bad.append(f"kernel busy {busy} µs + idle {idle} µs != span {span} µs")
    causes = sum(out["idle"]["by_cause_us"].values())
    if abs(causes - idle) > _US_TOL * len(out["idle"]["by_cause_us"]):
        bad.append(f"idle causes add up to {causes:.3f} µs, not the idle {idle} µs")
    if span and abs(out["idle_share"] - idle / span) > 1e-4:
        bad.append(f"idle share {out['idle_share']} is not idle/span {idle / span:.4f}")
    hot = [h["share"] for h in out["hotspots"]]
    if sum(hot) > 1.0 + 1e-3 or (hot and len(hot) < 10 and sum(hot) < 1.0 - 1e-3):
        bad.append(f"hotspot shares add up to {sum(hot):.4f}")
    return bad


def _no_point_above_peak(out: dict) -> list[str]:
    pk = out.get("peaks")
    if not pk:
        return []
    bad = []
    lim_gb = pk["limit_bytes_per_s"] / 1e9
    for p in out["roofline"]:
        lim_tf = max(p["peak_tflops"] or 0.0, pk["limit_flops_per_s"].get(p["dtype"], 0.0) / 1e12)
        gb = max(p["peak_gbps"] or 0.0, lim_gb)
        if (lim_tf and p["achieved_tflops"] > ABOVE_PEAK * lim_tf) or (gb and p["achieved_gbps"] > ABOVE_PEAK * gb):
            bad.append(f"roofline point {p['name']} {p['shapes']} at {p['achieved_tflops']:.1f} TFLOP/s, "
                       f"{p['achieved_gbps']:.0f} GB/s: above its peak ({lim_tf:.1f} TFLOP/s, {gb:.0f} GB/s)")
    return bad


def _next_acts_on_the_trace(out: dict) -> list[str]:
    nx, rd = out["next_experiment"], out["regime_detail"]
    kind = nx["kind"]
    bad = []
    cause = _CAUSE_KINDS.get(kind)
    # an idle lever the what-if replayed acts on what its fix finds (syncs, host stretches, copies), which
    # may hold no idle of its own (syncs that serialise host work); without a replay, on its idle
    if cause is not None and not nx.get("whatif_lever") and not out["idle"]["by_cause_us"].get(cause, 0) > 0:
        bad.append(f"Next is {kind} but the trace has no {cause} idle")
    need = _KIND_NEEDS.get(kind)
    # (an engine's decode whose replays record no shapes: the workload grounds its memory bound, analyses.decode_steps)
    grounded = kind == "fewer_bytes" and rd.get("bound") == "decode_memory"
    if need is not None and not rd.get(need, 0) > 0 and not grounded:
        bad.append(f"Next is {kind} but no kernel time is {need[:-3]}-bound")
    if nx.get("whatif_lever") and nx.get("acts_on") == 0:
        bad.append(f"Next's lever {nx['whatif_lever']} finds nothing in the trace to change")
    return bad


def _one_baseline(out: dict) -> list[str]:
    measured, idle_line, nxt = out["lines"][0], out["lines"][2], out["lines"][4]
    bad = []
    gpu_span = duration_us(out["span_us"])
    if f"{a_or_an(gpu_span)} GPU span" not in measured:
        bad.append(f"the Measured line does not give the span {gpu_span}: {measured}")
    said_share = f"idle {share(out['idle_us'] / out['span_us'])} of the span" if out["span_us"] else ""
    if out["idle_us"] > 0 and f"{said_share} ({duration_us(out['idle_us'])})" not in idle_line:
        bad.append(f"the Idle line's share or time is not the span's: {idle_line}")
    kernels = _KERNELS_MEASURED.search(measured)
    said = _KERNELS_NEXT.search(nxt)
    if kernels and said and kernels.group(1).replace(",", "") != said.group(1).replace(",", ""):
        bad.append(f"the Measured line counts {kernels.group(1)} kernels, the Next line {said.group(1)}")
    m = _PREDICTED.search(nxt)
    base = nx_base = out["next_experiment"].get("baseline_us")
    if "(predicted " in nxt and m is None:
        bad.append(f"the Next line's prediction names no baseline: {nxt}")
    elif m is not None:
        on_range = m.group(3) is not None
        if on_range != bool(out.get("range")):
            bad.append("the Next line's baseline is " + ("the range's span on a whole trace" if on_range
                                                         else "the traced span on a range"))
        if on_range and (m.group(3) != gpu_span or nx_base is None or abs(nx_base - out["span_us"]) > _US_TOL):
            bad.append(f"the Next line's range span {m.group(3)} is not the Measured line's {gpu_span}")
        if base is not None and m.group(4) != duration_us(base):
            bad.append(f"the Next line's baseline {m.group(4)} is not the lever's {duration_us(base)}")
    return bad
