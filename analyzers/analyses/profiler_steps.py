"""Which of the profiler's own `ProfilerStep#N` ranges are steps of the user's loop.

In any trace, torch.profiler opens a ProfilerStep#N range at each `prof.step()`. Two kinds of range are no
iteration: the stub the profiler opens after the last `prof.step()` and closes at once on stop (it launches
nothing and lasts microseconds), and a first or last range the profiler's start or stop cut through (it holds a
sliver of an iteration: a few µs of host time and almost none of the GPU work the other ranges launch). What
would make the rule fire falsely: a loop whose real steps differ by tenfold in both wall time and launches (a
prefill beside one decode step launches as many kernels per layer, so it does not).
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.trace import GPU_CATS, NONE, Trace

EMPTY_STEP_SHARE = 0.01     # a ProfilerStep launching nothing and under 1% of the longest is the profiler's stub
FRAGMENT_SHARE = 0.1        # a first or last ProfilerStep under a tenth of the others' median wall and launches:
                            # the profiler's start or stop cut it


def working_profiler_steps(trace: Trace, prof: np.ndarray) -> np.ndarray:
    """The ProfilerStep#N ranges that are steps: a range that launches no GPU work and lasts under
    EMPTY_STEP_SHARE of the longest is the profiler's closing stub, no iteration (heldout-user3 abenich_ariel: a
    38 µs ProfilerStep#4 beside the 4.87 ms step of work, their '2.47 ms median' describing neither). The first
    or last range is a fragment cut off by the profiler's start or stop when it is short AND holds almost none of
    the steps' GPU work: under FRAGMENT_SHARE of the other ranges' median wall and of their median launches
    (heldout-user11 h2d_pageable: ProfilerStep#3 1.07 ms with the copy and both kernels, #4 an 18 µs tail that
    holds no op, read as '2 steps: 554.5 µs per step'). A short step of a loop (a decode step beside its
    prefill) launches its own kernels, so it stays."""
    ev = trace.ev
    walls = ev.end[prof] - ev.start[prof]
    launches = _launches_in(trace, prof)
    empty = np.array([walls[i] < EMPTY_STEP_SHARE * walls.max() and not launches[i] for i in range(len(prof))],
                     bool)
    if len(prof) >= 2:
        for i in {0, len(prof) - 1}:
            rest = np.delete(np.arange(len(prof)), i)
            if walls[i] < FRAGMENT_SHARE * np.median(walls[rest]) \
                    and launches[i] < FRAGMENT_SHARE * np.median(launches[rest]):
                empty[i] = True
    return prof[~empty] if not empty.all() else prof


def _launches_in(trace: Trace, ranges: np.ndarray) -> np.ndarray:
    """For each range, how many GPU activities were launched from a call inside its time range: the launching calls'
    starts found once and sorted, each range two binary searches (a trace's ProfilerSteps by the hundred, not one
    pass over the events each)."""
    ev = trace.ev
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS) & (trace.launch_of != NONE))
    call_start = np.sort(ev.start[trace.launch_of[gpu]])
    lo, hi = ev.start[ranges], ev.end[ranges]
    return (np.searchsorted(call_start, hi, side="left")
            - np.searchsorted(call_start, lo, side="left")).astype(np.int64)
