"""Diff: explain the change between two traces in time, launches, bytes and idle.

    d = diff_files("traces/chain-eager-large.json.gz", "traces/chain-triton-large.json.gz")
    print("\n".join(tracetriage.analyzers.voice.diff.diff_lines(d)))

"It got faster" is never an explanation. The span of a device is its kernel busy
time plus its idle time (split by cause), so the time saved splits exactly into
kernel time saved and idle saved per cause. On top of that the diff measures the
two levers the course names, bytes and launches, and says which one accounts for
the speedup:

bytes       both sides memory-bound, and the speedup matches the byte ratio
            (before bytes / after bytes) within BYTES_TOL;
launches    both sides overhead-bound, and the launch calls changed in the
            direction of the speedup (time follows launch calls there);
kernels     kernel busy time moved by at least MOST of the time saved (or lost):
            the kernels themselves changed, whatever the launches did;
<cause>     one idle cause (e.g. launch_overhead) shrank by at least MOST of the
            time saved (or grew by MOST of the time lost);
mixed       none of these;
unchanged   the spans agree within SAME_TOL: there is nothing to explain.

Bytes and FLOPs come from the roofline (ops costed from shapes). A kernel with no
costed op (a hand-written Triton kernel, an Inductor kernel, a CUDA-graph replay)
carries no bytes; when less than COVERAGE_MIN of a side's kernel time is costed,
its bytes come from the capture sidecar (`NAME.meta.json`: bytes_per_call and
kernels_per_call, scaled by the kernels in the trace) when there is one, else the
byte ratio is null and the diff says why.

Where both traces hold ProfilerStep ranges, the diff compares their mean steps
(wall, kernel busy time, idle by cause, kernels and launch calls averaged over the
loop's steps; bytes and FLOPs per step), with the work queued before the profiled
window left out, not the whole spans: a profiled window holds whatever its
schedule caught, and its first step drains the kernels the unrecorded warm-up
steps queued (on a ViT training trace that doubled one side's span and its kernel
count against its launch calls). The whole spans are compared only where a side
has no steps.

Uses only the analyzers' public results (report.Analysis, its roofline and
hotspots); never imports torch. The result is typed (Side, Diff); tracetriage.analyzers.voice
says it (voice.diff_lines) and tracetriage.analyzers.output.serialize prints it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tracetriage.analyzers.analyses.hotspots import Hotspot
from tracetriage.analyzers.analyses.roofline import UNCOSTED_WHY, RegimeVerdict
from tracetriage.analyzers.analyses.steps import StepsFrom, steady
from tracetriage.analyzers.model.evidence import FirstCall
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.runtime_calls import is_graph_launch
from tracetriage.analyzers.model.span import PROFILER_STEP_RANGE
from tracetriage.analyzers.model.trace import KERNEL, NONE, Caveat, TraceError
from tracetriage.analyzers.model.verdicts import CAUSES, Cause, Regime
from tracetriage.analyzers.triage.analysis import SETUP_NAMED
from tracetriage.analyzers.triage.report import Analysis, analyze_file
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import LEVERS, by_recognition
from tracetriage.analyzers.whatif.levers.spec import Measured

BYTES_TOL = 0.15      # the speedup "matches" the byte ratio within this relative difference
COVERAGE_MIN = 0.9    # share of kernel time with costed bytes for the roofline's bytes to stand
MOST = 0.5            # an idle cause explains a change when it moved by this share of the time saved
SAME_TOL = 0.03       # spans within this relative difference: unchanged
SAME_KERNELS_TOL = 0.1   # kernel counts within this relative difference: the same kernels
IDLE_MOVE_FLOOR_US = 0.5  # an idle cause that moved by less is not named as a move
GAP_NAMED = 0.005         # a speedup this far from the byte ratio leaves a rest worth naming
AS_PREDICTED = 0.005      # a measured ratio within this of the predicted one (both to 2 decimals): as predicted
STEP_RANGE = PROFILER_STEP_RANGE


# --- one side ---------------------------------------------------------------------------

def _sidecar_bytes(sidecar: dict | None, kernels: int) -> float | None:
    """Bytes the capture declared for this trace: bytes_per_call x calls, calls = kernels / kernels_per_call."""
    m = sidecar.get("measurements") if sidecar else None
    if not isinstance(m, dict):
        return None
    bpc, kpc = m.get("bytes_per_call"), m.get("kernels_per_call")
    if not (isinstance(bpc, (int, float)) and isinstance(kpc, int) and bpc > 0 and kpc > 0):
        return None
    if kernels <= 0 or kernels % kpc:
        return None
    return float(bpc) * (kernels // kpc)


@dataclass(frozen=True)
class Side:
    """The numbers a diff compares, for one analysed trace (totals over the trace)."""
    trace: str
    name: str
    device_name: str | None
    steps: int
    span_us: float
    kernel_busy_us: float
    copy_us: float
    idle_us: float
    idle_share: float
    idle_by_cause_us: dict[Cause, float]
    idle_dominant: Cause | None
    kernels: int
    launch_calls: int
    graph_launches: int
    span_per_launch_us: float | None
    bytes: float | None
    bytes_source: str | None        # "roofline" | "sidecar" | None
    roofline_bytes: float
    charged_bytes: float
    byte_coverage: float            # share of kernel time with costed bytes
    flops: float
    achieved_gbps: float | None
    regime: Regime
    regime_detail: RegimeVerdict
    top_ops: tuple[Hotspot, ...]
    trace_caveats: tuple[Caveat, ...]
    warmup: tuple[FirstCall, ...]   # one-time set-up caught in the profile
    warmup_share: float
    uncosted_why_us: dict = field(default_factory=dict)   # kernel time with no costed bytes, by why

    @property
    def setup_worth_naming(self) -> bool:
        return self.warmup_share >= SETUP_NAMED


@dataclass(frozen=True)
class Compared:
    """The figures a diff compares for one side: the mean of its profiled steps (`per_step`), less the work queued
    before the profiled window that its first step drained, else the whole trace's."""
    per_step: bool
    steps: int                      # the steps averaged (set-up steps kept apart, as the report does)
    queued_us: float                # the queued work's busy time left out (tracetriage.analyzers.analyses.steps)
    span_us: float                  # the mean step's wall, or the GPU span
    kernel_busy_us: float
    idle_us: float
    idle_by_cause_us: dict[Cause, float]
    kernels: float
    launch_calls: float
    graph_launches: float
    bytes: float | None             # per step: the side's bytes and FLOPs over its steps
    flops: float

    @property
    def idle_share(self) -> float:
        return self.idle_us / self.span_us if self.span_us > 0 else 0.0

    @property
    def span_per_launch_us(self) -> float | None:
        return round(self.span_us / self.launch_calls, 3) if self.launch_calls else None


