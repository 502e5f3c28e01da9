"""First calls of ops before the GPU span: one-time set-up no idle gap holds, found by the op's own later calls.

The GPU span's first calls are found in its idle gaps (analyses.first_calls); set-up before the first kernel is found
by the runtime calls that hold it (analyses.setup.outside_span: a first launch loading its module). A first op call
whose set-up is library work with no long runtime call (cuDNN's heuristics and handle in a first convolution) was
named by neither: heldout-user18 resnet50inf_t4's first aten::conv2d held the host 4.30 ms before the first kernel,
its later calls 0.1-0.2 ms, and the caveat listed a 1.32 ms cudaOccupancyMaxActiveBlocksPerMultiprocessor alone.

The outermost such op is taken (its nested aten::convolution, aten::cudnn_convolution share its time), where its first
call lies mostly before the span and runs FIRST_FACTOR times its later calls' median and SETUP_FLOOR_NS longer.

What would make it fire falsely: an op whose first call does different work (a bigger input the first time); its
shapes are not compared here, so only calls that run an order of magnitude longer than every later one are taken.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.analyses.first_calls import FIRST_FACTOR
from tracetriage.analyzers.model.evidence import FirstCall
from tracetriage.analyzers.model.groups import stable_order
from tracetriage.analyzers.model.module_loading import SETUP_FLOOR_NS
from tracetriage.analyzers.model.trace import CPU_OP, Trace


def first_ops_before(trace: Trace, span_start: int, k: int = 3) -> tuple[FirstCall, ...]:
    """The k longest first op calls before `span_start`, outermost only, as FirstCall (no idle gap holds them)."""
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if len(ops) < 2:
        return ()
    order = ops[stable_order(ev.name[ops])]   # each name's calls together, in time order within it
    names = ev.name[order]
    cut = np.flatnonzero(np.diff(names)) + 1
    found: list[tuple[int, float]] = []
    for group in np.split(order, cut):
        if len(group) < 3:
            continue
        first = int(group[np.argmin(ev.start[group])])
        dur = int(ev.end[first] - ev.start[first])
        before = min(int(ev.end[first]), span_start) - int(ev.start[first])
        if 2 * before < dur:
            continue
        later = group[group != first]
        typical = float(np.median(ev.end[later] - ev.start[later]))
        if dur >= FIRST_FACTOR * max(typical, 1.0) and dur - typical >= SETUP_FLOOR_NS:
            found.append((first, typical))
    # outermost only: a candidate inside another (same thread) is that one's time
    found.sort(key=lambda x: (int(ev.start[x[0]]), -int(ev.end[x[0]])))
    kept: list[tuple[int, float]] = []
    for r, typical in found:
        if any(ev.tid[o] == ev.tid[r] and ev.start[o] <= ev.start[r] and ev.end[r] <= ev.end[o] for o, _ in kept):
            continue
        kept.append((r, typical))
    kept.sort(key=lambda x: -int(ev.end[x[0]] - ev.start[x[0]]))
    return tuple(FirstCall(trace.names[ev.name[r]], round(float(ev.end[r] - ev.start[r]) / 1e3, 1),
                           round(typical / 1e3, 1), 0.0) for r, typical in kept[:k])
