"""The triage: one Analysis of a trace, typed and frozen, built finished.

    analysis = analyze_file("traces/smell-sync-item.json.gz")
    print("\n".join(voice.five_lines(analysis)))      # the five-line report
    serialize.report(analysis)                         # the `--json` object

Everything a report, a dashboard or a drill grader shows comes from here: the idle
gaps with their causes and evidence (analyzers.analyses.idle), hotspots, named ranges,
roofline points, the regime and the next experiment. Consumers read fields, never
sentences (analyzers.voice says them), and never re-derive a number.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analyzers.analyses import framework as framework_mod
from analyzers.analyses import hotspots
from analyzers.analyses import idle as idle_mod
from analyzers.analyses import ranges as ranges_mod
from analyzers.analyses import roofline as roof_mod
from analyzers.analyses.frames import SourceLine
from analyzers.analyses.hotspots import Hotspot
from analyzers.analyses.idle import DeviceIdle, dominant_cause
from analyzers.analyses.inductor import FusedKernel
from analyzers.analyses.peaks import non_gpu_accelerator
from analyzers.analyses.ranges import RangeStats
from analyzers.analyses.roofline import RegimeVerdict, Roofline
from analyzers.loading.load import load
from analyzers.model import intervals as iv
from analyzers.model.evidence import Evidence, FirstCall, HostEvidence
from analyzers.model.span import PROFILER_STEP_RANGE
from analyzers.model.trace import CPU_OP, KERNEL, USER_ANNOTATION, Trace, TraceError
from analyzers.model.verdicts import CAUSES, EXPERIMENT_FOR_CAUSE, Cause, Construct, Experiment, Regime
from analyzers.triage import sources
from analyzers.triage.sources import SourceLines
from analyzers.whatif import predict as whatif
from analyzers.whatif.levers import LEVERS
from analyzers.whatif.levers.spec import Assumption

IDLE_LEVER_FLOOR = 0.05   # an idle cause worth less than 5% of the span is never "the" lever
WARMUP_IS_THE_LEVER = 0.25  # one-time set-up this large a share of the span: warm up first
LEVER_FLOOR = 0.03        # a what-if lever predicted to save less than 3% of the span is no experiment worth naming
SYNC_OVERLAP_FLOOR = 0.05  # the Idle line names syncs that serialise this share of the span or more
SETUP_NAMED = 0.05        # one-time set-up this large a share of the span is named in a caveat
COPIES_NAMED = 0.05       # copies' idle this large a share of the span: say that copies count as compute idle
CONSTRUCT_NAMED = 0.25    # a framework construct holding this share of the idle is named in the Idle line
SYNC_DRAIN_FLOOR = 0.05   # sync drains under this share of the span: the syncs cost the overlap they prevent

@dataclass(frozen=True)
class Phase:
    """One side of a prefill+decode trace: its named range and how it is bound."""
    range: str
    count: int
    median_wall_us: float
    kernel_busy_us: float
    idle_share: float
    idle_dominant: Cause | None
    regime: Regime
    verdict: RegimeVerdict


@dataclass(frozen=True)
class Phases:
    prefill: Phase
    decode: Phase
    ttft_us: float
    per_token_us: float          # each round's decode span over its steps (steps overlap when the host runs ahead)
    tokens_per_prefill: int


@dataclass(frozen=True)
class HostOnly:
    """A trace with no GPU activity: what its host did."""
    ops: int
    span_ns: int
    busy_ns: int
    hotspots: tuple[Hotspot, ...]


@dataclass(frozen=True)
class LeverChoice:
    """A what-if lever's prediction (analyzers.whatif replays the trace with the fix made)."""
    lever: str                   # a name of the lever registry (analyzers.whatif.levers)
    only: str | None             # remove_syncs: the op whose syncs hold most of the saving
    baseline_ns: int             # the traced span (host and GPU)
    predicted_ns: int
    assumption: Assumption | None = None   # what the lever's replay took as given (analyzers.whatif.levers)

    @property
    def predicted_ratio(self) -> float:
        return self.predicted_ns / self.baseline_ns if self.baseline_ns else 1.0

    @property
    def saving_ns(self) -> int:
        return self.baseline_ns - self.predicted_ns

    @property
    def nothing_to_act_on(self) -> bool:
        """An idle lever whose fix finds nothing in this trace (no sync, no pageable copy ...)."""
        return self.assumption is not None and self.assumption.count == 0 and LEVERS[self.lever].cause is not None


