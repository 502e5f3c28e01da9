"""reduce_on_gpu: a reduction the loop makes on the host of a tensor it just copied off the device (`nxt =
logits[:, -1].float().cpu().argmax(-1).to(device)`), made on the GPU instead (`logits[:, -1].argmax(-1)`).

What the construct looks like in any trace: on one host thread, an outermost op that copies device memory to the
host (an aten::to/_to_copy/copy_/cpu whose launch call is a device-to-host memcpy, and the stream synchronize that
makes the host wait for it), then within MAX_LOOKAHEAD outermost ops a reduction (REDUCTIONS: argmax, topk, max,
sort, multinomial ...) that launches nothing (it ran on the host's cores), usually followed by a host-to-device copy
of its small result. The copy blocks: the host waits until every kernel queued before it has run, the GPU then
drains and idles while the host copies, reduces and launches the next step's first kernels. Found MIN_TRIPS times
or more (a loop: once per generated token or per step); a single read at the end of a run is not this construct.

What would make it fire falsely: a host reduction of a tensor read for another reason (logged, saved to disk) that
the loop then also reduces; the words name the round trip, not the purpose, and the price is only what the trip
costs. A reduction that launched a kernel ran on the device already and does not count.

The price (in the graph): each round trip's calls stop blocking and lose their time (the copies and the sync), the
copies' GPU time goes, and so does the host time between the trip's first and last call (the host reduction); the
reduction's one kernel on the device (a few µs against a trip of hundreds) is not added.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import KERNEL, MEMCPY, NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.knob import remove_gpu_work
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

REDUCTIONS = frozenset(("aten::argmax", "aten::argmin", "aten::max", "aten::min", "aten::topk", "aten::sort",
                        "aten::argsort", "aten::multinomial", "aten::kthvalue"))
MAX_LOOKAHEAD = 2      # outermost ops from the copy off the device to the host reduction (a view, a squeeze)
HOST_OP_NAMED = 0.05   # a host op of the trips named beside the heaviest holds this share of the heaviest's time
MIN_TRIPS = 2          # one read at the end of a run is a result; two or more a loop's round trips
HOST_PRODUCTS = frozenset(("aten::mm", "aten::matmul", "aten::addmm", "aten::bmm", "aten::linear", "aten::einsum"))
RESIDENT_AT_LEAST = 1 << 20   # elements: a table the host keeps (a retrieval gallery), not a step's small activation


@dataclass(frozen=True)
class ReducedOnGpu(Assumption):
    reduction: str = ""              # aten::argmax ...
    trip_ns: int = 0                 # the round trips' host time, first copy's start to the last call's end, traced
    copy_ns: int = 0                 # their copies' GPU time
    # the outermost ops the trips ran on the host between the copies (the reduction, and any op before it: a product
    # against a host-resident operand), (name, ns over every trip), most first: what carries the trip's host time
    host_ops: tuple[tuple[str, int], ...] = ()

    @property
    def heaviest(self) -> str:
        """The host op that carries most of the trips' host time (the reduction where it does)."""
        return self.host_ops[0][0] if self.host_ops else self.reduction
    operand: str = ""                # the host product's large operand that never left the host ("500000x512"), or ""


def copy_calls(c: Context, direction: str) -> np.ndarray:
    """The runtime-call rows that launched the memcpys one way ("DtoH" or "HtoD"; Kineto names both forms)."""
    tr = c.trace
    ev = tr.ev
    words = {"DtoH": ("DtoH", "Device -> Pageable", "Device -> Pinned"),
             "HtoD": ("HtoD", "Pageable -> Device", "Pinned -> Device")}[direction]
    rows = np.flatnonzero(ev.cat == MEMCPY)
    rows = rows[[any(w in tr.name_of(int(r)) for w in words) for r in rows.tolist()]] if len(rows) else rows
    calls = tr.launch_of[rows]
    return distinct(calls[calls != NONE])


def holds_call(c: Context, row: int, calls: np.ndarray) -> bool:
    """One of these runtime calls starts inside this op, on its thread."""
    ev = c.trace.ev
    if not len(calls):
        return False
    s = ev.start[calls]
    return bool(((s >= ev.start[row]) & (s < ev.end[row])
                 & (thread_keys(ev, calls) == thread_keys(ev, row))).any())


def _kernel_calls(c: Context) -> np.ndarray:
    """The runtime-call rows that launched a kernel."""
    tr = c.trace
    calls = tr.launch_of[tr.ev.cat == KERNEL]
    return distinct(calls[calls != NONE])


