"""Each host thread's top-level op extents, found once per trace for the analyses that ask them.

The idle analysis's host context (analyses.idle: which host stretches issue GPU work) and the library syncs'
outermost op around each wait (analyses.library_syncs) both ask, per thread, for the stretches its cpu_ops cover and
the outermost op of each: ~15 ms at 942k events (467k ops), asked twice in the report's process before this.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.last_trace import last_trace
from tracetriage.analyzers.model.trace import CPU_OP, Trace

NO_EXTENTS = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))


@last_trace
def op_extents(trace: Trace) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per tid with a cpu_op (keyed by tid alone, as the host context keys its threads): the disjoint extents its ops
    cover (starts, ends: iv.union's) and the outermost op of each (its first row: rows sort by (start, -end)).
    A thread without an op is absent (NO_EXTENTS). Callers only read it."""
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    tids = ev.tid[ops]
    out = {}
    for tid in distinct(tids).tolist():
        o = ops[tids == tid]
        s, e = iv.union(ev.start[o], ev.end[o])
        out[int(tid)] = (s, e, o[np.searchsorted(ev.start[o], s)])
    return out
