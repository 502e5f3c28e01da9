"""Timing syncs: the syncs a measurement makes, not the workload.

A benchmark times a region by making the host wait for the device at its end, so the region's wall time is the GPU's:
`with record_function("bench"): fn(); torch.cuda.synchronize()` repeated, or two CUDA events recorded around the work
and the second one waited on (`start.record(); fn(); end.record(); end.synchronize(); start.elapsed_time(end)`).
Removing such a sync changes what is measured, not the code measured: it is no fix to propose
(transformer_nuggets' qlora bench was told "remove or defer the syncs ... −9%" for the sync closing each timed
iteration, beside a dequantize holding half its kernel time).

Two shapes, read from what the timeline shows:
1. a bare sync (device, stream or event; no copy, nothing read back) called straight from Python (no op around it)
   that is the last call of a named range repeated at least twice, each repetition launching a program (kernels of
   PROGRAM_KERNELS names or more) and closed so;
2. an event sync waiting on the second of two event records that bracket launched work, no sync between them: an
   elapsed_time() pair. A record immediately waited on with no start event before the work (a per-iteration
   `event.record(); event.synchronize()`) is a sync like any other, the workload's.
A sync inside the range before its end, a per-iteration sync no named range closes, and timing inside the workload's
step (a profiler step, or a repeated range, holding several timed regions: per-op timing with host clocks) stay the
workload's.

Input: a Trace. Output: timing_syncs(trace), the rows of those sync calls; bare_syncs(trace), every sync that reads
nothing back, called straight from Python (analyses.idle: the host's work after one cannot need its result).
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model import runtime_calls as rc
from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.last_trace import last_trace
from tracetriage.analyzers.model.names import name_tests
from tracetriage.analyzers.model.op_extents import NO_EXTENTS, op_extents
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import DRIVER, KERNEL, NONE, RUNTIME, USER_ANNOTATION, Trace

# waits for the device and reads nothing back: what a timer calls (a copy's sync brings a value the code needs)
BARE_SYNCS = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                        "cudaThreadSynchronize", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
                        "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipCtxSynchronize"})
EVENT_SYNCS = frozenset({"cudaEventSynchronize", "cuEventSynchronize", "hipEventSynchronize"})
EVENT_RECORDS = frozenset({"cudaEventRecord", "cudaEventRecordWithFlags", "cuEventRecord", "cuEventRecordWithFlags",
                           "hipEventRecord", "hipEventRecordWithFlags"})
MIN_REPEATS = 2     # one region closed by a sync is a script's end; a repeated one is a timing loop
# A benchmark's iteration runs a program (a forward: its products, activations, casts): kernels of two names or more.
# A range around one kernel's launches (one op, once or a few times) closed by a sync is an op timed by hand with host
# clocks inside the loop, the loop's to remove (the sample library's smell-sync-explicit, one matmul a 'timed_op';
# probe-sync-stream, three of one GEMM an 'iteration').
PROGRAM_KERNELS = 2


@last_trace
def timing_syncs(trace: Trace) -> np.ndarray:
    """Rows of the sync calls that close a timed region (shape 1) or wait on an elapsed_time() pair (shape 2)."""
    ev = trace.ev
    calls = _host_calls(trace)
    if not len(calls):
        return np.empty(0, np.int64)
    calls = calls[np.argsort(ev.start[calls], kind="stable")]
    bare, event_sync, record, launch = name_tests(trace, calls, BARE_SYNCS.__contains__, EVENT_SYNCS.__contains__,
                                                  EVENT_RECORDS.__contains__, rc.is_launch)
    bare &= ~_inside_an_op(trace, calls)
    found = np.union1d(_closing_range_syncs(trace, calls, bare, launch),
                       _event_pair_syncs(trace, calls, event_sync, record, launch)).astype(np.int64)
    return found[~_several_in_one_step(trace, found)]


@last_trace
def bare_syncs(trace: Trace) -> np.ndarray:
    """Rows of the bare syncs called straight from Python (torch.cuda.synchronize(), stream.synchronize(),
    event.synchronize()): they read nothing back, so the host's work after one cannot need its result."""
    calls = _host_calls(trace)
    if not len(calls):
        return np.empty(0, np.int64)
    bare = name_tests(trace, calls, BARE_SYNCS.__contains__)[0]
    return np.sort(calls[bare & ~_inside_an_op(trace, calls)])


