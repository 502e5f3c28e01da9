"""Ops a one-line change takes out of the program entirely (a validation check, an in-place renorm), as the replay
removes them: every host call that starts inside one of their windows loses its GPU work and the dispatch before it,
and a sync or blocking copy among those calls no longer blocks (the read it served is gone with the op).

Shared by the levers whose fix deletes whole ops rather than changing how they run (value_checks, validate_args,
embedding_max_norm, cross_entropy).
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import USER_ANNOTATION
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.knob import remove_gpu_work
from tracetriage.analyzers.whatif.levers.spec import Context


def calls_in(c: Context, windows: list[tuple[int, int, int]]) -> np.ndarray:
    """For each of the graph's host calls: does it start inside one of these (thread key, start ns, end ns) windows."""
    g = c.g
    inside = np.zeros(g.n_calls, bool)
    if not windows or not g.n_calls:
        return inside
    c_key = c.call_keys
    w = np.array(windows, np.int64)
    for key in distinct(w[:, 0]).tolist():
        mine = w[w[:, 0] == key]
        mine = mine[np.argsort(mine[:, 1])]
        s, e = mine[:, 1], np.maximum.accumulate(mine[:, 2])
        m = np.flatnonzero(c_key == key)
        j = np.searchsorted(s, g.c_start[m], side="right") - 1
        inside[m] = (j >= 0) & (g.c_start[m] < e[np.maximum(j, 0)])
    return inside


def drop(c: Context, p, windows: list[tuple[int, int, int]],
         keep: list[tuple[int, int, int]] = ()) -> tuple[int, int, int]:
    """Take the ops in these windows out of the replayed program, but for those inside `keep` (ops the fix still
    runs): (the host's wait in their syncs as traced, their GPU activities' time, their launches)."""
    g = c.g
    inside = calls_in(c, windows) & ~calls_in(c, list(keep))
    if not inside.any():
        return 0, 0, 0
    waited = int(np.where(p.c_blocked & inside, g.c_dur - p.c_min, 0).clip(0).sum())
    rows = np.flatnonzero((g.g_call >= 0) & inside[np.maximum(g.g_call, 0)])
    gpu_ns = int(g.g_dur[rows].sum())
    remove_gpu_work(c, p, rows)
    blocking = inside & ((g.c_kind == dg.SYNC_CALL) | (g.c_kind == dg.COPY_CALL))
    p.c_blocked[blocking] = False
    p.c_dur[blocking] = 0
    return waited, gpu_ns, len(rows)


def profiled_steps(c: Context) -> int:
    """The profiler's steps on the host (their GPU projections are not counted again); 1 without any."""
    ev, names = c.trace.ev, c.trace.names
    ids = [i for i, n in enumerate(names) if n.startswith(PROFILER_STEP)]
    return max(int((np.isin(ev.name, ids) & (ev.cat == USER_ANNOTATION)).sum()), 1) if ids else 1