def _whole(s: Side) -> Compared:
    return Compared(False, 0, 0.0, s.span_us, s.kernel_busy_us, s.idle_us, dict(s.idle_by_cause_us), s.kernels,
                    s.launch_calls, s.graph_launches, s.bytes, s.flops)


def _per_step(a: Analysis, s: Side) -> Compared | None:
    """The side's mean profiled step, where the profiler named the steps: each step's wall, kernel busy time, idle
    by cause, kernels and launch calls, averaged over the loop's steps, with the work queued before the window left
    out (its kernels and their busy time: the first step drained them, they are not the loop's). A mean, not a
    median: a per-step time is what a timed run of the steps measures (the median step of a decode loop whose steps
    alternate between 10.5 and 12.5 ms says 10.5 ms, its timed steps 11.2 ms)."""
    st = a.steps
    if st is None or st.found_from is not StepsFrom.PROFILER_STEP or not s.steps:
        return None
    pool = steady(list(st.steps))
    if not pool:
        return None
    n = len(pool)
    queued = sum(x.queued_busy_ns for x in pool) / 1e3
    idle = {c: sum(x.idle_by_cause_ns[c] for x in pool) / 1e3 / n for c in CAUSES}
    # the windows' time outside the GPU's span (no gap there to classify): before the trace's first GPU activity
    # the host had launched nothing yet, after its last the host finishes the step; host time either way, so the
    # parts add up to the wall
    idle[Cause.HOST_WORK] += max(0.0, sum(x.wall_ns - x.kernel_busy_ns - x.idle_ns for x in pool) / 1e3 / n)
    idle = {c: round(v, 3) for c, v in idle.items()}
    busy = sum(x.own_busy_ns for x in pool) / 1e3 / n
    return Compared(True, n, round(queued, 3), round(busy + sum(idle.values()), 3), round(busy, 3),
                    round(sum(idle.values()), 3), idle, sum(x.own_kernels for x in pool) / n,
                    sum(x.launch_calls for x in pool) / n, sum(x.graph_launches for x in pool) / n,
                    s.bytes / s.steps if s.bytes else None, s.flops / s.steps)


