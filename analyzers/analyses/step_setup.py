"""Whether a step pays one-time set-up inside it: what keeps a slow first step apart from the loop's median
(analyses.steps).

Set-up shows in any trace as either an API call that is set-up whatever its length (allocation, module loading,
graph capture, stream creation), or an op whose first call on its shapes lasts SETUP_FIRST_CALL times its later calls
on the same shapes, for at least SETUP_FIRST_FLOOR_NS (lazy kernel loading, cuBLAS handles, torch.compile's first
call). Same op on the same shapes: a prefill's ops are slower than decode's on their own account, which is no set-up.
What would make it fire falsely: an op whose first call is slow on its own account (a larger input) in a trace that
recorded no shapes, where the key is the op's name alone.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, DRIVER, PYTHON, RUNTIME, Trace

SETUP_FIRST_CALL = 10       # an op whose first call lasts this many times its later calls is paying set-up
SETUP_FIRST_FLOOR_NS = 1_000_000   # ... and for at least 1 ms

# API calls that are set-up whatever their length: allocation, module loading, graph capture.
SETUP_CALL_PREFIXES = ("cudaMalloc", "cuMemAlloc", "cudaGraphInstantiate", "cuGraphInstantiate",
                       "cudaStreamBeginCapture", "cuModuleLoad", "cuLibraryLoad", "cudaStreamCreate", "hipMalloc",
                       "hipGraphInstantiate", "hipStreamBeginCapture", "hipModuleLoad", "hipStreamCreate")


KERNELS_MADE_IT = 0.5   # a slow first step whose kernels' busy time above the loop's holds this share of its extra wall
                        # is longer by its own work, not by set-up


def kernels_made_it(first, rest, median: float) -> bool:
    """The step's extra wall over the loop's median is mostly its kernels' busy time above the loop steps' median: a
    step longer by its own work (a prefill, 87% busy) pays no set-up in its wall, whatever first call its host made
    behind the queued kernels (heldout-user17 gptoss3090b: a 3-prompt prefill step, 16.3 ms busy of 18.5 ms, read
    'paying set-up, kept apart'). Set-up shows as time the kernels do not fill: the GPU's idle, or host time before
    the step's first launch."""
    loop = [s.kernel_busy_ns for s in rest if s.regular] or [s.kernel_busy_ns for s in rest]
    return first.kernel_busy_ns - float(np.median(loop)) >= KERNELS_MADE_IT * (first.wall_ns - median)


def pays_setup(trace: Trace, lo: int, hi: int, later_from: int) -> bool:
    """The window [lo, hi) holds a set-up API call, or an op whose first call on its shapes lasts SETUP_FIRST_CALL
    times (and SETUP_FIRST_FLOOR_NS) the median of its calls from later_from on."""
    ev = trace.ev
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)) & (ev.start >= lo) & (ev.start < hi))
    if len(calls) and name_flags(trace, calls, lambda n: n.startswith(SETUP_CALL_PREFIXES)).any():
        return True
    ops = np.flatnonzero(any_of(ev.cat, (CPU_OP, PYTHON)))
    first = ops[(ev.start[ops] >= lo) & (ev.start[ops] < hi)]
    later = ops[ev.start[ops] >= later_from]
    long_first = first[ev.end[first] - ev.start[first] >= SETUP_FIRST_FLOOR_NS]
    # the same op on the same shapes: a prefill's ops are slower than decode's on their own account
    key = ev.name.astype(np.int64) * (len(trace.shapes_raw) + 2) + (ev.shape.astype(np.int64) + 1)
    if not len(long_first) or not len(later):
        return False
    # the later calls sorted by (key, duration) once: each first call's key finds its later calls' median by two
    # binary searches, not a scan over every later op per key (a cold step holds hundreds of long first calls)
    later_key, later_dur = key[later], ev.end[later] - ev.start[later]
    order = np.lexsort((later_dur, later_key))
    later_key, later_dur = later_key[order], later_dur[order]
    first_key, first_dur = key[long_first], ev.end[long_first] - ev.start[long_first]
    for k in distinct(first_key):
        lo, hi = np.searchsorted(later_key, k, "left"), np.searchsorted(later_key, k, "right")
        if hi == lo:
            continue
        median = (float(later_dur[(lo + hi - 1) // 2]) + float(later_dur[(lo + hi) // 2])) / 2
        if first_dur[first_key == k].max() >= SETUP_FIRST_CALL * max(median, 1.0):
            return True
    return False
