"""inference_mode: an eval forward under torch.inference_mode() (or torch.no_grad()), not with autograd recording.

A forward run with grad mode on (a validation loop or a server written without torch.no_grad()) records
autograd's graph as it goes: each op whose inputs require grad (the parameters) makes its backward node, saves
what that node would need and bumps version counters. That is host time inside the ops, with no event of its
own. The trace shows the nodes, not their cost:
  1. every op recorded while grad mode is on carries autograd's sequence number ("Sequence number"): the number
     the next node will take, so it steps by one for each node made, and stays put where no input requires grad
     (a forward over frozen weights makes no node: nothing to give back);
  2. a trace with nodes made and no backward (no autograd::engine::evaluate_function, no backward node or ATen
     backward op under its own name, as torch 1.9 records them) recorded a graph nobody used: an eval forward with
     autograd on.
In the graph each node gives back AUTOGRAD_OPS of this trace's median plain op (an innermost op that launches
nothing: knob.op_cost), taken from the host's time before its thread's next call after the op that made it,
never below none. The kernels keep their time. nn.TransformerEncoderLayer and nn.MultiheadAttention also take
their fused fast path (aten::_transformer_encoder_layer_fwd, aten::_native_multi_head_attention) once grad is
off: fewer kernels, not priced here (a floor).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import CPU_OP, NONE, thread_key
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.knob import op_cost, ops_named
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

BACKWARD = "autograd::engine::evaluate_function"
# A backward ran where the trace records one of these ops: autograd's engine (torch 1.10 and later wrap each node in
# evaluate_function), a node under its own name (torch 1.9 and earlier record "CudnnConvolutionBackward",
# "ReluBackward1" bare), the gradient's accumulation, or an ATen backward kernel (aten::convolution_backward): a
# forward never runs them.
_NODE = re.compile(r"^[A-Za-z0-9_]+Backward\d*$")


def _is_backward(name: str) -> bool:
    return (name.startswith(BACKWARD) or name == "torch::autograd::AccumulateGrad" or _NODE.match(name) is not None
            or (name.startswith("aten::") and "_backward" in name))
# What autograd's bookkeeping costs for each node it makes, in this trace's median plain ops (the host's speed and the
# profiler's share come with them), fitted on the dev pair traces/fixes/knobs3/inference_mode_gpt2 (H200 host, torch
# 2.11, HF GPT-2 at batch 1, host-bound): the span fell 52.50 -> 40.46 ms with the same 1,016 kernels, 12.03 ms for the
# 1,807 nodes the before trace made, 6.66 us a node = 3.34 x its median plain op (2.00 us). More than a node's own
# record: grad mode also slows the ops that make none (the after trace's median plain op is 0.66 us), which the
# figure folds into the nodes. One dev pair: the test pairs (resnet50, nn.TransformerEncoder) say how far it carries.
AUTOGRAD_OPS = 3.3
FAST_PATH = ("aten::_transformer_encoder_layer_fwd", "aten::_native_multi_head_attention")


@dataclass(frozen=True)
class InferenceMode(Assumption):
    host_ns: int = 0                 # the bookkeeping's host time, taken out
    per_op_ns: int = 0
    bn_training: int = 0             # batch-norm kernels of training mode in this forward: the model is not in eval()


# Batch norm in training mode, by its kernels: cuDNN's forward-training kernels (bn_fw_tr_*; eval runs bn_fw_inf_*) and
# ATen's batch statistics (an eval forward normalises by the running statistics and collects none). In a forward
# with no backward they say the model was never put in eval(): its BatchNorm layers normalise by each batch's
# statistics and update the running ones (heldout-user3 andrewlala_resnet50_t4: 52 cudnn bn_fw_tr kernels, told
# inference_mode alone).
BN_TRAINING = ("bn_fw_tr", "batch_norm_collect_statistics")


def _bn_training_kernels(c: Context) -> int:
    return int(c.gpu_named(lambda n: any(k in n for k in BN_TRAINING)).sum())


def node_ops(c: Context) -> np.ndarray:
    """For each backward node the forward made, the first op that carries its sequence number (the node is made
    inside it); none where the trace has a backward, which needs them."""
    ev = c.trace.ev
    if len(ops_named(c, _is_backward)):
        return np.zeros(0, np.int64)
    ops = np.flatnonzero((ev.cat == CPU_OP) & (ev.seq != NONE))      # rows sorted by start
    key = thread_key(ev.pid[ops], ev.tid[ops])
    first = []
    for k in np.unique(key).tolist():
        r = ops[key == k]
        _, at = np.unique(ev.seq[r], return_index=True)
        if len(at) > 1:                 # one number all along: no node made (the last number makes none either)
            first.append(np.sort(r[at])[:-1])
    return np.sort(np.concatenate(first)) if first else np.zeros(0, np.int64)


def apply(c: Context, p, o: Options) -> tuple[InferenceMode, dict]:
    g, ev = c.g, c.trace.ev
    ops = node_ops(c)
    detail = {"autograd_nodes": len(ops), "fast_path_ops": len(ops_named(c, lambda n: n in FAST_PATH))}
    if not len(ops) or not g.n_calls:
        return InferenceMode("inference_mode", 0), detail
    per_op = AUTOGRAD_OPS * op_cost(c).plain_ns
    # each call's host gap holds the nodes made since its thread's previous call
    c_key = thread_key(ev.pid[g.c_row], ev.tid[g.c_row])
    o_key = thread_key(ev.pid[ops], ev.tid[ops])
    held = np.zeros(g.n_calls, np.int64)
    for key in np.unique(c_key).tolist():
        m = np.flatnonzero(c_key == key)                 # calls in start order
        starts = np.sort(ev.start[ops[o_key == key]])
        upto = np.searchsorted(starts, g.c_start[m], side="right")
        held[m] = np.diff(np.concatenate(([0], upto)))
    take = np.minimum(np.maximum(p.c_gap, 0), np.round(held * per_op).astype(np.int64))
    p.c_gap -= take
    return (InferenceMode("inference_mode", len(ops), host_ns=int(take.sum()), per_op_ns=int(per_op),
                          bn_training=_bn_training_kernels(c)), detail)


def says(a: InferenceMode) -> str:
    if a.count == 0:
        return ("no backward node made in a trace without backward (grad already off or no input requiring grad, "
                "or a training step)")
    return (f"the {units.integer(a.count)} nodes autograd made for a backward that never runs each give back "
            f"{units.duration_ns(a.per_op_ns)} of host time (its bookkeeping), {units.duration_ns(a.host_ns)} in "
            "all; kernels keep their time")


CHANGE = "with torch.inference_mode(): around the eval forward (or torch.no_grad())"
CHANGE_EVAL = ("model.eval() and with torch.inference_mode(): around the forward (its BatchNorm runs in training "
               "mode here: batch statistics, running statistics updated)")


def change(a) -> str:
    return CHANGE_EVAL if getattr(a, "bn_training", 0) else CHANGE


def recorded(m: Measured) -> int:
    return m.whatif.lever("inference_mode").detail.get("autograd_nodes", 0)


SPEC = LeverSpec(
    name="inference_mode", effort=1, cause=None, apply=apply, says=says, words="torch.inference_mode()",
    fix="the eval forward under torch.inference_mode()",
    recognise=Recognise(order=2, evidence="autograd_nodes", because="its forward stopped making autograd's "
                        "backward nodes", amount=recorded, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="inference_mode (autograd off)", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE, line=change,
              evidence="ops carrying autograd's sequence number (recorded with grad mode on), the number stepping "
                       "with each backward node made, in a trace with no backward (no "
                       "autograd::engine::evaluate_function, backward node or ATen backward op)",
              applies="every device and dtype: an eval or serving forward with grad mode on",
              model="each backward node made gives back its bookkeeping: 3.3 x this trace's median plain op's "
                    "host time (measured on an H200 host), from the host gap before its thread's next call; kernels "
                    "unchanged (the fast path of nn.TransformerEncoderLayer/MultiheadAttention not priced)",
              guide="Performance Tuning Guide: disable gradient calculation for validation or inference; "
                    "torch.inference_mode"))
