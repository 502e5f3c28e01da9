"""autocast_bf16: the forward under torch.autocast(device_type, dtype=torch.bfloat16).

The trace shows fp32 work on a device with bf16 tensor cores: GEMM and convolution kernels whose names
say fp32 or TF32 math (`f32f32_f32f32_f32`, `sgemm`, `tf32`). Under autocast each of them runs in
bf16 instead, after a cast of its weight. In the graph:
  1. each fp32/TF32 GEMM/convolution kernel takes its time x the peak of the precision it ran in over
     the device's bf16 peak (measured ceilings beside the trace, else the datasheet);
  2. each forward one (its launch outside autograd's backward) pays a cast of each input but its
     activation (the weight and the bias: 4 bytes read, 2 written an element, at this trace's
     memory-bound rate), and in a training trace one more each for the gradient; each cast is also one
     more op for the host to dispatch, at this trace's median cost of an op that launches;
  3. everything else (elementwise kernels, copies, the optimizer) keeps its time: fewer bytes in
     bf16 activations are not counted, so the kernel saving is a floor.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import NONE
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.knob import (
    calls_inside,
    has_fast,
    is_half_matrix_kernel,
    kernel_rows,
    matrix_precision,
    ops_named,
    peak_source,
    peaks_of,
)
from tracetriage.analyzers.whatif.levers.spec import (
    SOURCE_WORDS,
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Options,
    Recognise,
    replay_figure,
    replay_figure_grew,
    went,
)

CAST_BYTES_PER_ELEMENT = 6       # an fp32 element read, a bf16 one written
KERNEL_FLOOR_NS = 2_000          # the shortest a cast kernel runs on a GPU, launch to finish
BACKWARD = "autograd::engine::evaluate_function"


@dataclass(frozen=True)
class Autocast(Assumption):
    kernel_ns: int = 0               # the fp32/TF32 GEMM/convolution kernels' time
    casts: int = 0                   # casts added (forward weights, and their gradients in training)
    bf16_tflops: float = 0.0
    source: str = ""


def _cast_elements(c: Context, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each kernel's op: how many of its inputs autocast casts (every tensor input but the activation, the
    first input of two dimensions or more: a weight, a bias) and their elements together."""
    tr, g = c.trace, c.g
    ops = tr.op_of[g.c_row[g.g_call[rows]]]
    n, elems = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
    memo: dict[int, tuple[int, int]] = {}
    for i, o in enumerate(ops.tolist()):
        if o == NONE:
            continue
        sid = int(tr.ev.shape[o])
        if sid not in memo:
            tensors = [d for d in (tr.shapes(o)[0] or []) if isinstance(d, list) and len(d) >= 1]
            act = next((j for j, d in enumerate(tensors) if len(d) >= 2), None)
            cast = [d for j, d in enumerate(tensors) if j != act]
            memo[sid] = (len(cast), sum(int(np.prod(d)) for d in cast))
        n[i], elems[i] = memo[sid]
    return n, elems


def apply(c: Context, p, o: Options) -> tuple[Autocast, dict]:
    g = c.g
    peaks = peaks_of(c)
    bf16_now = len(kernel_rows(c, is_half_matrix_kernel))
    rows = kernel_rows(c, lambda n: matrix_precision(n) in ("fp32", "tf32"))
    detail = {"fp32_kernels": len(rows), "bf16_kernels": bf16_now}
    if not len(rows) or not has_fast(peaks, "bf16"):
        return Autocast("autocast_bf16", 0), detail
    bf16 = peaks.flops("bf16")
    tf32 = c.gpu_named(lambda n: matrix_precision(n) == "tf32", rows)
    ratio = np.where(tf32, peaks.flops("tf32"), peaks.flops("fp32")) / bf16
    kernel_ns = int(g.g_dur[rows].sum())
    p.g_dur[rows] = np.round(p.g_dur[rows] * ratio).astype(p.g_dur.dtype)
    # 2. the casts: the forward kernels' weights (their launch outside autograd's backward)
    in_backward = np.zeros(g.n_calls, bool)
    in_backward[calls_inside(c, ops_named(c, lambda n: n.startswith(BACKWARD)))] = True
    training = bool(in_backward.any())
    fwd = rows[~in_backward[g.g_call[rows]] & g.g_linked[rows]]
    rate = c.memory_rate or (peaks.bytes_per_s / 1e9)
    n_cast, elems = _cast_elements(c, fwd)
    per_op = np.maximum(elems * CAST_BYTES_PER_ELEMENT / rate, n_cast * KERNEL_FLOOR_NS)
    casts = 2 if training else 1         # in training each cast has its backward: the gradient cast back
    p.g_dur[fwd] += (casts * per_op).astype(p.g_dur.dtype)
    launches = np.flatnonzero((g.c_kind == dg.LAUNCH_CALL) & g.c_issues)
    op_cost = int(np.median((g.c_gap - g.c_host + g.c_dur)[launches])) if len(launches) else g.launch_cost_ns
    calls = g.g_call[fwd]
    p.c_gap[calls] += casts * n_cast * op_cost
    added = casts * int(n_cast.sum())
    return (Autocast("autocast_bf16", len(rows), kernel_ns=kernel_ns, casts=added,
                     bf16_tflops=bf16 / 1e12, source=peak_source(peaks)),
            {**detail, "casts": added, "cast_op_ns": op_cost})


def says(a: Autocast) -> str:
    if a.count == 0:
        return "no fp32 GEMM or convolution in this trace (or a device without bf16 tensor cores)"
    return (f"the {units.integer(a.count)} fp32/TF32 GEMM/convolution kernels ({units.duration_ns(a.kernel_ns)}) run "
            f"in bf16 at the {units.tflops(a.bf16_tflops)} peak ({SOURCE_WORDS[a.source]}), each keeping its share "
            f"of its precision's peak, after {units.integer(a.casts)} weight casts; other kernels keep their time")


SPEC = LeverSpec(
    name="autocast_bf16", effort=1, cause=None, apply=apply, says=says, words="autocast to bf16",
    fix="the forward and loss under torch.autocast('cuda', dtype=torch.bfloat16)",
    recognise=Recognise(order=0, evidence="fp32_matrix_kernels", because="its fp32 GEMM kernels became bf16 ones",
                        amount=replay_figure("autocast_bf16", "fp32_kernels"),
                        acted=lambda m: m.kernel_busy_ns, applied=went,
                        also=replay_figure_grew("autocast_bf16", "bf16_kernels")),
    applied_words="autocast to bf16", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change="with torch.autocast(\"cuda\", dtype=torch.bfloat16): around the forward and the loss",
              evidence="fp32 or TF32 GEMM/convolution kernels (cuBLAS/cuDNN names with sgemm, f32f32_f32f32_f32 or "
                       "tf32), on a device with bf16 tensor cores",
              applies="fp32 models on NVIDIA Ampere and later, MI200/MI300 (bf16 tensor cores); never below Ampere "
                      "(V100 and T4 compute bf16 in fp32)",
              model="each fp32/TF32 GEMM/convolution kernel x its precision's peak / the bf16 peak, plus one weight "
                    "and bias cast per forward GEMM (6 bytes an element at this trace's memory rate, one op's dispatch "
                    "each), twice in training; other kernels unchanged",
              guide="Performance Tuning Guide: use mixed precision and AMP; torch.amp", needs="bf16"))
