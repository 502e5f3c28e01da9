"""op_on_gpu: an op the loop runs on the host's cores on a tensor it just copied off the device (`keep =
nms(boxes.cpu(), scores.cpu(), 0.5)`, `F.ctc_loss(log_probs.cpu(), ...)`), run on the device instead: the op's
inputs stay where they were made and its own CUDA kernel runs (torchvision::nms and aten::ctc_loss both have one).

reduce_on_gpu's sibling: that lever knows the host reductions (argmax, topk ...) and says "reduce it there"; this
one names any other op that launches nothing, and prices what the same round trip costs.

What the construct looks like in any trace: on one host thread, an outermost op that copies device memory to the
host (an aten::to/_to_copy/copy_ whose launch call is a device-to-host memcpy, and the sync that waits for it), then,
past at most MAX_LOOKAHEAD outermost ops (more copies off the device; small host ops, views and scalar glue, not
counted, up to MAX_GLUE ops in all), an op that launches nothing, holds
HOST_OP_AT_LEAST of host time or more per call and is not one of reduce_on_gpu's reductions: the op ran on the CPU,
on the copied tensor. Its result goes back (an op within MAX_LOOKAHEAD after it whose launch call is a host-to-device
memcpy: aten::index of a device tensor by the host's kept indices, a `.to(device)`), and where autograd runs it its
backward node also runs on the host (autograd::engine::evaluate_function: CtcLossBackward0, launching nothing),
followed by the gradient's upload (ToCopyBackward0's host-to-device memcpy). Found MIN_TRIPS times or more (a
loop: once per image batch or per step).

What would make it fire falsely: a host op the device has no kernel for (a custom C++ op), or one fed a copy made
for another reason (logged, saved); the words name the op and the round trip, and the price is only what the trip
costs on the host and the link.

The price (in the graph): each trip's copies lose their GPU time and their calls stop blocking, and the host op's
time (the forward op and its backward node) goes from the gap before the thread's next call; the op's kernels on
the device are not added (nms over 1,000 boxes or a CTC loss of 16 utterances: tens to hundreds of µs, against
milliseconds on the host).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import MEMCPY, NONE
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers import reduce_on_gpu
from tracetriage.analyzers.whatif.levers.knob import remove_gpu_work
from tracetriage.analyzers.whatif.levers.reduce_on_gpu import REDUCTIONS, copy_calls, holds_call
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Options,
    Recognise,
    replay_figure,
    went,
)
from tracetriage.analyzers.whatif.levers.tensors_on_device import top_level_ops

MAX_LOOKAHEAD = 3          # outermost ops from the copy off the device to the host op (a second copy, a view)
# small host ops between the copy and the op (torchvision's batched_nms: a max, casts, scalar adds and a multiply that
# offset each class's boxes on the host, 11 outermost ops before nms: pairs3 retinanet) are glue, not counted in the
# look-ahead; at most this many outermost ops are read past the copy
MAX_GLUE = 24
HOST_OP_AT_LEAST = 100_000  # ns a call: an op doing work on the host, not a view or a scalar's bookkeeping
MIN_TRIPS = 2              # one read at the end of a run is a result; two or more a loop's round trips
NODE = "autograd::engine::evaluate_function: "
# ops that move or view a tensor rather than compute on it: a copy's own host side is the trip, not the op
MOVES = frozenset(("aten::to", "aten::_to_copy", "aten::copy_", "aten::cpu", "aten::numpy_T", "aten::item",
                   "aten::_local_scalar_dense", "aten::detach", "aten::clone", "aten::contiguous"))


@dataclass(frozen=True)
class OpOnGpu(Assumption):
    op: str = ""                 # the heaviest host op of the trips: torchvision::nms, aten::ctc_loss
    op_ns: int = 0               # the host ops' time over every trip (forward ops and their backward nodes)
    backward_ns: int = 0         # the part of op_ns in backward nodes (CtcLossBackward0)
    nodes: int = 0               # those backward nodes (count holds them too)
    copy_ns: int = 0             # the trips' copies' GPU time, both ways
    trip_ns: int = 0             # the trips' host time: first copy's start to the op's end, and the upload's op
    per_call_ns: int = 0         # the heaviest op's median host time a call


def _node_op(node: str) -> str:
    """The forward op an autograd node is named after, snake-cased: 'CtcLossBackward0' -> 'ctc_loss'."""
    stem = re.sub(r"Backward\d*$", "", node.removeprefix(NODE))
    return re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()


def _op_stem(name: str) -> str:
    return name.split("::")[-1].lstrip("_")


def _tensor_dims(c: Context, row: int) -> list[tuple]:
    return [tuple(d) for d in (c.trace.shapes(row)[0] or []) if isinstance(d, list) and d]


def find(c: Context) -> list[tuple[int, int, int, int, str]]:
    """The host ops fed by a copy off the device (thread, trip start, op start, op end, op name) and their backward
    nodes (the same, the trip starting at the node): the module docstring's rule; none below MIN_TRIPS."""
    tr = c.trace
    ev = tr.ev
    d2h, h2d = copy_calls(c, "DtoH"), copy_calls(c, "HtoD")
    if not len(d2h):
        return []
    # any runtime call (a launch, a copy, a memset, a sync) inside an op: it did not run on the host alone
    calls = np.union1d(distinct(tr.launch_of[tr.launch_of != NONE]), np.concatenate((d2h, h2d)))
    # reduce_on_gpu's trips (a host product before a host topk: fresh9 clip_retrieval_cpu_gallery) stay its own
    reduced = [(k, s, e) for k, s, e, *_ in reduce_on_gpu.find(c)]
    tops, keys = top_level_ops(c)
    found: list[tuple[int, int, int, int, str, bool]] = []
    seen: set[int] = set()      # an op after two copies (boxes, then scores) is one trip, from the first copy
    for k in distinct(keys).tolist():
        mine = tops[keys == k].tolist()
        for i, r in enumerate(mine):
            if not holds_call(c, r, d2h):
                continue
            copied = set(_tensor_dims(c, r)[:1])
            steps = 0               # ops looked at past the copy, the small host ops between not counted
            for j in range(i + 1, min(i + 1 + MAX_GLUE, len(mine))):
                q = mine[j]
                name = tr.name_of(q)
                if holds_call(c, q, d2h):
                    copied |= set(_tensor_dims(c, q)[:1])
                    continue        # a second copy off the device (boxes, then scores)
                on_host = not holds_call(c, q, calls)
                if on_host and ev.end[q] - ev.start[q] < HOST_OP_AT_LEAST:
                    continue        # a view or a small op between the copy and the work (batched_nms's offsets)
                steps += 1
                if steps > MAX_LOOKAHEAD:
                    break
                # the op computes on the copied tensor (one of its inputs has the copy's shape: not a host randn, not
                # an op on host data the copy did not feed), launches nothing, and is not a copy or a reduction
                if not on_host or name in REDUCTIONS or name in MOVES or q in seen \
                        or not copied & set(_tensor_dims(c, q)) \
                        or any(k == rk and rs <= ev.start[q] < re for rk, rs, re in reduced):
                    break
                seen.add(q)
                back = any(holds_call(c, x, h2d) for x in mine[j + 1:j + 1 + MAX_LOOKAHEAD])
                found.append((int(k), int(ev.start[r]), int(ev.start[q]), int(ev.end[q]), name, back))
                break
    stems = {_op_stem(f[4]) for f in found}
    nodes: list[tuple[int, int, int, int, str]] = []
    for k in distinct(keys).tolist():   # the backward nodes of those ops, run on the host too, their gradient uploaded
        mine = tops[keys == k].tolist()
        for i, r in enumerate(mine):
            name = tr.name_of(r)
            if not name.startswith(NODE) or _node_op(name) not in stems or holds_call(c, r, calls) \
                    or ev.end[r] - ev.start[r] < HOST_OP_AT_LEAST:
                continue
            if any(holds_call(c, q, h2d) for q in mine[i + 1:i + 1 + MAX_LOOKAHEAD]):
                nodes.append((int(k), int(ev.start[r]), int(ev.start[r]), int(ev.end[r]), name))
    # the result comes back to the device: an upload right after the op, or its gradient's after its backward node
    # (a tensor copied off for a print or a log is formatted on the host and never returns)
    back = {_node_op(n[4]) for n in nodes}
    out = [f[:5] for f in found if f[5] or _op_stem(f[4]) in back]
    return out + nodes if len(out) >= MIN_TRIPS else []


