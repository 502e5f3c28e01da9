"""embedding_max_norm: nn.Embedding(..., max_norm=None) in place of a max_norm that renormalises the table on every
lookup.

`nn.Embedding(n, d, max_norm=1.0)` (an "embedding norm constraint" from a paper) makes every forward call
F.embedding's `torch.embedding_renorm_(weight, ids, max_norm, norm_type)` before the lookup: on the GPU it sorts the
batch's ids, finds the unique ones, takes each looked-up row's norm and scales the rows above max_norm in place, a
chain of a dozen small kernels and host calls per table per step, serial with the lookup that follows. A model of
many tables (a recommender's 26 categorical features) runs that chain once per table.

What any trace of the construct shows (found by `find`): outermost aten::embedding_renorm_ ops (its weight
[rows, d] and the ids as inputs), MIN_RENORMS or more, each followed on its thread by the aten::embedding it guards.
It needs no shapes and no stack: the op's name is the construct (nothing else calls embedding_renorm_). What would
make it fire falsely: none for the op; the change is not free: dropping max_norm drops the constraint, so the words
name the ways to keep it off the hot path (renormalise the weights once every N steps under torch.no_grad, or clip
the rows' norms after the optimizer step), not only "delete it".

The price: the renorm ops' GPU work, their dispatch and any read they block on go in the replay (the lookup and its
backward stay as they ran).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers import drop_ops
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

RENORM = "aten::embedding_renorm_"
MIN_RENORMS = 2        # one renorm a run is set-up (a weight clipped once); two or more are lookups that renorm


@dataclass(frozen=True)
class MaxNormOff(Assumption):
    per_step: int = 0          # renorms a profiled step
    tables: int = 0            # distinct table shapes renormalised (a lower bound of the tables)
    gpu_ns: int = 0            # the renorms' kernels and copies
    launches: int = 0
    waited_ns: int = 0         # the host's wait in the renorms' reads, as traced


def find(c: Context) -> np.ndarray:
    """The outermost embedding_renorm_ ops (rows), none where fewer than MIN_RENORMS."""
    rows = outermost(c, ops_named(c, lambda n: n == RENORM))
    return rows if len(rows) >= MIN_RENORMS else rows[:0]


def apply(c: Context, p, o: Options) -> tuple[MaxNormOff, dict]:
    rows = find(c)
    if not len(rows) or not c.g.n_calls:
        return MaxNormOff("embedding_max_norm", 0), {"renorms": 0}
    ev = c.trace.ev
    keys = thread_keys(ev, rows)
    waited, gpu_ns, launches = drop_ops.drop(c, p, [(int(k), int(ev.start[r]), int(ev.end[r]))
                                                    for k, r in zip(keys.tolist(), rows.tolist())])
    queued = mirror_queued(c, p)     # the window's first step, queued before it: its renorms' kernels go too
    tables = {tuple((c.trace.shapes(int(r))[0] or [[]])[0] or ()) for r in rows.tolist()}
    return (MaxNormOff("embedding_max_norm", len(rows), per_step=len(rows) // drop_ops.profiled_steps(c),
                       tables=len(tables), gpu_ns=gpu_ns, launches=launches, waited_ns=waited),
            {"renorms": len(rows), "queued_kernels": queued})


def says(a: MaxNormOff) -> str:
    if a.count == 0:
        return "no aten::embedding_renorm_ (nn.Embedding's max_norm) run twice or more"
    return (f"{units.integer(a.count)} aten::embedding_renorm_ ({units.integer(a.per_step)} a step, on "
            f"{units.integer(a.tables)} table shapes: max_norm renormalises each table's looked-up rows before the "
            f"lookup) go: {units.integer(a.launches)} GPU activities ({units.duration_ns(a.gpu_ns)}) and their "
            "dispatch; the lookups and their backward kept as they ran")


CHANGE = ("nn.Embedding(..., max_norm=None): keep the norm constraint off the hot path (renormalise the weights "
          "once every N steps under torch.no_grad(), or clip the rows' norms after optimizer.step()) in place of "
          "max_norm, which renormalises the looked-up rows in place on every lookup")

SPEC = LeverSpec(
    name="embedding_max_norm", effort=1, cause=None, apply=apply, says=says, words="max_norm off the lookups",
    fix="nn.Embedding(..., max_norm=...) -> max_norm=None (the constraint applied once, off the hot path)",
    recognise=Recognise(order=1, evidence="renorms", because="its embedding lookups stopped renormalising the tables",
                        amount=replay_figure("embedding_max_norm", "renorms"),
                        acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="max_norm off the lookups (embedding_max_norm)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE,
              evidence="aten::embedding_renorm_ before the lookups (nn.Embedding's or F.embedding's max_norm), twice "
                       "or more",
              applies="every device and dtype",
              model="the renorm ops' kernels, dispatch and blocking reads removed in the replay",
              guide="torch.nn.Embedding (max_norm); past the tuning guides",
              ops=(RENORM,)))
