"""one_backward: one backward pass over the summed losses (sum(losses).backward()) in place of a backward per loss,
each but the last with retain_graph=True, through the parameters the losses share.

A multi-task model (a shared trunk, a tower per task) trained with `for i, l in enumerate(losses):
l.backward(retain_graph=...)` runs autograd's engine once per loss over the same graph: the shared trunk's backward
nodes (its GEMMs' gradients, the embedding tables' dense backward) run once per task, and each pass after the first
adds its gradients into the parameters' .grad (AccumulateGrad's add kernels over every shared parameter). One
backward of the summed losses runs each node once, the towers' gradients meeting at the trunk's output (one add each).

What any trace of it shows: autograd's nodes carry the "Sequence number" of the forward op that made them, and a
forward numbers its ops afresh (the counter only grows), so a node evaluated again with the same number is the same
node of the same graph run again: `autograd::engine::evaluate_function: X` ops whose (thread, sequence number)
repeats. MIN_REPEATED such nodes at least (a lone node evaluated twice is not a multi-loss step). The AccumulateGrad
nodes carry no number: one that follows a repeated node on its thread (the parameter's gradient it accumulates) is
repeated with it. fresh12 multitask_ranker_backward_per_task: 3 task losses, 2 steps, the trunk's 12 embedding
backwards and its MLP's nodes evaluated three times a step.

The price: every evaluation of a node after its first (and the AccumulateGrad after it) goes from the replay, its host
time (the engine's dispatch), its kernels and any read it blocked on; the first pass, the towers' own nodes (each run
once already) and the forward stay. The adds where the towers' gradients meet at the trunk are not priced (one
elementwise add per trunk output).

What would make it fire falsely: two optimizers stepping on two losses of one graph (a GAN's discriminator and
generator losses through one generator output, each backward with retain_graph=True): the gradients must stay apart
there, and summing the losses is not the fix; the words say "where the losses update the same parameters in one
optimizer step". A double backward (create_graph=True, a gradient penalty) runs new nodes (new numbers): not found.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.host_windows import remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import mirror_queued, ops_named, outermost
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

NODE = "autograd::engine::evaluate_function: "
ACCUMULATE = NODE + "torch::autograd::AccumulateGrad"
MIN_REPEATED = 8      # nodes evaluated again: a shared trunk's layers, not one node a user's hook re-runs


@dataclass(frozen=True)
class OneBackward(Assumption):
    passes: int = 0            # the most times one node ran: backward passes over the shared graph
    nodes: int = 0             # distinct nodes evaluated more than once
    accumulates: int = 0       # AccumulateGrad evaluations that go with them
    host_ns: int = 0           # the repeated evaluations' host time that goes


def repeated(c: Context) -> tuple[np.ndarray, int, int]:
    """The outermost backward-node ops (rows) that evaluate a node again (module docstring), the number of distinct
    nodes repeated and the most passes one node ran; empty where fewer than MIN_REPEATED nodes repeat."""
    ev = c.trace.ev
    rows = outermost(c, ops_named(c, lambda n: n.startswith(NODE)))
    none = rows[:0]
    if not len(rows):
        return none, 0, 0
    rows = rows[np.lexsort((ev.start[rows], thread_keys(ev, rows)))]
    keys, seq = thread_keys(ev, rows), ev.seq[rows]
    numbered = seq != NONE
    pairs = np.stack((keys[numbered], seq[numbered]), axis=1)   # (thread, sequence number)
    _, first, counts = np.unique(pairs, axis=0, return_index=True, return_counts=True)
    again = np.zeros(len(rows), bool)
    idx = np.flatnonzero(numbered)
    again[idx] = True
    again[idx[first]] = False
    nodes = int((counts > 1).sum())
    if nodes < MIN_REPEATED:
        return none, 0, 0
    # an AccumulateGrad right after a repeated node on its thread accumulates that node's gradient again
    acc = np.array([c.trace.name_of(int(r)) == ACCUMULATE for r in rows.tolist()], bool)
    follows = np.zeros(len(rows), bool)
    follows[1:] = again[:-1] & (keys[1:] == keys[:-1])
    again |= acc & follows
    return rows[again], nodes, int(counts.max())


def apply(c: Context, p, o: Options) -> tuple[OneBackward, dict]:
    rows, nodes, passes = repeated(c)
    if not len(rows):
        return OneBackward("one_backward", 0), {"repeats": 0}
    ev = c.trace.ev
    host = remove_host_windows(c, p, ev.start[rows], ev.end[rows], thread_keys(ev, rows), drop_gpu=True)[1]
    mirror_queued(c, p)     # a repeated pass queued before the window: its kernels go alike
    acc = sum(c.trace.name_of(int(r)) == ACCUMULATE for r in rows.tolist())
    return (OneBackward("one_backward", len(rows), passes=passes, nodes=nodes, accumulates=acc, host_ns=host),
            {"repeats": len(rows), "host_ns": host})


def says(a: OneBackward) -> str:
    if a.count == 0:
        return "no backward node evaluated again with its sequence number (a backward per loss over a shared graph)"
    return (f"{units.integer(a.nodes)} backward nodes run up to {units.integer(a.passes)} times over one graph (a "
            f"backward per loss, retain_graph=True): {units.integer(a.count)} repeated evaluations "
            f"({units.integer(a.accumulates)} of them gradient accumulations) go with their kernels and "
            f"{units.duration_ns(a.host_ns)} of host time; the first pass and the forward kept")


CHANGE = ("sum(losses).backward() (one backward of the summed, weighted losses; log each loss's value apart) in place "
          "of a backward per loss with retain_graph=True, where the losses update the same parameters in one "
          "optimizer step")

SPEC = LeverSpec(
    name="one_backward", effort=1, cause=None, apply=apply, says=says, words="one backward of the summed losses",
    fix="for l in losses: l.backward(retain_graph=True) -> sum(losses).backward()",
    recognise=Recognise(order=1, evidence="repeated_backward_nodes",
                        because="its backward nodes stopped running once per loss",
                        amount=replay_figure("one_backward", "repeats"),
                        acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="one backward of the summed losses (one_backward)", weighed_only_if_found=True,
    removes_work=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE,
              evidence="autograd::engine::evaluate_function nodes whose sequence number (the forward op's) is "
                       "evaluated again on their thread, 8 nodes or more: one graph's backward run once per loss",
              applies="every device and dtype (autograd's engine, not a kernel)",
              model="each node's evaluations after its first, and the gradient accumulations after them, removed "
                    "with their kernels and host time",
              guide="Autograd mechanics (retain_graph); past the tuning guides"))