def find(c: Context) -> list[tuple[int, int, int, str, str]]:
    """The round trips (thread, start, end, the reduction's name, the host product's resident operand): the module
    docstring's rule; none below MIN_TRIPS."""
    ev = c.trace.ev
    d2h, h2d = copy_calls(c, "DtoH"), copy_calls(c, "HtoD")
    if not len(d2h):
        return []
    launches = _kernel_calls(c)
    tops, keys = top_level_ops(c)
    out = []
    for k in distinct(keys).tolist():
        mine = tops[keys == k].tolist()
        for i, r in enumerate(mine):
            if not holds_call(c, r, d2h):
                continue
            for j in range(i + 1, min(i + 1 + MAX_LOOKAHEAD + 1, len(mine))):
                name = c.trace.name_of(mine[j])
                if name in REDUCTIONS and not holds_call(c, mine[j], launches):
                    end = mine[j + 1] if j + 1 < len(mine) and holds_call(c, mine[j + 1], h2d) else mine[j]
                    out.append((int(k), int(ev.start[r]), int(ev.end[end]), name,
                                _resident_operand(c, mine[i + 1:j], launches)))
                    break
    return out if len(out) >= MIN_TRIPS else []


def host_ops(c: Context, trips: list[tuple[int, int, int, str]]) -> tuple[tuple[str, int], ...]:
    """The outermost ops inside the trips that ran on the host (they launched nothing and are not the copies), with
    their time summed by name over every trip, most first (fresh9 clip_retrieval_cpu_gallery: 2 trips of 135.7 ms,
    101.9 ms of them aten::matmul against a gallery kept on the host, 32.6 ms aten::topk)."""
    ev = c.trace.ev
    moving = np.concatenate((copy_calls(c, "DtoH"), copy_calls(c, "HtoD"), _kernel_calls(c)))
    tops, keys = top_level_ops(c)
    by: dict[str, int] = {}
    for k, s, e, *_ in trips:
        for r in tops[(keys == k) & (ev.start[tops] >= s) & (ev.end[tops] <= e)].tolist():
            if not holds_call(c, r, moving):
                name = c.trace.name_of(r)
                by[name] = by.get(name, 0) + int(ev.end[r] - ev.start[r])
    return tuple(sorted(by.items(), key=lambda x: -x[1]))


def _resident_operand(c: Context, ops: list[int], launches: np.ndarray) -> str:
    """The largest operand of a product the host computed between the copy and the reduction (aten::mm, matmul ...
    launching nothing), where it holds RESIDENT_AT_LEAST elements: a tensor that lives on the host (a gallery loaded
    with torch.load and never moved), which the copied tensor met there. "" for none."""
    best: list[int] = []
    for r in ops:
        if c.trace.name_of(r) not in HOST_PRODUCTS or holds_call(c, r, launches):
            continue
        dims = c.trace.shapes(r)[0] or []
        for d in dims:
            if isinstance(d, list) and d and all(isinstance(x, int) for x in d) \
                    and int(np.prod(d)) > (int(np.prod(best)) if best else 0):
                best = list(d)
    return "x".join(str(x) for x in best) if best and int(np.prod(best)) >= RESIDENT_AT_LEAST else ""


def apply(c: Context, p, o: Options) -> tuple[ReducedOnGpu, dict]:
    trips = find(c)
    g = c.g
    if not trips or not g.n_calls:
        return ReducedOnGpu("reduce_on_gpu", 0), {"round_trips": 0}
    c_key = c.call_keys
    inside = np.zeros(g.n_calls, bool)
    for k, s, e, _, _ in trips:
        inside |= (c_key == k) & (g.c_start >= s) & (g.c_start < e)
    trip_ns = sum(e - s for _, s, e, _, _ in trips)
    copies = inside & (g.c_kind == dg.COPY_CALL)
    rows = np.flatnonzero(copies[np.maximum(g.g_call, 0)] & (g.g_call >= 0) & (g.g_cat == MEMCPY))
    copy_ns = int(g.g_dur[rows].sum())
    remove_gpu_work(c, p, rows)
    blocking = inside & ((g.c_kind == dg.SYNC_CALL) | (g.c_kind == dg.COPY_CALL))
    p.c_blocked[blocking] = False
    p.c_dur[blocking] = 0
    for k, s, e, _, _ in trips:
        # the host time between the trip's calls (the copy's op, the reduction on the host) goes; its first call
        # keeps what lay before the trip began
        idx = np.flatnonzero((c_key == k) & (g.c_start >= s) & (g.c_start < e))
        if len(idx):
            p.c_gap[idx[1:]] = 0
            before = max(s - int(g.c_start[idx[0]] - g.c_gap[idx[0]]), 0)
            p.c_gap[idx[0]] = min(int(p.c_gap[idx[0]]), before)
    operand = next((t[4] for t in trips if t[4]), "")
    return (ReducedOnGpu("reduce_on_gpu", len(trips), reduction=trips[0][3], trip_ns=trip_ns, copy_ns=copy_ns,
                         host_ops=host_ops(c, trips), operand=operand), {"round_trips": len(trips)})


