"""A healthy step: no lever saves anything worth a run once the profiler's own cost is gone.

What any trace of it shows: a Next lever the replay prices above the floor on the traced span (LEVER_FLOOR), whose
saving without the profiler (the same replay with the profiler's per-event host cost taken out: whatif.predict's
unprofiled run) falls under that floor, and no other fix the trace calls for does better without the profiler. The
traced saving is then the profiler's own: it recorded each op and launch, slowed the host, and left the GPU idle
between kernels it would otherwise have queued back to back (a GPU-bound training step whose kernels run 16 µs
while the profiler makes each launch cost the host 5 µs more). Then there is no one-line lever, and the Next says so
with the figures, naming the lever it would have offered and its saving without the profiler. A restructure (host
work moved off the critical path, fusion by hand) that still saves a little without the profiler is named beside it
as what is left, where it saves under HEAVY_AT_MOST: a rewrite for a few percent is not the week's experiment.

What would make it fire falsely: a profiler-cost model that overstates the per-event cost on this host (the
unprofiled saving then reads too small: the figure is the what-if's estimate, said as one, not measured); a lever
whose saving does not depend on the host at all (faster kernels, fewer bytes) priced under the floor on both spans
(no lever then: right). Not applied to a warm-up, a graph-capture profile, or a communication-bound span: their
savings are not host dispatch.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tracetriage.analyzers.model.verdicts import Experiment, Regime
from tracetriage.analyzers.whatif.levers import LEVERS

HEAVY_AT_MOST = 0.10   # a restructure saving this share of the span or more without the profiler is the Next itself
CHECKED = 4      # the fixes (best traced saving first) whose unprofiled saving is replayed: each is one more replay
SKIP = (Experiment.WARM_UP, Experiment.PROFILE_REPLAYS, Experiment.OVERLAP_COMM, Experiment.FIND_STRAGGLER)
# The regime's own Next where no lever is left. An unknown regime's is finding the bound: the lever's kind kept
# without its lever would name a cause the idle may not hold (a host-work Next on a trace with no host idle).
REGIME_KIND = {Regime.COMPUTE: Experiment.CHEAPER_ARITHMETIC, Regime.MEMORY: Experiment.FEWER_BYTES,
               Regime.LATENCY: Experiment.BETTER_KERNELS, Regime.UNKNOWN: Experiment.FIND_THE_BOUND}


@dataclass(frozen=True)
class Healthy:
    offered: object                # the LeverChoice the Next would have named, with its unprofiled_ratio
    heavy: object | None           # the restructure that saves most without the profiler (under HEAVY_AT_MOST), if any
    heavy_unprofiled: float        # ... its saving then (share of the span)
    unprofiled_ns: int             # the traced work without the profiler, by the what-if's estimate
    unprofiled_idle_share: float   # ... and the GPU's idle share then
    floor: float                   # the share under which no lever is worth naming


def no_lever_without_profiler(nx, levers, trace, choices, prof, regime: Regime, floor: float,
                              calls_for=lambda c: True):
    """The Next, or where the step is healthy (module docstring) the regime's Next with no lever and `healthy` set.
    `calls_for`: whether the report would weigh a choice as a fix (its cause holds enough of the idle)."""
    lv = nx.lever
    if lv is None or nx.kind in SKIP or lv.unprofiled_ratio is None or prof is None or levers is None:
        return nx
    if 1 - lv.unprofiled_ratio >= floor:
        return nx
    heavy, heavy_saving = None, 0.0
    others = [c for c in choices if c.lever != lv.lever and c.saving_ns >= floor * c.baseline_ns and calls_for(c)]
    for c in others[:CHECKED]:
        r = levers.unprofiled_ratio(trace, c.lever, c.only)
        if r is None:
            return nx       # cannot be asked: no verdict of health
        one_line = LEVERS[c.lever].one_line_for(c.assumption)
        if (one_line and 1 - r >= floor) or 1 - r >= HEAVY_AT_MOST:
            return nx       # another fix holds up without the profiler: not healthy
        if 1 - r >= floor and 1 - r > heavy_saving:
            heavy, heavy_saving = c, 1 - r
    kind = REGIME_KIND.get(regime, nx.kind)
    return dataclasses.replace(nx, kind=kind, cause=None, gain_share=0.0, lever=None, waste=None, headroom=None,
                               dominant=None, construct=None, close_call=None, then=None, knob_beside=None,
                               healthy=Healthy(lv, heavy, heavy_saving, prof.unprofiled_ns,
                                               prof.unprofiled_idle_share, floor))
