"""The one adapter between the drills and the analyzers.

Every field of an analysis the drills read (the dominant idle cause, its evidence, the regime,
hotspots, phases, a diff's ratios, the timeline's bars) is read here and nowhere else, and turned
into plain data the rest of the package uses: `Facts` for one trace, `DiffFacts` for a pair,
`Lanes` for drawing. The analysis is typed (enums, frozen dataclasses: tracetriage.analyzers.triage); the
drills see plain values, so a change of the analysis' types changes this module only. Nothing here
re-derives a number: values are the analyzers', rounded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from tracetriage.analyzers.model import verdicts

CAUSES = tuple(c.value for c in verdicts.CAUSES)   # the taxonomy's values, as the drills' answers name them


class EvidenceError(Exception):
    """The trace could not be analysed (the analyzers' TraceError, as one line)."""


@dataclass(frozen=True)
class Facts:
    path: str
    name: str
    device_name: str | None
    span_ms: float
    kernel_busy_ms: float
    idle_share: float
    cause_share: dict            # cause -> share of the span
    dominant: str | None         # the cause with the most idle time; None when the GPU never idles
    gaps: int                    # every idle gap of every device
    cause_evidence: dict         # cause -> {"gaps", "median_gap_us", "total_us", ...} (plain values)
    regime: str | None
    achieved_tflops: float | None
    achieved_gbps: float | None
    intensity: float | None
    ridge: float | None
    dtype: str | None
    compute_share: float         # of kernel time
    memory_share: float
    hotspots: list = field(default_factory=list)   # [{"name", "share", "calls", "device_us"}]
    ranges: list = field(default_factory=list)     # [{"name", "count", "kernel_busy_us", "median_wall_us", "wall_us",
                                                   #   "regime", "idle_dominant"}]
    phases: dict = field(default_factory=dict)     # {"ttft_ms", "per_token_ms", "prefill_regime", ...} or {}
    kernels: list = field(default_factory=list)    # the roofline's costed ops: [{"name", "shapes", "dtype", "kind",
                                                   #   "calls", "flops", "bytes", "device_us", "tflops", "gbps",
                                                   #   "peak_tflops", "peak_gbps", "bound"}], most device time first
    peak_gbps: float | None = None  # the device's HBM peak (measured ceilings, else the datasheet)
    declared: dict = field(default_factory=dict)   # what the capture's sidecar declares it measured (weight_bytes ...)
    next_kind: str | None = None   # the report's Next (triage.next_experiment.NextExperiment): its kind,
    next_lever: str | None = None  # ... the registry lever it rests on,
    waste_lever: str | None = None  # ... and the lever that would waste the week
    waste_levers: tuple = ()       # ... with every lever predicting within WASTE_BAND of it: {lever: saving share}
    lever_savings: dict = field(default_factory=dict)   # every weighed lever's predicted saving, share of the span
    next_words: dict = field(default_factory=dict)   # the report's own words: {"lever", "why", "waste"}
    already_pinned: bool = False   # the top copy is from pinned memory already (pinning is no fix)
    passes: list = field(default_factory=list)   # the forward passes found from the ops' shapes, runs of one kind:
                                                 # [{"first", "last", "kind", "batch", "tokens", "by_structure",
                                                 #   "start_ms", "wall_median_ms", "wall_mean_ms", "wall_min_ms",
                                                 #   "wall_max_ms", "ttft_ms"}] (a trace without named ranges)


def _load(path: str | Path):
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.model.trace import TraceError
    from tracetriage.analyzers.triage.report import analyze_trace

    try:
        return analyze_trace(load(path))
    except TraceError as e:
        raise EvidenceError(str(e)) from None
    except FileNotFoundError:
        raise EvidenceError(f"no such trace: {path}") from None


def facts(path: str | Path) -> Facts:
    """What a drill needs to know about one trace, from the analyzers (read once per version of the file in a
    process: grading a bank of answers reads the same trace for each)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return facts_of(_load(path))     # the analyzers say what is wrong with it
    return _facts_cached(str(p), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _facts_cached(path: str, mtime_ns: int, size: int) -> Facts:
    return facts_of(_load(path))


def facts_of(a) -> Facts:
    span = a.span_ns or 0
    ev = a.evidence
    v = a.verdict
    kern = v.kernel_us
    cause_ev = {c: _cause_evidence(c, ev.get(c)) for c in CAUSES}
    ranges = [{"name": r.name, "count": int(r.count), "kernel_busy_us": round(float(r.kernel_busy_us), 1),
               "median_wall_us": round(float(r.median_wall_us), 1), "wall_us": round(float(r.union_wall_us), 1),
               "regime": _value(a.range_verdicts[r.name].regime) if r.name in a.range_verdicts else None,
               "tflops": _r(a.range_verdicts[r.name].achieved_tflops, 1) if r.name in a.range_verdicts else None,
               "gbps": _r(a.range_verdicts[r.name].achieved_gbps, 1) if r.name in a.range_verdicts else None,
               "idle_dominant": _value(r.idle_dominant), "instances": _instances(a, r)} for r in a.ranges]
    phases = {}
    if a.phases:
        p = a.phases
        phases = {"ttft_ms": round(p.ttft_us / 1e3, 3), "per_token_ms": round(p.per_token_us / 1e3, 4),
                  "prefill_regime": p.prefill.regime.value, "decode_regime": p.decode.regime.value,
                  "decode_steps": int(p.decode.count), "prefill_range": p.prefill.range,
                  "decode_range": p.decode.range, "found_from": p.found_from.value,
                  "ttft_p90_ms": round(p.ttft_p90_us / 1e3, 3),
                  "per_token_median_ms": round(p.per_token_median_us / 1e3, 4),
                  "per_token_p90_ms": round(p.per_token_p90_us / 1e3, 4), "requests": int(p.requests)}
    return Facts(
        path=str(a.trace.path), name=Path(a.trace.path).name, device_name=a.trace.device_name(),
        span_ms=round(span / 1e6, 3), kernel_busy_ms=round(a.kernel_busy_ns / 1e6, 3),
        idle_share=round(a.idle_share, 4),
        cause_share={c: round(a.by_cause_ns.get(c, 0) / span, 4) if span else 0.0 for c in CAUSES},
        dominant=_value(a.dominant), gaps=int(sum(len(d.gaps) for d in a.devices)), cause_evidence=cause_ev,
        regime=v.regime.value if a.devices else None,
        achieved_tflops=_r(v.achieved_tflops, 1), achieved_gbps=_r(v.achieved_gbps, 1), intensity=_r(v.intensity, 1),
        ridge=_r(v.ridge, 0), dtype=v.dtype,
        compute_share=round(v.compute_us / kern, 4) if kern else 0.0,
        memory_share=round(v.memory_us / kern, 4) if kern else 0.0,
        hotspots=[{"name": h.name, "share": round(float(h.share), 4), "calls": int(h.calls),
                   "device_us": round(float(h.device_us), 1)} for h in a.hotspots[:8]],
        ranges=ranges, phases=phases, kernels=_kernels(a), peak_gbps=_r(a.roof.peaks.bytes_per_s / 1e9, 1)
        if a.roof is not None and a.roof.peaks is not None else None, declared=_declared(a),
        passes=_passes(a) if phases.get("found_from") == "shapes" else [], **_next_of(a))


def _instances(a, r) -> list[list[float]]:
    """Each instance of a range as [start, end] in ms on the timeline `drill show` draws (from the first GPU
    activity): the evidence its walls are read from."""
    from tracetriage.analyzers.triage.timeline import origin_ns

    o = origin_ns(a.trace)
    s, e = r.windows
    return [[round((int(x) - o) / 1e6, 3), round((int(y) - o) / 1e6, 3)] for x, y in zip(s, e)]


def _to_host_ends(a, lo_ns: int, hi_ns: int, t0: int) -> list[float]:
    """The ends of the device-to-host copies (a token read back to the host) that start between two times, in ms
    from t0."""
    import numpy as np

    from tracetriage.analyzers.analyses.inference import to_host
    from tracetriage.analyzers.model.names import name_flags
    from tracetriage.analyzers.model.trace import MEMCPY

    ev = a.trace.ev
    rows = np.flatnonzero((ev.cat == MEMCPY) & (ev.start >= lo_ns) & (ev.start < hi_ns))
    rows = rows[name_flags(a.trace, rows, to_host)] if len(rows) else rows
    return sorted(round((int(ev.end[i]) - t0) / 1e6, 3) for i in rows)


def _passes(a) -> list[dict]:
    """The steps the inference read from the ops' shapes, as runs of one kind (a prompt's pass, then the one-token
    passes), each with its walls; the prefill's run carries its request's time to first token (the analyzers' TTFT:
    from the request's first pass until its first token reaches the host)."""
    import numpy as np

    inf, steps = a.inference, a.steps.steps
    t0 = min(s.start_ns for s in steps)
    runs: list[list] = []
    for tk in inf.steps:
        if runs and runs[-1][-1].kind is tk.kind:
            runs[-1].append(tk)
        else:
            runs.append([tk])
    ttfts = iter(inf.ttft_ns)
    out = []
    for run in runs:
        walls = np.array([steps[t.step].wall_ns for t in run], np.float64) / 1e6
        shaped = [t for t in run if t.tokens is not None and t.source is not None and t.source.value != "structure"]
        kind = run[0].kind.value
        out.append({"first": run[0].step + 1, "last": run[-1].step + 1, "kind": kind,
                    "batch": shaped[0].batch if shaped else None, "tokens": shaped[0].tokens if shaped else None,
                    "by_structure": len(run) - len(shaped),
                    "start_ms": round((steps[run[0].step].start_ns - t0) / 1e6, 3),
                    "wall_median_ms": round(float(np.median(walls)), 4), "wall_mean_ms": round(float(walls.mean()), 4),
                    "wall_min_ms": round(float(walls.min()), 4), "wall_max_ms": round(float(walls.max()), 4),
                    # as Facts.phases rounds it: µs to 0.1, then ms to 0.001
                    "ttft_ms": round(round(next(ttfts) / 1e3, 1) / 1e3, 3) if kind == "prefill" else None,
                    "walls_ms": [round(float(w), 3) for w in walls]})
    # where a prompt's first token reaches the host: the device-to-host copies from the request's first pass to the
    # end of the pass after its prompt's (the ttft is read from them, as the analyzers read it)
    for i, r in enumerate(out):
        if r["kind"] == "prefill":
            lo = out[i - 1] if i and out[i - 1]["kind"] == "other" else r
            nxt = steps[r["last"]] if r["last"] < len(steps) else steps[r["last"] - 1]
            r["to_host_ms"] = _to_host_ends(a, t0 + round(lo["start_ms"] * 1e6), nxt.end_ns, t0)
    return out


def _declared(a) -> dict:
    side = getattr(a.trace, "side", None)
    meta = getattr(side, "sidecar", None) or {}
    m = meta.get("measurements")
    if not isinstance(m, dict):
        return {}
    out = {k: v for k, v in m.items() if isinstance(v, (int, float))}
    if isinstance(m.get("model"), dict):   # the model's shape: what its KV cache is made of
        out["model"] = {k: v for k, v in m["model"].items() if isinstance(v, int)}
    return out


def _kernels(a, top: int = 8) -> list[dict]:
    """The roofline's points (an op and its shapes), as `drill show` prints them for a roofline question."""
    if a.roof is None:
        return []
    pts = sorted(a.roof.points, key=lambda p: -p.device_us)[:top]
    return [{"name": p.name, "shapes": p.shapes, "dtype": p.dtype, "kind": p.kind, "calls": int(p.calls),
             "flops": float(p.flops), "bytes": float(p.bytes), "device_us": round(float(p.device_us), 1),
             "tflops": round(float(p.achieved_tflops), 2), "gbps": round(float(p.achieved_gbps), 1),
             "peak_tflops": round(float(p.peak_tflops), 1), "peak_gbps": round(float(p.peak_gbps), 1),
             "bound": _value(p.bound)} for p in pts]


def _next_of(a) -> dict:
    """The report's Next and its words, as the drills' lever keys and feedback read them."""
    from tracetriage.analyzers.voice.report import next_experiment

    n = a.next_experiment
    copies = getattr(a.evidence.get(verdicts.Cause.DATA_TRANSFER), "copies", None) or ()
    choices = tuple(getattr(a, "lever_choices", ()) or ())
    savings = {c.lever: round(1 - c.predicted_ratio, 4) for c in choices}
    return {"next_kind": n.kind.value, "next_lever": n.lever.lever if n.lever is not None else None,
            "waste_lever": n.waste.lever if n.waste is not None else None,
            "waste_levers": _waste_band(n, choices), "lever_savings": savings,
            "next_words": dict(next_experiment(a)) if a.devices else {},
            "already_pinned": bool(copies) and "Pinned" in copies[0].name}


WASTE_BAND = 0.02   # levers predicting within two points of the week's waste are as much a waste as it


def _waste_band(n, choices: tuple) -> tuple:
    """The report's waste lever and every other lever whose predicted saving is within WASTE_BAND of it: CUDA graphs
    predicting 0% beside a keyed lever at -1% wastes the week as surely. Never the Next's own lever, nor warm-up."""
    from tracetriage.analyzers.model.verdicts import Cause, Experiment
    from tracetriage.analyzers.whatif.levers import LEVERS

    if n.waste is None:
        return ()
    fix = n.lever.lever if n.lever is not None else None
    best = n.lever.saving_ns if n.lever is not None else None
    # (warming up is no change to the program: never the week's waste)
    rest = [c for c in choices if c.lever != fix and (best is None or c.saving_ns < best)
            and LEVERS[c.lever].experiment is not Experiment.WARM_UP]
    floor = n.waste.saving_ns
    # a lever acting on nothing here counts when it can always be built (CUDA graphs, fusion, faster kernels: every
    # trace launches kernels; a faster host loop: every trace has one) and predicts as little (CUDA graphs at 0%
    # beside no_host_work at -1% on the matmul sweep); one that removes an idle cause the trace lacks (copies, syncs)
    # is not a week anyone could spend
    always = (None, Cause.LAUNCH_OVERHEAD, Cause.HOST_WORK)
    band = [c.lever for c in rest if c.saving_ns <= floor + WASTE_BAND * c.baseline_ns
            and (c.assumption is None or c.assumption.count > 0 or LEVERS[c.lever].cause in always)]
    return tuple(sorted(set(band) | {n.waste.lever}, key=lambda lv: (lv != n.waste.lever, lv)))


def _cause_evidence(cause: str, e) -> dict:
    """One cause's typed evidence (tracetriage.analyzers.model.evidence) as the plain values the drills quote."""
    if e is None:   # a CPU-only trace: no device, no evidence
        return {"gaps": 0, "median_gap_us": 0.0, "total_us": 0.0}
    out = {"gaps": int(e.gaps), "median_gap_us": float(e.median_gap_us), "total_us": float(e.total_us)}
    if cause == "launch_overhead":
        out.update(kernels=int(e.kernels), kernel_median_us=float(e.kernel_median_us),
                   launch_call_median_us=float(e.launch_call_median_us),
                   launching_ops=[o.name for o in e.launching_ops[:3]])
    elif cause == "host_work":
        out.update(untraced_share=float(e.untraced_share), host_events=[o.name for o in e.host_events[:3]])
    elif cause == "synchronization":
        out.update(sync_calls=[{"name": c.name, "count": int(c.count)} for c in e.sync_calls[:2]],
                   called_from=[c.name for c in e.called_from[:2]])
    elif cause == "data_transfer":
        out.update(copy_count=int(e.copy_count),
                   copies=[{"name": c.name, "count": int(c.count), "bytes": int(c.bytes), "gbps": c.gbps}
                           for c in e.copies[:3]])
    return out


def _value(x):
    """An enum's value (the analyzers' Cause, Regime), None as it is."""
    return None if x is None else x.value


def _r(x, nd):
    return None if x is None else round(float(x), nd)


# --- a pair of traces ------------------------------------------------------------------------

@dataclass(frozen=True)
class DiffFacts:
    before: str
    after: str
    speedup: float | None
    launch_ratio: float | None
    byte_ratio: float | None
    explained_by: str
    before_span_ms: float
    after_span_ms: float
    before_launches: int
    after_launches: int
    before_regime: str | None
    after_regime: str | None
    explanation: str = ""      # diff's own sentence: "Explained by launches: ... hence 1.73× and not 4.00× ..."


def diff_facts(before: str | Path, after: str | Path) -> DiffFacts:
    from tracetriage.analyzers.model.trace import TraceError
    from tracetriage.analyzers.triage.diff import diff_files

    try:
        d = diff_files(before, after)
    except TraceError as e:
        raise EvidenceError(str(e)) from None
    from tracetriage.analyzers.voice.diff import diff_lines

    b, a = d.before, d.after
    explained = next((line for line in diff_lines(d) if line.startswith("Explained")), "")
    return DiffFacts(before=str(before), after=str(after), speedup=d.speedup, launch_ratio=d.launch_ratio,
                     byte_ratio=d.byte_ratio, explained_by=d.explained_by,
                     before_span_ms=round(b.span_us / 1e3, 3), after_span_ms=round(a.span_us / 1e3, 3),
                     before_launches=int(b.launch_calls), after_launches=int(a.launch_calls),
                     before_regime=b.regime.value, after_regime=a.regime.value,
                     explanation=explained.rstrip("."))


# --- the timeline, for drawing ----------------------------------------------------------------

@dataclass(frozen=True)
class Lanes:
    """Bars per lane and idle gaps with causes, µs from the first GPU activity."""
    span_us: float
    lanes: list           # lane names, host threads first
    bars: list            # (lane index, start_us, end_us, kind)
    gaps: list            # (start_us, end_us, cause)
    gap_calls: list = field(default_factory=list)   # per gap, the host call the host was in ("" when none)


def lanes(path: str | Path, max_bars: int = 20000) -> Lanes:
    from tracetriage.analyzers.triage.timeline import build

    a = _load(path)
    t = build(a, max_bars=max_bars)
    bars = [(int(lane), float(s), float(e), k) for lane, s, e, k in zip(t.lane, t.start_us, t.end_us, t.kind)]
    gaps = [(float(s), float(e), c) for s, e, c in zip(t.gap_start_us, t.gap_end_us, t.gap_cause)]
    calls = list(t.gap_host_call) if t.gap_host_call is not None else [""] * len(gaps)
    return Lanes(span_us=round(a.span_ns / 1e3, 3), lanes=list(t.lanes), bars=bars, gaps=gaps, gap_calls=calls)


# --- measured quantities for the prediction log ---------------------------------------------------

def quantity(f: Facts, name: str) -> float | None:
    """One number of the documented quantities table (tracetriage.drills.predictions.QUANTITIES) from a trace."""
    return {"span_ms": f.span_ms, "idle_share": f.idle_share, "kernel_busy_ms": f.kernel_busy_ms,
            "gbps": f.achieved_gbps, "tflops": f.achieved_tflops, "intensity": f.intensity,
            "ttft_ms": f.phases.get("ttft_ms"), "per_token_ms": f.phases.get("per_token_ms")}.get(name)


def whatif_ratio(path: str | Path, lever: str) -> float:
    """What the what-if replay predicts for one lever on a trace: predicted span over traced span."""
    a = _load(path)
    if a.levers is None:
        raise EvidenceError(f"{Path(path).name}: no GPU timeline to replay, so no what-if for {lever}")
    return round(float(a.levers.all.lever(lever).predicted_ratio), 4)


# --- the fusion byte ledger (M01.07) -------------------------------------------------------------------

@dataclass(frozen=True)
class Ledger:
    """A trace's eager elementwise chains (tracetriage.analyzers.analyses.fusion) as one typical call: the median
    chain."""
    chains: int
    ops: int                 # ops (and kernels) in the median chain
    eager_bytes: float       # bytes one call moves eagerly: every op reads its inputs and writes its output
    fused_bytes: float       # ... fused: inputs from outside the chain read once per pass, the output written once
    passes: int
    fuse_ratio: float | None  # what the `fuse` lever's replay predicts: fused span over traced span
    reread_bytes: float = 0.0  # what each pass after the first reads again (the median chain's largest input)


def ledger(path: str | Path) -> Ledger:
    import statistics

    from tracetriage.analyzers.analyses.fusion import chains
    from tracetriage.analyzers.whatif.levers import FUSE

    a = _load(path)
    cs = chains(a.trace)
    if not cs:
        raise EvidenceError(f"{Path(path).name}: no eager elementwise chain to fuse")
    mid = sorted(cs, key=lambda c: c.eager_bytes)[len(cs) // 2]
    ratio = None
    if a.levers is not None:
        ratio = round(float(a.levers.all.lever(FUSE).predicted_ratio), 4)
    return Ledger(chains=len(cs), ops=len(mid.ops), eager_bytes=float(statistics.median(c.eager_bytes for c in cs)),
                  fused_bytes=float(statistics.median(c.fused_bytes for c in cs)), passes=int(mid.passes),
                  fuse_ratio=ratio, reread_bytes=float(mid.reread_bytes))


def fused_calls(before: str | Path, after: str | Path) -> list[dict]:
    """The after trace's kernels as a ledger reader counts them: each kernel name, how many ran, how many a call of
    the chain (the before trace's chains are its calls), and the tensor arguments its launching op records (a
    Triton kernel's op lists its input and output buffers alike: Inductor passes the outputs as arguments)."""
    import gzip
    import json

    calls = ledger(before).chains or 1
    opener = gzip.open if str(after).endswith(".gz") else open
    with opener(after, "rt") as f:
        events = json.load(f).get("traceEvents", [])
    counts: dict[str, int] = {}
    args: dict[str, list] = {}
    for e in events:
        if e.get("cat") == "kernel":
            counts[e["name"]] = counts.get(e["name"], 0) + 1
    for e in events:
        a = e.get("args") or {}
        if e.get("cat") == "cpu_op" and e.get("name") in counts and "Input Dims" in a and e["name"] not in args:
            dims, types = a.get("Input Dims") or [], a.get("Input type") or []
            args[e["name"]] = [(d, t) for d, t in zip(dims, types) if isinstance(d, list) and d]
    return [{"kernel": k, "launches": n, "per_call": round(n / calls, 2), "calls": calls, "tensor_args": args.get(k)}
            for k, n in sorted(counts.items(), key=lambda kv: -kv[1])]
