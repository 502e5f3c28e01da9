"""module_round_trip: a module kept on the GPU, not moved to the host and back between requests (model.to("cpu")
to free device memory, then model.to("cuda") before its next use).

What any trace of it shows: `nn.Module.to` walks every parameter and buffer (`Module._apply`): for each, an
`aten::to` (-> `_to_copy` -> `copy_`, a memcpy) and then `aten::_has_compatible_shallow_copy_type`, which _apply
calls on every tensor it moved to decide whether to swap it in place. A memcpy whose outermost op is followed on its
thread by that op is a module's parameter or buffer being moved. Moved to the host (`Memcpy DtoH`) and to the device
(`Memcpy HtoD`) in one trace, the module makes a round trip; to pageable memory each copy also blocks the host, and
the stream syncs inside those `aten::to` calls are the copies' own (no code of the user's calls them).
In the graph: those copies go, with their launch calls' dispatch, and their calls and the syncs of the same ops stop
blocking the host. The host work around them goes too, at its mechanism: the walk to the host (the dropped
`model.to("cpu")`: its `aten::to` and `_has_compatible_shallow_copy_type` ops and the Python between them) goes whole,
and each `aten::to` of the walk back keeps only what an op that copies nothing costs (`.to(device)` on a module
already there still walks every parameter in Python, each `aten::to` returning at once). On a pageable round trip
the `aten::to`'s own host time (dispatch, `cudaMemcpyAsync` staging through a bounce buffer, the sync) is most of the
step: traces/pending2 resnet18_offloaded_between_requests held 15.0 ms a step in 244 of them beside a 5 ms forward,
and pricing the copies' 9.9 ms on the device alone predicted 0.61 where the fix measured 0.12.

What would make it fire falsely: a trace that moves a module once each way on purpose (a model loaded to the GPU
inside the profiled window, then saved to the host at the end): both directions show, and the saving is real only
if the user would not have to do it again. One direction alone (a model moved to the GPU once) is set-up, and the
lever finds nothing. A hand-written loop of `p.data = p.data.to(...)` calls no `_has_compatible_shallow_copy_type`
and is not seen.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import MEMCPY, NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.host_windows import remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import op_cost, remove_gpu_work
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    went,
)
from tracetriage.analyzers.whatif.levers.tensors_on_device import top_level_ops

APPLY_MARK = "aten::_has_compatible_shallow_copy_type"    # nn.Module._apply, once per tensor it moved


@dataclass(frozen=True)
class RoundTrip(Assumption):
    to_host: int = 0            # the copies to the host (parameters and buffers moved off the GPU)
    to_host_bytes: int = 0
    to_device_bytes: int = 0
    copy_ns: int = 0            # the copies' own time on the device
    syncs: int = 0              # stream syncs inside those copies' ops (the pageable copies' own)
    pageable: bool = False      # the host side is pageable memory: each copy blocked the host
    host_ns: int = 0            # the host time around them that goes (the walk to the host, the copies' aten::to)


def module_copies(c: Context) -> np.ndarray:
    """The graph's memcpy rows moving a module's tensors (module docstring): their outermost op is followed on
    its thread by nn.Module._apply's APPLY_MARK op (a parameter), or is an aten::to of the same walk as such a copy
    (a buffer: _apply moves BatchNorm's running stats without the mark)."""
    g, tr = c.g, c.trace
    rows = np.flatnonzero((g.g_cat == MEMCPY) & g.g_linked & (g.g_call >= 0))
    if not len(rows) or APPLY_MARK not in tr.names:
        return rows[:0]
    ev = tr.ev
    tops, keys = top_level_ops(c)
    ops = copy_ops(c, rows)
    keep = np.zeros(len(rows), bool)
    mark = tr.names.index(APPLY_MARK)
    has = np.flatnonzero(ops != NONE)
    o_keys = thread_keys(ev, ops[has]) if len(has) else has
    for k in distinct(o_keys).tolist():
        mine = tops[keys == k]
        i = has[o_keys == k]
        nxt = np.searchsorted(ev.start[mine], ev.start[ops[i]], side="right")     # the op after each copy's
        ok = nxt < len(mine)
        keep[i[ok]] = ev.name[mine[nxt[ok]]] == mark
    if not keep.any():
        return rows[:0]
    held = ops != NONE
    for s, e, k in walks(c, distinct(ops[keep])):
        inside = held & (ev.start[np.maximum(ops, 0)] >= s) & (ev.end[np.maximum(ops, 0)] <= e)
        keep[inside] |= thread_keys(ev, ops[inside]) == k
    return rows[keep]


def copy_ops(c: Context, rows: np.ndarray) -> np.ndarray:
    """Each module copy's outermost op on its thread (the aten::to that nn.Module._apply called), NONE where the copy's
    launch has no op."""
    g, ev = c.g, c.trace.ev
    ops = c.trace.op_of[g.c_row[g.g_call[rows]]]
    out = np.full(len(rows), NONE, np.int64)
    has = np.flatnonzero(ops != NONE)
    if not len(has):
        return out
    tops, keys = top_level_ops(c)
    o_keys = thread_keys(ev, ops[has])
    for k in distinct(o_keys).tolist():
        mine = tops[keys == k]
        i = has[o_keys == k]
        j = np.searchsorted(ev.start[mine], ev.start[ops[i]], side="right") - 1
        ok = (j >= 0) & (ev.end[mine[np.maximum(j, 0)]] >= ev.end[ops[i]])
        out[i[ok]] = mine[j[ok]]
    return out


def walks(c: Context, ops: np.ndarray) -> list[tuple[int, int, int]]:
    """The walks of nn.Module._apply that hold these outermost ops: each a run of its thread's outermost ops that are
    all aten::to or APPLY_MARK (no other op between them), as (start, end, thread key)."""
    ev, tr = c.trace.ev, c.trace
    tops, keys = top_level_ops(c)
    walk_ids = [i for i, n in enumerate(tr.names) if n in ("aten::to", APPLY_MARK)]
    walk_op = np.isin(ev.name[tops], walk_ids)
    out: list[tuple[int, int, int]] = []
    for k in distinct(thread_keys(ev, ops)).tolist():
        mine = np.flatnonzero(keys == k)
        mine = mine[np.argsort(ev.start[tops[mine]], kind="stable")]
        ok = walk_op[mine]
        # runs of consecutive walk ops: their bounds in `mine`
        edges = np.diff(np.concatenate(([0], ok.astype(np.int8), [0])))
        first, last = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
        held = np.concatenate(([0], np.cumsum(np.isin(tops[mine], ops))))
        for a, b in zip(first.tolist(), last.tolist()):
            if held[b + 1] > held[a]:
                out.append((int(ev.start[tops[mine[a]]]), int(ev.end[tops[mine[b]]]), int(k)))
    return out


def remove_host_around(c: Context, p, rows: np.ndarray, dtoh: np.ndarray) -> int:
    """The host work the fix takes with the copies (module docstring): the walks to the host whole, and each copying
    aten::to of the walks back down to an op that copies nothing. Returns the host ns removed."""
    ops = copy_ops(c, rows)
    ev = c.trace.ev
    away = np.array(walks(c, distinct(ops[dtoh & (ops != NONE)])), np.int64).reshape(-1, 3)
    back = distinct(ops[~dtoh & (ops != NONE)])
    plain = int(op_cost(c).plain_ns)
    # a walk back's aten::to keeps a no-op's cost: the window starts that far into it (bytes stay where they are)
    starts = np.concatenate((away[:, 0], np.minimum(ev.start[back] + plain, ev.end[back])))
    ends = np.concatenate((away[:, 1], ev.end[back]))
    keys = np.concatenate((away[:, 2], thread_keys(ev, back) if len(back) else back))
    _, removed = remove_host_windows(c, p, starts, ends, keys, drop_gpu=True)
    return removed


def apply(c: Context, p, o: Options) -> tuple[RoundTrip, dict]:
    g, ev = c.g, c.trace.ev
    rows = module_copies(c)
    names = [c.trace.name_of(int(g.g_row[r])) for r in rows.tolist()]
    dtoh = np.array(["DtoH" in n for n in names], bool)
    if not len(rows) or not dtoh.any() or dtoh.all():      # one direction: a model loaded (or saved) once
        return RoundTrip("module_round_trip", 0), {"copies": 0}
    calls = g.g_call[rows]
    ext = ev.ext[g.c_row]
    syncs = np.flatnonzero((g.c_kind == dg.SYNC_CALL) & np.isin(ext, list(set(ext[calls].tolist()))))
    nbytes = np.maximum(g.g_nbytes[rows], 0)
    a = RoundTrip("module_round_trip", len(rows), to_host=int(dtoh.sum()), to_host_bytes=int(nbytes[dtoh].sum()),
                  to_device_bytes=int(nbytes[~dtoh].sum()), copy_ns=int(g.g_dur[rows].sum()), syncs=len(syncs),
                  pageable=any("Pageable" in n for n in names))
    remove_gpu_work(c, p, rows)
    p.c_blocked[calls] = False
    p.c_blocked[syncs] = False
    p.c_dur[syncs] = p.c_min[syncs]
    host = remove_host_around(c, p, rows, dtoh)
    return replace(a, host_ns=host), {"copies": len(rows), "syncs": len(syncs), "host_ns": host}


def says(a: RoundTrip) -> str:
    if a.count == 0:
        return ("no module moved to the host and back (nn.Module.to's copies, each followed by "
                "_has_compatible_shallow_copy_type) in this trace")
    back = a.count - a.to_host
    return (f"the {units.integer(a.to_host)} copies of a module's parameters and buffers to the host "
            f"({units.size(a.to_host_bytes)}) and the {units.integer(back)} back ({units.size(a.to_device_bytes)}), "
            f"{units.duration_ns(a.copy_ns)} on the device, go with their {units.integer(a.syncs)} stream syncs: the "
            "module stays on the GPU")


def copies(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("copies", 0)


def owns_syncs(levers, only: str | None) -> bool:
    """The syncs remove_syncs names (in `only`'s ops) are the module copies' own: the copies go with this lever, and
    no sync can be removed apart from them."""
    w = getattr(levers, "all", None)
    if w is None or only not in ("aten::to", "aten::_to_copy", "aten::copy_"):
        return False
    p = next((x for x in w.levers if x.lever == SPEC.name), None)
    return p is not None and p.detail.get("syncs", 0) > 0


SPEC = LeverSpec(
    name="module_round_trip", effort=1, cause=Cause.DATA_TRANSFER, apply=apply, says=says,
    words="keeping the module on the GPU",
    fix="no model.to(\"cpu\") between requests: the module stays on the GPU",
    recognise=Recognise(order=2, evidence="module_copies", because="the module's round-trip copies went",
                        amount=copies, acted=lambda m: float(m.by_cause_ns.get(Cause.DATA_TRANSFER, 0)),
                        applied=went),
    applied_words="the module kept on the GPU", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change="keep the module on the GPU: drop the module.to(\"cpu\") between requests (its next "
                     ".to(\"cuda\") is then a no-op)",
              evidence="memcpy DtoH and HtoD whose aten::to is followed by aten::_has_compatible_shallow_copy_type "
                       "(nn.Module._apply moving each parameter and buffer)",
              applies="every GPU: a module whose weights fit beside the rest of the work",
              model="the round-trip copies go with their dispatch, and their calls and stream syncs stop blocking "
                    "the host; the walk to the host goes whole, and each copying aten::to of the walk back costs "
                    "what an op that copies nothing costs",
              guide="CUDA semantics: avoid host-device transfers; nn.Module.to moves every parameter and buffer",
              where=Cause.DATA_TRANSFER))
