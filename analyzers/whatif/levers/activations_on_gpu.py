"""activations_on_gpu: the tensors autograd saves kept on the GPU, not offloaded to the host in the forward and brought
back in the backward (torch.autograd.graph.save_on_cpu(pin_memory=True) dropped where the device has the memory).

What any trace of it shows: save_on_cpu's pack hook copies each tensor autograd saves to the host as the forward
makes it (`aten::copy_` -> a `Memcpy DtoH` into pinned memory, then a stream sync: the hook's copy is blocking), and
its unpack hook copies it back inside the backward node that needs it (`Memcpy HtoD` launched inside an
`autograd::engine::evaluate_function` window). The signature is the pair: device-to-host copies outside the backward
matched, byte size for byte size, by host-to-device copies inside it. Nothing slow is in the model; the step waits on
PCIe (fresh9 pythia_activations_offloaded: 372 copies each way a step, 4.9 GB, 87% of the span idle).

Price (in the graph): the matched copies go (both ways) with their launch calls' dispatch, and the stream syncs the
forward's copies' ops made stop blocking the host (the hook's sync waits for its own copy). The hooks' host work
around them goes too (hook_windows): the pack hook's pinned buffer (its aten::empty) and its aten::copy_ whole (the
dispatch, the capture check, an expanded tensor made contiguous first: a clone kernel), the unpack hook's aten::to
whole, and the gap before a hook that follows another with nothing between (the Python hook's call from autograd).
Keeping them left ~40 us a copy in fresh9 pythia_activations_offloaded's forward (0.47 predicted, 0.40 so,
0.23 measured) and traces/pending2 convnext_activations_offloaded (0.35, 0.30 so, 0.15 measured; most of the rest
is its depthwise convolutions' backward, ATen's conv_depthwise2d kernels on the tensors brought back, cuDNN's after
the fix). The memory the activations then hold on the device is not in the trace: the advice says "where memory
allows".

What would make it fire falsely: a training step that moves data to the host in the forward for its own reasons
(logging a tensor with .cpu()) and loads a batch inside the backward: its sizes rarely match copy for copy, and the
lever asks for ROUND_TRIPS_AT_LEAST matched pairs. CPU-offloaded optimizers (ZeRO-offload) copy gradients to the host
in the backward and parameters back after the step: the other direction, not counted. A model moved to the host and
back between requests is module_round_trip's (no copy inside a backward node).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import MEMCPY, NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.host_windows import remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import calls_inside, mirror_queued, ops_named, remove_gpu_work
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

BACKWARD_NODE = "autograd::engine::evaluate_function: "
ROUND_TRIPS_AT_LEAST = 8     # a layer stack's saved tensors: a handful of copies is a user's own .cpu()


@dataclass(frozen=True)
class Offloaded(Assumption):
    to_host_bytes: int = 0      # count: copies each way matched; these their bytes
    to_device_bytes: int = 0
    copy_ns: int = 0            # the matched copies' time on the device
    syncs: int = 0              # stream syncs inside the forward copies' ops
    host_ns: int = 0            # the hooks' host time that goes (pinned buffers, the copies' ops)


def offload_copies(c: Context) -> tuple[np.ndarray, np.ndarray]:
    """The graph's memcpy rows of an activation offload: (to the host outside the backward, back inside it), matched
    byte size for byte size."""
    g = c.g
    rows = np.flatnonzero((g.g_cat == MEMCPY) & g.g_linked & (g.g_call >= 0))
    if not len(rows):
        return rows, rows
    nodes = ops_named(c, lambda n: n.startswith(BACKWARD_NODE))
    in_bwd = np.zeros(g.n_calls, bool)
    in_bwd[calls_inside(c, nodes)] = True
    names = [c.trace.name_of(int(g.g_row[r])) for r in rows.tolist()]
    dtoh = np.array([n.startswith("Memcpy DtoH") for n in names], bool)
    htod = np.array([n.startswith("Memcpy HtoD") for n in names], bool)
    bwd = in_bwd[g.g_call[rows]]
    out, back = rows[dtoh & ~bwd], rows[htod & bwd]
    size_out, size_back = Counter(g.g_nbytes[out].tolist()), Counter(g.g_nbytes[back].tolist())
    both = {s: min(n, size_back[s]) for s, n in size_out.items() if s > 0 and size_back[s]}
    if sum(both.values()) < ROUND_TRIPS_AT_LEAST:
        return rows[:0], rows[:0]

    def take(r: np.ndarray) -> np.ndarray:
        left = dict(both)
        keep = np.zeros(len(r), bool)
        for i, s in enumerate(g.g_nbytes[r].tolist()):
            if left.get(s, 0) > 0:
                left[s] -= 1
                keep[i] = True
        return r[keep]

    return take(out), take(back)


def apply(c: Context, p, o: Options) -> tuple[Offloaded, dict]:
    g, ev = c.g, c.trace.ev
    out, back = offload_copies(c)
    if not len(out):
        return Offloaded("activations_on_gpu", 0), {"offloads": 0}
    rows = np.concatenate([out, back])
    ext = ev.ext[g.c_row]
    syncs = np.flatnonzero((g.c_kind == dg.SYNC_CALL) & np.isin(ext, list(set(ext[g.g_call[out]].tolist()))))
    a = Offloaded("activations_on_gpu", len(out), to_host_bytes=int(np.maximum(g.g_nbytes[out], 0).sum()),
                  to_device_bytes=int(np.maximum(g.g_nbytes[back], 0).sum()), copy_ns=int(g.g_dur[rows].sum()),
                  syncs=len(syncs))
    remove_gpu_work(c, p, rows)
    p.c_blocked[g.g_call[rows]] = False
    p.c_blocked[syncs] = False
    p.c_dur[syncs] = p.c_min[syncs]
    s, e, k = hook_windows(c, out, back)
    host = remove_host_windows(c, p, s, e, k, drop_gpu=True)[1]
    mirror_queued(c, p)
    return replace(a, host_ns=host), {"offloads": len(out), "syncs": len(syncs), "host_ns": host}


def hook_windows(c: Context, out: np.ndarray, back: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The host stretches of save_on_cpu's hooks around these copies, as (starts, ends, thread keys): in the forward
    the pack hook's pinned buffer (the aten::empty just before the copy) and its aten::copy_ (with what it runs inside:
    an expanded tensor made contiguous first, a clone kernel); in the backward the unpack hook's aten::to (its
    _to_copy, empty_strided and copy_)."""
    g, ev, tr = c.g, c.trace.ev, c.trace
    ops = ops_named(c, lambda n: True)
    keys = thread_keys(ev, ops)
    ids = {n: i for i, n in enumerate(tr.names) if n in ("aten::copy_", "aten::to", "aten::_to_copy", "aten::empty")}
    copy_id, to_ids, empty_id = ids.get("aten::copy_", -1), (ids.get("aten::to", -1), ids.get("aten::_to_copy", -1)), \
        ids.get("aten::empty", -1)
    starts, ends, out_keys = [], [], []
    for rows, climb in ((out, (copy_id,)), (back, (copy_id, *to_ids))):
        launching = tr.op_of[g.c_row[g.g_call[rows]]]
        launching = launching[launching != NONE]
        launching = launching[np.isin(ev.name[launching], climb)]
        l_keys = thread_keys(ev, launching)
        for k in distinct(l_keys).tolist():
            mine = ops[keys == k]
            cand = mine[np.isin(ev.name[mine], climb)]          # the hook's own ops on this thread, by start
            # the outermost of them (none of the others encloses it): each launching op's is the one it starts in
            reach = np.maximum.accumulate(ev.end[cand])
            top = cand[np.concatenate(([True], ev.start[cand][1:] >= reach[:-1]))]
            op = launching[l_keys == k]
            j = np.maximum(np.searchsorted(ev.start[top], ev.start[op], side="right") - 1, 0)
            holds = (ev.start[top[j]] <= ev.start[op]) & (ev.end[top[j]] >= ev.end[op])
            hook = np.where(holds, top[j], op)
            s, e = ev.start[hook].copy(), ev.end[hook]
            if rows is out:     # the pinned buffer made for it: the op that ended last before the copy began
                by_end = mine[np.argsort(ev.end[mine], kind="stable")]
                i = np.searchsorted(ev.end[by_end], s, side="right") - 1
                prev = by_end[np.maximum(i, 0)]
                pinned = (i >= 0) & (ev.name[prev] == empty_id)
                s[pinned] = ev.start[prev[pinned]]
            starts.append(s)
            ends.append(e)
            out_keys.append(np.full(len(s), k, np.int64))
    if not starts:
        z = np.zeros(0, np.int64)
        return z, z, z
    s, e, k = (np.concatenate(starts).astype(np.int64), np.concatenate(ends).astype(np.int64),
               np.concatenate(out_keys))
    return _with_calls_between(c, s, e, k), e, k


