"""Tensor parallelism's per-layer all-reduces in a forward pass: collectives no side stream can hide.

What any trace of it shows: a forward pass split over ranks by tensor parallelism (Megatron-style row-parallel
linears: attention's output projection and the MLP's down projection) all-reduces each such GEMM's partial sums
before the residual add and the next layer's norm read them. On the device, each collective comes right after a GEMM
on its stream (the partial sums it reduces), two a layer, and right before a kernel that is not a GEMM (the add and
norm that read its result);
the trace holds no autograd backward (no `autograd::engine::evaluate_function` or `*Backward*` op), so there are no
gradient buckets to all-reduce while other gradients are computed. Moving such a collective to a side stream buys
nothing: the work after it waits for it on any stream, and the work before it made its input. What does change it
is structural (fewer tensor-parallel ranks for the model's size, a GEMM fused with its all-reduce, two micro-batches
interleaved so one's all-reduce runs beside the other's GEMMs), not a line of the user's code.

Not this: a hand-written loop of all-reduces after elementwise work (the collective's input made by an elementwise
kernel, as a gradient average or a metric is), and DDP's or FSDP's collectives in a training step (the trace holds
the backward). What would make it fire falsely: a forward-only data-parallel step whose all-reduce follows a GEMM
by chance and is read by an elementwise kernel, then goes on with independent work: counted by majority, it fires
only where most collectives sit so. A loop of GEMM, all-reduce, GEMM with nothing else between is not counted: the
next GEMM need not read the sum.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.kernels import is_collective
from tracetriage.analyzers.whatif.levers.knob import is_matrix_kernel, ops_named
from tracetriage.analyzers.whatif.levers.spec import Context


def has_backward(c: Context) -> bool:
    return bool(len(ops_named(c, lambda n: n.startswith("autograd::engine::evaluate_function")
                                 or "Backward" in n)))


def _name_beside(c: Context, rows: np.ndarray, step: int) -> list[str]:
    """The name of the activity before (step -1) or after (+1) each row on its stream ("" at a stream's end): rows
    are in (queue, call, start) order, so a row's neighbour on its queue is the row beside it."""
    g = c.g
    nb = rows + step
    ok = (nb >= 0) & (nb < len(g.g_row))
    ok[ok] &= g.g_queue[nb[ok]] == g.g_queue[rows[ok]]
    return [c.trace.name_of(int(g.g_row[n])) if k else "" for n, k in zip(nb.tolist(), ok.tolist())]


def between_gemm_and_its_reader(c: Context, moving: np.ndarray) -> int:
    """How many of these collectives (graph rows, each on a stream shared with compute) come right after a GEMM on
    their stream and right before a kernel that is neither a GEMM nor a collective (the residual add and norm that
    read the sum). A collective followed by the next GEMM is not counted: that GEMM may not read it."""
    if not len(moving):
        return 0
    before, after = _name_beside(c, moving, -1), _name_beside(c, moving, 1)
    return int(sum(is_matrix_kernel(b) and bool(a) and not is_matrix_kernel(a) and not is_collective(a)
                   for b, a in zip(before, after)))


def per_layer_forward(c: Context, moving: np.ndarray) -> int:
    """The collectives that are tensor parallelism's per-layer all-reduces (module docstring), or 0 where most of
    them are not (or the trace holds a backward)."""
    if not len(moving) or has_backward(c):
        return 0
    n = between_gemm_and_its_reader(c, moving)
    return n if 2 * n > len(moving) else 0