@dataclass(frozen=True)
class NextExperiment:
    kind: Experiment
    cause: Cause | None          # the idle cause it removes, when it is an idle lever
    gain_share: float            # the share of the span that cause (or the set-up) holds
    lever: LeverChoice | None = None   # the what-if lever that predicts the largest saving
    waste: LeverChoice | None = None   # ... and the one that predicts the least


@dataclass(frozen=True)
class Analysis:
    trace: Trace
    devices: tuple[DeviceIdle, ...]
    span_ns: int
    kernel_busy_ns: int
    copy_ns: int
    idle_ns: int
    by_cause_ns: dict[Cause, int]
    hotspots: tuple[Hotspot, ...]       # by the op that launched the work
    top_kernels: tuple[Hotspot, ...]
    ranges: tuple[RangeStats, ...]
    range_verdicts: dict[str, RegimeVerdict]
    phases: Phases | None
    roof: Roofline
    verdict: RegimeVerdict
    range_filter: str | None
    host_only: HostOnly | None
    levers: whatif.Levers | None         # every what-if lever replayed on this trace (None: no GPU timeline)
    lever_choices: tuple[LeverChoice, ...]   # ... as the report weighs them, largest saving first
    next_experiment: NextExperiment
    range_kernels: int | None = None    # --range: the range's own kernels (None: the whole trace's)
    framework: framework_mod.Framework | None = None   # whose code made the idle and the launches
    source_lines: SourceLines | None = None   # the user's own frames (analyzers.triage.sources); None: no stacks
    fused_kernels: dict[str, FusedKernel] = field(default_factory=dict)   # Inductor kernels -> the ATen ops fused

    @property
    def next_source(self) -> SourceLine | None:
        """The user's frame the Next line names (a trace with stacks only)."""
        nx = self.next_experiment
        return sources.next_line(nx.kind, nx.cause, self.source_lines, self.hotspots)

    @property
    def idle_share(self) -> float:
        return self.idle_ns / self.span_ns if self.span_ns else 0.0

    @property
    def dominant(self) -> Cause | None:
        return dominant_cause(self.by_cause_ns, self.idle_ns)

    @property
    def evidence(self) -> dict[Cause, Evidence]:
        """Evidence of the device with the most idle time (the one the report speaks of)."""
        return _evidence_of(self.devices)

    @property
    def serialising_syncs(self) -> LeverChoice | None:
        """remove_syncs, when the syncs serialise host work with GPU work worth naming beside another cause."""
        c = next((x for x in self.lever_choices if x.lever == "remove_syncs"), None)
        if c is None or self.dominant is Cause.SYNCHRONIZATION or c.saving_ns < SYNC_OVERLAP_FLOOR * c.baseline_ns:
            return None
        return c

    @property
    def kernels(self) -> int:
        if self.range_kernels is not None:
            return self.range_kernels
        return int(np.sum(self.trace.ev.cat == KERNEL))

    @property
    def warmup(self) -> tuple[FirstCall, ...]:
        return _warmup(self.devices)

    @property
    def warmup_share(self) -> float:
        return _warmup_share(self.devices, self.span_ns)

    @property
    def setup_worth_naming(self) -> bool:
        return self.warmup_share >= SETUP_NAMED

    @property
    def accelerator(self) -> str | None:
        """A non-GPU accelerator the trace was recorded on (MTIA, Gaudi, TPU), else None."""
        return non_gpu_accelerator(self.trace.device_names.values(), self.trace.names)

    @property
    def copies_count_as_idle(self) -> bool:
        """Copies hold idle worth saying that a copy on its own engine does not keep compute busy."""
        transfer = self.by_cause_ns.get(Cause.DATA_TRANSFER, 0)
        return (self.dominant is Cause.DATA_TRANSFER or transfer >= COPIES_NAMED * self.span_ns) and self.copy_ns > 0

    @property
    def sync_cost_is_lost_overlap(self) -> bool:
        """The syncs' drains are a sliver, but host work they serialise is there: what they cost is the overlap."""
        gain = self.next_experiment.gain_share
        return gain < SYNC_DRAIN_FLOOR and bool(self.evidence[Cause.HOST_WORK].gaps)

    @property
    def construct_named(self) -> framework_mod.ConstructShare | None:
        """The framework construct (not set-up, not the user's own code) that made enough of the idle to name."""
        fw = self.framework
        top = next((x for x in fw.constructs if x.construct not in (Construct.USER, Construct.SETUP) and x.idle_ns > 0),
                   None) if fw else None
        return top if top is not None and top.idle_ns >= CONSTRUCT_NAMED * fw.idle_ns else None

    @property
    def named_ranges(self) -> list[RangeStats]:
        """The user's own named ranges that ran kernels (not the profiler's ProfilerStep, not `## ` markers)."""
        return [r for r in self.ranges
                if r.name != PROFILER_STEP_RANGE and not r.name.startswith("## ") and r.kernel_busy_us > 0]