def _with_calls_between(c: Context, s: np.ndarray, e: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Each hook's start taken back to the end of the hook before it on its thread where nothing ran between (no op
    starts, no runtime call): that gap is the Python hook's call from autograd, save_on_cpu's pack_to_cpu or
    unpack_from_cpu (pairs3 vit_small_activations_offloaded: 20-50 us between one saved tensor's copy and the next
    one's pinned buffer, 39 tensors a step each way; the after trace ran 8 ms a step where the replay left 10)."""
    ev, g = c.trace.ev, c.g
    ops = ops_named(c, lambda n: True)
    o_keys = thread_keys(ev, ops)
    out = s.copy()
    for key in distinct(k).tolist():
        mine = np.flatnonzero(k == key)
        mine = mine[np.argsort(s[mine], kind="stable")]
        if len(mine) < 2:
            continue
        began = np.sort(np.concatenate((ev.start[ops[o_keys == key]], g.c_start[c.call_keys == key])))
        prev_end, this_start = e[mine[:-1]], s[mine[1:]]
        between = np.searchsorted(began, this_start, side="left") - np.searchsorted(began, prev_end, side="right")
        take = (between == 0) & (prev_end <= this_start)
        out[mine[1:][take]] = prev_end[take]
    return out


def says(a: Offloaded) -> str:
    if a.count == 0:
        return ("no activations offloaded (device-to-host copies in the forward matched by host-to-device copies "
                "inside the backward's nodes)")
    return (f"{units.integer(a.count)} tensors autograd saves go to the host in the forward "
            f"({units.size(a.to_host_bytes)}) and come back inside the backward's nodes "
            f"({units.size(a.to_device_bytes)}), {units.duration_ns(a.copy_ns)} of copies on the device and "
            f"{units.integer(a.syncs)} stream syncs: kept on the GPU, the copies and their waits go")


def offloads(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("offloads", 0)


def most_saved(a: Offloaded) -> int:
    return a.copy_ns if a.count else 0


SPEC = LeverSpec(
    name="activations_on_gpu", effort=1, cause=Cause.DATA_TRANSFER, apply=apply, says=says,
    words="keeping the saved activations on the GPU",
    fix="torch.autograd.graph.save_on_cpu(...) dropped: autograd's saved tensors stay on the GPU",
    recognise=Recognise(order=2, evidence="offloaded_activations", because="the activations' round trips went",
                        amount=offloads, acted=lambda m: float(m.by_cause_ns.get(Cause.DATA_TRANSFER, 0)),
                        applied=went),
    applied_words="the activations kept on the GPU", weighed_only_if_found=True, removes_work=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change="keep the saved activations on the GPU where memory allows: drop the "
                     "torch.autograd.graph.save_on_cpu(...) context around the forward (or offload fewer layers)",
              evidence="Memcpy DtoH outside the backward matched, size for size, by Memcpy HtoD launched inside "
                       "autograd's backward nodes (save_on_cpu's pack and unpack hooks)",
              applies="every GPU whose memory holds the step's activations (not in the trace: the advice says where "
                      "memory allows)",
              model="the matched copies both ways go with their dispatch and the hooks' ops around them (the pinned "
                    "buffer, the copy ops), and the forward copies' stream syncs stop blocking the host",
              guide="Autograd mechanics: saved tensors hooks (torch.autograd.graph.save_on_cpu)",
              where=Cause.DATA_TRANSFER))
