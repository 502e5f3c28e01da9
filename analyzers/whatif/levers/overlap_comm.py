"""overlap_comm: each collective runs beside the compute it does not depend on.

The fix: launch the collectives on a stream of their own as soon as their input is ready (DDP
all-reduces each gradient bucket during backward, FSDP prefetches its all-gathers, a hand-written
loop issues its all-reduce on a side stream with an event wait), and let only the work that reads
their result wait for them. Bucketing changes how many collectives there are, not what they wait
for, so diff recognises the fix by the exposed collective time, not by a count.

In the graph, a collective that shares its stream with compute moves to a side stream of its device:
it still starts only after the work issued before it on its stream (its input is made there, as far
as the trace can tell); the work after it no longer waits for it, except the first activity of the
next profiler step (ProfilerStep#N: the optimizer step and the next forward read what the step's
collectives made) or, without steps, the first one after the host next blocks on the device. Each
collective keeps its measured time, its wait for the other ranks included: one rank's replay does
not move its peers. A collective already on a stream of its own is left as it is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses import comm as comm_mod
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.kernels import is_collective
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import KERNEL, NONE, USER_ANNOTATION
from tracetriage.analyzers.model.units import duration_ns, integer
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.spec import Assumption, Context, LeverSpec, Measured, Options, Recognise, went
from tracetriage.analyzers.whatif.levers.tp_forward import per_layer_forward


@dataclass(frozen=True)
class CommOverlapped(Assumption):
    on_own_stream: int = 0           # collectives already on a stream of their own: left as they are
    consumers: str = ""              # what waits for a moved collective: "steps" | "syncs" | "none"
    collective_ns: int = 0           # their measured time, kept (waiting for the peers included)
    per_layer: int = 0               # tensor parallelism's per-layer all-reduces in a forward pass (tp_forward): no
                                     # side stream hides them, so nothing moves


def apply(c: Context, p, o: Options) -> tuple[CommOverlapped, dict]:
    g = c.g
    coll = (g.g_cat == KERNEL) & c.gpu_named(is_collective)
    n_q = len(g.queue_keys)
    shares = np.zeros(n_q, bool)                  # queues where a collective sits among compute
    np.logical_or.at(shares, g.g_queue[~coll], True)
    moving = np.flatnonzero(coll & shares[g.g_queue])
    kept = int(coll.sum()) - len(moving)
    tp = per_layer_forward(c, moving)
    if tp:      # the next layer reads each one's result: a side stream changes nothing (levers/tp_forward.py)
        return (CommOverlapped("overlap_comm", 0, on_own_stream=kept, per_layer=tp,
                               collective_ns=int(g.g_dur[coll].sum())), {"collectives": 0, "per_layer": tp})
    # activities are in (queue, call, start) order: each one's predecessor on its queue is the row before
    first_in_q = np.r_[True, g.g_queue[1:] != g.g_queue[:-1]] if len(g.g_row) else np.zeros(0, bool)
    boundary, consumers = _consumer_points(c, p)
    for i in moving.tolist():
        if g.g_dep[i] == NONE and not first_in_q[i]:
            p.g_dep[i] = i - 1                        # its input: the work issued before it on its stream
            p.g_delay[i] = 0
        p.g_queue[i] = n_q + int(g.g_device[i]) - int(g.g_device.min())   # a side stream of its device
        p.g_gap[i] = 0
    if len(moving) and len(boundary):
        stay = np.flatnonzero(~coll | ~shares[g.g_queue])      # in (queue, call) order, as the graph keeps them
        after = np.searchsorted(boundary, g.g_call[moving], side="right")
        for qi in distinct(g.g_queue[moving]).tolist():
            mine = stay[g.g_queue[stay] == qi]
            sel = (g.g_queue[moving] == qi) & (after < len(boundary))
            # the first activity left on the collective's stream issued at or after the next consumer point
            k = np.searchsorted(g.g_call[mine], boundary[after[sel]], side="left")
            for i, j in zip(moving[sel].tolist(), k.tolist()):
                if j >= len(mine):
                    continue
                w = mine[j]
                if p.g_dep[w] == NONE or g.g_start[p.g_dep[w]] < g.g_start[i]:   # it waits for the later one
                    p.g_dep[w] = i
                    p.g_delay[w] = g.min_gap_ns
    dur = int(g.g_dur[coll].sum())
    return (CommOverlapped("overlap_comm", len(moving), on_own_stream=kept, consumers=consumers, collective_ns=dur),
            {"collectives": len(moving), "on_own_stream": kept})


def _consumer_points(c: Context, p) -> tuple[np.ndarray, str]:
    """Call indices where the work that reads the collectives' results begins: each profiler step's first
    call, else each call after the host blocked on the device; sorted."""
    ev, g = c.trace.ev, c.g
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    if len(ann) and g.n_calls:
        steps = ann[name_flags(c.trace, ann, lambda n: n.startswith(PROFILER_STEP))]
        if len(steps) >= 2:
            k = np.searchsorted(g.c_start, np.sort(ev.start[steps]), side="left")
            return distinct(k[k < g.n_calls]), "steps"
    blocked = np.flatnonzero(p.c_blocked)
    if len(blocked):
        return distinct(blocked + 1), "syncs"
    return np.zeros(0, np.int64), "none"


WAITERS = {"steps": "the next profiler step's first kernel waits for them",
           "syncs": "the first kernel after each host wait on the device waits for them",
           "none": "nothing in the trace reads their results"}


def says(a: CommOverlapped) -> str:
    if a.count == 0 and a.per_layer:
        return (f"the {integer(a.per_layer)} collectives that follow a GEMM in this forward-only trace are tensor "
                "parallelism's per-layer all-reduces: the next layer reads each result, so a side stream hides none "
                "of them; what shortens them is structural (fewer tensor-parallel ranks, a GEMM fused with its "
                "all-reduce, two micro-batches interleaved)")
    if a.count == 0:
        why = (f"the {integer(a.on_own_stream)} collectives already run on a stream of their own" if a.on_own_stream
               else "no collective shares a stream with compute in this trace")
        return f"{why}: nothing to overlap"
    return (f"{integer(a.count)} collectives move to a side stream and start once the work before them is done; the "
            f"compute after them runs beside them and {WAITERS[a.consumers]}; they keep their measured "
            f"{duration_ns(a.collective_ns)}, waiting for the other ranks included (one rank's replay does not move "
            "its peers)")


def exposed_comm(m: Measured) -> int:
    """The collectives' time with no compute beside them (tracetriage.analyzers.analyses.comm)."""
    ev = m.trace.ev
    found = comm_mod.analyze(m.trace, np.flatnonzero(ev.cat == KERNEL))
    return found.exposed_ns if found is not None else 0


SPEC = LeverSpec(
    name="overlap_comm", cause=None, apply=apply, says=says,
    words="overlapping the collectives with compute",
    fix=("the collectives run on their own stream as soon as their input is ready (DDP buckets during backward, "
         "FSDP prefetch), only their consumers waiting on an event"),
    # tried after remove_syncs (the same order: the registry's order breaks the tie), before kernels_2x: an
    # overlap shortens the kernel busy time too
    recognise=Recognise(order=3, evidence="exposed_comm", because="its exposed collective time went",
                        amount=exposed_comm, acted=exposed_comm, applied=went),
    experiment=Experiment.OVERLAP_COMM,
    applied_words="overlapping the collectives", prediction_words=" if the collectives ran beside the compute",
    weighed_only_if_found=True, ranks=2)
