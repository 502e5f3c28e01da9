"""Which cpu_op encloses a host call on its own thread: the link step's fallback when External ids lie.

torch.profiler links a launch call to the op that made it by External id. Traces from torch 2.0/2.1
(2023) write the call's *correlation* id in that field instead (PARAM's et_replay inputs, HTA's GP100
sample, a TorchRec DLRM rank): where the two number ranges overlap, the id names an unrelated op
(an aten::clamp_min 67 ms later, an aten::t on another thread); where they do not, it names nothing.
The call still sits inside the op that made it, on the same thread, so time says what the id does not.

The ops of one thread nest (an op's children start after it and end before it), so for a call the
innermost enclosing op is the latest-starting op that starts at or before the call and ends at or
after it. With the thread's ops sorted by start, that is the last index j <= k (k: the last op to
start by the call's start) whose end reaches the call's end: found for every call at once by
binary lifting over a sparse table of running maxima of the ops' ends (log2(ops) numpy steps).

A sound trace has only a handful of such calls (those with no External id: 10 against 468k ops on one thread
at 942k events), where that table (log2(ops) arrays as long as the ops: 0.05-0.07 s of CPU there) costs more
than looking back from each call: a thread's few calls are each found by a search back over widening windows.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.trace import NONE, Events


def innermost_enclosing(ev: Events, ops: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each query row, the innermost row of `ops` on the same (pid, tid) whose [start, end] holds the
    query's [start, end]; NONE where no op does. `ops` are cpu_op rows in trace order (sorted by start)."""
    out = np.full(len(queries), NONE, np.int64)
    if len(ops) == 0 or len(queries) == 0:
        return out
    q_pid, q_tid, op_pid, op_tid = ev.pid[queries], ev.tid[queries], ev.pid[ops], ev.tid[ops]
    # the queries' threads only (a handful): one comparison over the ops each, no sort of all of them
    for pid, tid in set(zip(q_pid.tolist(), q_tid.tolist())):
        mine = ops[(op_pid == pid) & (op_tid == tid)]
        if len(mine) == 0:
            continue
        at = np.flatnonzero((q_pid == pid) & (q_tid == tid))
        out[at] = _innermost(ev.start[mine], ev.end[mine], ev.start[queries[at]], ev.end[queries[at]], mine)
    return out


# Up to this many calls of a thread are looked for by the search back (each costs at most a pass over the ops, which
# binary lifting's table costs log2(ops) times)
FEW_QUERIES = 16
FIRST_WINDOW = 256      # ops looked at first, before the call; each next window is four times wider


def _innermost(op_s: np.ndarray, op_e: np.ndarray, qs: np.ndarray, qe: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One thread: op_s ascending. For each query, rows[j] for the largest j with op_s[j] <= qs and
    op_e[j] >= qe, else NONE."""
    if len(qs) <= FEW_QUERIES:
        return _innermost_looking_back(op_s, op_e, qs, qe, rows)
    n = len(op_s)
    # table[l][i] = max(op_e[i : i + 2**l]): level l is 2**l ops wide
    table = [op_e]
    while (1 << len(table)) <= n:
        prev, half = table[-1], 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-half], prev[half:]))
    pos = np.searchsorted(op_s, qs, side="right")   # ops [0, pos) start at or before the query
    # skip, from the right, the widest blocks of ops that all end before the query does
    for level in range(len(table) - 1, -1, -1):
        width = 1 << level
        cand = pos - width
        ok = cand >= 0
        ok[ok] = table[level][cand[ok]] < qe[ok]
        pos[ok] -= width
    j = pos - 1
    found = j >= 0
    found[found] = op_e[j[found]] >= qe[found]
    return np.where(found, rows[np.maximum(j, 0)], NONE)


def _innermost_looking_back(op_s: np.ndarray, op_e: np.ndarray, qs: np.ndarray, qe: np.ndarray,
                            rows: np.ndarray) -> np.ndarray:
    """_innermost for a few queries: from the last op to start by the query, back over windows of ops four times
    wider each time, the last one that ends at or after the query's end."""
    out = np.full(len(qs), NONE, np.int64)
    for i, (pos, end) in enumerate(zip(np.searchsorted(op_s, qs, side="right").tolist(), qe.tolist())):
        width = FIRST_WINDOW
        while pos > 0:
            lo = max(pos - width, 0)
            hit = np.flatnonzero(op_e[lo:pos] >= end)
            if len(hit):
                out[i] = rows[lo + hit[-1]]
                break
            pos, width = lo, width * 4
    return out
