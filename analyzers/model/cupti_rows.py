"""CUPTI's `overhead` rows: the profiler's own work, or the CUDA driver loading the program's own kernels.

Kineto writes both under one category. "Activity Buffer Request", "Buffer Flush", "Instrumentation" and
"Resource" are the profiler's (no change to the program removes them). "Runtime Triggered Module Loading" and
"Lazy Function Loading" are CUDA's lazy loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 11.7) of the
program's kernels on their first launch: one-time set-up that warm-up or CUDA_MODULE_LOADING=EAGER moves out of
the run (issue 33: 4.3 of "5.22 ms of activity-buffer requests" were module loading).
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import OVERHEAD

LAZY_LOADING_ROWS = frozenset({"Runtime Triggered Module Loading", "Lazy Function Loading"})


def _overhead_rows(trace) -> np.ndarray:
    return np.flatnonzero(trace.ev.cat == OVERHEAD)


def profiler_own_rows(trace) -> np.ndarray:
    """The `overhead` rows that are the profiler's own work (every one but lazy loading's)."""
    rows = _overhead_rows(trace)
    return rows[~name_flags(trace, rows, LAZY_LOADING_ROWS.__contains__)] if len(rows) else rows


def lazy_loading_rows(trace) -> np.ndarray:
    """The `overhead` rows in which CUDA loads the program's kernels on their first launch."""
    rows = _overhead_rows(trace)
    return rows[name_flags(trace, rows, LAZY_LOADING_ROWS.__contains__)] if len(rows) else rows
