"""The op a sync is named by: the outermost op around it, below torch.compile's regions.

A sync's site is the outermost cpu_op that made it (aten::item around aten::_local_scalar_dense): what the user's code
called. A "Torch-Compiled Region: N/M" around that op is the compiled function the eager op fell back from (a graph
break on a value read), and the outermost region of a compiled pipeline holds every op of it: named as the site, it
says nothing (heldout-user16 pi0_h200: "the syncs (Torch-Compiled Region: 0/0)", where each denoising step ended in
aten::is_nonzero > aten::item > aten::_local_scalar_dense: a 1-byte copy to the host and cudaStreamSynchronize).
Below the regions the site is the outermost op that is not one.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.constructs import compiled_region_frame
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import CPU_OP, NONE, Trace

MAX_SITES = 512   # ops refined one by one, at most (a compiled loop reading a value every step has a few hundred)


def below_regions(trace: Trace, inner: np.ndarray, outer: np.ndarray) -> np.ndarray:
    """For each op row `inner` (the op a sync call is in) whose outermost op `outer` is a compiled region: the
    outermost op around `inner` that is not a compiled region (`inner` itself where every op around it is one).
    Other rows keep `outer`."""
    out = outer.copy()
    if not len(outer):
        return out
    ev, names = trace.ev, trace.names
    ids = distinct(ev.name[outer[outer != NONE]])
    region_ids = [i for i in ids.tolist() if compiled_region_frame(names[i]) is not None]
    if not region_ids:
        return out
    todo = np.flatnonzero((outer != NONE) & (inner != NONE) & np.isin(ev.name[np.maximum(outer, 0)], region_ids))
    cpu = np.flatnonzero(ev.cat == CPU_OP)
    threads: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    cache: dict[int, int] = {}
    for i in todo[:MAX_SITES].tolist():
        r = int(inner[i])
        if r not in cache:
            key = (int(ev.pid[r]), int(ev.tid[r]))
            if key not in threads:   # the thread's ops by start, once
                mine = cpu[(ev.pid[cpu] == key[0]) & (ev.tid[cpu] == key[1])]
                mine = mine[np.argsort(ev.start[mine], kind="stable")]
                threads[key] = (mine, ev.start[mine])
            cache[r] = _outermost_plain(trace, r, int(outer[i]), *threads[key])
        out[i] = cache[r]
    return out


def _outermost_plain(trace: Trace, row: int, region: int, ops: np.ndarray, starts: np.ndarray) -> int:
    """The outermost op of the thread's `ops` (by start) around `row`, inside `region`, that is no compiled region."""
    ev, names = trace.ev, trace.names
    lo = np.searchsorted(starts, ev.start[region], side="left")
    hi = np.searchsorted(starts, ev.start[row], side="right")
    around = ops[lo:hi]
    around = around[ev.end[around] >= ev.end[row]]
    return next((r for r in around.tolist() if compiled_region_frame(names[ev.name[r]]) is None), row)