@dataclass(frozen=True)
class OpChange:
    name: str
    before_us: float | None
    after_us: float | None


@dataclass(frozen=True)
class Steps:
    before: int
    after: int


@dataclass(frozen=True)
class PredictionCheck:
    """How close BEFORE's what-if prediction for the lever the change applied came to what AFTER measured."""
    lever: str
    predicted_ratio: float       # BEFORE's replay with the lever, over BEFORE's traced span
    measured_ratio: float        # AFTER's traced span over BEFORE's
    before_ns: int
    predicted_ns: int
    after_ns: int
    evidence: str                # what in the two traces says this lever was applied (a key voice words)
    kernel_scale: float = 0.5    # kernels_2x: AFTER's kernel time over BEFORE's, which the prediction replays

    @property
    def off(self) -> float:
        """Measured minus predicted, both to the two decimals they are said with (negative: better)."""
        return round(self.measured_ratio, 2) - round(self.predicted_ratio, 2)

    @property
    def as_predicted(self) -> bool:
        return abs(self.off) < AS_PREDICTED


@dataclass(frozen=True)
class Diff:
    before: Side
    after: Side
    per_step: bool
    steps: Steps
    speedup: float | None
    byte_ratio: float | None
    launch_ratio: float | None
    kernel_ratio: float | None
    flop_ratio: float | None
    time_saved_us: float
    busy_change_us: float
    idle_change_us: dict[Cause, float]
    top_ops_change: tuple[OpChange, ...]
    only_one_side_has_steps: bool
    different_devices: bool
    explained_by: str               # "bytes" | "kernels" | "launches" | a Cause value | "mixed" | "unchanged"
    compared_before: Compared       # what is compared: the mean steps (per_step), else the whole traces
    compared_after: Compared
    prediction: PredictionCheck | None = None

    @property
    def span_us(self) -> tuple[float, float]:
        """(before, after): the mean steps' walls where both traces have steps, else the GPU spans."""
        return self.compared_before.span_us, self.compared_after.span_us

    @property
    def divisors(self) -> tuple[int, int]:
        """Per-op tables (tracetriage.analyzers.triage.opdiff) where both traces have steps: each side's totals
        over its steps."""
        return (self.before.steps, self.after.steps) if self.per_step else (1, 1)

    # --- what the explanation rests on (tracetriage.analyzers.voice.diff says it) ---

    @property
    def same_tol(self) -> float:
        """The spans "agree within" this relative difference."""
        return SAME_TOL

    def about_same(self, r: float) -> bool:
        """A before/after ratio (launch calls, bytes) that did not move."""
        return abs(r - 1) <= SAME_TOL

    @property
    def idle_moved(self) -> list[tuple[Cause, float]]:
        """The idle causes that moved, largest move first, with their change in µs."""
        return sorted(((c, x) for c, x in self.idle_change_us.items() if abs(x) >= IDLE_MOVE_FLOOR_US),
                      key=lambda cx: -abs(cx[1]))

    @property
    def bytes_gap(self) -> float:
        """How far the speedup is from the byte ratio, relatively (explained by bytes)."""
        return abs(self.speedup / self.byte_ratio - 1) if self.speedup and self.byte_ratio else 0.0

    @property
    def bytes_gap_named(self) -> bool:
        """The gap between speedup and byte ratio is large enough that the rest (the idle change) is named."""
        return self.bytes_gap >= GAP_NAMED

    @property
    def launches_moved(self) -> bool:
        return self.launch_ratio is not None and not self.about_same(self.launch_ratio)

    @property
    def launch_cost_changed(self) -> bool:
        """Each launch call costs a different share of span after (so time does not follow launches 1:1)."""
        pb, pa = self.compared_before.span_per_launch_us, self.compared_after.span_per_launch_us
        return bool(pb and pa and abs(pa / pb - 1) > BYTES_TOL)

    @property
    def same_kernels(self) -> bool:
        return self.kernel_ratio is not None and abs(self.kernel_ratio - 1) <= SAME_KERNELS_TOL

    @property
    def mixed_cause(self) -> tuple[Cause | None, float]:
        """The idle cause that moved most in the direction of the change, and its share of the time saved."""
        return cause_share(self.time_saved_us, self.idle_change_us)


