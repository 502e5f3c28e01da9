"""autocast_bf16: the forward under torch.autocast(device_type, dtype=torch.bfloat16).

The trace shows fp32 work on a device with bf16 tensor cores: GEMM and convolution kernels whose names
say fp32 or TF32 math (`f32f32_f32f32_f32`, `sgemm`, `tf32`). Under autocast each of them runs in
bf16 instead, and autocast casts what each op needs in its precision. In the graph:
  1. each fp32/TF32 GEMM/convolution kernel takes its time x the peak of the precision it ran in over
     the device's bf16 peak (measured ceilings beside the trace, else the datasheet); so does each fp32 fused
     attention kernel (memory-efficient fmha in float: its products on CUDA cores), which SDPA replaces with a
     bf16 one (flash, cuDNN) whose products run on tensor cores (on the fresh3 ViT, 15% of the GPU time, which
     the GEMMs alone left at its fp32 time: predicted 0.46 of the step against 0.367 measured, 0.39 with it);
  2. the casts, found as autocast makes them in the forward (ops outside autograd's backward):
     - an op of autocast's lower-precision list (linear, addmm, conv2d, bmm, ...) casts its weight and bias,
       and its activation where that arrives in fp32: where the op before it of either list, in the same
       forward, is of the fp32 list (layer_norm, softmax, pow, the losses, ...) or there is none (the
       step's input);
     - an op of the fp32 list casts its input up where it arrives in bf16 (the op before it is of the
       lower-precision list);
     an op recorded without its shapes (record_shapes off) still casts: one weight for a layer that has one (linear,
     addmm, the convolutions: PARAMETERISED), and its activation where the rule above casts it; the bytes unknown, each
     such cast is priced as the shortest kernel (KERNEL_FLOOR_NS) and the count said without its size (on a ResNet-50
     forward without shapes this counted 0 casts beside 58 µs of autocast's dispatch: "0 casts that add 58 µs"). A
     trace with no op of either list (a runtime-only capture, CPU activity off) counts none and says its casts are
     not counted, never "0 casts";
     each cast is one more kernel (4 bytes read, 2 written an element, at this trace's memory-bound rate) and
     4 more ops for the host (aten::to, _to_copy, empty_strided, copy_), and in training its backward
     (ToCopyBackward0: 6 ops and a kernel) for every cast but the step's input's; each op of either list
     is recorded once more (autocast's own dispatch). The host prices an op at this trace's host time per
     recorded op;
  3. everything else keeps its time: fewer bytes in bf16 activations are not counted, nor the casts of
     gradients where fp32 and bf16 meet in backward, nor ops that take another implementation in bf16
     (batch norm leaves cuDNN for ATen's kernels), so the kernel saving is a floor and the host cost too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import USER_ANNOTATION
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.knob import (
    calls_inside,
    has_fast,
    is_fp32_attention_kernel,
    is_half_matrix_kernel,
    kernel_rows,
    matrix_precision,
    op_cost,
    ops_named,
    outermost,
    peak_source,
    peaks_of,
    rows_inside,
    unpriced,
    unpriced_words,
    window_of_calls,
)
from tracetriage.analyzers.whatif.levers.sdpa_math import launched_inside
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
STEP_RANGE = "ProfilerStep#"
# The ops a cast records: aten::to, _to_copy and empty_strided launch nothing, copy_ launches the kernel; its
# backward adds autograd's two records (evaluate_function, ToCopyBackward0); autocast's dispatch records each
# listed op once more. Each is priced at this trace's median op of its kind (knob.op_cost): on the H200 knob
# traces a cast measured 22-38 µs and its backward 24-47 µs where this predicts 24-37 µs and 26-48 µs.
CAST_PLAIN_OPS, CAST_BACKWARD_PLAIN_OPS, AUTOCAST_PLAIN_OPS = 3, 5, 1

# autocast's op lists for CUDA (aten/src/ATen/autocast_mode.cpp), as the ops a user's code calls show in a trace
LOWER_PRECISION = frozenset(f"aten::{n}" for n in (
    "linear", "addmm", "mm", "bmm", "baddbmm", "addbmm", "matmul", "einsum", "addmv", "mv", "addr", "prelu",
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "_convolution", "chain_matmul", "linalg_multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "scaled_dot_product_attention"))
FP32 = frozenset(f"aten::{n}" for n in (
    "layer_norm", "native_layer_norm", "group_norm", "pow", "exp", "expm1", "log", "log10", "log2", "log1p", "rsqrt",
    "reciprocal", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "softplus", "softmax", "log_softmax", "sum", "prod",
    "cumsum", "cumprod", "norm", "linalg_vector_norm", "frobenius_norm", "nll_loss", "nll_loss2d", "mse_loss",
    "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity",
    "logsumexp", "cdist", "dist", "renorm", "upsample_bilinear2d", "upsample_nearest2d"))
# the lower-precision ops that hold a weight of their own (nn.Linear, nn.Conv*, nn.PReLU): without shapes, each casts it
PARAMETERISED = frozenset(f"aten::{n}" for n in (
    "linear", "addmm", "prelu", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "_convolution"))
_BATCHED = frozenset(f"aten::{n}" for n in ("bmm", "baddbmm", "matmul", "einsum", "scaled_dot_product_attention"))


@dataclass(frozen=True)
class Autocast(Assumption):
    kernel_ns: int = 0               # the fp32/TF32 GEMM/convolution kernels' time
    casts: int = 0                   # casts added in the forward (weights, biases, activations)
    backward_casts: int = 0          # their backward in training
    host_ns: int = 0                 # the host time the casts and autocast's dispatch add
    bf16_tflops: float = 0.0
    source: str = ""
    found: int = 0                   # fp32/TF32 GEMM/convolution kernels seen, priced or not
    device: str = ""
    unpriced: str = ""               # why the found kernels are not priced (knob.unpriced)
    attention: int = 0               # of the kernels priced, fp32 fused attention kernels
    listed_ops: int = 0              # forward ops of autocast's two lists the trace records (0: casts not counted)
    unsized: int = 0                 # of the casts, those of ops recorded without shapes (bytes unknown)
    trains: bool = False             # a backward runs (autograd's nodes, or weight/data-gradient kernels)
    math_sdpa: int = 0               # fp32 GEMM kernels left out: SDPA's math backend's own upcast (sdpa_math's)


def _tensors(c: Context, op: int) -> list[list]:
    """An op's input tensors' dims. A TensorList argument (einsum's operands, [[16384, 256], [16384, 9, 256]])
    records a list of dims: each of its tensors is cast on its own, so it counts as its tensors."""
    out: list[list] = []
    for d in c.trace.shapes(op)[0] or []:
        if not isinstance(d, list) or not d:
            continue
        if all(isinstance(x, list) for x in d):
            out.extend(t for t in d if t and all(isinstance(x, int) for x in t))
        elif all(isinstance(x, int) for x in d):
            out.append(d)
    return out


def _activation(c: Context, op: int, tensors: list[list]) -> tuple[list[list], list[list]]:
    """An op's inputs as (activations, parameters): a batched product's inputs are all activations; else the
    first input of two dimensions or more is the activation, the others (a weight, a bias) parameters."""
    if c.trace.name_of(op) in _BATCHED and all(len(d) >= 3 for d in tensors):
        return tensors, []
    act = next((j for j, d in enumerate(tensors) if len(d) >= 2), None)
    return ([tensors[act]] if act is not None else []), [d for j, d in enumerate(tensors) if j != act]


def _numel(dims: list) -> int:
    return int(np.prod(dims)) if dims else 1


def _forward_casts(c: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The forward ops of autocast's two lists (outermost, outside the backward) and for each: the casts it
    makes, their elements, the casts that have a backward, their elements, and whether its shapes are unknown
    (the casts counted from the op's name alone)."""
    ev = c.trace.ev
    listed = ops_named(c, lambda n: n in LOWER_PRECISION or n in FP32)
    bwd_ops = ops_named(c, lambda n: n.startswith(BACKWARD))
    ops = outermost(c, listed[~rows_inside(c, listed, bwd_ops)])
    # what separates one forward from the next: a backward, a profiler step
    ranges = np.flatnonzero(ev.cat == USER_ANNOTATION)
    steps = ranges[name_flags(c.trace, ranges, lambda n: n.startswith(STEP_RANGE))] if len(ranges) else ranges
    barriers = np.sort(np.concatenate([ev.start[bwd_ops], ev.start[steps]]))
    n = len(ops)
    casts, elems = np.zeros(n, np.int64), np.zeros(n, np.int64)
    bcasts, belems = np.zeros(n, np.int64), np.zeros(n, np.int64)
    unsized = np.zeros(n, bool)
    prev_lower: dict[int, bool | None] = {}      # per thread: the op before was of the lower-precision list
    prev_end: dict[int, int] = {}
    for i, o in enumerate(ops.tolist()):
        tid = int(ev.tid[o])
        lower_before = prev_lower.get(tid)
        if lower_before is not None:
            k = np.searchsorted(barriers, prev_end[tid], side="left")
            if k < len(barriers) and barriers[k] < ev.start[o]:
                lower_before = None                  # a backward or a new step since: this is a new forward
        tensors = _tensors(c, o)
        lower = c.trace.name_of(o) in LOWER_PRECISION
        if lower and not tensors:                          # no shapes: a layer's weight, an fp32 activation
            name = c.trace.name_of(o)
            params_n = 1 if name in PARAMETERISED else 0
            acts_n = 0 if lower_before else 1
            casts[i] = params_n + acts_n
            bcasts[i] = params_n + (acts_n if lower_before is not None else 0)
            unsized[i] = casts[i] > 0
        elif lower:
            acts, params = _activation(c, o, tensors)
            cast_acts = acts if not lower_before else []      # fp32 before it, or the step's input
            casts[i] = len(params) + len(cast_acts)
            elems[i] = sum(_numel(d) for d in params + cast_acts)
            with_grad = params + (cast_acts if lower_before is not None else [])   # the input has no grad
            bcasts[i], belems[i] = len(with_grad), sum(_numel(d) for d in with_grad)
        elif lower_before:                                 # an fp32 op fed by a bf16 one: cast up
            casts[i] = bcasts[i] = 1
            elems[i] = belems[i] = _numel(tensors[0]) if tensors else 0
            unsized[i] = not tensors
        prev_lower[tid], prev_end[tid] = lower, int(ev.end[o])
    return ops, casts, elems, bcasts, belems, unsized


def apply(c: Context, p, o: Options) -> tuple[Autocast, dict]:
    return replay(c, p, "bf16", "autocast_bf16")


def fp32_matrix_rows(c: Context) -> np.ndarray:
    """The fp32/TF32 GEMM/convolution kernels and fp32 fused attention kernels autocast would move to 16 bits."""
    return kernel_rows(c, lambda n: matrix_precision(n) in ("fp32", "tf32") or is_fp32_attention_kernel(n))


def replay(c: Context, p, precision: str, name: str) -> tuple[Autocast, dict]:
    """Autocast to `precision` ("bf16", "fp16": both cast alike, 2 bytes an element) replayed as the docstring
    says; the Autocast's bf16_tflops field holds that precision's peak."""
    g = c.g
    peaks = peaks_of(c)
    bf16_now = len(kernel_rows(c, is_half_matrix_kernel))
    rows = fp32_matrix_rows(c)
    # the fp32 GEMMs inside SDPA's math backend are its own upcast of bf16 q/k/v: autocast does not change them
    # (sdpa_math prices their fix)
    upcast = launched_inside(c, rows)
    math_sdpa, rows = int(upcast.sum()), rows[~upcast]
    detail = {"fp32_kernels": len(rows), "bf16_kernels": bf16_now}
    if not len(rows) or not has_fast(peaks, precision):
        return (Autocast(name, 0, found=len(rows), device=c.trace.device_name() or "", math_sdpa=math_sdpa,
                         unpriced=unpriced(peaks, precision) if len(rows) else "",
                         bf16_tflops=peaks.flops(precision) / 1e12 if peaks is not None else 0.0), detail)
    bf16 = peaks.flops(precision)
    tf32 = c.gpu_named(lambda n: matrix_precision(n) == "tf32", rows)
    ratio = np.where(tf32, peaks.flops("tf32"), peaks.flops("fp32")) / bf16
    kernel_ns = int(g.g_dur[rows].sum())
    p.g_dur[rows] = np.round(p.g_dur[rows] * ratio).astype(p.g_dur.dtype)
    # 2. the casts, each on the first kernel its op launches (the GPU time) and that kernel's call (the host's)
    in_backward = np.zeros(g.n_calls, bool)
    in_backward[calls_inside(c, ops_named(c, lambda n: n.startswith(BACKWARD)))] = True
    training = bool(in_backward.any())
    ops, casts, elems, bcasts, belems, unsized = _forward_casts(c)
    if not training:
        bcasts, belems = np.zeros_like(bcasts), np.zeros_like(belems)
    win = window_of_calls(c, ops)
    issued = np.flatnonzero((g.g_call >= 0) & g.g_linked)
    issued = issued[win[g.g_call[issued]] >= 0]
    op_i, at = np.unique(win[g.g_call[issued]], return_index=True)     # the first kernel of each op, in g's order
    first = dict(zip(op_i.tolist(), issued[at].tolist()))
    rate = c.memory_rate or (peaks.bytes_per_s / 1e9)
    cost = op_cost(c)
    cast_host = cost.launching_ns + CAST_PLAIN_OPS * cost.plain_ns
    cast_back_host = cost.launching_ns + CAST_BACKWARD_PLAIN_OPS * cost.plain_ns

    def cast_ns(n: int, e: int) -> float:             # n casts of e elements together, on the GPU
        return max(e * CAST_BYTES_PER_ELEMENT / rate, KERNEL_FLOOR_NS) + max(n - 1, 0) * KERNEL_FLOOR_NS if n else 0.0

    added_host = 0
    back_gpu = back_host = 0.0
    for i, r in first.items():                        # the forward's casts: on the op's first kernel and its call
        host = int(casts[i] * cast_host + AUTOCAST_PLAIN_OPS * cost.plain_ns)
        p.g_dur[r] += int(cast_ns(casts[i], elems[i]))
        p.c_gap[g.g_call[r]] += host
        added_host += host
        back_gpu += cast_ns(bcasts[i], belems[i])
        back_host += bcasts[i] * cast_back_host
    # their backward (ToCopyBackward0 after each gradient's GEMM): spread over the backward's GEMM kernels
    bwd = rows[in_backward[g.g_call[rows]] & g.g_linked[rows]]
    if len(bwd) and back_gpu:
        p.g_dur[bwd] += int(back_gpu / len(bwd))
        p.c_gap[g.g_call[bwd]] += int(back_host / len(bwd))
        added_host += int(back_host)
    counted = np.array(sorted(first), np.int64)
    n_fwd = int(casts[counted].sum()) if len(counted) else 0
    n_bwd = int(bcasts[counted].sum()) if len(counted) else 0
    n_unsized = int(casts[counted][unsized[counted]].sum()) if len(counted) else 0
    attention = int(c.gpu_named(is_fp32_attention_kernel, rows).sum())
    return (Autocast(name, len(rows), kernel_ns=kernel_ns, casts=n_fwd, backward_casts=n_bwd,
                     host_ns=added_host, bf16_tflops=bf16 / 1e12, source=peak_source(peaks), attention=attention,
                     listed_ops=len(counted), unsized=n_unsized),
            {**detail, "casts": n_fwd, "backward_casts": n_bwd, "cast_host_ns": int(cast_host)})


def says(a: Autocast) -> str:
    if a.count == 0 and a.found and a.unpriced:
        return unpriced_words(a.found, "fp32/TF32 GEMM/convolution kernels", a.device, a.unpriced, "bf16",
                              a.bf16_tflops)
    if a.count == 0 and a.math_sdpa:
        return (f"no fp32 GEMM or convolution in this trace but the {units.integer(a.math_sdpa)} inside SDPA's math "
                "backend, which upcasts its inputs whatever autocast says (sdpa_math prices their fix)")
    if a.count == 0:
        return "no fp32 GEMM or convolution in this trace"
    what = "GEMM, convolution and attention" if a.attention else "GEMM/convolution"
    return (f"the {units.integer(a.count)} fp32/TF32 {what} kernels ({units.duration_ns(a.kernel_ns)}) run "
            f"in bf16 at the {units.tflops(a.bf16_tflops)} peak ({SOURCE_WORDS[a.source]}), each keeping its share "
            f"of its precision's peak, {cast_words(a)}; other kernels keep their time")


def cast_words(a: Autocast) -> str:
    """The casts autocast adds, as counted: from the ops' shapes, from their names alone (no shapes: the bytes
    unknown), or not at all (no op of autocast's lists recorded: a runtime-only capture)."""
    if not a.listed_ops:
        return ("its casts not counted (no op of autocast's lists recorded: one weight cast a layer a forward, "
                "not priced)")
    back = f" (and {units.integer(a.backward_casts)} in backward)" if a.backward_casts else ""
    unsized = (f" ({units.integer(a.unsized)} counted from their ops' names, no shapes recorded: each priced as the "
               "shortest kernel)") if a.unsized else ""
    return (f"after {units.integer(a.casts)} casts{back}{unsized} and autocast's dispatch of "
            f"{units.integer(a.listed_ops)} ops, which add {units.duration_ns(a.host_ns)} of host time")


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
              model="each fp32/TF32 GEMM/convolution kernel and fp32 fused attention kernel x its precision's peak "
                    "/ the bf16 peak; autocast's casts "
                    "as its op lists make them (weights, biases, fp32 activations into a GEMM, bf16 ones into an "
                    "fp32-list op), each a kernel at this trace's memory rate and four ops of host time (six for its "
                    "backward in training) at this trace's median op cost; other kernels unchanged",
              guide="Performance Tuning Guide: use mixed precision and AMP; torch.amp", needs="bf16"))
