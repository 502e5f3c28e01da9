"""Work queued before the profiled window, and what of a step's window it held.

Input: a Trace (and the steps found in it). Output: per GPU activity, whether it was queued before the window;
per step, how long its window waited for that work to drain.

The profiler starts after its schedule's wait and warm-up steps, while the host has run ahead of the GPU: the
streams still hold work launched before the window. That work has no launch call in the trace and runs on its
stream ahead of every activity launched inside it; the first recorded step (its `cudaDeviceSynchronize`, its first
launch) waits for it. fno_default_float64-before (an H100) opened with 46.4 ms of it: its two ProfilerSteps read
78.9 and 31.6 ms, "55.2 ms per step" where each step took 31.6 ms of its own.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.trace import CLOCK_TOL_NS, GPU_CATS, NONE, Trace


class StepWindow(Protocol):
    """What drained_before_own reads of a step (analyses.steps.Step; a Protocol, so this module needs no import of
    the steps module that calls it)."""
    start_ns: int
    end_ns: int
    queued_kernels: int


def queued_before_window(trace: Trace) -> np.ndarray:
    """For each row: a GPU activity queued before the trace began. The host runs ahead of the GPU, so when the
    profiler starts (after its schedule's wait and warm-up steps) the stream still holds work launched before it:
    that work has no launch call in the trace and runs on its stream ahead of every activity launched inside the
    trace. (An activity with no launch call later on is a dropped record, not queued work.)"""
    ev = trace.ev
    out = np.zeros(len(ev), bool)
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS))
    if not len(gpu):
        return out
    linked = trace.launch_of[gpu] != NONE
    queue = ev.device[gpu].astype(np.int64) * (1 << 32) + ev.stream[gpu]   # a stream is its device's
    for q in distinct(queue):
        on = queue == q
        first = ev.start[gpu[on & linked]].min() if (on & linked).any() else None
        if first is not None:
            out[gpu[on & ~linked & (ev.start[gpu] < first)]] = True
    return out


def drained_before_own(trace: Trace, steps: Sequence[StepWindow]) -> np.ndarray:
    """Per step: how much of its window passed before the work queued ahead of the profiled window had drained
    (from its start to the last queued activity's end inside it); 0 where it drained none."""
    out = np.zeros(len(steps), np.int64)
    if not any(s.queued_kernels for s in steps):
        return out
    ev = trace.ev
    q = np.flatnonzero(queued_before_window(trace))
    for i, s in enumerate(steps):
        if not s.queued_kernels:
            continue
        mine = q[(ev.start[q] >= s.start_ns - CLOCK_TOL_NS) & (ev.start[q] < s.end_ns)]
        if len(mine):
            done = min(int(ev.end[mine].max()), s.end_ns)
            out[i] = max(done - s.start_ns, 0)
    return out