def _host_calls(trace: Trace) -> np.ndarray:
    """Rows of the runtime and driver calls, in trace order."""
    return np.flatnonzero(any_of(trace.ev.cat, (RUNTIME, DRIVER)))


def _repeated_ranges(trace: Trace) -> np.ndarray:
    """Rows of the named ranges whose name comes MIN_REPEATS times or more (a loop's units)."""
    ev = trace.ev
    ranges = np.flatnonzero(ev.cat == USER_ANNOTATION)
    if not len(ranges):
        return ranges
    _, inverse, counts = np.unique(ev.name[ranges], return_inverse=True, return_counts=True)
    return ranges[counts[inverse] >= MIN_REPEATS]


def _several_in_one_step(trace: Trace, syncs: np.ndarray) -> np.ndarray:
    """Per sync: a unit of the loop (a profiler step, or a named range that repeats) holds it and another such sync:
    the timing is inside the workload's step, instrumentation the step pays every time (the sample library's
    smell-sync-explicit: 24 'timed_op' ranges a ProfilerStep, each closed by torch.cuda.synchronize()), the step's
    to remove, not a benchmark's measurement of the whole."""
    ev = trace.ev
    out = np.zeros(len(syncs), bool)
    if len(syncs) < 2:
        return out
    ranges = np.flatnonzero(ev.cat == USER_ANNOTATION)
    steps = ranges[[trace.names[i].startswith(PROFILER_STEP) for i in ev.name[ranges].tolist()]]
    t = ev.start[syncs]
    for r in np.union1d(_repeated_ranges(trace), steps).tolist():
        inside = (ev.tid[syncs] == ev.tid[r]) & (t >= ev.start[r]) & (ev.end[syncs] <= ev.end[r])
        if inside.sum() >= MIN_REPEATS:
            out |= inside
    return out


def _inside_an_op(trace: Trace, calls: np.ndarray) -> np.ndarray:
    """Per call: a cpu_op on its thread encloses it (aten::item's sync is the op's, not a timer's)."""
    ev = trace.ev
    extents = op_extents(trace)
    out = np.zeros(len(calls), bool)
    for tid in distinct(ev.tid[calls]).tolist():
        s, e, _ = extents.get(int(tid), NO_EXTENTS)
        m = np.flatnonzero(ev.tid[calls] == tid)
        if not len(s):
            continue
        k = np.searchsorted(s, ev.start[calls[m]], side="right") - 1
        out[m] = (k >= 0) & (ev.start[calls[m]] < e[np.maximum(k, 0)])
    return out


