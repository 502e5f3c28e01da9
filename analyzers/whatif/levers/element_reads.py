"""A Python loop that reads one tensor to the host element by element: `for i in range(n): total += t[i].cpu()`
(or `t[i].item()`, `t[i].tolist()`), each read a blocking copy of a few bytes and its wait.

remove_syncs' second construct. Deferring each read ("read them once every N steps") leaves the loop: the indexing
op, the copy's dispatch, its call and the copy itself still run per element, and that dispatch is most of an
iteration (heldout-user19 gp_d2h_sync: 4,096 `tensor[i].cpu()`, 44.6 µs of host an iteration for a 2 µs copy and a
1-2 µs wait; "removing the syncs predicts only −14%" where the loop held 62% of the span, and the Next led with CUDA
graphs for the 29% loop beside it). The fix is one read of the whole tensor (one `.cpu()` before the loop, or the
reduction done on the device: `torch.sum(t)`), so the lever prices each iteration's round trip gone whole: its
indexing and copy ops, their calls and copies, the waits; the host ops of the iteration that launch nothing (the
`total +=` on the host copy) stay, the Python between them does not (one read's loop over a host tensor is that).

What any trace of the construct shows: on one thread, MIN_ITERATIONS or more blocking copies to the host of fewer than
remove_syncs.BULK_COPY_BYTES each, at most MAX_BODY outermost ops apart, and each iteration (the outermost ops after
one read up to the next) holds an indexing op (aten::select, aten::slice, aten::narrow) whose input has one shape
every time: one tensor, sliced. Needs record_shapes (without shapes no loop is told apart, and the syncs are priced as
syncs). Not this construct: a training loop's `loss.item()` (hundreds of ops an iteration, past MAX_BODY); a loop
whose reads slice tensors of different shapes (several tensors, each read once); a loop that launches work between its
reads (it reads a result it computes again each iteration: traces/probe-sync-tolist's GEMMs, then `x[0, :4].tolist()`
for a log); the user's own loop of steps or named ranges (a profiler step or a range starts inside it).

What would make it fire falsely: a loop whose next element depends on the host's value read before (a data-dependent
walk, `i = int(next_index[i])`): one read of the tensor is still the fix where the tensor does not change in the loop,
which the trace cannot see; the words say "read once" of the tensor the loop slices.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.knob import outermost_ops
from tracetriage.analyzers.whatif.levers.slice_loops import INDEXING, boundaries
from tracetriage.analyzers.whatif.levers.spec import Context

MIN_ITERATIONS = 8     # eight reads in a row of one tensor's elements: a loop, not a few results read at the end
MAX_BODY = 8           # outermost ops an iteration: an index, a read, an op or two on the value; not a model's step


@dataclass(frozen=True)
class ElementLoop:
    """One loop reading a tensor's elements to the host: its iterations past the first, and what each keeps."""
    reads: int                      # the loop's reads, one element each (the first stays: the one read of the tensor)
    source_shape: tuple             # the sliced tensor's shape
    starts: tuple[int, ...]         # each priced iteration's first outermost op start (ns)
    ends: tuple[int, ...]           # ... and its read op's end
    kept_ns: tuple[int, ...]        # each priced iteration's host ops that launch nothing (the `total +=` on the host)
    thread: int                     # the thread key


