"""The triage: one Analysis of a trace, as a JSON object and as five sentences.

    analysis = analyze_file("traces/smell-sync-item.json.gz")
    print("\n".join(analysis.lines))

Everything a report, a dashboard or a drill grader shows comes from here: the
idle gaps with their causes and evidence (analyzers.idle), hotspots, named ranges,
roofline points and the regime. Consumers never re-derive a number.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analyzers import hotspots, idle as idle_mod, ranges as ranges_mod, roofline as roof_mod
from analyzers import intervals as iv
from analyzers import voice
from analyzers.idle import CAUSES, DeviceIdle
from analyzers.load import load
from analyzers.trace import CPU_OP, KERNEL, Trace, TraceError

CAUSE_WORDS = {"launch_overhead": "launch overhead", "host_work": "host work", "synchronization": "synchronization",
               "data_transfer": "data transfer", "other": "other"}


@dataclass
class Analysis:
    trace: Trace
    devices: list[DeviceIdle]
    span_ns: int
    kernel_busy_ns: int
    copy_ns: int
    idle_ns: int
    by_cause_ns: dict[str, int]
    hot_ops: list[dict]
    hot_kernels: list[dict]
    ranges: list[ranges_mod.RangeStats]
    roof: roof_mod.Roofline
    verdict: roof_mod.RegimeVerdict
    range_filter: str | None = None
    range_verdicts: dict = field(default_factory=dict)   # range name -> RegimeVerdict, computed once
    phases: dict = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)   # the trace's, plus what the analysis found
    next_experiment: dict = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    @property
    def idle_share(self) -> float:
        return self.idle_ns / self.span_ns if self.span_ns else 0.0

    @property
    def dominant(self) -> str | None:
        if self.idle_ns <= 0:
            return None
        return max(self.by_cause_ns, key=self.by_cause_ns.get)

    @property
    def evidence(self) -> dict:
        """Evidence of the device with the most idle time (the one the report speaks of)."""
        if not self.devices:
            return {}
        return max(self.devices, key=lambda d: d.idle_ns).evidence


def _window_for_range(trace: Trace, name: str) -> tuple[int, int]:
    stats = ranges_mod.analyze(trace, [], names=[name])
    if not stats:
        known = sorted({ranges_mod.range_name(trace.names[i]) for i in trace.ev.name[trace.ev.cat == 2]})
        raise TraceError(f"no range named {name!r} in {trace.path}; ranges: {', '.join(known) or 'none'}")
    s, e = stats[0].windows
    return int(s.min()), int(e.max())


def analyze_trace(trace: Trace, range_name: str | None = None) -> Analysis:
    window = _window_for_range(trace, range_name) if range_name else None
    devs = idle_mod.analyze(trace, window)
    ev = trace.ev
    span = sum(d.span_ns for d in devs)
    busy = sum(d.kernel_busy_ns for d in devs)
    copy = sum(d.copy_ns for d in devs)
    idle_ns = sum(d.idle_ns for d in devs)
    by_cause = {c: sum(d.by_cause_ns[c] for d in devs) for c in CAUSES}
    rng_all = ranges_mod.analyze(trace, devs)
    if range_name:
        sel = next(r for r in rng_all if r.name == range_name)
        rows = sel.gpu_rows
    else:
        rows = hotspots.gpu_rows(trace)
        if window is not None:
            rows = rows[(ev.end[rows] > window[0]) & (ev.start[rows] < window[1])]
    roof = roof_mod.analyze(trace)
    kernels = rows[ev.cat[rows] == KERNEL]
    verdict = roof_mod.regime(trace, roof, kernels, idle_ns / span if span else 0.0)
    a = Analysis(trace=trace, devices=devs, span_ns=span, kernel_busy_ns=busy, copy_ns=copy, idle_ns=idle_ns,
                 by_cause_ns=by_cause, hot_ops=hotspots.by_op(trace, rows), hot_kernels=hotspots.by_kernel(trace, rows),
                 ranges=rng_all, roof=roof, verdict=verdict, range_filter=range_name)
    a.range_verdicts = {r.name: roof_mod.regime(trace, roof, r.gpu_rows[ev.cat[r.gpu_rows] == KERNEL], r.idle_share)
                        for r in rng_all}
    a.phases = _phases(rng_all, a.range_verdicts)
    a.caveats = [voice.caveat(c) for c in trace.caveats]
    warm = warmup_caveat(a) if devs else None
    if warm:
        a.caveats.append(warm)
    a.next_experiment = _next_experiment(a)
    a.lines = five_lines(a)
    return a


def analyze_file(path: str | Path, range_name: str | None = None) -> Analysis:
    from analyzers.progress import bar

    with bar(Path(path)) as advance:
        trace = load(path, progress=advance)
        advance("analyse")
        return analyze_trace(trace, range_name)


# --- prefill / decode ------------------------------------------------------------

def _phases(rng: list[ranges_mod.RangeStats], verdicts: dict) -> dict:
    by = {r.name: r for r in rng}
    pre = by.get("prefill")
    dec = next((by[n] for n in ("decode_step", "decode") if n in by), None)
    if pre is None or dec is None:
        return {}
    out = {}
    for label, r in (("prefill", pre), ("decode", dec)):
        v = verdicts[r.name]
        out[label] = {"range": r.name, "count": r.count, "median_wall_us": round(r.median_wall_us, 1),
                      "kernel_busy_us": round(r.kernel_busy_us, 1), "idle_share": round(r.idle_share, 4),
                      "idle_dominant": r.idle_dominant, "regime": v.regime, "verdict": v.to_dict()}
    # per token: each round's decode span over its steps (steps overlap when the host runs ahead)
    out["ttft_us"] = round(pre.median_wall_us, 1)
    out["per_token_us"] = round(_per_token(pre, dec), 1)
    out["tokens_per_prefill"] = max(1, dec.count // max(1, pre.count))
    return out


def _per_token(pre, dec) -> float:
    """With several prefill+decode rounds, measure each round's decode span separately."""
    ps = np.sort(pre.windows[0])
    s, e = dec.windows
    spans = []
    for i in range(len(ps)):
        lo = ps[i]
        hi = ps[i + 1] if i + 1 < len(ps) else np.iinfo(np.int64).max
        m = (s >= lo) & (s < hi)
        if m.any():
            spans.append((float(e[m].max() - s[m].min()) / 1e3, int(m.sum())))
    tot_t = sum(t for t, _ in spans)
    tot_n = sum(n for _, n in spans)
    return tot_t / tot_n if tot_n else 0.0