def says(a: ReducedOnGpu) -> str:
    if a.count == 0:
        return ("no tensor copied off the device and reduced on the host (aten::argmax, topk, max ... launching "
                "nothing) twice or more")
    if a.heaviest == a.reduction:
        what, ops = "reduce it there", f"{a.reduction} on the CPU"
    else:   # the host time is another op's: name it first, with its share (fresh9 clip_retrieval_cpu_gallery: 'aten::
        # topk on the CPU, 135.7 ms of host time', 75% of it an aten::matmul against a gallery kept on the host)
        what = "compute on it there before reducing it"
        named = [(name, ns) for name, ns in a.host_ops[:3] if ns >= HOST_OP_NAMED * a.host_ops[0][1]]
        ops = ", ".join(f"{name} {units.duration_ns(ns)}" for name, ns in named) + " on the CPU"
    if a.operand:   # the product met a tensor that lives on the host (a gallery): its kernels would run on the device
        return (f"{units.integer(a.count)} round trips copy a tensor to the host, multiply it there with a "
                f"[{a.operand}] host tensor and reduce the product ({ops}, "
                f"{units.duration_ns(a.trip_ns)} of host time in all from the copies to their return, "
                f"{units.duration_ns(a.copy_ns)} of copies): each blocks until the GPU drains; priced as the copies, "
                "the syncs and the host's product and reduction gone, their kernels on the device not added")
    return (f"{units.integer(a.count)} round trips copy a tensor to the host and {what} ({ops}, "
            f"{units.duration_ns(a.trip_ns)} of host time in all from the copies to their return, "
            f"{units.duration_ns(a.copy_ns)} of copies): each blocks until the GPU drains; priced as the copies, "
            "the syncs and the host work between them gone, the one reduction kernel in their place not added")


def change_for(a: Assumption) -> str:
    op = getattr(a, "reduction", "").removeprefix("aten::") or "argmax"
    operand = getattr(a, "operand", "")
    if operand:
        # the copy off the device meets a large host tensor in a product before the reduction: the product and the
        # reduction run on the host because that operand lives there (fresh9 clip_retrieval_cpu_gallery: a
        # [500000, 512] gallery from torch.load)
        return (f"keep the [{operand}] operand of the host's product on the GPU: move it there once where it is "
                f"loaded (`t = t.to(device)`), so the product and the {op} run on the device and the host no longer "
                "copies each step's result off the GPU and waits for it")
    return (f"{op} on the GPU: keep the tensor on the device and reduce it there (e.g. `x.{op}(-1)` on the "
            f"device tensor, in place of `x.cpu().{op}(-1).to(device)`), so the host no longer waits for the GPU to "
            "drain each step")



def most_saved(a: ReducedOnGpu) -> int:
    return a.trip_ns + a.copy_ns if a.count else 0


def blocks_graphs(assumption: Assumption | None) -> bool:
    """A round trip through the host inside the loop blocks it: no CUDA graph replays the loop as one until the
    reduction is on the device."""
    return isinstance(assumption, ReducedOnGpu) and assumption.count >= MIN_TRIPS


SPEC = LeverSpec(
    name="reduce_on_gpu", effort=1, cause=None, apply=apply, says=says, words="the reduction made on the GPU",
    fix="nxt = logits[:, -1].argmax(-1) in place of logits[:, -1].cpu().argmax(-1).to(device)",
    recognise=Recognise(order=2, evidence="round_trips", because="its host round trips for a reduction went",
                        amount=replay_figure("reduce_on_gpu", "round_trips"),
                        acted=lambda m: float(m.by_cause_ns.get(Cause.SYNCHRONIZATION, 0)
                                              + m.by_cause_ns.get(Cause.DATA_TRANSFER, 0)
                                              + m.by_cause_ns.get(Cause.LAUNCH_OVERHEAD, 0)), applied=went),
    applied_words="the reduction on the GPU (reduce_on_gpu)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change="argmax/top-k on the GPU: keep the tensor on the device and reduce it there, in place of "
                     "`.cpu().argmax(-1).to(device)`",
              evidence="an outermost op whose launch call is a device-to-host memcpy, then within two ops a host "
                       "reduction (aten::argmax, topk, max, sort, multinomial ...) that launches nothing, twice or "
                       "more",
              applies="every device and dtype",
              model="the round trips' copies, syncs and host reduction removed in the replay; the one reduction "
                    "kernel in their place not added",
              guide="Performance Tuning Guide: avoid unnecessary CPU-GPU synchronization", line=change_for))