def _uncosted_why(a: Analysis, kern: np.ndarray) -> dict[str, float]:
    """Kernel time with no costed bytes, by why (roofline.UNCOSTED_WHY), largest first."""
    why = a.roof.kernel_why
    if why is None or not len(kern):
        return {}
    dur = (a.trace.ev.end[kern] - a.trace.ev.start[kern]).astype(np.float64)
    nob = a.roof.kernel_bytes[kern] <= 0
    out = {name: round(float(dur[nob & (why[kern] == code)].sum()) / 1e3, 3) for code, name in UNCOSTED_WHY.items()}
    comm = nob & (why[kern] == 0)
    if comm.any():
        out["communication"] = round(float(dur[comm].sum()) / 1e3, 3)
    return dict(sorted(((k, v) for k, v in out.items() if v > 0), key=lambda kv: -kv[1]))


def summarize(a: Analysis) -> Side:
    tr, ev = a.trace, a.trace.ev
    kern = np.flatnonzero(ev.cat == KERNEL)
    launch = tr.launch_of[kern]
    calls = distinct(launch[launch != NONE])
    graph_calls = sum(1 for c in calls.tolist() if is_graph_launch(tr.names[ev.name[c]]))
    dur = (ev.end[kern] - ev.start[kern]).astype(np.float64)
    kb = a.roof.kernel_bytes[kern]
    coverage = float(dur[kb > 0].sum() / dur.sum()) if dur.sum() > 0 else 0.0
    roof_bytes = float(sum(p.bytes for p in a.roof.points))
    charged = float(kb.sum())
    flops = float(sum(p.flops for p in a.roof.points))
    if coverage >= COVERAGE_MIN and roof_bytes > 0:
        nbytes, source = roof_bytes, "roofline"
    else:
        nbytes = _sidecar_bytes(tr.side.sidecar, len(kern))
        source = "sidecar" if nbytes is not None else None
    steps = sum(r.count for r in a.ranges if r.name == STEP_RANGE)
    busy_us = a.kernel_busy_ns / 1e3
    n_calls = len(calls)
    return Side(
        trace=tr.path, name=Path(tr.path).name, device_name=tr.device_name(), steps=int(steps),
        span_us=round(a.span_ns / 1e3, 3), kernel_busy_us=round(busy_us, 3),
        copy_us=round(a.copy_ns / 1e3, 3), idle_us=round(a.idle_ns / 1e3, 3), idle_share=round(a.idle_share, 4),
        idle_by_cause_us={c: round(a.by_cause_ns.get(c, 0) / 1e3, 3) for c in CAUSES}, idle_dominant=a.dominant,
        kernels=len(kern), launch_calls=n_calls, graph_launches=int(graph_calls),
        span_per_launch_us=round(a.span_ns / 1e3 / n_calls, 3) if n_calls else None,
        bytes=nbytes, bytes_source=source, roofline_bytes=roof_bytes, charged_bytes=charged,
        byte_coverage=round(coverage, 4), flops=flops,
        achieved_gbps=round(nbytes / (busy_us * 1e3), 1) if nbytes and busy_us > 0 else None,
        regime=a.verdict.regime, regime_detail=a.verdict, top_ops=a.hotspots[:5],
        uncosted_why_us=_uncosted_why(a, kern),
        trace_caveats=tr.caveats, warmup=a.warmup, warmup_share=a.warmup_share)