# --- the next experiment -----------------------------------------------------------

def _kernel_headroom(a: Analysis) -> float:
    """Share of the span a perfect kernel of the winning bound could still win back."""
    v, pk = a.verdict, a.roof.peaks
    busy = a.kernel_busy_ns / a.span_ns if a.span_ns else 0.0
    frac = None
    if pk is not None and v.regime == "compute" and v.achieved_tflops and v.dtype:
        frac = v.achieved_tflops / (pk.flops(v.dtype) / 1e12)
    elif pk is not None and v.regime == "memory" and v.achieved_gbps:
        frac = v.achieved_gbps / (pk.bytes_per_s / 1e9)
    return busy * (1.0 - min(frac, 1.0)) if frac is not None else busy * 0.5


IDLE_LEVER_FLOOR = 0.05  # an idle cause worth less than 5% of the span is never "the" lever


def _next_experiment(a: Analysis) -> dict:
    if not a.devices:
        return dict(CPU_ONLY_NEXT)
    warm = a.evidence.get("host_work", {}).get("warmup") or []
    warm_ns = sum(w["first_call_us"] for w in warm) * 1e3
    if a.span_ns and warm_ns >= 0.25 * a.span_ns:
        return {"lever": "warm up first (run a few steps before the profiler starts), then profile and triage again",
                "why": f"{100 * warm_ns / a.span_ns:.0f}% of the span is one-time set-up in first calls "
                       f"({', '.join(w['name'] for w in warm[:2])}), which the steady state never pays",
                "waste": "optimising what this profile shows: its biggest gaps do not recur"}
    v, dom = a.verdict, a.dominant
    ev = a.evidence.get(dom, {}) if dom else {}
    idle_pct = 100 * a.idle_share
    # Idle time is the lever when removing its dominant cause would win back more of the span
    # than making the kernels run at their ceiling would.
    idle_gain = a.by_cause_ns.get(dom, 0) / a.span_ns if dom and a.span_ns else 0.0
    if v.regime == "overhead" or (dom and dom != "other" and idle_gain >= IDLE_LEVER_FLOOR
                                  and idle_gain > _kernel_headroom(a)):
        if dom == "launch_overhead":
            return {"lever": "cut launches: torch.compile to fuse, then CUDA graphs (mode='reduce-overhead'), "
                             "or more work per launch (bigger batch)",
                    "why": f"the GPU idles {idle_pct:.0f}% between {ev.get('kernels', 0)} kernels that run "
                           f"{ev.get('kernel_median_us', 0):.1f} µs (median) while each launch costs the host more",
                    "waste": "tuning kernels: they already finish before the next launch arrives"}
        if dom == "host_work":
            return {"lever": "take the host work off the critical path: DataLoader workers / prefetch, or overlap it "
                             "with queued GPU work; profile the host (py-spy) to see what it is",
                    "why": f"the GPU idles {idle_pct:.0f}% while the host runs code that issues no GPU work "
                           f"(median gap {ev.get('median_gap_us', 0) / 1e3:.2f} ms)",
                    "waste": "torch.compile, CUDA graphs or faster kernels: the device is waiting for the host, not on launches"}
        if dom == "synchronization":
            src = ", ".join(x["name"] for x in ev.get("called_from", [])[:2]) or "the sync calls"
            return {"lever": f"remove or defer the syncs ({src}): keep values and decisions on the device, "
                             "read them once every N steps",
                    "why": f"{ev.get('gaps', 0)} times the device drained while the host waited, "
                           f"costing {ev.get('total_us', 0) / 1e3:.1f} ms of idle ({100 * idle_gain:.0f}% of the span)",
                    "waste": "faster kernels: they make the drain come sooner, not the host's next launch"}
        if dom == "other":
            return {"lever": "capture again with both CPU and CUDA activity recorded (ProfilerActivity.CPU and "
                             "ProfilerActivity.CUDA) so that every kernel links to the call that launched it",
                    "why": f"{100 * idle_gain:.0f}% of the span is idle before GPU work whose launch call is not "
                           "in the trace, so its cause cannot be read from it",
                    "waste": "acting on this trace's idle time: what caused it was not recorded"}
        if dom == "data_transfer":
            return {"lever": "pin host memory, copy with non_blocking=True on a side stream so copies overlap "
                             "compute, or keep the data resident on the device",
                    "why": f"compute idles {idle_pct:.0f}% while copies run "
                           f"({_copy_phrase(ev)})",
                    "waste": "faster kernels or torch.compile: compute is not what the device waits on"}
    if v.regime == "compute":
        pk = f" of a {a.roof.peaks.flops(v.dtype) / 1e12:.0f} TFLOP/s peak" if a.roof.peaks and v.dtype else ""
        why = (f"kernel time is compute-bound at {v.achieved_tflops:.0f} TFLOP/s{pk}" if v.achieved_tflops
               else f"{100 * v.compute_us / max(_kernel_us(v), 1e-9):.0f}% of kernel time is in compute-bound kernels")
        return {"lever": "do less arithmetic or cheaper arithmetic: lower precision on tensor cores (bf16/fp8), "
                         "skip work (causal masks, smaller shapes)",
                "why": why,
                "waste": "fusing elementwise ops or CUDA graphs: launches and bytes are not the limit"}
    pk = f" of {a.roof.peaks.bytes_per_s / 1e9:.0f} GB/s" if a.roof.peaks else ""
    why = (f"kernel time is memory-bound at {v.achieved_gbps:.0f} GB/s{pk}" if v.achieved_gbps
           else f"{100 * v.memory_us / max(_kernel_us(v), 1e-9):.0f}% of kernel time is in memory-bound kernels")
    return {"lever": "move fewer bytes: fuse elementwise chains, keep activations/weights in lower precision, "
                     "avoid materialised copies",
            "why": why,
            "waste": "more FLOP-efficient kernels or tensor-core tuning: arithmetic is not the limit"}


