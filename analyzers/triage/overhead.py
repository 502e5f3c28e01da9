"""The profiler's own cost in a trace, and what the verdicts would be without it.

Under torch.profiler the host pays a few µs per recorded op and runtime call (tracetriage.analyzers.whatif.unprofiled
takes them out of the dependency graph and replays it), and CUPTI's buffer requests (its `overhead` rows)
land inside the program's calls. On a host-bound loop that is on the critical path: the traced loop is
slower than the real one and its GPU idles more. This module decides what the report says of it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.roofline import OVERHEAD_IDLE_SHARE
from tracetriage.analyzers.model.cupti_rows import profiler_own_rows
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import Trace
from tracetriage.analyzers.model.verdicts import Cause, Regime

PROFILER_NAMED = 1.2        # the profiled run predicted this much slower than the unprofiled one, or more: said,
PROFILER_NAMED_NS = 1_000_000   # ... when the time it adds is a millisecond or more (below, run-to-run noise)
BUFFER_NAMED_NS = 500_000   # CUPTI's buffer requests this long in all, or longer ...
BUFFER_NAMED_SHARE = 0.02   # ... and this share of the traced span or more: named as the profiler's
IDLE_DIFFERS = 0.05         # the unprofiled idle share this far from the traced one: said beside it
RATIO_DIFFERS = 0.05        # a lever's unprofiled ratio this far from its profiled one: said beside it
# a launch-bound verdict is withdrawn ("holds only under the profiler") only where the GPU would idle less than this
# share of its span without the profiler: at 30-50% it still idles a third of its span between short kernels, and
# the launch lever still pays (heldout-user15 hpdl_resnet_bneck: ~40% idle without it and CUDA graphs at -29% without
# it, beside "the launch-bound verdict holds only under the profiler")
LAUNCH_KEPT_IDLE = 0.3
# The per-event costs were fitted on H200 runs (whatif.unprofiled); off that host they under-state the profiler's cost
# on most captures (26 of 32 H100 captures in fresh7/fresh8; fresh11's compiled conformer 1.3x predicted where 2.18x
# was measured, HF training 1.3x against 1.66x, a cuDNN-off CRNN 1.5x against 1.82x): there the slowdown and the
# unprofiled time are said with the range the fit's measured error gives (OFF_HOST_LOW/HIGH below), the host time
# added as a floor and the idle share as a ceiling
FITTED_ON = "H200"
# Off that host, the fit's error measured: 136 H100 captures timed with and without the profiler (fresh9-12,
# pairs2-4, traces/pending2, traces/fresh5: each truth.json's profiled ms a step over its unprofiled median, against
# the replay's slowdown: tools/profiler_cost --truth over those directories re-derives it). The measured slowdown over
# the predicted one: 0.90 at the 5th percentile, 0.95 at the 10th, 1.04 at the median, 1.25 at the 90th, 1.30 at the
# 95th (the worst 2.18x: gpt2_topk_sampling_full_sort, 1.25x predicted, 2.72x measured); under-stated on 106 of 136,
# |log error| median 5.8%, p90 23%, worst 78%. Scaling the per-event constants was tried on the same captures and
# does not shrink the spread, only moves it: the op's cost x1.5 takes the bias away (mean log error -6.6% -> -0.4%)
# but the median |error| goes 5.8% -> 6.5% (p90 23% -> 20%, worst 78% -> 72%); the call's cost x2 moves nothing (a
# launch call's own time caps it); a further op's cost charged to each call's gap trades the same way (x2: median
# 7.5%). The misses are per workload (one workload's before and after want different scales), so the constants stay
# and the figure is said as the fit's 9-in-10 range (0.90-1.30x of it held 122 of the 136), which leans the way its
# error runs (the slowdown under-stated far more often than over): bart_generate (fresh12, 1.35x predicted, 1.86x
# measured) was "~1.3× or more", an unsized floor far off; mobilenetv3 1.67x against "1.3× or more".
OFF_HOST_LOW, OFF_HOST_HIGH = 0.90, 1.30     # the measured slowdown over the predicted one, p5 and p95 (H100)
OFF_HOST_CAPTURES = 136


@dataclass(frozen=True)
class ProfilerOverhead:
    profiled_ns: int                 # the traced span (host and GPU), as the replay reproduces it
    unprofiled_ns: int               # ... predicted without the profiler's per-event cost
    host_ns: int                     # host time the recording added, by the per-event constants (not measured)
    ops: int
    calls: int
    idle_share: float                # the GPU's idle share the report gives (under the profiler)
    unprofiled_idle_share: float     # ... predicted without the profiler
    buffer_ns: int                   # CUPTI's own work (its `overhead` rows but lazy loading's), inside the span
    source: str                      # where the per-event constants come from
    launch_bound_only_under_profiler: bool
    launch_bound_kept: bool = False  # launch-bound under the profiler, and still idling LAUNCH_KEPT_IDLE without it
    first_step: int = 0              # N of the first ProfilerStep#N recorded: above 0, a schedule was in use already
    fitted_host: bool = True         # recorded on the kind of GPU host the per-event costs were fitted on (FITTED_ON)

    @property
    def slowdown(self) -> float:
        """How much longer the traced work took under the profiler (predicted)."""
        return self.profiled_ns / self.unprofiled_ns if self.unprofiled_ns else 1.0

    @property
    def off_host_error(self) -> tuple[float, float, int]:
        """The fit's error off its host: the measured slowdown over the predicted one, p5 and p95, and the captures."""
        return OFF_HOST_LOW, OFF_HOST_HIGH, OFF_HOST_CAPTURES

    @property
    def slowdown_range(self) -> tuple[float, float]:
        """Off the fitted host, the slowdown the fit's error on the H100 captures puts 9 in 10 within (never under
        1.0x); on it, the slowdown itself."""
        if self.fitted_host:
            return self.slowdown, self.slowdown
        return max(1.0, self.slowdown * OFF_HOST_LOW), self.slowdown * OFF_HOST_HIGH

    @property
    def worth_saying(self) -> bool:
        big = self.profiled_ns - self.unprofiled_ns >= PROFILER_NAMED_NS
        # (a launch-bound span that falls under the overhead-bound share without the profiler is worth the words either
        # way: withdrawn, or kept with less to gain)
        return big and (self.slowdown >= PROFILER_NAMED or self.launch_bound_only_under_profiler
                        or self.launch_bound_kept)

    @property
    def idle_differs(self) -> bool:
        return abs(self.idle_share - self.unprofiled_idle_share) >= IDLE_DIFFERS

    @property
    def buffer_worth_naming(self) -> bool:
        return self.buffer_ns >= BUFFER_NAMED_NS and self.buffer_ns >= BUFFER_NAMED_SHARE * self.profiled_ns