def _evidence_of(devices) -> dict[Cause, Evidence]:
    return max(devices, key=lambda d: d.idle_ns).evidence if devices else {}


def _warmup(devices) -> tuple[FirstCall, ...]:
    ev = _evidence_of(devices).get(Cause.HOST_WORK)
    return ev.warmup if isinstance(ev, HostEvidence) else ()


def _warmup_share(devices, span_ns: int) -> float:
    # the set-up's time inside the idle gaps: a first call that began before the GPU span counts only there
    return min(1.0, sum(w.idle_us for w in _warmup(devices)) * 1e3 / span_ns) if span_ns else 0.0


def _window_for_range(trace: Trace, name: str) -> tuple[int, int]:
    stats = ranges_mod.analyze(trace, [], names=[name])
    if not stats:
        known = sorted({ranges_mod.range_name(trace.names[i]) for i in trace.ev.name[trace.ev.cat == USER_ANNOTATION]})
        raise TraceError(f"no range named {name!r} in {trace.path}; ranges: {', '.join(known) or 'none'}")
    s, e = stats[0].windows
    return int(s.min()), int(e.max())


def analyze_trace(trace: Trace, range_name: str | None = None) -> Analysis:
    window = _window_for_range(trace, range_name) if range_name else None
    devs = tuple(idle_mod.analyze(trace, window))
    ev = trace.ev
    span = sum(d.span_ns for d in devs)
    idle_ns = sum(d.idle_ns for d in devs)
    by_cause = {c: sum(d.by_cause_ns[c] for d in devs) for c in CAUSES}
    rng_all = tuple(ranges_mod.analyze(trace, list(devs)))
    busy, copy, range_kernels = sum(d.kernel_busy_ns for d in devs), sum(d.copy_ns for d in devs), None
    if range_name:
        sel = next(r for r in rng_all if r.name == range_name)
        rows = sel.gpu_rows
        # a repeating range: its instances only, not everything between the first and the last
        own = ranges_mod.scope(trace, sel)
        span, busy, copy, idle_ns, by_cause = own.span_ns, own.kernel_busy_ns, own.copy_ns, own.idle_ns, own.by_cause_ns
        range_kernels = own.kernels
    else:
        rows = hotspots.gpu_rows(trace)
        if window is not None:
            rows = rows[(ev.end[rows] > window[0]) & (ev.start[rows] < window[1])]
    roof = roof_mod.analyze(trace)
    verdict = roof_mod.regime(trace, roof, rows[ev.cat[rows] == KERNEL], idle_ns / span if span else 0.0)
    range_verdicts = {r.name: roof_mod.regime(trace, roof, r.gpu_rows[ev.cat[r.gpu_rows] == KERNEL], r.idle_share)
                      for r in rng_all}
    fw = framework_mod.analyze(trace, devs, _setup_windows(devs)) if devs else None
    levers = _levers(trace) if devs and range_name is None else None
    choices = tuple(weigh_levers(levers)) if levers else ()
    hot, kern, host_only = hotspots.by_op(trace, rows), hotspots.by_kernel(trace, rows), None if devs else _host_only(trace)
    return Analysis(trace=trace, devices=devs, span_ns=span, kernel_busy_ns=busy, copy_ns=copy,
                    idle_ns=idle_ns, by_cause_ns=by_cause, hotspots=hot,
                    top_kernels=kern, ranges=rng_all, range_verdicts=range_verdicts,
                    phases=_phases(rng_all, range_verdicts), roof=roof, verdict=verdict, range_filter=range_name,
                    host_only=host_only, levers=levers, lever_choices=choices,
                    next_experiment=choose_next(devs, by_cause, span, busy, idle_ns, verdict, roof, levers, choices),
                    range_kernels=range_kernels, framework=fw,
                    source_lines=sources.source_lines(trace, rows, host_only.hotspots if host_only else hot, kern,
                                                      devs, host_only is not None),
                    fused_kernels=sources.fused_kernels(trace))


