"""The Next reads the op table: re-done work (analyses.rework) leads where removing it bounds more than the fix the
replay priced.

The levers the replay prices act on idle time and kernel speed; none removes kernels a loop should not run. On a
busy GPU whose top op class re-does work (a concatenation regrown every call, an unmerged low-rank adapter) the
best lever may save a few percent, or only the profiler's own cost (triage.healthy), while one line removes most of
the kernel time. The re-done work's bound on the span is its saving's share of kernel time times the GPU's busy
share; it leads the Next where that bound passes the Next lever's saving (without the profiler where the replay
has that figure), and the lever, if any, is said after it.

A source of launches the step re-runs for nothing (weight norm recomputed each forward, a penalty's squares
over the parameters) is named first whatever the lever saves: it is one line, the lever a restructure, and the
launches it removes are part of what the lever would capture.

What would make it lead falsely: a bound that overstates the saving (a concatenation's kernels read the pieces from
cache, or the scale and add would stay after a merge): the bound is said as one, never as a prediction.
"""
from __future__ import annotations

import dataclasses

from tracetriage.analyzers.analyses import rework as rework_mod
from tracetriage.analyzers.model.rework import LAUNCH_KINDS, Rework
from tracetriage.analyzers.model.verdicts import Construct


def span_bound(rework: Rework, busy_share: float, launch_idle_share: float = 0.0) -> float:
    """The share of the span the re-done work's removal bounds: its kernel time is busy time at most; a launch
    source's launches hold at most their share of the launch-overhead idle besides."""
    launches = rework.launch_share * launch_idle_share if rework.kind in LAUNCH_KINDS else 0.0
    return rework.bound_share * busy_share + launches


def found(trace, kernel_rows, fw) -> Rework | None:
    """The re-done work of the trace's op table (analyses.rework), which reads no lever: the report finds it while the
    levers' child still replays them, and lead() weighs it against the Next once the levers are in."""
    trains = fw is not None and any(fw.share_of(c) is not None for c in (Construct.OPTIMIZER, Construct.BACKWARD))
    return rework_mod.find(trace, kernel_rows, trains)


def lead(nx, rework: Rework | None, busy_share: float, launch_idle_share: float = 0.0):
    """The Next with `rework` (found()'s) set where the re-done work bounds more than its lever saves (module
    docstring)."""
    if rework is None:
        return nx
    lv = nx.lever
    saving = 0.0 if lv is None else 1 - (lv.unprofiled_ratio if lv.unprofiled_ratio is not None
                                         else lv.predicted_ratio)
    bound = span_bound(rework, busy_share, launch_idle_share)
    # a launch source is a one-line removal named before the restructure that cuts every launch (CUDA graphs)
    if nx.healthy is None and bound <= saving and rework.kind not in LAUNCH_KINDS:
        return nx
    return dataclasses.replace(nx, rework=dataclasses.replace(rework, span_bound=bound))
