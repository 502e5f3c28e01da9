"""no_checkpointing: activation (gradient) checkpointing turned off where memory allows
(model.gradient_checkpointing_enable() removed, torch.utils.checkpoint.checkpoint(fn, x) -> fn(x)), or fewer layers
checkpointed.

What the construct looks like in any trace: the backward runs the forward again. Autograd's nodes run as
`autograd::engine::evaluate_function: XBackward0` windows (on the autograd device thread, or the main thread on the
CPU); a node whose saved tensors were not kept (torch.utils.checkpoint, non-reentrant: its unpack hook) or the
checkpoint's own node (`CheckpointFunctionBackward`, reentrant) calls the layer's forward from inside it, so ops that
only a forward calls -- aten::linear, aten::layer_norm, aten::conv1d/2d/3d, aten::scaled_dot_product_attention,
aten::gelu, aten::dropout, aten::embedding, aten::batch_norm, aten::group_norm, and a linear written as aten::addmm,
a GELU's aten::tanh, a softmax -- appear as children of a backward node, before the node's own backward ops. A
backward formula never calls these (it calls mm, tanh_backward, _softmax_backward_data, *_backward ops); the
recomputed forward is the stretch of the node's children from the first such op to the last one (the views, adds
and transposes between them included), and one recompute per checkpointed layer per step repeats.

Fix and price (in the graph): the stretch's host time goes and the GPU work launched inside it with it
(host_windows.remove_host_windows, drop_gpu): the forward's activations are kept instead. The memory that costs is
not in the trace: the Next says "where memory allows", and names checkpointing fewer layers as the way between.

What would make it fire falsely: a custom autograd.Function whose backward calls a forward op on purpose, or a
double-backward (create_graph) -- neither shows a forward op's run of MIN_FORWARD_OPS or more inside one node, and
the lever wants RECOMPUTES or more such stretches (a layer stack). A trace with forward ops only on the main thread
outside any backward node (an ordinary training step) counts nothing (tests: both).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.host_windows import calls_inside, remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import mirror_queued, ops_named
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
FORWARD_ONLY = frozenset(("aten::linear", "aten::layer_norm", "aten::conv1d", "aten::conv2d", "aten::conv3d",
                          "aten::scaled_dot_product_attention", "aten::gelu", "aten::dropout", "aten::embedding",
                          "aten::batch_norm", "aten::group_norm", "aten::instance_norm", "aten::rms_norm",
                          # a linear written as addmm (Hugging Face's Conv1D in GPT-2), a tanh-approximated GELU by its
                          # formula, a softmax: their backward formulas call mm, tanh_backward and
                          # _softmax_backward_data, never these, so the recomputed forward's tail (the MLP after the
                          # second norm) is inside the stretch, not cut off after the last norm
                          "aten::addmm", "aten::tanh", "aten::softmax", "aten::_softmax"))
MIN_FORWARD_OPS = 2      # a layer's forward calls several (a linear and its norm): one lone op is a custom backward's
RECOMPUTES = 2           # a layer stack checkpointed repeats its recompute: one stretch is no construct


@dataclass(frozen=True)
class NoRecompute(Assumption):
    host_ns: int = 0             # the recomputed forwards' host time, before
    gpu_ns: int = 0              # the kernels they launched, before
    kernels: int = 0
    forward_ops: int = 0         # forward-only ops found inside backward nodes


def recompute_stretches(c: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The recomputed forwards inside backward nodes: (starts, ends, thread keys, forward ops found)."""
    ev = c.trace.ev
    z = np.zeros(0, np.int64)
    nodes = ops_named(c, lambda n: n.startswith(BACKWARD_NODE))
    fwd = ops_named(c, lambda n: n in FORWARD_ONLY)
    if not len(nodes) or not len(fwd):
        return z, z, z, 0
    starts, ends, keys, found = [], [], [], 0
    n_key = thread_keys(ev, nodes)
    f_key = thread_keys(ev, fwd)
    for k in distinct(n_key).tolist():
        nd = nodes[n_key == k]
        nd = nd[np.argsort(ev.start[nd], kind="stable")]
        f = fwd[f_key == k]
        if not len(f):
            continue
        f = f[np.argsort(ev.start[f], kind="stable")]
        # the innermost node each forward op starts in is the one it was called from: nodes do not overlap on a
        # thread except by nesting, and an evaluate_function holds one node; the outermost covering is enough
        ends_acc = np.maximum.accumulate(ev.end[nd])
        j = np.searchsorted(ev.start[nd], ev.start[f], side="right") - 1
        inside = (j >= 0) & (ev.start[f] < ends_acc[np.maximum(j, 0)])
        for node in distinct(j[inside]).tolist():
            ops = f[inside & (j == node)]
            ops = _outermost(ev, ops)
            if len(ops) < MIN_FORWARD_OPS:
                continue
            found += len(ops)
            # the stretch: from the first forward op's start to the last one's end (the ops between ride along)
            s, e = int(ev.start[ops].min()), int(ev.end[ops].max())
            starts.append(s)
            ends.append(e)
            keys.append(k)
    if len(starts) < RECOMPUTES:
        return z, z, z, 0
    return np.array(starts, np.int64), np.array(ends, np.int64), np.array(keys, np.int64), found