def apply(c: Context, p, o: Options) -> tuple[OpOnGpu, dict]:
    trips = find(c)
    g = c.g
    if not trips or not g.n_calls:
        return OpOnGpu("op_on_gpu", 0), {"host_ops": 0}
    c_key = c.call_keys
    h2d = copy_calls(c, "HtoD")
    tops, keys = top_level_ops(c)
    ev = c.trace.ev
    inside = np.zeros(g.n_calls, bool)
    trip_ns = 0
    for k, s, _, e, _ in trips:
        inside |= (c_key == k) & (g.c_start >= s) & (g.c_start < e)
        trip_ns += e - s
        # the result's or the gradient's upload right after the op: the next outermost op's host-to-device copy
        after = tops[(keys == k) & (ev.start[tops] >= e)][:MAX_LOOKAHEAD]
        for q in after.tolist():
            if holds_call(c, q, h2d):
                inside |= (c_key == k) & (g.c_start >= ev.start[q]) & (g.c_start < ev.end[q])
                trip_ns += int(ev.end[q] - ev.start[q])
                break
    copies = inside & (g.c_kind == dg.COPY_CALL)
    rows = np.flatnonzero(copies[np.maximum(g.g_call, 0)] & (g.g_call >= 0) & (g.g_cat == MEMCPY))
    copy_ns = int(g.g_dur[rows].sum())
    remove_gpu_work(c, p, rows)
    blocking = inside & ((g.c_kind == dg.SYNC_CALL) | (g.c_kind == dg.COPY_CALL))
    p.c_blocked[blocking] = False
    p.c_dur[blocking] = 0
    by: dict[str, list[int]] = {}
    back_ns = nodes = 0
    for k, _, s, e, name in trips:
        # the op's host time sits in the gap before its thread's next call: it goes, what else lay there stays
        nxt = np.flatnonzero((c_key == k) & (g.c_start >= e))
        if len(nxt):
            i = nxt[np.argmin(g.c_start[nxt])]
            p.c_gap[i] = max(int(p.c_gap[i]) - (e - s), 0)
        if name.startswith(NODE):
            back_ns, nodes = back_ns + e - s, nodes + 1
        else:
            by.setdefault(name, []).append(e - s)
    op = max(by, key=lambda n: sum(by[n])) if by else trips[0][4]
    per_call = int(np.median(by[op])) if op in by else 0
    return (OpOnGpu("op_on_gpu", len(trips), op=op, op_ns=sum(e - s for _, _, s, e, _ in trips),
                    backward_ns=back_ns, nodes=nodes, copy_ns=copy_ns, trip_ns=trip_ns, per_call_ns=per_call),
            {"host_ops": len(trips)})