def _setup_windows(devs) -> tuple:
    """Every device's one-time set-up stretches on the host: (starts, ends, thread keys)."""
    ups = [d.setup for d in devs if d.setup is not None and len(d.setup.start)]
    if not ups:
        z = np.empty(0, np.int64)
        return z, z, z
    cat = np.concatenate
    key = cat([(u.pid.astype(np.int64) << 32) ^ (u.tid.astype(np.int64) & 0xFFFFFFFF) for u in ups])
    return cat([u.start for u in ups]), cat([u.end for u in ups]), key


def _levers(trace: Trace) -> whatif.Levers | None:
    """Every lever replayed; None when most GPU work has no launch call in the trace (the graph
    would not know what issued it, so no replay of it predicts anything)."""
    if any(c.kind == "unlinked_gpu" and 2 * c.count > c.total for c in trace.caveats):
        return None
    try:
        return whatif.predict_levers(trace)
    except whatif.WhatIfError:
        return None


def analyze_file(path: str | Path, range_name: str | None = None) -> Analysis:
    from analyzers.loading.progress import bar

    with bar(Path(path)) as advance:
        trace = load(path, progress=advance)
        advance("analyse")
        return analyze_trace(trace, range_name)


# --- prefill / decode ------------------------------------------------------------

def _phases(rng: tuple[RangeStats, ...], verdicts: dict[str, RegimeVerdict]) -> Phases | None:
    by = {r.name: r for r in rng}
    pre = by.get("prefill")
    dec = next((by[n] for n in ("decode_step", "decode") if n in by), None)
    if pre is None or dec is None:
        return None

    def phase(r: RangeStats) -> Phase:
        v = verdicts[r.name]
        return Phase(r.name, r.count, round(r.median_wall_us, 1), round(r.kernel_busy_us, 1), round(r.idle_share, 4),
                     r.idle_dominant, v.regime, v)

    return Phases(phase(pre), phase(dec), ttft_us=round(pre.median_wall_us, 1),
                  per_token_us=round(_per_token(pre, dec), 1), tokens_per_prefill=max(1, dec.count // max(1, pre.count)))


def _per_token(pre: RangeStats, dec: RangeStats) -> float:
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


# --- a CPU-only trace ----------------------------------------------------------------

def _host_only(trace: Trace) -> HostOnly:
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if len(ops) == 0:
        return HostOnly(0, 0, 0, ())
    top_s, top_e = iv.union(ev.start[ops], ev.end[ops])
    outer = ops[np.searchsorted(ev.start[ops], top_s)]
    hot = hotspots.group(trace, outer, ev.name[outer], lambda k: trace.names[k], 3)
    return HostOnly(len(ops), int(ev.end[ops].max() - ev.start[ops].min()), iv.total(top_s, top_e), hot)


# --- the next experiment -----------------------------------------------------------

def _kernel_headroom(v: RegimeVerdict, roof: Roofline, busy_ns: int, span_ns: int) -> float:
    """Share of the span a perfect kernel of the winning bound could still win back."""
    busy = busy_ns / span_ns if span_ns else 0.0
    frac = _kernel_ceiling(v, roof)
    return busy * (1.0 - frac) if frac is not None else busy * 0.5


def choose_next(devs, by_cause: dict[Cause, int], span_ns: int, busy_ns: int, idle_ns: int, v: RegimeVerdict,
                roof: Roofline, levers: whatif.Levers | None = None,
                choices: tuple[LeverChoice, ...] = ()) -> NextExperiment:
    """The one experiment that would help most.

    Warm-up first when one-time set-up holds a quarter of the span (no replay of this profile
    predicts the steady state). Then the what-if lever that predicts the largest saving, with
    the lever that predicts the least as the one that would waste the week. Without a replay,
    idle time is the lever when removing its dominant cause would win back more of the span than
    making the kernels run at their ceiling would; else the kernels' regime decides.
    """
    if not devs:
        return NextExperiment(Experiment.CAPTURE_ON_GPU, None, 0.0)
    warm = _warmup_share(devs, span_ns)
    if warm >= WARMUP_IS_THE_LEVER:
        return NextExperiment(Experiment.WARM_UP, None, warm)
    dom = dominant_cause(by_cause, idle_ns)
    if levers is not None and choices:
        best = choices[0]
        if best.saving_ns >= LEVER_FLOOR * best.baseline_ns:
            cause = LEVERS[best.lever].cause
            kind = EXPERIMENT_FOR_CAUSE[cause] if cause else (
                Experiment.FIND_THE_BOUND if v.regime is Regime.UNKNOWN else    # faster kernels, but how: unmeasured
                Experiment.CHEAPER_ARITHMETIC if v.regime is Regime.COMPUTE else Experiment.FEWER_BYTES)
            gain = by_cause[cause] / span_ns if cause and span_ns else 0.0
            return NextExperiment(kind, cause, gain, lever=best, waste=choices[-1])
    gain = by_cause[dom] / span_ns if dom is not None and span_ns else 0.0
    if dom is not None and (v.regime is Regime.OVERHEAD or (
            dom is not Cause.OTHER and gain >= IDLE_LEVER_FLOOR and gain > _kernel_headroom(v, roof, busy_ns, span_ns))):
        return NextExperiment(EXPERIMENT_FOR_CAUSE[dom], dom, gain)
    if v.regime is Regime.UNKNOWN:   # no lever rests on a bound nobody measured
        return NextExperiment(Experiment.FIND_THE_BOUND, None, v.uncosted_share)
    if v.regime is Regime.COMPUTE:
        return NextExperiment(Experiment.CHEAPER_ARITHMETIC, None, 0.0)
    return NextExperiment(Experiment.FEWER_BYTES, None, 0.0)


def weigh_levers(levers: whatif.Levers) -> list[LeverChoice]:
    """Every lever's prediction, largest saving first. remove_syncs names the op whose own syncs
    hold at least half of its saving ("remove the syncs in aten::item")."""
    out = []
    for p in levers.all.levers:
        q = levers.sync_op_prediction
        only = levers.sync_op if p.lever == "remove_syncs" and q is not None and q.saving_ns >= 0.5 * p.saving_ns \
            else None
        out.append(LeverChoice(p.lever, only, levers.all.baseline_ns, p.predicted_ns, p.assumption))
    return out


def _kernel_ceiling(v: RegimeVerdict, roof: Roofline) -> float | None:
    """The share of its peak the span's winning bound reaches, where it is measured."""
    pk = roof.peaks
    if pk is not None and v.regime is Regime.COMPUTE and v.achieved_tflops and v.dtype:
        return min(v.achieved_tflops / (pk.flops(v.dtype) / 1e12), 1.0)
    if pk is not None and v.regime is Regime.MEMORY and v.achieved_gbps:
        return min(v.achieved_gbps / (pk.bytes_per_s / 1e9), 1.0)
    return None
