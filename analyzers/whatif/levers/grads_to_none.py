"""grads_to_none: zero_grad(set_to_none=True) in place of set_to_none=False.

Zeroing the gradients keeps their memory and costs kernels twice: zero_grad fills every grad with
zeros (per parameter under nn.Module.zero_grad, `aten::zero_`; a few `_foreach_zero_` launches under
an optimizer's), and the next backward's AccumulateGrad adds each new gradient into the zeros
(`aten::add_` inside `torch::autograd::AccumulateGrad`) instead of taking it. With set_to_none=True
both go: AccumulateGrad steals the incoming gradient, no kernel. In the graph the fills and the
accumulations go with their ops' dispatch on the host (autograd's engine still visits each grad), one
backward per zero_grad: under gradient accumulation the later micro-batches' adds stay, and this
overstates the saving.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif.levers.knob import calls_inside, gpu_of_calls, ops_named, remove_gpu_work
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

ZEROING = ("aten::zero_", "aten::_foreach_zero_")
MAKES_ZEROS = ("aten::zeros", "aten::new_zeros", "aten::zeros_like")   # a new tensor, not a kept grad
ACCUMULATE = "torch::autograd::AccumulateGrad"
BACKWARD = "autograd::engine::evaluate_function"


@dataclass(frozen=True)
class GradsToNone(Assumption):
    fills: int = 0                   # zeroing kernels
    adds: int = 0                    # accumulations into kept grads
    gpu_ns: int = 0


def _zero_fills(c: Context) -> np.ndarray:
    """Fills of kept grads: zero_ outside a new tensor's making and outside the backward (embedding's and
    the losses' backward zero their own buffers)."""
    zero = gpu_of_calls(c, calls_inside(c, ops_named(c, lambda n: n in ZEROING)))
    new = gpu_of_calls(c, calls_inside(c, ops_named(c, lambda n: n.startswith(MAKES_ZEROS) or n.startswith(BACKWARD))))
    return np.setdiff1d(zero, new)


def apply(c: Context, p, o: Options) -> tuple[GradsToNone, dict]:
    adds = gpu_of_calls(c, calls_inside(c, ops_named(c, lambda n: n == ACCUMULATE)))
    fills = _zero_fills(c)
    if not len(fills) or not len(adds):          # no grads kept between steps: set_to_none already (or no backward)
        return GradsToNone("grads_to_none", 0), {"fills": len(fills), "adds": len(adds)}
    rows = np.union1d(fills, adds)
    gpu_ns = int(c.g.g_dur[rows].sum())
    remove_gpu_work(c, p, rows, dispatch="op")
    return (GradsToNone("grads_to_none", len(rows), fills=len(fills), adds=len(adds), gpu_ns=gpu_ns),
            {"fills": len(fills), "adds": len(adds)})


def says(a: GradsToNone) -> str:
    if a.count == 0:
        return "no gradients zeroed and accumulated into in this trace (set_to_none already, or no backward)"
    return (f"the {units.integer(a.fills)} zero fills and {units.integer(a.adds)} accumulations into kept grads "
            f"({units.duration_ns(a.gpu_ns)} of GPU time) go with their launches: backward hands each gradient over")


def accumulations(m: Measured) -> int:
    return m.whatif.lever("grads_to_none").detail.get("adds", 0)


SPEC = LeverSpec(
    name="grads_to_none", effort=1, cause=None, apply=apply, says=says, words="zero_grad(set_to_none=True)",
    fix="zero_grad(set_to_none=True) in place of set_to_none=False",
    recognise=Recognise(order=2, evidence="grad_accumulations", because="its accumulations into zeroed grads went",
                        amount=accumulations, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="zero_grad(set_to_none=True)", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    # (not "the default since torch 2.0": the knob is only named where zero_grad still fills, which that default
    # would not do; the words say what the trace shows instead)
    knob=Knob(change="optimizer.zero_grad(set_to_none=True) (or model.zero_grad(set_to_none=True)): here zero_grad "
                     "still fills the gradients (set_to_none=False passed, or a torch before 2.0)",
              evidence="fill kernels launched by aten::zero_ / aten::_foreach_zero_ (zero_grad keeping the grads) "
                       "and aten::add_ kernels inside torch::autograd::AccumulateGrad in the backward",
              applies="every device and dtype (training with autograd)",
              model="the fills and the accumulations, and their ops' dispatch, go (one backward per zero_grad)",
              where=Cause.LAUNCH_OVERHEAD,
              guide="Performance Tuning Guide: use parameter.grad = None instead of model.zero_grad() or "
                    "optimizer.zero_grad()"))
