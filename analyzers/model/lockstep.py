"""Launch calls that return when a kernel ends: the host waiting for the GPU inside a launch, not launch cost.

A kernel launch normally returns in a few µs, long before its kernel runs. It returns only when a kernel ends where
the host cannot queue more: the launch queue is full behind long kernels (the host far ahead), or the driver runs
launches in step with the device (a laptop's WDDM batching, CUDA_LAUNCH_BLOCKING=1). Any trace shows it as a launch
call, much longer than a launch, whose end lies within a few µs after the end of its own kernel or of the kernel
queued before it on the same stream (heldout-user13 compiled-graphs: foreach Adam's cudaLaunchKernel 7.207 -> 8.053 ms
around its own kernel 7.216 -> 8.051 ms). Such a call's time is the GPU's: counted as launch cost it makes a step
that is 87% busy look launch-bound and prices CUDA graphs on it; a faster kernel shortens it.

What would make it fire falsely: a slow launch (a first call loading its module) that ends by chance within
LOCKSTEP_TOL_NS of a kernel's end on its stream; LOCKSTEP_MIN_NS keeps ordinary launches out, and a first call's
module loading ends near a kernel's end seldom. A launch on an idle queue whose kernel ran inside the call is not
lockstep unless the call lasted LOCKSTEP_MIN_NS (its kernel must run most of it).
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.last_trace import last_trace
from tracetriage.analyzers.model.trace import KERNEL, NONE, Trace

LOCKSTEP_TOL_NS = 5_000      # returned this soon after the kernel's end (CUPTI's clocks agree to about 2 µs)
LOCKSTEP_MIN_NS = 50_000     # a launch call this long is not launching (launches take 2-20 µs)


def lockstep_awaited(trace: Trace, call_rows: np.ndarray) -> np.ndarray:
    """For each of these launch call rows, the kernel row it waited for (its own, or the one queued before it on its
    stream), NONE where it did not wait."""
    ev = trace.ev
    out = np.full(len(call_rows), NONE, np.int64)
    if not len(call_rows):
        return out
    long_ = (ev.end[call_rows] - ev.start[call_rows]) >= LOCKSTEP_MIN_NS
    if not long_.any():
        return out
    own, own_prev = _own_and_previous(trace)
    for i in np.flatnonzero(long_).tolist():
        c = int(call_rows[i])
        end, start = int(ev.end[c]), int(ev.start[c])
        for k in (int(own[c]), int(own_prev[c])):
            if k != NONE and 0 <= end - int(ev.end[k]) <= LOCKSTEP_TOL_NS and int(ev.end[k]) > start:
                out[i] = k
                break
    return out


@last_trace
def _own_and_previous(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Per event row, the (last) kernel a launch call launched and the kernel queued before that one on its
    (device, stream), NONE elsewhere: one sort of the kernels per trace, where the idle analysis and the levers'
    dependency graph both ask (before and after the levers' fork)."""
    ev = trace.ev
    own = np.full(len(ev), NONE, np.int64)
    own_prev = np.full(len(ev), NONE, np.int64)
    kern = np.flatnonzero(ev.cat == KERNEL)
    kern = kern[trace.launch_of[kern] != NONE]
    if not len(kern):
        return own, own_prev
    # kernels in stream order: each one's predecessor on its (device, stream)
    order = np.lexsort((ev.start[kern], ev.stream[kern], ev.device[kern]))
    kern = kern[order]
    same = np.r_[False, (ev.stream[kern][1:] == ev.stream[kern][:-1]) & (ev.device[kern][1:] == ev.device[kern][:-1])]
    prev = np.where(same, np.r_[NONE, kern[:-1]], NONE)
    own[trace.launch_of[kern]] = kern
    own_prev[trace.launch_of[kern]] = prev
    return own, own_prev