def analyze(trace: Trace, levers, idle_share: float, regime: Regime, dominant: Cause | None,
            span: tuple[int, int] | None = None) -> ProfilerOverhead | None:
    """`levers`: tracetriage.analyzers.whatif.predict.Levers (its unprofiled run); None where there is no replay."""
    run = getattr(levers, "unprofiled", None)
    if run is None or not run.replay_ns or not run.unprofiled_ns:
        return None
    # the replay's own idle share may differ from the report's a little: the report's share moves by what the
    # replay says the profiler's cost changes
    bare_idle = float(np.clip(idle_share + run.kernel_idle_share - run.replay_idle_share, 0.0, 1.0))
    only_profiled, kept = launch_verdict(regime, dominant, bare_idle)
    return ProfilerOverhead(profiled_ns=run.replay_ns, unprofiled_ns=run.unprofiled_ns, host_ns=run.cost.host_ns,
                            ops=run.cost.ops, calls=run.cost.calls, idle_share=idle_share,
                            unprofiled_idle_share=bare_idle, buffer_ns=_buffer_ns(trace, span),
                            source=run.cost.source, launch_bound_only_under_profiler=only_profiled,
                            launch_bound_kept=kept, first_step=first_profiler_step(trace),
                            fitted_host=FITTED_ON in (trace.device_name() or ""))


def first_profiler_step(trace: Trace) -> int:
    """N of the first ProfilerStep#N the trace records (0 where it has none): the steps before it ran under the
    profiler's schedule (wait, warm-up) without being recorded, so a schedule is in use already."""
    numbers = [int(n[len(PROFILER_STEP):]) for n in trace.names
               if n.startswith(PROFILER_STEP) and n[len(PROFILER_STEP):].isdigit()]
    return min(numbers, default=0)


def launch_verdict(regime: Regime, dominant: Cause | None, bare_idle: float) -> tuple[bool, bool]:
    """(withdrawn, kept): a launch-bound verdict (an overhead-bound span whose idle is mostly launch overhead) whose
    GPU would idle OVERHEAD_IDLE_SHARE or less without the profiler holds only under it where it would idle under
    LAUNCH_KEPT_IDLE; from there to OVERHEAD_IDLE_SHARE its own numbers keep it, with less to gain."""
    launch_bound = regime is Regime.OVERHEAD and dominant is Cause.LAUNCH_OVERHEAD and bare_idle <= OVERHEAD_IDLE_SHARE
    withdrawn = launch_bound and bare_idle < LAUNCH_KEPT_IDLE
    return withdrawn, launch_bound and not withdrawn


def _buffer_ns(trace: Trace, span: tuple[int, int] | None) -> int:
    ev = trace.ev
    rows = profiler_own_rows(trace)
    if span is not None:
        rows = rows[(ev.end[rows] > span[0]) & (ev.start[rows] < span[1])]
    return int(np.sum(ev.end[rows] - ev.start[rows]))


def unprofiled_differs(profiled_ratio: float, unprofiled_ratio: float | None, ranked: bool = False) -> bool:
    """Worth saying beside the profiled ratio: far enough from it, or (`ranked`) it chose the fix."""
    return unprofiled_ratio is not None and (ranked or abs(unprofiled_ratio - profiled_ratio) >= RATIO_DIFFERS)