def _kernel_us(v) -> float:
    return v.compute_us + v.memory_us + v.unknown_us + v.comm_us


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _copy_phrase(ev: dict) -> str:
    copies = ev.get("copies") or []
    if not copies:
        return "copies"
    c = copies[0]
    gb = c.get("bytes", 0) / 1e9
    rate = f" at {c['gbps']:.1f} GB/s" if c.get("gbps") else ""
    return f"{c['count']}× {c['name']}, {gb:.2f} GB{rate}"


# --- the five lines ---------------------------------------------------------------------

def _ms(ns: float) -> str:
    ms = ns / 1e6
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms"


def _us_or_ms(us: float) -> str:
    return f"{us:.1f} µs" if us < 1000 else f"{us / 1e3:.2f} ms"


def warmup_caveat(a: Analysis) -> str | None:
    """A line for the caveats when first-call set-up is a large part of the profile."""
    warm = a.evidence.get("host_work", {}).get("warmup") or []
    total = sum(w["first_call_us"] for w in warm) * 1e3
    if not warm or not a.span_ns or total < 0.05 * a.span_ns:
        return None
    names = ", ".join(f"{w['name']} {_us_or_ms(w['first_call_us'])} (later {_us_or_ms(w['later_median_us'])})"
                      for w in warm[:3])
    return (f"the profile includes one-time set-up: first calls of {names}, {100 * total / a.span_ns:.0f}% of the "
            "span; warm up before profiling")


