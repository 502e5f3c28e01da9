"""CUPTI's `overhead` rows: the profiler's own work, or the CUDA driver loading the program's own kernels.

Kineto writes both under one category. "Activity Buffer Request", "Buffer Flush", "Instrumentation" and
"Resource" are the profiler's (no change to the program removes them). "Runtime Triggered Module Loading" and
"Lazy Function Loading" are CUDA's lazy loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 11.7) of the
program's kernels on their first launch: one-time set-up that warm-up or CUDA_MODULE_LOADING=EAGER moves out of
the run (issue 33: 4.3 of "5.22 ms of activity-buffer requests" were module loading).

A CUPTI that cannot name the kind writes "Unrecognized". Such a row is lazy loading where the call around it needs a
kernel's module and records no activity a buffer would hold: cudaFuncGetAttributes, an occupancy query, a symbol's
address (MODULE_QUERIES), or the first launch of its kernel. Elsewhere it stays the profiler's. (CS521-mp2's cold
conv traces on an A10G: 56 such rows, 42-51 ms, 30 of them inside cudaFuncGetAttributes, read "the profiler's own
activity-buffer requests ... not your code".)
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.last_trace import last_trace
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.runtime_calls import is_launch
from tracetriage.analyzers.model.trace import DRIVER, NONE, OVERHEAD, RUNTIME

LAZY_LOADING_ROWS = frozenset({"Runtime Triggered Module Loading", "Lazy Function Loading"})
UNNAMED = "Unrecognized"
# calls that need a kernel's module loaded and launch nothing (so no activity record for a buffer to hold)
MODULE_QUERIES = ("cudaFuncGetAttributes", "cudaOccupancy", "cudaGetSymbolAddress", "cudaGetSymbolSize",
                  "cudaFuncSetAttribute", "cuFuncGetAttribute", "cuOccupancy", "cuModuleGetFunction")


def _overhead_rows(trace) -> np.ndarray:
    return np.flatnonzero(trace.ev.cat == OVERHEAD)


def profiler_own_rows(trace) -> np.ndarray:
    """The `overhead` rows that are the profiler's own work (every one but lazy loading's)."""
    rows = _overhead_rows(trace)
    return np.setdiff1d(rows, lazy_loading_rows(trace)) if len(rows) else rows


@last_trace
def lazy_loading_rows(trace) -> np.ndarray:
    """The `overhead` rows in which CUDA loads the program's kernels on their first launch (named so, or unnamed
    inside a call that needs a kernel's module)."""
    rows = _overhead_rows(trace)
    if not len(rows):
        return rows
    named = name_flags(trace, rows, LAZY_LOADING_ROWS.__contains__)
    unnamed = name_flags(trace, rows, UNNAMED.__eq__)
    if unnamed.any():
        unnamed[unnamed] = _inside_module_loading_calls(trace, rows[unnamed])
    return rows[named | unnamed]


def _inside_module_loading_calls(trace, rows: np.ndarray) -> np.ndarray:
    """Per overhead row: the runtime call around it in time (CUPTI writes these rows on a process of their own) is a
    module query or the first launch of its kernel."""
    ev = trace.ev
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    if not len(calls):
        return np.zeros(len(rows), bool)
    calls = calls[np.argsort(ev.start[calls], kind="stable")]
    loads = name_flags(trace, calls, lambda n: n.startswith(MODULE_QUERIES))
    launch = name_flags(trace, calls, is_launch)
    if launch.any():
        # the first launch of each kernel name (its module loads then)
        gpu = _gpu_of(trace, calls[launch])
        names = np.where(gpu != NONE, ev.name[np.maximum(gpu, 0)], -1)
        first = np.zeros(len(names), bool)
        _, at = np.unique(names, return_index=True)
        first[at] = True
        loads[np.flatnonzero(launch)[first & (names >= 0)]] = True
    s, e = ev.start[calls], np.maximum.accumulate(ev.end[calls])
    k = np.searchsorted(s, ev.start[rows], side="right") - 1
    inside = (k >= 0) & (ev.end[rows] <= e[np.maximum(k, 0)])
    # the call that holds the row: the latest starting before it that has not ended by its end
    held = np.zeros(len(rows), bool)
    for i in np.flatnonzero(inside).tolist():
        j = int(k[i])
        while j >= 0 and ev.end[calls[j]] < ev.end[rows[i]]:
            j -= 1
        held[i] = j >= 0 and bool(loads[j])
    return held


def _gpu_of(trace, calls: np.ndarray) -> np.ndarray:
    """The GPU activity each launch call launched (its first), NONE where none is linked."""
    ev = trace.ev
    acts = np.flatnonzero(trace.launch_of != NONE)
    out = np.full(len(calls), NONE, np.int64)
    if not len(acts):
        return out
    by_call = trace.launch_of[acts]
    order = np.lexsort((ev.start[acts], by_call))
    by_call, acts = by_call[order], acts[order]
    j = np.searchsorted(by_call, calls)
    ok = (j < len(by_call)) & (by_call[np.minimum(j, len(by_call) - 1)] == calls)
    out[ok] = acts[j[ok]]
    return out
