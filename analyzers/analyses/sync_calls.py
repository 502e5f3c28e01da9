"""Which host calls wait on the device, for analyses.idle: the copy calls that blocked the host until their copy
finished (and whether they feed the device), and the calls at the profiled window's edges, whose syncs serialise no
traced work."""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CLOCK_TOL_NS, GPU_CATS, MEMCPY, NONE, Trace


def at_window_edge(trace: Trace, call_rows: np.ndarray) -> np.ndarray:
    """Per API call: it lies before the trace's first launch call or after its last. A sync there serialises no
    traced host work with traced GPU work: at the start it drains what was queued before the profiler started (the
    harness's torch.cuda.synchronize() at the first active step, the context's first cudaFree), at the end it waits
    for the window's last kernels. The idle after a drain at the window's start is the host starting the loop, not
    a sync of the workload (fresh4 preprocess_compiled_roof-before: 'synchronization 12%: 7 drains after
    cudaDeviceSynchronize x7' from three harness syncs at the window's edges, the workload syncing nowhere)."""
    ev = trace.ev
    issued = trace.launch_of[any_of(ev.cat, GPU_CATS)]
    issued = issued[issued != NONE]     # the calls that issued traced GPU work (launches, copies, memsets)
    if not len(issued):
        return np.zeros(len(call_rows), bool)
    first, last = int(ev.start[issued].min()), int(ev.end[issued].max())
    return (ev.end[call_rows] <= first + CLOCK_TOL_NS) | (ev.start[call_rows] >= last - CLOCK_TOL_NS)


def blocking_copies(trace: Trace, call_rows: np.ndarray, name_is_copy: np.ndarray,
                     name_is_sync: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per API call: a copy call that blocked the host until its copy finished, and whether it (or a stream sync
    of a host->device copy's op) feeds the device. Each call's copies found by one sort, not a dict per copy."""
    ev = trace.ev
    blocking_copy = np.zeros(len(call_rows), dtype=bool)
    h2d = np.zeros(len(call_rows), dtype=bool)
    gpu_rows = np.flatnonzero(ev.cat == MEMCPY)
    launch = trace.launch_of[gpu_rows]
    linked, launch = gpu_rows[launch != NONE], launch[launch != NONE]
    copies = np.flatnonzero(name_is_copy)
    if not len(linked) or not len(copies):
        return blocking_copy, h2d
    # per launching call: the latest end of its copies, and its last copy (in row order) names the kind
    order = np.argsort(launch, kind="stable")
    launch, linked = launch[order], linked[order]
    first = np.flatnonzero(np.r_[True, launch[1:] != launch[:-1]])
    callers, copy_end = launch[first], np.maximum.reduceat(ev.end[linked], first)
    kind_row = linked[np.r_[first[1:], len(linked)] - 1]
    r = call_rows[copies]
    at = np.minimum(np.searchsorted(callers, r), len(callers) - 1)
    has = callers[at] == r
    kind = kind_row[at]
    htod = has & name_flags(trace, kind, lambda n: "HtoD" in n)
    blocks = has & (ev.end[r] + CLOCK_TOL_NS >= copy_end[at]) & (
        name_flags(trace, r, lambda n: "Async" not in n) | name_flags(trace, kind, lambda n: "Pageable" in n))
    blocking_copy[copies[blocks]] = True
    h2d[copies[blocks]] = htod[blocks]
    # A stream sync that belongs to a host->device copy (`.to("cuda")` without non_blocking:
    # cudaMemcpyAsync then cudaStreamSynchronize, one op, one External id) waits for the
    # copy it just issued: the idle it causes is part of the transfer, not a drain.
    h2d_ops = ev.ext[r[htod & (ev.ext[r] != NONE)]]
    if len(h2d_ops):
        syncs = np.flatnonzero(name_is_sync)
        h2d[syncs[np.isin(ev.ext[call_rows[syncs]], h2d_ops)]] = True
    return blocking_copy, h2d