def _closing_range_syncs(trace: Trace, calls: np.ndarray, bare: np.ndarray, launch: np.ndarray) -> np.ndarray:
    """Shape 1: per named range repeated MIN_REPEATS times or more, each repetition that launched work and whose last
    call on its thread is a bare sync from Python; kept when MIN_REPEATS repetitions or more are closed so.

    Linear in the calls: each repetition's calls are one slice of its thread's calls in time order, found by a binary
    search (a 942k-event trace holds ~330 repeated ranges over ~300k runtime calls: a scan of every call per range
    took 0.53 s)."""
    ev = trace.ev
    ranges = _repeated_ranges(trace)
    if not len(ranges):
        return np.empty(0, np.int64)
    # 1. the calls by thread, then by start (`calls` come by start: a stable sort keeps that order in each thread)
    order = np.argsort(ev.tid[calls], kind="stable")
    rows, is_bare, launched = calls[order], bare[order], launch[order]
    c_tid, c_start, c_end = ev.tid[rows], ev.start[rows], ev.end[rows]
    launches_before = np.concatenate(([0], np.cumsum(launched)))        # launches among the first i calls
    # 2. per repetition: its thread's calls starting inside it; the last of them that also ends inside it
    seg_lo = np.searchsorted(c_tid, ev.tid[ranges], side="left")
    seg_hi = np.searchsorted(c_tid, ev.tid[ranges], side="right")
    lo = np.empty(len(ranges), np.int64)
    hi = np.empty(len(ranges), np.int64)
    for tid in distinct(ev.tid[ranges]).tolist():
        m = np.flatnonzero(ev.tid[ranges] == tid)
        a, b = int(seg_lo[m[0]]), int(seg_hi[m[0]])
        lo[m] = a + np.searchsorted(c_start[a:b], ev.start[ranges[m]], side="left")
        hi[m] = a + np.searchsorted(c_start[a:b], ev.end[ranges[m]], side="right")
    last = hi - 1
    for i in np.flatnonzero((last >= lo) & (c_end[np.maximum(last, 0)] > ev.end[ranges])).tolist():
        while last[i] >= lo[i] and c_end[last[i]] > ev.end[ranges[i]]:     # (rare: a call running past the end)
            last[i] -= 1
    # 3. closed by a bare sync, with work launched before it inside the repetition
    ok = last >= lo
    ok[ok] = is_bare[last[ok]] & (launches_before[last[ok]] > launches_before[lo[ok]])
    cand = np.flatnonzero(ok)
    if not len(cand):
        return np.empty(0, np.int64)
    # 4. ... and running a program: its calls launched kernels of PROGRAM_KERNELS names or more
    kern = np.flatnonzero(ev.cat == KERNEL)
    k_call = trace.launch_of[kern] if len(kern) else np.empty(0, np.int64)
    kern, k_call = kern[k_call != NONE], k_call[k_call != NONE]
    by = np.lexsort((ev.start[k_call], ev.tid[k_call]))
    kern, k_call = kern[by], k_call[by]
    k_tid, k_start, k_end = ev.tid[k_call], ev.start[k_call], ev.end[k_call]
    closing = []
    for i in cand.tolist():
        r = ranges[i]
        a = np.searchsorted(k_tid, ev.tid[r], side="left")
        b = np.searchsorted(k_tid, ev.tid[r], side="right")
        j0 = a + np.searchsorted(k_start[a:b], ev.start[r], side="left")
        j1 = a + np.searchsorted(k_start[a:b], ev.end[r], side="right")
        names = ev.name[kern[j0:j1][k_end[j0:j1] <= ev.end[r]]]
        if len(distinct(names)) >= PROGRAM_KERNELS:
            closing.append(i)
    # 5. kept per range name where MIN_REPEATS repetitions or more are closed so
    closing_at = np.asarray(closing, np.int64)
    if not len(closing_at):
        return np.empty(0, np.int64)
    names, counts = np.unique(ev.name[ranges[closing_at]], return_counts=True)
    kept = np.isin(ev.name[ranges[closing_at]], names[counts >= MIN_REPEATS])
    return np.sort(rows[last[closing_at[kept]]]).astype(np.int64)


def _event_pair_syncs(trace: Trace, calls: np.ndarray, event_sync: np.ndarray, record: np.ndarray,
                      launch: np.ndarray) -> np.ndarray:
    """Shape 2: an event sync whose last record before it (the end event) follows another record (the start event)
    with work launched between them and no sync between them."""
    ev = trace.ev
    any_sync = np.isin(ev.name[calls], [i for i, n in enumerate(trace.names) if n in rc.SYNC_CALLS])
    found = []
    for tid in distinct(ev.tid[calls[event_sync]]).tolist():
        on = np.flatnonzero(ev.tid[calls] == tid)
        recs = on[record[on]]
        for j in on[event_sync[on]].tolist():
            k = int(np.searchsorted(recs, j))           # the records before it: recs[:k]
            if k < 2:
                continue
            start, end = recs[k - 2], recs[k - 1]
            between = on[np.searchsorted(on, start, side="right"):np.searchsorted(on, end, side="left")]
            if launch[between].any() and not any_sync[between].any():
                found.append(calls[j])
    return np.asarray(found, np.int64)