def find(c: Context, reads: np.ndarray) -> list[ElementLoop]:
    """The loops of the module docstring among these calls (the graph's blocking copies to the host, small ones)."""
    g, ev = c.g, c.trace.ev
    if len(reads) < MIN_ITERATIONS + 1:
        return []
    ops = outermost_ops(c)
    if not len(ops):
        return []
    key = thread_keys(ev, ops)
    outer = g.c_outer_op[reads]
    reads, outer = reads[outer >= 0], outer[outer >= 0]
    calls_key = c.call_keys
    out = []
    for k in distinct(key).tolist():
        mine = ops[key == k]
        pos = np.searchsorted(ev.start[mine], ev.start[outer], side="right") - 1
        on = (pos >= 0) & (mine[np.maximum(pos, 0)] == outer)
        at = distinct(pos[on])
        if len(at) < MIN_ITERATIONS + 1:
            continue
        mine_calls = np.flatnonzero(calls_key == k)
        mine_calls = mine_calls[np.argsort(g.c_start[mine_calls], kind="stable")]
        call_starts = g.c_start[mine_calls]
        launches = np.flatnonzero(g.c_kind[mine_calls] == dg.LAUNCH_CALL)
        breaks = np.flatnonzero(np.diff(at) > MAX_BODY)
        for run in np.split(at, breaks + 1):
            if len(run) < MIN_ITERATIONS + 1:
                continue
            loop = _loop(c, mine, run, call_starts, int(k))
            if loop is None:
                continue
            # the loop launches no work of its own between its reads: it reads one tensor, not a result it computes
            # again each iteration (traces/probe-sync-tolist: three GEMMs, then x[0, :4].tolist() for a log, every
            # iteration: no one read before the loop can take those)
            s0, e0 = np.searchsorted(call_starts, [loop.starts[0], loop.ends[-1]])
            if np.any((launches >= s0) & (launches < e0)):
                continue
            # ... nor is it the user's own loop of steps or named ranges (a profiler step or a range starts inside it)
            steps, ranges = boundaries(c)
            if any(((b > loop.starts[0]) & (b < loop.ends[-1])).any() for b in (steps, ranges)):
                continue
            out.append(loop)
    return out


def _loop(c: Context, mine: np.ndarray, run: np.ndarray, call_starts: np.ndarray, thread: int) -> ElementLoop | None:
    """The run of reads as one loop over one tensor's elements, or None where an iteration slices none (or several
    tensors)."""
    ev, tr = c.trace.ev, c.trace
    sources, starts, ends, kept = set(), [], [], []
    for prev, cur in zip(run[:-1].tolist(), run[1:].tolist()):
        body = mine[prev + 1:cur + 1]
        names = [tr.name_of(int(r)) for r in body.tolist()]
        index = [r for r, n in zip(body.tolist(), names) if n in INDEXING]
        if not index:
            return None
        sources.add(tuple((tr.shapes(index[0])[0] or [[]])[0] or ()))
        # an op that makes no runtime call and indexes nothing runs on the host value: it stays
        s, e = ev.start[body], ev.end[body]
        n_calls = np.searchsorted(call_starts, e) - np.searchsorted(call_starts, s)
        host = (n_calls == 0) & np.array([n not in INDEXING for n in names], bool)
        kept.append(int((e - s)[host].sum()))
        starts.append(int(s[0]))
        ends.append(int(e[-1]))
    if len(sources) != 1 or not next(iter(sources)):
        return None
    return ElementLoop(len(run), next(iter(sources)), tuple(starts), tuple(ends), tuple(kept), thread)


def remove(c: Context, p, loops: list[ElementLoop]) -> int:
    """Each priced iteration's round trip goes from the plan: every call it makes (the read's copy call, its sync,
    any launch) and their GPU work vanish, and the host time before its first call keeps only its host ops. Returns
    the calls removed."""
    g = c.g
    gone, firsts, kept = [], [], []
    for loop in loops:
        mine = np.flatnonzero(c.call_keys == loop.thread)
        mine = mine[np.argsort(g.c_start[mine], kind="stable")]
        s = np.searchsorted(g.c_start[mine], np.array(loop.starts))
        e = np.searchsorted(g.c_start[mine], np.array(loop.ends))
        for a, b, keep in zip(s.tolist(), e.tolist(), loop.kept_ns):
            if b > a:
                gone.append(mine[a:b])
                firsts.append(int(mine[a]))
                kept.append(keep)
    if not gone:
        return 0
    calls = np.concatenate(gone)
    p.c_dur[calls] = 0
    p.c_gap[calls] = 0
    p.c_blocked[calls] = False
    p.c_gap[np.array(firsts)] = np.array(kept, p.c_gap.dtype)
    acts = np.flatnonzero(np.isin(g.g_call, calls) & g.g_linked)
    p.g_dur[acts] = 0
    p.g_gap[acts] = 0
    return len(calls)