def _evidence_phrase(cause: str, ev: dict) -> str:
    if cause == "launch_overhead":
        ops = ", ".join(o["name"] for o in ev.get("launching_ops", [])[:3])
        return (f"{_plural(ev.get('gaps', 0), 'gap')} with a median of {ev.get('median_gap_us', 0):.1f} µs between kernels "
                f"whose median run is {ev.get('kernel_median_us', 0):.1f} µs; a launch call takes "
                f"{ev.get('launch_call_median_us', 0):.1f} µs" + (f" (launched by {ops})" if ops else ""))
    if cause == "host_work":
        traced = ", ".join(o["name"] for o in ev.get("host_events", [])[:3])
        un = 100 * ev.get("untraced_share", 0)
        return (f"{_plural(ev.get('gaps', 0), 'gap')} with a median of {_us_or_ms(ev.get('median_gap_us', 0))} in which the host "
                f"issued no GPU work ({un:.0f}% untraced: Python, numpy, sleeping"
                + (f"; traced CPU ops: {traced}" if traced else "") + ")")
    if cause == "synchronization":
        calls = ", ".join(f"{c['name']} ×{c['count']}" for c in ev.get("sync_calls", [])[:2])
        src = ", ".join(c["name"] for c in ev.get("called_from", [])[:2])
        return (f"{_plural(ev.get('gaps', 0), 'drain')}, a median of {ev.get('median_gap_us', 0):.1f} µs each, after {calls or 'syncs'}"
                + (f" called from {src}" if src else ""))
    if cause == "data_transfer":
        return f"{ev.get('copy_count', 0)} copies, mostly {_copy_phrase(ev)}"
    return f"{_plural(ev.get('gaps', 0), 'gap')} with no launch call in the trace"


def _cpu_only_lines(a: Analysis) -> list[str]:
    """A trace with no GPU activity (a CPU capture, or CUDA activity not recorded)."""
    tr, ev = a.trace, a.trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if len(ops):
        lo, hi = int(ev.start[ops].min()), int(ev.end[ops].max())
        top_s, top_e = iv.union(ev.start[ops], ev.end[ops])
        outer = ops[np.searchsorted(ev.start[ops], top_s)]
        hot = hotspots._group(tr, outer, ev.name[outer], lambda k: tr.names[k], 3)
        busy = iv.total(top_s, top_e)
    else:
        lo = hi = busy = 0
        hot = []
    span = hi - lo
    top = ", ".join(f"{h['name']} {100 * h['share']:.0f}% ({h['calls']} calls)" for h in hot)
    return [
        f"Measured: {Path(tr.path).name} has no GPU activity: {tr.events_in_file:,} events, {len(ops):,} CPU ops "
        f"over a {_ms(span)} host span, ops running {100 * busy / span if span else 0:.0f}% of it.",
        f"Time: host time in top-level ops goes to {top or 'nothing (no CPU ops recorded)'}.",
        "Idle: there is no GPU timeline in this trace, so there are no idle gaps to attribute (0 gaps).",
        "Regime: not decidable from a CPU-only trace: compute, memory and overhead are judged on device "
        "activity (0 kernels).",
        f"Next: {CPU_ONLY_NEXT['lever']}, because {CPU_ONLY_NEXT['why']}. "
        f"Would waste the week: {CPU_ONLY_NEXT['waste']}.",
    ]