def says(a: OpOnGpu) -> str:
    if a.count == 0:
        return ("no op run on the host (launching nothing) on a tensor just copied off the device, twice or more, "
                "beside reduce_on_gpu's reductions")
    calls = a.count - a.nodes
    back = (f" and its backward {units.duration_ns(a.backward_ns)} in {units.integer(a.nodes)} autograd nodes, on "
            "the host too" if a.nodes else "")
    return (f"{a.op} runs on the CPU on tensors copied off the GPU ({units.integer(calls)} calls, "
            f"{units.duration_ns(a.op_ns - a.backward_ns)} of host time{back}; {units.duration_ns(a.copy_ns)} of "
            "copies both ways): "
            "each copy blocks until the GPU drains and the GPU idles while the host computes; priced as the copies, "
            "their syncs and the host op's time gone, the op's kernels on the device not added")


def change_for(a: Assumption) -> str:
    op = getattr(a, "op", "") or "the op"
    return (f"run {op} on the device: pass it the GPU tensors (no `.cpu()` before it, no `.to(device)` after), so "
            "its CUDA kernel runs in the stream and the host no longer copies its inputs off the GPU and waits")


def most_saved(a: OpOnGpu) -> int:
    return a.trip_ns + a.copy_ns if a.count else 0


def blocks_graphs(assumption: Assumption | None) -> bool:
    """A round trip through the host inside the loop splits it: no CUDA graph replays it as one."""
    return isinstance(assumption, OpOnGpu) and assumption.count >= MIN_TRIPS


SPEC = LeverSpec(
    name="op_on_gpu", effort=1, cause=None, apply=apply, says=says, words="the op run on the GPU",
    fix="keep = torchvision.ops.nms(boxes, scores, 0.5) on the device tensors, in place of nms(boxes.cpu(), "
        "scores.cpu(), 0.5)",
    recognise=Recognise(order=2, evidence="host_ops", because="its op run on the host between copies went",
                        amount=replay_figure("op_on_gpu", "host_ops"),
                        acted=lambda m: float(m.by_cause_ns.get(Cause.HOST_WORK, 0)
                                              + m.by_cause_ns.get(Cause.SYNCHRONIZATION, 0)
                                              + m.by_cause_ns.get(Cause.DATA_TRANSFER, 0)), applied=went),
    applied_words="the op on the GPU (op_on_gpu)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change="run the op on the device (torchvision.ops.nms, F.ctc_loss ... on the GPU tensors), in place of "
                     "copying its inputs to the host for it",
              evidence="an outermost op whose launch call is a device-to-host memcpy, then within three ops (small "
                       "host ops between not counted) an op holding 100 µs or more that launches nothing (not a "
                       "reduction: reduce_on_gpu's), twice or more; its autograd node, launching nothing before a "
                       "host-to-device copy, with it",
              applies="every device and dtype, where the op has a CUDA kernel",
              model="the trips' copies, syncs and the host op's time (and its backward node's) removed in the replay; "
                    "the op's kernels on the device not added",
              guide="Performance Tuning Guide: avoid unnecessary CPU-GPU synchronization", line=change_for))
