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
never below none. nn.TransformerEncoderLayer and nn.MultiheadAttention also take their fused fast path
(aten::_transformer_encoder_layer_fwd, aten::_native_multi_head_attention) once grad is off: fewer kernels, not
priced here (a floor).

On the GPU, in a trace with no backward (the model left in train mode; model.eval() is then the other half of the
line):
  3. BatchNorm in training mode normalises by each batch's statistics: ATen's kernels compute them
     (batch_norm_collect_statistics*, a Welford reduction over the activation) before the transform, where eval
     normalises by the running statistics with the same transform kernel (fresh5 effnet_eval_no_grad, H100: the
     after trace's batch_norm_transform_input_kernel took 5.86 ms a step against the before's 5.80, its
     statistics' 18.4 ms gone): the statistics kernels go, the transform keeps its time. cuDNN's training kernel
     does both in one (bn_fw_tr_*); its eval twin (bn_fw_inf_*) is one read and one write of the activation
     (bytes from the op's shapes and dtype), priced at the rate this trace's vectorized elementwise kernels stream
     at (channels_last.stream_rate); where the trace has no shapes or no such rate it keeps its time;
  4. dropout's kernels (inside aten::dropout / native_dropout / feature_dropout / alpha_dropout) go: eval's
     dropout is the identity;
  5. autograd's copies go: an in-place op whose backward needs its input (aten::silu_, aten::hardswish_ ...) clones
     that input first while grad is on (aten::clone inside the in-place op: fresh5 effnet's 49 DtoD copies, 2.0 ms
     a step, gone under inference_mode).
Each removed kernel's launch call goes with it (the op around it still runs); work queued before the window gets
the change its counterparts got (knob.mirror_queued).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import CPU_OP, NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.channels_last import activation_bytes, stream_rate
from tracetriage.analyzers.whatif.levers.knob import (
    calls_inside,
    gpu_of_calls,
    kernel_rows,
    mirror_queued,
    op_cost,
    ops_named,
    outermost,
    queued_counterparts,
    rows_inside,
    window_of_calls,
)
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
    nodes: int = 0                   # backward nodes the forward made
    bn_ns: int = 0                   # the training batch norms' GPU time ...
    bn_eval_ns: int = 0              # ... and what eval's would take (statistics gone, cuDNN's as one pass)
    bn_stats: int = 0                # of them, ATen's statistics kernels (gone)
    dropouts: int = 0                # dropout kernels
    clones: int = 0                  # autograd's copies of in-place ops' inputs
    counts: int = 0                  # BatchNorm's num_batches_tracked.add_(1) ops
    copies_ns: int = 0               # the dropout kernels', the copies' and the counts' GPU time
    calls_ns: int = 0                # the host time of the removed kernels' launch calls and of the ops that vanish
    gpu_removed_ns: int = 0          # the GPU time the edit took out (queued twins included)


# Batch norm in training mode, by its kernels: cuDNN's forward-training kernels (bn_fw_tr_*; eval runs bn_fw_inf_*) and
# ATen's batch statistics (an eval forward normalises by the running statistics and collects none). In a forward
# with no backward they say the model was never put in eval(): its BatchNorm layers normalise by each batch's
# statistics and update the running ones (heldout-user3 andrewlala_resnet50_t4: 52 cudnn bn_fw_tr kernels, told
# inference_mode alone).
BN_TRAINING = ("bn_fw_tr", "batch_norm_collect_statistics")


def _bn_training_kernels(c: Context) -> int:
    return int(c.gpu_named(lambda n: any(k in n for k in BN_TRAINING)).sum())


CUDNN_BN_TRAINING = "bn_fw_tr"
ATEN_BN_STATISTICS = "batch_norm_collect_statistics"
EVAL_PASSES = 2                      # eval's batch norm reads the activation once and writes it once
DROPOUT_OPS = ("aten::dropout", "aten::native_dropout", "aten::feature_dropout", "aten::alpha_dropout",
               "aten::feature_alpha_dropout")


def _is_in_place(name: str) -> bool:
    return name.startswith("aten::") and name.endswith("_") and not name.endswith("__")


def _autograd_clones(c: Context) -> np.ndarray:
    """The aten::clone ops called inside an in-place op: autograd saving the op's input for a backward (none runs
    where grad is off)."""
    clones = ops_named(c, lambda n: n == "aten::clone")
    return clones[rows_inside(c, clones, ops_named(c, _is_in_place))] if len(clones) else clones


def _batches_counted(c: Context) -> np.ndarray:
    """BatchNorm's num_batches_tracked.add_(1) in training mode: an aten::add_ on a 0-d int64 tensor (eval skips
    it)."""
    def counts(row: int) -> bool:
        dims, types, _ = c.trace.shapes(row)
        return bool(dims) and dims[0] == [] and bool(types) and types[0] in ("long int", "long")
    adds = ops_named(c, lambda n: n == "aten::add_")
    return adds[[counts(int(r)) for r in adds.tolist()]] if len(adds) else adds


def _launching(c: Context, ops: np.ndarray) -> np.ndarray:
    """Of these ops, the outermost ones that launch GPU work."""
    ops = outermost(c, ops)
    if not len(ops):
        return ops
    w = window_of_calls(c, ops)
    hit = distinct(w[(w >= 0) & c.g.c_issues])
    return ops[hit]


def _with_queued(c: Context, rows: np.ndarray) -> np.ndarray:
    """These GPU activities and their twins queued before the window (knob.queued_counterparts)."""
    queued, like = queued_counterparts(c)
    return np.union1d(rows, queued[np.isin(like, rows)]) if len(queued) else rows


def _host_of_ops(c: Context, p, ops: np.ndarray) -> int:
    """The host time of these ops (outermost on their threads) goes: each call's gap loses the part of it they
    cover. Returns the time taken out."""
    g, ev = c.g, c.trace.ev
    ops = outermost(c, ops)
    if not len(ops) or not g.n_calls:
        return 0
    o_key = thread_keys(ev, ops)
    c_key = c.call_keys
    took = 0
    for key in distinct(o_key).tolist():
        r = ops[o_key == key]
        s, e = ev.start[r], ev.end[r]
        before = np.r_[0, np.cumsum(e - s)]                 # op time covered before each op starts

        def covered(t: np.ndarray) -> np.ndarray:
            k = np.searchsorted(s, t, side="right")         # ops starting at or before t
            last = np.maximum(k - 1, 0)
            return before[k - (k > 0)] + np.where(k > 0, np.clip(t - s[last], 0, e[last] - s[last]), 0)

        m = np.flatnonzero(c_key == key)
        lo = g.c_start[m] - np.maximum(p.c_gap[m], 0)
        cut = np.maximum(covered(g.c_start[m]) - covered(lo), 0)
        cut = np.minimum(cut, np.maximum(p.c_gap[m], 0))
        p.c_gap[m] -= cut
        took += int(cut.sum())
    return took


def _eval_batch_norm(c: Context, p) -> tuple[np.ndarray, int, int]:
    """Training batch norm as eval's: ATen's statistics kernels go; cuDNN's training kernels become one read and
    one write of the activation at the trace's elementwise rate. Returns (the rows removed, their time and the
    training kernels' time, eval's time for them)."""
    g = c.g
    stats = kernel_rows(c, lambda n: ATEN_BN_STATISTICS in n)
    cudnn = kernel_rows(c, lambda n: CUDNN_BN_TRAINING in n)
    before = int(g.g_dur[stats].sum() + g.g_dur[cudnn].sum())
    after = 0
    rate = stream_rate(c) if len(cudnn) else None
    for r in cudnn.tolist():
        call = int(g.g_call[r])
        op = int(c.trace.op_of[g.c_row[call]]) if call >= 0 and g.g_linked[r] else NONE
        b = activation_bytes(c, op) if op != NONE else 0
        if rate and b:
            p.g_dur[r] = min(int(g.g_dur[r]), int(np.ceil(EVAL_PASSES * b / rate)))
        after += int(p.g_dur[r])
    return stats, before, after


def node_ops(c: Context) -> np.ndarray:
    """For each backward node the forward made, the first op that carries its sequence number (the node is made
    inside it); none where the trace has a backward, which needs them."""
    ev = c.trace.ev
    if len(ops_named(c, _is_backward)):
        return np.zeros(0, np.int64)
    ops = np.flatnonzero((ev.cat == CPU_OP) & (ev.seq != NONE))      # rows sorted by start
    key = thread_keys(ev, ops)
    first = []
    for k in distinct(key).tolist():
        r = ops[key == k]
        _, at = np.unique(ev.seq[r], return_index=True)
        if len(at) > 1:                 # one number all along: no node made (the last number makes none either)
            first.append(np.sort(r[at])[:-1])
    return np.sort(np.concatenate(first)) if first else np.zeros(0, np.int64)


def _drop(c: Context, p, rows: np.ndarray) -> int:
    """These kernels go, with their launch calls (the op around them still runs); returns the calls' host time."""
    g = c.g
    p.g_dur[rows] = 0
    p.g_gap[rows] = 0
    calls = g.g_call[rows]
    calls = distinct(calls[(calls >= 0) & g.g_linked[rows]])
    took = int(p.c_dur[calls].sum())
    p.c_dur[calls] = 0
    return took


def _gpu_side(c: Context, p, training_bn: bool, grad_on: bool) -> dict:
    """The forward's training-mode work as eval and inference_mode run it (steps 3-5 above): kernels go or change,
    and the ops that vanish whole (dropout, autograd's clones, BatchNorm's batch count) take their host time along."""
    g = c.g
    stats, bn_ns, bn_eval_ns = _eval_batch_norm(c, p)
    dropout_ops = _launching(c, ops_named(c, lambda n: n in DROPOUT_OPS))    # eval's dropout runs, launching nothing
    clone_ops = _autograd_clones(c) if grad_on else np.zeros(0, np.int64)   # with grad off no clone is autograd's
    count_ops = _batches_counted(c) if training_bn else clone_ops[:0]
    dropout = _with_queued(c, gpu_of_calls(c, calls_inside(c, dropout_ops)))
    copies = _with_queued(c, gpu_of_calls(c, calls_inside(c, clone_ops)))
    counted = _with_queued(c, gpu_of_calls(c, calls_inside(c, count_ops)))
    gone = np.union1d(np.union1d(stats, dropout), np.union1d(copies, counted))
    copies_ns = int(g.g_dur[np.union1d(np.union1d(dropout, copies), counted)].sum())
    calls_ns = _drop(c, p, gone) if len(gone) else 0
    ops_ns = _host_of_ops(c, p, np.concatenate([dropout_ops, clone_ops, count_ops]))
    if bn_ns != bn_eval_ns:
        mirror_queued(c, p)     # cuDNN's training kernels queued before the window, as their twins
    return dict(bn_ns=bn_ns, bn_eval_ns=bn_eval_ns, bn_stats=len(stats), dropouts=len(dropout), clones=len(copies),
                counts=len(count_ops), copies_ns=copies_ns, calls_ns=calls_ns + ops_ns,
                gpu_removed_ns=int((g.g_dur - p.g_dur).sum()))


def apply(c: Context, p, o: Options) -> tuple[InferenceMode, dict]:
    g = c.g
    ops = node_ops(c)
    detail = {"autograd_nodes": len(ops), "fast_path_ops": len(ops_named(c, lambda n: n in FAST_PATH))}
    if not g.n_calls or len(ops_named(c, _is_backward)):     # a training step: its batch norm trains
        return InferenceMode("inference_mode", 0), detail
    bn = _bn_training_kernels(c)
    detail["bn_training_kernels"] = bn
    per_op, host_ns = _bookkeeping(c, p, ops) if len(ops) else (0, 0)
    gpu = _gpu_side(c, p, bn > 0, len(ops) > 0)
    acted = bn + gpu["dropouts"] + gpu["clones"]
    return (InferenceMode("inference_mode", len(ops) + acted, host_ns=host_ns, per_op_ns=per_op, bn_training=bn,
                          nodes=len(ops), **gpu), detail)


def _bookkeeping(c: Context, p, ops: np.ndarray) -> tuple[int, int]:
    """Steps 1-2: each node gives back AUTOGRAD_OPS median plain ops from the host gap before its thread's next call
    (each call's gap holds the nodes made since its thread's previous call). Returns (per node, in all)."""
    g, ev = c.g, c.trace.ev
    per_op = AUTOGRAD_OPS * op_cost(c).plain_ns
    c_key = c.call_keys
    o_key = thread_keys(ev, ops)
    held = np.zeros(g.n_calls, np.int64)
    for key in distinct(c_key).tolist():
        m = np.flatnonzero(c_key == key)                 # calls in start order
        starts = np.sort(ev.start[ops[o_key == key]])
        upto = np.searchsorted(starts, g.c_start[m], side="right")
        held[m] = np.diff(np.concatenate(([0], upto)))
    take = np.minimum(np.maximum(p.c_gap, 0), np.round(held * per_op).astype(np.int64))
    p.c_gap -= take
    return int(per_op), int(take.sum())


def says(a: InferenceMode) -> str:
    if a.count == 0:
        return ("no backward node made in a trace without backward (grad already off or no input requiring grad, "
                "or a training step)")
    parts = []
    if a.nodes:
        parts.append(f"the {units.integer(a.nodes)} nodes autograd made for a backward that never runs each give back "
                     f"{units.duration_ns(a.per_op_ns)} of host time (its bookkeeping), {units.duration_ns(a.host_ns)} "
                     "in all")
    if a.bn_stats == a.bn_training and a.bn_stats:
        parts.append(f"the {units.count(a.bn_stats, 'batch-statistics kernel')} of training-mode BatchNorm "
                     f"({units.duration_ns(a.bn_ns)}) go: eval normalises by the running statistics, with the same "
                     "transform")
    elif a.bn_training:
        parts.append(f"{units.count(a.bn_training, 'batch-norm kernel')} of training mode "
                     f"({units.duration_ns(a.bn_ns)}) run as eval's ({units.duration_ns(a.bn_eval_ns)}: ATen's "
                     "statistics gone, cuDNN's one read and one write of the activation)")
    if a.dropouts or a.clones or a.counts:
        what = [units.count(a.dropouts, "dropout kernel") if a.dropouts else "",
                units.count(a.clones, "autograd copy", "autograd copies") + " of in-place ops' inputs"
                if a.clones else "", units.count(a.counts, "batch count") if a.counts else ""]
        parts.append(f"{', '.join(w for w in what if w)} ({units.duration_ns(a.copies_ns)} of GPU time) go")
    if not (a.bn_training or a.dropouts or a.clones):
        parts.append("kernels keep their time")
    return "; ".join(parts)


def most_saved_ns(a: InferenceMode) -> int:
    """The most the edit can save: the host time it takes out (bookkeeping, launch calls) and the GPU time."""
    return a.host_ns + a.calls_ns + a.gpu_removed_ns


CHANGE = "with torch.inference_mode(): around the eval forward (or torch.no_grad())"
CHANGE_EVAL = ("model.eval() and with torch.inference_mode(): around the forward (its BatchNorm runs in training "
               "mode here: batch statistics, running statistics updated)")
CHANGE_EVAL_DROPOUT = ("model.eval() and with torch.inference_mode(): around the forward (its dropout runs in "
                       "training mode here, drawing masks)")


def change(a) -> str:
    if getattr(a, "bn_training", 0):
        return CHANGE_EVAL
    return CHANGE_EVAL_DROPOUT if getattr(a, "dropouts", 0) else CHANGE


def recorded(m: Measured) -> int:
    return m.whatif.lever("inference_mode").detail.get("autograd_nodes", 0)


SPEC = LeverSpec(
    name="inference_mode", effort=1, cause=None, apply=apply, says=says, words="torch.inference_mode()",
    fix="the eval forward under torch.inference_mode()",
    recognise=Recognise(order=2, evidence="autograd_nodes", because="its forward stopped making autograd's "
                        "backward nodes", amount=recorded, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="inference_mode (autograd off)", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    most_saved=most_saved_ns,
    knob=Knob(change=CHANGE, line=change,
              evidence="ops carrying autograd's sequence number (recorded with grad mode on), the number stepping "
                       "with each backward node made, in a trace with no backward (no "
                       "autograd::engine::evaluate_function, backward node or ATen backward op); there, training "
                       "batch norm's kernels (batch_norm_collect_statistics, cudnn bn_fw_tr), dropout's, and "
                       "aten::clone inside in-place ops",
              applies="every device and dtype: an eval or serving forward with grad mode on",
              model="each backward node made gives back its bookkeeping: 3.3 x this trace's median plain op's "
                    "host time (measured on an H200 host), from the host gap before its thread's next call; training "
                    "batch norm as eval's (ATen's statistics kernels go, cuDNN's bn_fw_tr one pass at the trace's "
                    "elementwise rate), dropout and autograd's input copies go (the fast path of "
                    "nn.TransformerEncoderLayer/MultiheadAttention not priced)",
              guide="Performance Tuning Guide: disable gradient calculation for validation or inference; "
                    "torch.inference_mode"))
