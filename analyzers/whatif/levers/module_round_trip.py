"""module_round_trip: a module kept on the GPU, not moved to the host and back between requests (model.to("cpu")
to free device memory, then model.to("cuda") before its next use).

What any trace of it shows: `nn.Module.to` walks every parameter and buffer (`Module._apply`): for each, an
`aten::to` (-> `_to_copy` -> `copy_`, a memcpy) and then `aten::_has_compatible_shallow_copy_type`, which _apply
calls on every tensor it moved to decide whether to swap it in place. A memcpy whose outermost op is followed on its
thread by that op is a module's parameter or buffer being moved. Moved to the host (`Memcpy DtoH`) and to the device
(`Memcpy HtoD`) in one trace, the module makes a round trip; to pageable memory each copy also blocks the host, and
the stream syncs inside those `aten::to` calls are the copies' own (no code of the user's calls them).
In the graph: those copies go, with their launch calls' dispatch, and their calls and the syncs of the same ops stop
blocking the host. `Module._apply`'s own Python walk stays (a `.to(device)` on a module already there still visits
each parameter, without copying).

What would make it fire falsely: a trace that moves a module once each way on purpose (a model loaded to the GPU
inside the profiled window, then saved to the host at the end): both directions show, and the saving is real only
if the user would not have to do it again. One direction alone (a model moved to the GPU once) is set-up, and the
lever finds nothing. A hand-written loop of `p.data = p.data.to(...)` calls no `_has_compatible_shallow_copy_type`
and is not seen.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import MEMCPY, NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.knob import remove_gpu_work
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


def module_copies(c: Context) -> np.ndarray:
    """The graph's memcpy rows moving a module's tensors (module docstring): their outermost op is followed on
    its thread by nn.Module._apply's APPLY_MARK op."""
    g, ev, tr = c.g, c.trace.ev, c.trace
    rows = np.flatnonzero((g.g_cat == MEMCPY) & g.g_linked & (g.g_call >= 0))
    if not len(rows) or APPLY_MARK not in tr.names:
        return rows[:0]
    tops, keys = top_level_ops(c)
    ops = tr.op_of[g.c_row[g.g_call[rows]]]
    keep = np.zeros(len(rows), bool)
    by_key = {k: tops[keys == k] for k in distinct(keys).tolist()}
    for i, op in enumerate(ops.tolist()):
        if op == NONE:
            continue
        mine = by_key.get(int(thread_keys(ev, op)))
        if mine is None:
            continue
        j = int(np.searchsorted(ev.start[mine], ev.start[op], side="right")) - 1
        if j < 0 or j + 1 >= len(mine) or ev.end[mine[j]] < ev.end[op]:
            continue
        keep[i] = tr.name_of(int(mine[j + 1])) == APPLY_MARK
    return rows[keep]


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
    return a, {"copies": len(rows), "syncs": len(syncs)}


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
                    "the host",
              guide="CUDA semantics: avoid host-device transfers; nn.Module.to moves every parameter and buffer",
              where=Cause.DATA_TRANSFER))
