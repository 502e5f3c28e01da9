"""The traced window around the GPU span: where the host's time outside it dwarfs the span the report splits.

Input: the trace and the report's GPU span (first to last GPU activity). Output: a `TracedWindow` (or None where
the window adds little to the span).

The Idle and Regime lines speak of the GPU span: from the first kernel or copy to the last. A profiler window that
opens long before the first kernel (a notebook profiling one iteration of `for x in loader`, the DataLoader's first
`__next__` starting 16 workers; a script profiled from its first line) holds host time the span leaves out, and the
GPU is busy a sliver of the window. In any trace this construct shows as host events (ops, runtime calls, user
ranges) whose first start or last end lies outside the GPU span by more than the span itself: the window is at
least twice the span (OUTSIDE_DWARFS). The part of that outside time inside a DataLoader's `__next__` ranges is
named, since that is whose code holds it.

It would fire falsely where the host events outside the span are not waited on: a trace whose last op runs after
the GPU finished (a report printed, a checkpoint written) is still time the window holds and the GPU does not use,
so "the GPU is busy X of the window" stays true; what the clause never says is that the time is a cause of the
GPU's idle inside its span (those shares stay the span's).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, USER_ANNOTATION, Trace

# the time outside the GPU span at least this many times the span: the span's own shares describe under half of
# the window, and a reader of them alone misses what the window mostly holds
OUTSIDE_DWARFS = 1.0
LOADER_NEXT = "enumerate(DataLoader)#"     # the ranges torch.profiler records around each DataLoader __next__


@dataclass(frozen=True)
class TracedWindow:
    traced_ns: int        # first to last recorded event, host and GPU
    gpu_span_ns: int      # first to last GPU activity (the report's span)
    busy_ns: int          # kernels busy in the span
    loader_ns: int        # of the time outside the span, the part inside DataLoader __next__ ranges

    @property
    def outside_ns(self) -> int:
        return max(self.traced_ns - self.gpu_span_ns, 0)

    @property
    def busy_share(self) -> float:
        return self.busy_ns / self.traced_ns if self.traced_ns else 0.0


def traced_window(trace: Trace, gpu_rows: np.ndarray, busy_ns: int) -> TracedWindow | None:
    """The window around the GPU span, where the time outside it is OUTSIDE_DWARFS times the span or more."""
    ev = trace.ev
    if not len(gpu_rows) or not len(ev.start):
        return None
    lo, hi = int(ev.start.min()), int(ev.end.max())
    g_lo, g_hi = int(ev.start[gpu_rows].min()), int(ev.end[gpu_rows].max())
    span, traced = g_hi - g_lo, hi - lo
    if span <= 0 or traced - span < OUTSIDE_DWARFS * span:
        return None
    ranges = np.flatnonzero((ev.cat == USER_ANNOTATION) | (ev.cat == CPU_OP))
    loader = ranges[name_flags(trace, ranges, lambda n: n.startswith(LOADER_NEXT))] if len(ranges) else ranges
    loader_ns = 0
    if len(loader):
        s, e = iv.union(ev.start[loader], ev.end[loader])
        inside = iv.total(*iv.intersect(s, e, np.array([g_lo], np.int64), np.array([g_hi], np.int64)))
        loader_ns = iv.total(s, e) - inside
    return TracedWindow(traced_ns=traced, gpu_span_ns=span, busy_ns=busy_ns, loader_ns=int(loader_ns))