# --- the comparison ---------------------------------------------------------------------

def _ratio(b: float | None, a: float | None) -> float | None:
    if b is None or a is None or not a > 0 or not b > 0:
        return None
    return b / a


def _rnd(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


def diff_analyses(before: Analysis, after: Analysis) -> Diff:
    for side in (before, after):
        if not side.devices:  # a CPU-only trace has no GPU span to compare
            raise TraceError(f"{side.trace.path}: no GPU activity in this trace, so there is nothing to compare "
                             "(a CPU-only capture?); diff two traces captured with CUDA activity")
    b, a = summarize(before), summarize(after)
    sb, sa = _per_step(before, b), _per_step(after, a)
    per_step = sb is not None and sa is not None
    cb, ca = (sb, sa) if sb is not None and sa is not None else (_whole(b), _whole(a))
    db, da = (b.steps, a.steps) if per_step else (1, 1)
    speedup = cb.span_us / ca.span_us if ca.span_us > 0 else None
    idle_change = {c: round(ca.idle_by_cause_us[c] - cb.idle_by_cause_us[c], 3) for c in CAUSES}
    saved = round(cb.span_us - ca.span_us, 3)
    fields = dict(
        before=b, after=a, per_step=per_step, steps=Steps(b.steps, a.steps),
        speedup=_rnd(speedup), byte_ratio=_rnd(_ratio(cb.bytes, ca.bytes) if cb.bytes and ca.bytes else None),
        launch_ratio=_rnd(_ratio(cb.launch_calls, ca.launch_calls)),
        kernel_ratio=_rnd(_ratio(cb.kernels, ca.kernels)), flop_ratio=_rnd(_ratio(cb.flops, ca.flops)),
        time_saved_us=saved, busy_change_us=round(ca.kernel_busy_us - cb.kernel_busy_us, 3),
        idle_change_us=idle_change, top_ops_change=_top_ops_change(b, a, db, da),
        only_one_side_has_steps=(b.steps > 0) != (a.steps > 0), different_devices=b.device_name != a.device_name,
        compared_before=cb, compared_after=ca)
    return Diff(**fields, explained_by=_explain(fields, b, a), prediction=check_prediction(before, after))


SPECIFIC_WEIGHT = 2


def applied_lever(before: Analysis, after: Analysis) -> tuple[str, str] | None:
    """The what-if lever the change between two traces applied, and what says so; None when none fits.

    Each lever's spec (tracetriage.analyzers.whatif.levers) says what it acts on, measured on both traces, and
    which change of that amount means its fix was made; the levers are tried in their recognition
    order (graph launches appeared, pageable copies went, sync points went, kernel time fell, long
    host stretches went).
    """
    if before.levers is None or after.levers is None or before.trace.device_name() != after.trace.device_name():
        return None   # (on another device the change mixes the hardware with the code: no lever predicts that)
    mb, ma = _measured(before), _measured(after)
    applied = [s for s in by_recognition() if s.recognise.applied(s.recognise.amount(mb), s.recognise.amount(ma))
               and s.recognise.also(mb, ma)]
    if not applied:
        return None
    # of the levers the change applied, the one whose time (its cause's idle, its construct's, the kernels')
    # fell most is the change made (workers for a DataLoader also pin its copies, but the host work was it)
    # a lever named for a framework construct (a fused optimizer, compiling once) is the more specific
    # explanation of the time it removed: a general lever must have removed SPECIFIC_WEIGHT times as much
    # a knob (one line of the user's code) is recognised by its own kernels or ops going: the most specific of all
    best = max(applied, key=lambda s: (s.knob is not None, (s.recognise.acted(mb) - s.recognise.acted(ma))
                                       * (SPECIFIC_WEIGHT if s.experiment is not None else 1), -s.recognise.order))
    return best.name, best.recognise.evidence


def _measured(a: Analysis) -> Measured:
    return Measured(trace=a.trace, whatif=a.levers.all, kernel_busy_ns=a.kernel_busy_ns, by_cause_ns=a.by_cause_ns,
                    framework=a.framework, kernels=int(np.sum(a.trace.ev.cat == KERNEL)))


def check_prediction(before: Analysis, after: Analysis) -> PredictionCheck | None:
    applied = applied_lever(before, after)
    if applied is None:
        return None
    lever, why = applied
    w = before.levers.all
    p = w.lever(lever)
    scale = 0.5
    rec = LEVERS[lever].recognise
    if rec.as_measured is not None:   # replay the change as much as it measured (kernels 1.7x faster, not 2x)
        opts = rec.as_measured(rec.amount(_measured(before)), rec.amount(_measured(after)))
        scale = opts.kernel_scale
        p = whatif.predict(before.trace, [lever], only=opts.only, kernel_scale=opts.kernel_scale).levers[0]
    after_ns = after.levers.all.baseline_ns
    return PredictionCheck(lever, p.predicted_ratio, after_ns / w.baseline_ns if w.baseline_ns else 1.0,
                           w.baseline_ns, p.predicted_ns, after_ns, why, scale)


def diff_files(before: str | os.PathLike, after: str | os.PathLike) -> Diff:
    """Analyse both traces and explain the change. A bad path or trace raises TraceError."""
    return diff_analyses(analyze_file(before), analyze_file(after))


def _top_ops_change(b: Side, a: Side, db: int, da: int) -> tuple[OpChange, ...]:
    names = list(dict.fromkeys([o.name for o in b.top_ops] + [o.name for o in a.top_ops]))
    tb = {o.name: o.device_us / db for o in b.top_ops}
    ta = {o.name: o.device_us / da for o in a.top_ops}
    rows = [OpChange(n, _rnd(tb.get(n), 1), _rnd(ta.get(n), 1)) for n in names]
    return tuple(sorted(rows, key=lambda r: -max(r.before_us or 0, r.after_us or 0)))


def _same_direction(ratio: float | None, speedup: float) -> bool:
    """A ratio (before/after) that moved the way the speedup did, by more than SAME_TOL."""
    if ratio is None:
        return False
    return (speedup > 1 and ratio > 1 + SAME_TOL) or (speedup < 1 and ratio < 1 - SAME_TOL)


def cause_share(saved: float, idle_change_us: dict[Cause, float]) -> tuple[Cause | None, float]:
    """The idle cause that moved most in the direction of the change, and its share of the time saved."""
    if saved == 0:
        return None, 0.0
    # Time saved is positive for a speedup; a cause contributes by shrinking (its change is negative).
    contrib = {c: -ch / saved for c, ch in idle_change_us.items()}
    cause = max(contrib, key=contrib.get)
    return (cause, contrib[cause]) if contrib[cause] > 0 else (None, 0.0)


def _explain(d: dict, b: Side, a: Side) -> str:
    s = d["speedup"]
    if s is None:
        return "mixed"
    if abs(s - 1) <= SAME_TOL:
        return "unchanged"
    br = d["byte_ratio"]
    if br is not None and b.regime is Regime.MEMORY and a.regime is Regime.MEMORY and abs(s / br - 1) <= BYTES_TOL:
        return "bytes"
    # kernel busy time is the span's other half: when it moved by most of the change, the kernels changed
    # (launch counts that moved along with it are not the explanation)
    if d["time_saved_us"] and -d["busy_change_us"] / d["time_saved_us"] >= MOST:
        return "kernels"
    if b.regime is Regime.OVERHEAD and a.regime is Regime.OVERHEAD and _same_direction(d["launch_ratio"], s):
        return "launches"
    cause, share = cause_share(d["time_saved_us"], d["idle_change_us"])
    if cause is not None and share >= MOST:
        return cause.value
    return "mixed"