def _outermost(ev, rows: np.ndarray) -> np.ndarray:
    """Of these rows of one thread, those not inside another of them (aten::linear inside aten::conv1d's ...)."""
    rows = rows[np.argsort(ev.start[rows], kind="stable")]
    reach = np.maximum.accumulate(ev.end[rows])
    top = np.ones(len(rows), bool)
    top[1:] = ev.start[rows][1:] >= reach[:-1]
    return rows[top]


def apply(c: Context, p, o: Options) -> tuple[NoRecompute, dict]:
    g = c.g
    s, e, k, found = recompute_stretches(c)
    if not len(s):
        return NoRecompute("no_checkpointing", 0), {"recomputes": 0}
    inside = calls_inside(c, s, e, k)
    gone = np.flatnonzero(g.g_linked & (g.g_call >= 0) & inside[np.maximum(g.g_call, 0)])
    gpu_ns = int(g.g_dur[gone].sum())
    host_ns = int((e - s).sum())
    p.g_dur[gone] = 0
    p.g_gap[gone] = 0
    remove_host_windows(c, p, s, e, k)
    mirror_queued(c, p)
    return (NoRecompute("no_checkpointing", len(s), host_ns=host_ns, gpu_ns=gpu_ns, kernels=len(gone),
                        forward_ops=found), {"recomputes": len(s)})


def says(a: NoRecompute) -> str:
    if a.count == 0:
        return "no forward recomputed inside the backward (no activation checkpointing)"
    return (f"the backward recomputes the forward {units.integer(a.count)} times ({units.integer(a.forward_ops)} "
            f"forward ops inside autograd's backward nodes: {units.duration_ns(a.host_ns)} of host time, "
            f"{units.integer(a.kernels)} kernels taking {units.duration_ns(a.gpu_ns)}); with the activations kept, "
            "that work goes")


def recomputes(m: Measured) -> int:
    return m.whatif.lever("no_checkpointing").detail.get("recomputes", 0)


def most_saved(a: NoRecompute) -> int:
    return a.host_ns + a.gpu_ns if a.count else 0


SPEC = LeverSpec(
    name="no_checkpointing", effort=1, cause=None, apply=apply, says=says, words="keeping the activations",
    fix="activation checkpointing off (model.gradient_checkpointing_enable() removed)",
    recognise=Recognise(order=2, evidence="recomputed_forwards", because="its backward stopped recomputing the "
                        "forward", amount=recomputes, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="activation checkpointing off", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    most_saved=most_saved,
    knob=Knob(change="turn activation checkpointing off where memory allows (drop model.gradient_checkpointing_"
                     "enable() / torch.utils.checkpoint.checkpoint around the layers), or checkpoint fewer layers: "
                     "the backward stops recomputing the forward",
              evidence="forward-only ops (aten::linear/addmm/layer_norm/conv/scaled_dot_product_attention/gelu/tanh/"
                       "softmax/dropout) "
                       "running inside autograd's backward nodes (evaluate_function windows), a stretch a layer, "
                       "repeated",
              applies="every device; the kept activations cost memory the trace does not show",
              model="the recomputed stretches' host time goes, and the kernels launched inside them",
              guide="torch.utils.checkpoint; Hugging Face: gradient_checkpointing_enable"))