CPU_ONLY_NEXT = {
    "lever": "capture on the GPU with CUDA activity recorded (tracetriage capture --device cuda WORKLOAD, "
             "or ProfilerActivity.CUDA in your own profiler)",
    "why": "idle gaps and regimes live on the device timeline, which this trace does not have (0 GPU events)",
    "waste": "tuning from CPU op times alone: on a GPU most of those ops only launch work",
}


def five_lines(a: Analysis) -> list[str]:
    tr = a.trace
    if not a.devices:
        return _cpu_only_lines(a)
    dev = tr.device_name() or "an unnamed device"
    n_kern = int(np.sum(a.trace.ev.cat == KERNEL))
    scope = f" (range {a.range_filter})" if a.range_filter else ""
    busy_pct = 100 * a.kernel_busy_ns / a.span_ns if a.span_ns else 0.0
    l1 = (f"Measured: {Path(tr.path).name}{scope} on {dev}: {tr.events_in_file:,} events, a {_ms(a.span_ns)} GPU span, "
          f"kernels busy {busy_pct:.0f}% of it ({n_kern:,} kernels, {_ms(a.copy_ns)} of copies).")
    if a.phases:
        p = a.phases
        l1 = l1[:-1] + (f"; prefill (TTFT) {_us_or_ms(p['ttft_us'])}, decode {_us_or_ms(p['per_token_us'])} per token "
                        f"over {p['decode']['count']} steps.")
    hot = ", ".join(f"{h['name']} {100 * h['share']:.0f}% ({h['calls']} calls)" for h in a.hot_ops[:3])
    l2 = f"Time: device time goes to {hot or 'nothing (no GPU activity)'}."
    named = [r for r in a.ranges if r.name not in ("ProfilerStep",) and not r.name.startswith("## ")
             and r.kernel_busy_us > 0]
    if named and not a.range_filter:
        top = sorted(named, key=lambda r: -r.kernel_busy_us)[:2]
        l2 = l2[:-1] + "; by range, " + ", ".join(
            f"{r.name} {_us_or_ms(r.kernel_busy_us)} busy over {r.count}×" for r in top) + "."
    if a.idle_ns > 0:
        parts = sorted(((c, ns) for c, ns in a.by_cause_ns.items() if ns > 0), key=lambda x: -x[1])
        split = ", ".join(f"{CAUSE_WORDS[c]} {100 * ns / a.span_ns:.0f}%" for c, ns in parts[:4])
        dom = a.dominant
        l3 = (f"Idle: the GPU is idle {100 * a.idle_share:.0f}% of the span ({_ms(a.idle_ns)}): {split}; "
              f"mostly {CAUSE_WORDS[dom]}: {_evidence_phrase(dom, a.evidence.get(dom, {}))}.")
    else:
        l3 = "Idle: the GPU never idles inside its span."
    l4 = _regime_line(a)
    nx = a.next_experiment
    l5 = f"Next: {nx['lever']}, because {nx['why']}. Would waste the week: {nx['waste']}."
    return [l1, l2, l3, l4, l5]


def _pct_of(achieved: float, peak: float) -> str:
    """A share of a peak; measured copy ceilings can sit a hair under what kernels reach."""
    return "at the ceiling" if achieved >= peak else f"{100 * achieved / peak:.0f}%"


