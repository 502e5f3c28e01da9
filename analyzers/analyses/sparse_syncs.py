"""Syncs a sparse COO matrix product makes on every call: torch coalesces a COO operand (sorts its indices, sums
duplicates) before multiplying it, and coalescing reads the count of unique indices back to the host, a
cudaStreamSynchronize (or a blocking copy) inside aten::_coalesce. The user wrote no read-back: the fix is to
coalesce the matrix once, where it is built (.coalesce(), after which each product finds it coalesced), or to store
it as CSR (.to_sparse_csr()), whose products need no coalescing.

In any trace the construct is: sync calls (cudaStreamSynchronize, cudaMemcpy DtoH, ...) made inside an aten::_coalesce
or aten::coalesce op on the same thread (under aten::_sparse_addmm / aten::addmm / aten::mm of a sparse operand),
holding most of the time the host spent in sync calls. What would make it fire falsely: a script that coalesces a
freshly built sparse tensor each step on purpose (its indices change every step): the advice to coalesce once at
set-up then does not apply, CSR conversion still costs a sync per build; the recogniser cannot tell and says what
the trace shows, the syncs inside coalesce. It does not fire where the coalesce syncs hold under half of the sync
time (a training loop's .item() calls beside one sparse product).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.runtime_calls import ALLOCATOR_SYNC_CALLS, SYNC_CALLS
from tracetriage.analyzers.model.trace import CPU_OP, Trace

COALESCE_OPS = frozenset({"aten::_coalesce", "aten::coalesce"})
# ops that sync inside themselves whatever loop runs them: their syncs end no step (heldout-user9 neuralpde: the five
# sparse matmuls of one forward, each coalescing, read as 6 steps)
OWN_SYNC_OPS = COALESCE_OPS
HOLDS = 0.5     # the syncs inside coalescing hold at least this share of the time the host spent in sync calls
_WAITS = SYNC_CALLS - ALLOCATOR_SYNC_CALLS - {"cudaStreamQuery", "hipStreamQuery"}


@dataclass(frozen=True)
class CoalesceSyncs:
    syncs: int          # sync calls made inside aten::_coalesce / aten::coalesce
    total: int          # sync calls in the trace
    waited_ns: int      # the host's time in those calls
    share: float        # of the host's time in every sync call


def coalesce_syncs(trace: Trace) -> CoalesceSyncs | None:
    """The sync calls made while coalescing a sparse COO operand, where they hold most of the sync time; else None."""
    ev = trace.ev
    wait_ids = [i for i, n in enumerate(trace.names) if n in _WAITS]
    waits = np.flatnonzero(np.isin(ev.name, wait_ids) & (ev.cat != CPU_OP)) if wait_ids else np.zeros(0, np.int64)
    if not len(waits):
        return None
    dur = (ev.end[waits] - ev.start[waits]).astype(np.int64)
    inside = inside_ops(trace, waits, COALESCE_OPS)
    total_ns = int(dur.sum())
    held = int(dur[inside].sum())
    if not inside.any() or total_ns <= 0 or held < HOLDS * total_ns:
        return None
    return CoalesceSyncs(int(inside.sum()), len(waits), held, held / total_ns)


def inside_ops(trace: Trace, calls: np.ndarray, names: frozenset[str]) -> np.ndarray:
    """Per call row, whether it runs inside an op of one of `names` on its own thread."""
    ev = trace.ev
    out = np.zeros(len(calls), bool)
    ids = [i for i, n in enumerate(trace.names) if n in names]
    ops = np.flatnonzero(np.isin(ev.name, ids) & (ev.cat == CPU_OP)) if ids and len(calls) else np.zeros(0, np.int64)
    for tid in distinct(ev.tid[ops]).tolist():      # a call is the op's only where it runs on the op's thread
        o = ops[ev.tid[ops] == tid]
        ws, we = iv.union(ev.start[o], ev.end[o])
        m = np.flatnonzero(ev.tid[calls] == tid)
        j = np.searchsorted(ws, ev.start[calls[m]], side="right") - 1
        out[m] = (j >= 0) & (ev.end[calls[m]] <= we[np.maximum(j, 0)])
    return out
