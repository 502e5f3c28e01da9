"""Whether channels_last can apply to a trace's convolutions at all: the model's own convolutions' rank, and the ops
between them that lay the activation out again in NCHW.

What any trace of the construct shows:
  - The rank. `nn.Conv1d`/`Conv2d`/`Conv3d` enter ATen as `aten::conv1d`/`conv2d`/`conv3d`, then
    `aten::convolution` and `aten::_convolution`, each recording the input and the weight as the model holds them:
    3-D for a 1-D convolution ([N, C, L], weight [O, C/g, k]), 4-D for 2-D, 5-D for 3-D. Only below them does ATen
    unsqueeze a 1-D convolution to 2-D for cuDNN: `aten::cudnn_convolution` then records [N, C, 1, L] and cuDNN
    transposes those 4-D tensors (nchwToNhwcKernel) like a 2-D model's. `torch.channels_last` raises on a 3-D
    tensor ("required rank 4 tensor") and `model.to(memory_format=...)` leaves 3-D weights as they are, so a model
    whose convolutions are mostly 1-D has no memory-format line to turn. The rank is read from the outermost
    convolution op that records them once a call (`aten::convolution`), `aten::cudnn_convolution` only where no other
    did.
  - The layout undone. `at::instance_norm` (nn.InstanceNorm1d/2d/3d) calls input.contiguous() and views it as
    [1, N*C, ...] for batch norm: a channels_last output is copied back to NCHW after every convolution it follows,
    the next convolution reads NCHW again and cuDNN transposes it as before, and the batch-norm kernels under it keep
    their NCHW form. In the trace: an `aten::instance_norm` op on the convolution's thread after it and before the
    next convolution. (The contiguous() copy is not in a before-trace: on an NCHW tensor it returns at once, without
    an op.) Where most convolutions are followed so, the format moves the transposes instead of removing them.

What would make it fire falsely: a trace without shapes (no rank to read: the lever then keeps its old reading of
the layout kernels alone); an InstanceNorm applied to another tensor between two convolutions (counted as undoing
the layout of the first); another op that forces NCHW (a custom kernel calling .contiguous() on its input) that the
trace does not name, which this does not see.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.whatif.levers.knob import ops_named
from tracetriage.analyzers.whatif.levers.spec import Context

# the op that records the tensors as the model holds them, once a convolution (aten::conv1d may call itself once
# more through its padding overload), then its fallbacks
CONV_LEVELS = (("aten::convolution",), ("aten::_convolution",), ("aten::conv1d", "aten::conv2d", "aten::conv3d"),
               ("aten::cudnn_convolution",))
UNDOERS = ("aten::instance_norm",)     # ops whose ATen implementation lays their input out again as NCHW
SHAPES_READ = 64                       # convolution ops whose Input Dims are read: the model's layers repeat


@dataclass(frozen=True)
class ConvLayout:
    convs: int = 0          # the model's forward convolutions (the outermost conv op's calls)
    rank: int | None = None  # their input's rank, most of those read (3: 1-D, 4: 2-D, 5: 3-D); None: no shapes
    undone: int = 0         # of them, followed by an op that lays the activation out in NCHW again

    @property
    def one_d(self) -> bool:
        return self.rank == 3

    @property
    def mostly_undone(self) -> bool:
        return self.convs > 0 and 2 * self.undone > self.convs


def _outer_convs(c: Context) -> np.ndarray:
    for level in CONV_LEVELS:
        rows = ops_named(c, level.__contains__)
        if len(rows):
            return np.sort(rows)
    return np.zeros(0, np.int64)


def _rank(c: Context, rows: np.ndarray) -> int | None:
    ranks = Counter()
    for r in rows[:SHAPES_READ].tolist():
        dims = c.trace.shapes(int(r))[0]
        if dims and isinstance(dims[0], list) and dims[0]:
            ranks[len(dims[0])] += 1
    return ranks.most_common(1)[0][0] if ranks else None


def _undone(c: Context, convs: np.ndarray) -> int:
    """The convolutions after which, on their thread and before the next convolution, an UNDOERS op starts."""
    undo = ops_named(c, UNDOERS.__contains__)
    if not len(undo) or not len(convs):
        return 0
    ev = c.trace.ev
    rows = np.concatenate([convs, undo])
    is_undo = np.concatenate([np.zeros(len(convs), bool), np.ones(len(undo), bool)])
    key = thread_keys(ev, rows)
    order = np.lexsort((ev.start[rows], key))
    key, is_undo = key[order], is_undo[order]
    # a convolution whose next event on the same thread is an undoer
    follows = ~is_undo[:-1] & is_undo[1:] & (key[:-1] == key[1:])
    return int(follows.sum())


def conv_layout(c: Context) -> ConvLayout:
    convs = _outer_convs(c)
    if not len(convs):
        return ConvLayout()
    return ConvLayout(convs=len(convs), rank=_rank(c, convs), undone=_undone(c, convs))


def under_undoers(c: Context, rows: np.ndarray) -> np.ndarray:
    """Of these GPU activity rows (graph indices), those launched beneath an UNDOERS op: the batch-norm kernels
    InstanceNorm runs on its [1, N*C, ...] view, which keep their NCHW form whatever the model's format."""
    undo = ops_named(c, UNDOERS.__contains__)
    out = np.zeros(len(rows), bool)
    if not len(undo) or not len(rows):
        return out
    g, ev = c.g, c.trace.ev
    call = g.g_call[rows]
    has = call >= 0
    crow = g.c_row[np.maximum(call, 0)]
    ckey = thread_keys(ev, crow)
    ukey = thread_keys(ev, undo)
    for k in distinct(ukey).tolist():
        u = undo[ukey == k]
        u = u[np.argsort(ev.start[u])]
        starts, ends = ev.start[u], ev.end[u]
        mine = has & (ckey == k)
        t = ev.start[crow[mine]]
        i = np.searchsorted(starts, t, side="right") - 1
        inside = (i >= 0) & (t < ends[np.maximum(i, 0)])
        out[np.flatnonzero(mine)[inside]] = True
    return out