def _regime_line(a: Analysis) -> str:
    v = a.verdict
    pk = a.roof.peaks
    tot = _kernel_us(v)
    mix = (f"of kernel time, {100 * v.compute_us / tot:.0f}% is compute-bound and {100 * v.memory_us / tot:.0f}% "
           f"memory-bound" + (f" ({100 * v.unknown_us / tot:.0f}% unknown)" if v.unknown_us > 0.05 * tot else "")
           + (f", {100 * v.comm_us / tot:.0f}% in collectives (waiting on peers counts as busy)" if v.comm_us else "")) \
        if tot else "no kernels ran"
    ridge = ""
    if v.intensity is not None and v.ridge:
        ridge = f"; its ops average {v.intensity:.1f} FLOP/byte against a {v.dtype} ridge of {v.ridge:.0f}"
    if v.regime == "overhead":
        line = f"Regime: overhead-bound: the device idles {100 * v.idle_share:.0f}% of the span; {mix}{ridge}."
    elif v.regime == "compute":
        if v.achieved_tflops:
            peak = f" of {pk.flops(v.dtype) / 1e12:.0f} peak ({_pct_of(v.achieved_tflops, pk.flops(v.dtype) / 1e12)})" \
                if pk and v.dtype else ""
            line = f"Regime: compute-bound: {mix}; compute-bound ops reach {v.achieved_tflops:.0f} TFLOP/s{peak}{ridge}."
        else:
            line = f"Regime: compute-bound: {mix} (their FLOPs are not in the trace: no shapes recorded){ridge}."
    else:
        if v.achieved_gbps:
            peak = f" of {pk.bytes_per_s / 1e9:.0f} peak ({_pct_of(v.achieved_gbps, pk.bytes_per_s / 1e9)})" if pk else ""
            line = f"Regime: memory-bound: {mix}; memory-bound ops move {v.achieved_gbps:.0f} GB/s{peak}{ridge}."
        else:
            line = f"Regime: memory-bound: {mix} (their bytes are not in the trace: no shapes recorded){ridge}."
    if a.phases:
        p = a.phases
        line = line[:-1] + (f"; prefill is {p['prefill']['regime']}-bound, decode {p['decode']['regime']}-bound.")
    if pk is not None and pk.source != "datasheet":
        line = line[:-1] + " (peaks measured on this machine by tracetriage capture ceilings)."
    if pk is None:
        line = line[:-1] + f" (no peak table entry for {a.trace.device_name() or 'this device'}: run tracetriage capture ceilings)."
    return line


# --- JSON -----------------------------------------------------------------------------------

def _r(x: float, nd: int = 3) -> float:
    return round(float(x), nd)


def to_json(a: Analysis) -> dict:
    tr = a.trace
    dom = a.dominant
    return {
        "trace": {"path": tr.path, "events": tr.events_in_file, "device_name": tr.device_name(),
                  "rank": tr.rank, "caveats": a.caveats},
        "range": a.range_filter,
        "span_us": _r(a.span_ns / 1e3), "kernel_busy_us": _r(a.kernel_busy_ns / 1e3), "copy_us": _r(a.copy_ns / 1e3),
        "idle_us": _r(a.idle_ns / 1e3), "idle_share": _r(a.idle_share, 4),
        "idle": {"by_cause_us": {c: _r(ns / 1e3) for c, ns in a.by_cause_ns.items()},
                 "dominant": dom, "gaps": int(sum(len(d.gaps) for d in a.devices)),
                 "evidence": a.evidence,
                 "per_device": [{"device": d.device, "span_us": _r(d.span_ns / 1e3), "idle_us": _r(d.idle_ns / 1e3),
                                 "dominant": d.dominant} for d in a.devices]},
        "regime": a.verdict.regime if a.devices else None,  # no GPU activity: not decidable
        "regime_detail": a.verdict.to_dict(),
        "hotspots": a.hot_ops,
        "top_kernels": a.hot_kernels,
        "ranges": [{"name": r.name, "count": r.count, "wall_us": _r(r.wall_us), "median_wall_us": _r(r.median_wall_us),
                    "kernel_busy_us": _r(r.kernel_busy_us), "idle_us": _r(r.idle_us),
                    "idle_by_cause_us": {c: _r(x) for c, x in r.idle_by_cause_us.items()},
                    "regime": a.range_verdicts[r.name].regime,
                    "idle_dominant": r.idle_dominant} for r in a.ranges],
        "phases": a.phases,
        "roofline": [p.to_dict() for p in a.roof.points[:50]],
        "peaks": ({"name": a.roof.peaks.name, "source": a.roof.peaks.source,
                   "bytes_per_s": a.roof.peaks.bytes_per_s, "flops_per_s": a.roof.peaks.flops_per_s}
                  if a.roof.peaks else None),
        "lines": a.lines,
        "next_experiment": a.next_experiment,
    }
