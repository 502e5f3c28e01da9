"""What each lever would buy inside windows of the trace: `report --range NAME`, the range's instances.

The replay predicts the whole trace's span under a lever (tracetriage.analyzers.whatif.predict); a range's share
of that saving is read from the same replay: each instance runs from its first host call to the end
of its last call or of the last GPU activity those calls issued, in the unchanged replay and in the
replay with the lever; the saving is the union of the first minus the union of the second (instances
overlap when the host runs ahead). Both sides are the replay's own times, so the model's error on the
unchanged trace cancels. The prediction is stated on the range's own span (the report's), the
baseline the Measured line names.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.trace import NONE, Trace
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif import replay as rp
from tracetriage.analyzers.whatif.levers import NAMES, spec_of
from tracetriage.analyzers.whatif.levers.spec import Context, Options
from tracetriage.analyzers.whatif.predict import LeverPrediction, WhatIf


def predict_windows(trace: Trace, inst_rows: np.ndarray, inst_ends: np.ndarray, span_ns: int,
                    graph: dg.Graph | None = None) -> WhatIf:
    """Every lever's prediction for the windows [start of inst_rows, inst_ends) on the instances' own
    threads, as a WhatIf whose baseline is `span_ns` (the windows' span as the report measures it)."""
    g = graph if graph is not None else dg.build(trace)
    c_inst = _instance_of_calls(trace, g, inst_rows, inst_ends)
    g_inst = np.where(g.g_linked, c_inst[np.maximum(g.g_call, 0)], NONE)
    base = rp.Plan.of(g)
    before = _covered(rp.replay(g, base), c_inst, g_inst, len(inst_rows))
    ctx, opts = Context(trace, g), Options()
    out = []
    for name in NAMES:
        p = base.copy()
        assume, detail = spec_of(name).apply(ctx, p, opts)
        after = _covered(rp.replay(g, p), c_inst, g_inst, len(inst_rows))
        pred = max(0, span_ns - (before - after))
        out.append(LeverPrediction(lever=name, predicted_ns=pred, predicted_ratio=pred / span_ns if span_ns else 1.0,
                                   saving_ns=span_ns - pred, assumption=assume, detail=detail))
    out.sort(key=lambda x: (x.predicted_ns, NAMES.index(x.lever)))
    return WhatIf(path=trace.path, baseline_ns=span_ns, replay_ns=span_ns, levers=tuple(out))


def _instance_of_calls(trace: Trace, g: dg.Graph, inst_rows: np.ndarray, inst_ends: np.ndarray) -> np.ndarray:
    """For each call of the graph, the instance whose window holds its start on its thread (NONE if none)."""
    ev = trace.ev
    out = np.full(g.n_calls, NONE, np.int64)
    c_pid, c_tid, c_s = ev.pid[g.c_row], ev.tid[g.c_row], ev.start[g.c_row]
    for pid, tid in {(int(p), int(t)) for p, t in zip(ev.pid[inst_rows], ev.tid[inst_rows])}:
        mine = np.flatnonzero((ev.pid[inst_rows] == pid) & (ev.tid[inst_rows] == tid))
        mine = mine[np.argsort(ev.start[inst_rows[mine]], kind="stable")]
        ws, we = ev.start[inst_rows[mine]], inst_ends[mine]
        calls = np.flatnonzero((c_pid == pid) & (c_tid == tid))
        k = np.searchsorted(ws, c_s[calls], side="right") - 1
        inside = (k >= 0) & (c_s[calls] < we[np.maximum(k, 0)])
        out[calls[inside]] = mine[k[inside]]
    return out


def _covered(r: rp.Replayed, c_inst: np.ndarray, g_inst: np.ndarray, n: int) -> int:
    """Time covered by the instances in one replay: each from its first call's start to its last end."""
    lo = np.full(n, np.iinfo(np.int64).max, np.int64)
    hi = np.full(n, np.iinfo(np.int64).min, np.int64)
    c = c_inst != NONE
    np.minimum.at(lo, c_inst[c], r.c_start[c])
    np.maximum.at(hi, c_inst[c], r.c_end[c])
    k = g_inst != NONE
    np.maximum.at(hi, g_inst[k], r.g_end[k])
    ok = hi > lo
    return iv.total(*iv.union(lo[ok], hi[ok]))
