"""FLOPs and bytes of one op, from its name and the shapes torch.profiler recorded.

With `record_shapes=True`, each `cpu_op` event carries, one entry per argument:
- "Input Dims": a list of ints for a tensor ([] for a 0-dim tensor), [] for a
  scalar or None, a list of lists for a TensorList (e.g. aten::cat);
- "Input type": the C++ dtype name for a tensor ("float", "c10::BFloat16", ...),
  "Scalar", "ScalarList", "TensorList", or "" for None;
- "Concrete Inputs" (newer torch): the values of scalar arguments as strings
  ("False", "[1]", "15" for a ScalarType); "" for tensors.
Python numbers mixed into tensor arithmetic arrive as 0-dim tensors, not Scalars:
`x * 2` records aten::mul with dims [[8, 16], []] and types ["float", "long int"].

The costs are the *minimum* work: FLOPs the math needs, bytes = every input read once
plus every output written once. A kernel that re-reads (an unfused chain, a split-K
GEMM) moves more; the roofline then shows it below the line, which is the point.

Composite ops (aten::linear, aten::matmul, aten::scaled_dot_product_attention,
aten::layer_norm, aten::to, ...) and the ops they dispatch to (addmm, mm, the flash
kernel, native_layer_norm, _to_copy, copy_) each get a cost; a caller summing over the
op tree must count one level only (e.g. the op that launched the kernel).

The arguments are parsed by analyses.opargs (one Arg per argument); the cost models below are one
section per op family. Pure Python, no torch import.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tracetriage.analyzers.analyses.foreach_cost import foreach_cost, is_multi_tensor
from tracetriage.analyzers.analyses.opargs import (
    Arg,
    Malformed,
    broadcast,
    bytes_of,
    concrete_bool,
    concrete_dtype,
    concrete_ints,
    main_dtype,
    need,
    parse_args,
    result_dtype,
    tensor_at,
)
from tracetriage.analyzers.model.dtypes import DTYPE_BYTES, FLOAT_DTYPES


@dataclass(frozen=True)
class OpCost:
    flops: float
    bytes: float
    dtype: str  # canonical name (peaks.normalise_dtype): "bf16", "fp32", ...
    kind: str  # 'matmul'|'attention'|'convolution'|'triton_pass'|'elementwise'|'foreach'|'reduction'|'norm'|'softmax'|
               # 'embedding'|'copy'

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOP/byte (0.0 when no bytes move)."""
        return self.flops / self.bytes if self.bytes > 0 else 0.0


def matmul_shapes_flops(M: int, N: int, K: int, batch: int = 1) -> float:
    """FLOPs of a (batch of) [M, K] @ [K, N] products: one multiply and one add each."""
    return 2.0 * batch * M * N * K


def matmul_shapes_bytes(M: int, N: int, K: int, dtype: str = "bf16", batch: int = 1) -> float:
    """Minimum bytes of the same product: read A and B once, write C once."""
    return float(batch * (M * K + K * N + M * N) * bytes_of(dtype))


# --------------------------------------------------------------------------------------
# Matmuls
# --------------------------------------------------------------------------------------

def _matmul_cost(M, N, K, batch, dtype, reads, out_dtype=None, extra_flops=0.0):
    out_bytes = batch * M * N * bytes_of(out_dtype or dtype)
    return OpCost(flops=matmul_shapes_flops(M, N, K, batch) + extra_flops,
                  bytes=float(reads + out_bytes), dtype=dtype, kind="matmul")


def _mm(name, args):
    a, b = need(args, 0, 2), need(args, 1, 2)
    (M, K), (K2, N) = a.dims, b.dims
    if K != K2:
        raise Malformed
    return _matmul_cost(M, N, K, 1, a.dtype, a.nbytes + b.nbytes)


def _addmm(name, args):
    # addmm(bias, mat1, mat2): out = beta*bias + alpha*(mat1 @ mat2); one add per output.
    bias, a, b = need(args, 0), need(args, 1, 2), need(args, 2, 2)
    (M, K), (K2, N) = a.dims, b.dims
    if K != K2:
        raise Malformed
    extra = M * N * (2 if name == "_addmm_activation" else 1)
    return _matmul_cost(M, N, K, 1, a.dtype, bias.nbytes + a.nbytes + b.nbytes,
                        extra_flops=extra)


def _bmm(name, args):
    a, b = need(args, 0, 3), need(args, 1, 3)
    (B, M, K), (B2, K2, N) = a.dims, b.dims
    if K != K2 or B != B2:
        raise Malformed
    return _matmul_cost(M, N, K, B, a.dtype, a.nbytes + b.nbytes)


def _baddbmm(name, args):
    c, a, b = need(args, 0), need(args, 1, 3), need(args, 2, 3)
    (B, M, K), (B2, K2, N) = a.dims, b.dims
    if K != K2 or B != B2:
        raise Malformed
    if name == "addbmm":  # sums over the batch into one [M, N]
        flops = matmul_shapes_flops(M, N, K, B) + M * N
        out = M * N * bytes_of(a.dtype)
        return OpCost(float(flops), float(c.nbytes + a.nbytes + b.nbytes + out),
                      a.dtype, "matmul")
    return _matmul_cost(M, N, K, B, a.dtype, c.nbytes + a.nbytes + b.nbytes,
                        extra_flops=B * M * N)


def _linear(name, args):
    # linear(x[..., K], weight[N, K], bias[N]?): M = product of x's leading dims.
    x, w = need(args, 0), need(args, 1, 2)
    if not x.dims:
        raise Malformed
    K, (N, K2) = x.dims[-1], w.dims
    if K != K2:
        raise Malformed
    M = math.prod(x.dims[:-1])
    bias = tensor_at(args, 2)
    extra = M * N if bias is not None else 0
    reads = x.nbytes + w.nbytes + (bias.nbytes if bias is not None else 0)
    return _matmul_cost(M, N, K, 1, x.dtype, reads, extra_flops=extra)


def _matmul(name, args):
    # torch.matmul semantics: 1-D operands gain a dim of 1; batch dims broadcast.
    a, b = need(args, 0), need(args, 1)
    if not a.dims or not b.dims:
        raise Malformed
    ad = (1,) + a.dims if len(a.dims) == 1 else a.dims
    bd = b.dims + (1,) if len(b.dims) == 1 else b.dims
    M, K = ad[-2], ad[-1]
    K2, N = bd[-2], bd[-1]
    if K != K2:
        raise Malformed
    batch = math.prod(broadcast([ad[:-2], bd[:-2]]))
    return _matmul_cost(M, N, K, batch, a.dtype, a.nbytes + b.nbytes)


def _mv(name, args):
    offset = 1 if name == "addmv" else 0
    a, v = need(args, offset, 2), need(args, offset + 1, 1)
    (M, K) = a.dims
    if v.dims[0] != K:
        raise Malformed
    reads = a.nbytes + v.nbytes + (args[0].nbytes if offset else 0)
    return _matmul_cost(M, 1, K, 1, a.dtype, reads, extra_flops=M if offset else 0)


def _dot(name, args):
    a, b = need(args, 0, 1), need(args, 1, 1)
    if a.dims != b.dims:
        raise Malformed
    return _matmul_cost(1, 1, a.dims[0], 1, a.dtype, a.nbytes + b.nbytes)


def _scaled_mm(name, args):
    # _scaled_mm(a[M,K] fp8, b[K,N] fp8, scale_a, scale_b, bias?, scale_result?,
    #            out_dtype?, use_fast_accum): out_dtype from Concrete Inputs if recorded,
    #            else the input dtype (torch's default).
    a, b = need(args, 0, 2), need(args, 1, 2)
    (M, K), (K2, N) = a.dims, b.dims
    if K != K2:
        raise Malformed
    reads = sum(t.nbytes for t in args[:6] if t.kind == "tensor")
    out_dtype = concrete_dtype(args, 6) or a.dtype
    bias = tensor_at(args, 4)
    return _matmul_cost(M, N, K, 1, a.dtype, reads, out_dtype=out_dtype,
                        extra_flops=M * N if bias is not None else 0)


# --------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------

# name -> (layout, index of attn_mask/bias or None, index of is_causal or None)
# layout "bhld": [batch, heads, seq, head_dim] as SDPA takes it;
# layout "blhd": [batch, seq, heads, head_dim] as the flash/efficient forwards take it.
_ATTENTION = {
    "scaled_dot_product_attention": ("bhld", 3, 5),
    "_scaled_dot_product_attention_math": ("bhld", 3, 5),
    "_scaled_dot_product_flash_attention": ("bhld", None, 4),
    "_scaled_dot_product_flash_attention_for_cpu": ("bhld", 5, 4),
    "_scaled_dot_product_efficient_attention": ("bhld", 3, 6),
    "_scaled_dot_product_cudnn_attention": ("bhld", 3, 6),
    "_scaled_dot_product_fused_attention_overrideable": ("bhld", 3, 5),
    "_cudnn_attention_forward": ("bhld", 3, 10),
    "_flash_attention_forward": ("blhd", None, 8),
    "_efficient_attention_forward": ("blhd", 3, None),  # custom_mask_type at 9
}


def causal_pairs(Lq: int, Lk: int, offset: int = 0) -> int:
    """Number of (query, key) pairs a causal mask keeps: query i sees keys j <= i + offset.

    offset 0 is SDPA's is_causal (top-left aligned); offset Lk - Lq is bottom-right
    alignment (flash-attn's forward, and decode with a KV cache).
    """
    if Lq <= 0 or Lk <= 0:
        return 0
    # Row i keeps clamp(i + offset + 1, 0, Lk) keys.
    lo = min(max(-offset, 0), Lq)  # first row that keeps at least one key
    hi = min(max(Lk - offset - 1, lo), Lq)  # first row that keeps all Lk keys
    ramp = (hi - lo) * (offset + 1) + (lo + hi - 1) * (hi - lo) // 2
    return ramp + (Lq - hi) * Lk


def _attention(name, args):
    """FLOPs 2*B*H*Lq*Lk*(Dqk + Dv) = 4*B*H*Lq*Lk*D (QK^T and PV; softmax not counted).

    Causal masking is applied only when is_causal is recorded in "Concrete Inputs"
    (torch >= 2.4 records it; older traces and the "Input Dims"/"Input type" alone do
    not, and then the full Lq x Lk is counted: an upper bound). Bytes: q, k, v, the
    mask if any, and the output, each once. Grouped-query attention: FLOPs use the
    query heads; bytes use the real (smaller) k and v.
    """
    layout, mask_at, causal_at = _ATTENTION[name]
    q, k, v = need(args, 0, 4), need(args, 1, 4), need(args, 2, 4)
    if layout == "bhld":
        B, H, Lq, D = q.dims
        Lk, Dv = k.dims[2], v.dims[3]
    else:
        B, Lq, H, D = q.dims
        Lk, Dv = k.dims[1], v.dims[3]
    if k.dims[-1] != D:
        raise Malformed
    pairs = Lq * Lk
    if name == "_efficient_attention_forward":
        mask_type = concrete_ints(args, 9)  # 0 none, 1 top-left, 2 bottom-right
        if mask_type == [1]:
            pairs = causal_pairs(Lq, Lk)
        elif mask_type == [2]:
            pairs = causal_pairs(Lq, Lk, Lk - Lq)
    elif causal_at is not None and concrete_bool(args, causal_at):
        offset = Lk - Lq if name == "_flash_attention_forward" else 0
        pairs = causal_pairs(Lq, Lk, offset)
    flops = 2.0 * B * H * pairs * (D + Dv)
    mask = tensor_at(args, mask_at) if mask_at is not None else None
    out = B * H * Lq * Dv * bytes_of(q.dtype)
    nbytes = q.nbytes + k.nbytes + v.nbytes + out + (mask.nbytes if mask else 0)
    return OpCost(flops=flops, bytes=float(nbytes), dtype=q.dtype, kind="attention")


# --------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------

# FLOPs per output element. Arithmetic, comparisons and selects count 1. Functions
# count "a few": what a CUDA kernel with fast intrinsics roughly executes, e.g.
# sigmoid = neg, exp, add, div (4); silu = sigmoid * x (5); gelu (erf form) ~8.
# These ops sit far left of every ridge, so the exact count never changes the bound.
_ELEMENTWISE_FLOPS = {
    **dict.fromkeys(
        ["add", "sub", "rsub", "mul", "div", "true_divide", "floor_divide", "remainder",
         "fmod", "neg", "abs", "sign", "relu", "clamp", "clamp_min", "clamp_max", "clip",
         "maximum", "minimum", "fmax", "fmin", "where", "masked_fill", "eq", "ne", "lt",
         "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "logical_xor",
         "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "__and__", "__or__",
         "__xor__", "floor", "ceil", "round", "trunc", "square", "threshold",
         "hardtanh", "reciprocal"], 1),
    **dict.fromkeys(["leaky_relu", "addcmul", "addcdiv", "hardsigmoid", "relu6"], 2),
    **dict.fromkeys(["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
                     "rsqrt", "sin", "cos", "pow", "lerp", "hardswish"], 2),
    **dict.fromkeys(["sigmoid", "tanh", "erf", "elu", "softplus"], 4),
    **dict.fromkeys(["silu", "gelu", "mish"], 5),
    # an activation's and dropout's backward: the gradient times the activation's derivative (read from its input
    # or its output, or dropout's mask), elementwise like the forward (a training step's MLP runs them between its
    # GEMMs: threshold_backward for ReLU, native_dropout_backward for Dropout)
    **dict.fromkeys(["threshold_backward", "hardtanh_backward", "native_dropout_backward"], 2),
    **dict.fromkeys(["leaky_relu_backward", "sigmoid_backward", "tanh_backward", "elu_backward"], 3),
    **dict.fromkeys(["silu_backward", "gelu_backward"], 8),
}
_ELEMENTWISE_FLOPS["gelu"] = 8
_ELEMENTWISE_FLOPS["mish"] = 8
_BOOL_RESULT = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                "logical_not", "logical_xor"}


def _elementwise(name, args, base, inplace):
    """Flops = per-element count x output numel. Bytes = every tensor input read once
    plus the output written once (broadcast shape); an in-place op writes input 0."""
    tensors = [a for a in args if a.kind == "tensor"]
    if not tensors:
        raise Malformed
    if base == "where":  # the condition is bool; the result takes the values' dtype
        out_dtype = result_dtype(tensors[1:] or tensors)
    elif base in _BOOL_RESULT:
        out_dtype = "bool"
    else:
        out_dtype = result_dtype(tensors)
    if inplace:
        out_shape, out_dtype = tensors[0].dims, tensors[0].dtype
    else:
        out_shape = broadcast([t.dims for t in tensors])
    out_numel = math.prod(out_shape)
    reads = sum(t.nbytes for t in tensors)
    flops = float(_ELEMENTWISE_FLOPS[base] * out_numel)
    dtype = out_dtype if out_dtype in FLOAT_DTYPES else main_dtype(tensors)
    return OpCost(flops=flops, bytes=float(reads + out_numel * bytes_of(out_dtype)),
                  dtype=dtype, kind="elementwise")


def _dropout(name, args):
    """Dropout in training (aten::native_dropout(x, p, train)): x read once, the output and its bool mask written,
    a random draw, a compare and a scale per element."""
    x = need(args, 0)
    return OpCost(flops=3.0 * x.numel, bytes=float(2 * x.nbytes + x.numel * bytes_of("bool")), dtype=x.dtype,
                  kind="elementwise")


# --------------------------------------------------------------------------------------
# Reductions, norms, softmax
# --------------------------------------------------------------------------------------

# FLOPs per input element: sum/max = 1; mean adds a divide per output (ignored);
# var/std = subtract, square, add (3); norms 2 (square, add).
_REDUCTION_FLOPS = {
    **dict.fromkeys(["sum", "mean", "amax", "amin", "max", "min", "prod", "argmax",
                     "argmin", "all", "any", "nansum", "cumsum", "cumprod"], 1),
    **dict.fromkeys(["norm", "linalg_vector_norm", "logsumexp"], 2),
    **dict.fromkeys(["var", "std", "var_mean", "std_mean"], 3),
}


def _reduction(name, args, base):
    """Flops = numel read x per-element count. Bytes = input + output.

    The output size comes from an explicit out= tensor if recorded, else from the
    reduced dims in "Concrete Inputs"; without those, a dim argument is assumed to
    reduce the last dim and no dim argument to reduce everything.
    """
    x = need(args, 0)
    if base in ("max", "min") and tensor_at(args, 1) is not None and tensor_at(args, 1).dims:
        return _elementwise(name, args, "maximum", inplace=False)  # max(a, b)
    out_numel = _reduced_numel(x, args, base)
    out_dtype = x.dtype
    if base in ("argmax", "argmin"):
        out_dtype = "int64"
    elif base in ("all", "any"):
        out_dtype = "bool"
    out_bytes = out_numel * bytes_of(out_dtype)
    if base in ("max", "min") and _is_dim_overload(args):  # values and indices
        out_bytes += out_numel * DTYPE_BYTES["int64"]
    if base in ("var_mean", "std_mean"):
        out_bytes *= 2
    flops = float(_REDUCTION_FLOPS[base] * x.numel)
    return OpCost(flops=flops, bytes=float(x.nbytes + out_bytes), dtype=x.dtype,
                  kind="reduction")


def _is_dim_overload(args):
    """max.dim(x, int dim, keepdim) returns values and indices; max(x) one value."""
    return len(args) > 1 and args[1].type == "Scalar"


def _reduced_numel(x: Arg, args: list[Arg], base: str) -> int:
    if base in ("cumsum", "cumprod"):
        return x.numel
    out = next((a for a in args[1:] if a.kind == "tensor" and a.dims), None)
    if out is not None:  # *.out overloads record the result tensor
        return out.numel
    if len(args) == 1 or not x.dims:
        return 1
    if args[1].type not in ("ScalarList", "Scalar") or concrete_bool(args, 1) is not None:
        return 1  # no dim argument (sum(x, dtype=None), var(x, unbiased)): reduce all
    dims = concrete_ints(args, 1)
    if dims is None:  # a dim argument whose value was not recorded: assume the last
        return math.prod(x.dims[:-1])
    if not dims:  # dim=[] reduces everything
        return 1
    ndim = len(x.dims)
    kept = [s for i, s in enumerate(x.dims) if i not in {d % ndim for d in dims}]
    return math.prod(kept)


# name -> (FLOPs per element, whether args[1] is normalized_shape (no weight there))
# layer_norm: mean (1), variance (3), normalise (2), affine (2) = 8.
# rms_norm: square+add (2), scale (1), weight (1) = 4. batch_norm: ~4 with folded stats.
_NORMS = {
    "layer_norm": 8, "native_layer_norm": 8, "group_norm": 8, "native_group_norm": 8,
    "rms_norm": 4, "_fused_rms_norm": 4, "instance_norm": 8,
    "batch_norm": 4, "_batch_norm_impl_index": 4, "native_batch_norm": 4,
    "cudnn_batch_norm": 4, "_native_batch_norm_legit": 4,
    "_native_batch_norm_legit_no_training": 4, "miopen_batch_norm": 4,
}


def _norm(name, args):
    """Flops = per-element count x numel. Bytes = x read + y written + every other
    tensor argument (weight, bias, running stats) read; mean/rstd outputs ignored."""
    x = need(args, 0)
    params = sum(a.nbytes for a in args[1:] if a.kind == "tensor")
    return OpCost(flops=float(_NORMS[name] * x.numel),
                  bytes=float(2 * x.nbytes + params), dtype=x.dtype, kind="norm")


_SOFTMAX = {"softmax", "_softmax", "log_softmax", "_log_softmax", "_safe_softmax"}


def _softmax(name, args):
    """~5 FLOPs per element (max, subtract, exp, sum, divide). Bytes = in + out.
    The output dtype follows softmax(x, dim, dtype) or _softmax(x, dim, half_to_float)
    when "Concrete Inputs" records it, else the input's."""
    x = need(args, 0)
    out_dtype = x.dtype
    if name.startswith("_") and name != "_safe_softmax":
        if concrete_bool(args, 2):
            out_dtype = "fp32"
    else:
        out_dtype = concrete_dtype(args, 2) or x.dtype
    return OpCost(flops=5.0 * x.numel,
                  bytes=float(x.nbytes + x.numel * bytes_of(out_dtype)),
                  dtype=x.dtype, kind="softmax")


# --------------------------------------------------------------------------------------
# Gathers and copies
# --------------------------------------------------------------------------------------

def _embedding(name, args):
    """embedding(weight[V, D], indices[...]) -> [..., D]. Bytes = the gathered rows
    (not the whole table) + the indices + the output. No FLOPs."""
    w, idx = need(args, 0, 2), need(args, 1)
    rows = idx.numel * w.dims[1] * bytes_of(w.dtype)
    return OpCost(flops=0.0, bytes=float(2 * rows + idx.nbytes), dtype=w.dtype,
                  kind="embedding")


def _index_select(name, args):
    """index_select(x, dim, index): gathered slices read + index read + output written.
    dim from "Concrete Inputs" when recorded, else 0."""
    x, idx = need(args, 0), need(args, 2)
    if not x.dims:
        raise Malformed
    dim = (concrete_ints(args, 1) or [0])[0] % len(x.dims)
    gathered = x.numel // x.dims[dim] * idx.numel if x.dims[dim] else 0
    moved = gathered * bytes_of(x.dtype)
    return OpCost(flops=0.0, bytes=float(2 * moved + idx.nbytes), dtype=x.dtype,
                  kind="copy")


def _copy(name, args):
    """No FLOPs; bytes = what is read plus what is written.

    copy_(dst, src) records both dtypes. _to_copy/to record only the input's; the
    target dtype is read from "Concrete Inputs" (a ScalarType code) when recorded, else
    assumed unchanged. fill_/zero_ only write. cat/stack read every input and write
    the same amount.
    """
    if name in ("cat", "stack", "concat", "concatenate", "hstack", "vstack"):
        tl = args[0] if args else None
        if tl is None or tl.kind != "tensorlist":
            raise Malformed
        # A TensorList records shapes only, never its dtype ("Input type" is just
        # "TensorList"): assume fp32, which errs high by 2x for 16-bit tensors.
        dtype = "fp32"
        moved = sum(math.prod(d) for d in tl.dims) * bytes_of(dtype)
        return OpCost(0.0, float(2 * moved), dtype, "copy")
    if name in ("copy_", "_copy_from", "_copy_from_and_resize"):
        dst, src = need(args, 0), need(args, 1)
        if name != "copy_":  # _copy_from(self=src, dst)
            dst, src = src, dst
        return OpCost(0.0, float(dst.nbytes + src.nbytes), dst.dtype, "copy")
    x = need(args, 0)
    if name in ("fill_", "zero_"):
        return OpCost(0.0, float(x.nbytes), x.dtype, "copy")
    out_dtype = x.dtype
    if name == "_to_copy":
        out_dtype = concrete_dtype(args, 1) or x.dtype
    elif name == "to":
        # to.dtype(x, dtype, ...) has 5 args; to.dtype_layout(x, dtype, layout, ...) 8;
        # to.device(x, device, dtype, ...) 6 with the device first.
        at = 2 if len(args) == 6 else 1
        out_dtype = concrete_dtype(args, at) or x.dtype
    return OpCost(0.0, float(x.nbytes + x.numel * bytes_of(out_dtype)), x.dtype, "copy")


_COPIES = {"copy_", "_copy_from", "_copy_from_and_resize", "to", "_to_copy",
           "contiguous", "clone", "cat", "stack", "concat", "concatenate", "fill_",
           "zero_"}


# --------------------------------------------------------------------------------------
# Convolutions
# --------------------------------------------------------------------------------------

# FLOPs and bytes of a convolution (1-3d; grouped, strided, dilated, transposed; forward and
# backward), from the shapes torch.profiler records.
#
# Forward: 2 * N * C_out * prod(out spatial) * (C_in / groups) * prod(kernel) FLOPs (one multiply
# and one add per weight tap per output element); bytes = input + weight (+ bias) read once and the
# output written once. A transposed convolution is the backward-data pass of the forward one with
# the roles of input and output swapped: 2 * N * C_in * prod(in spatial) * (C_out / groups) *
# prod(kernel). Each backward gradient (input, weight) costs what the forward costs; the bias
# gradient is a reduction and is not counted.
#
# Where the arguments live (the forward's stride/padding/dilation are "ScalarList"s whose values
# only newer torch records, in "Concrete Inputs"):
#
#     conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups)
#     conv_transpose1d/2d/3d(input, weight, bias, stride, padding, output_padding, groups, dilation)
#     convolution / _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
#                                 groups, ...)
#     cudnn_convolution(input, weight, padding, stride, dilation, groups, ...)          (no bias)
#     mkldnn_convolution / miopen_convolution(input, weight, bias, padding, stride, dilation, groups, ...)
#     cudnn_convolution_transpose / miopen_convolution_transpose(input, weight, [bias,] padding, output_padding,
#                                                                stride, dilation, groups, ...)
#     convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
#                          output_padding, groups, output_mask)
#     cudnn_convolution_backward(input, grad_output, weight, padding, stride, dilation, groups, ..., output_mask)
#                                                                                     (torch 1.x)
#     cudnn_convolution_backward_input(input_size, grad_output, weight, ...)          (torch 1.x)
#
# When the stride, padding and dilation were not recorded (torch 1.x), a forward's output is assumed
# the size of its input (stride 1, "same" padding): exact for most layers of a ResNet, four times too
# many output elements for a stride-2 layer. Backward passes read the output size from grad_output,
# so they need no assumption. `cudnn_convolution_backward_weight` records neither the weight nor its
# size: it has no cost here, and its kernels are costed through the op that called it.

@dataclass(frozen=True)
class _ConvArgs:
    input: int
    weight: int
    bias: int | None = None
    stride: int | None = None
    padding: int | None = None
    dilation: int | None = None
    groups: int | None = None
    output_padding: int | None = None
    transposed: int | bool = False   # an argument index (convolution) or fixed by the op's name
    grad_output: int | None = None   # backward ops: where the output gradient is
    output_mask: int | None = None


_FWD = _ConvArgs(0, 1, 2, 3, 4, 5, 6)
_CONV_T = _ConvArgs(0, 1, 2, stride=3, padding=4, output_padding=5, groups=6, dilation=7, transposed=True)
_GENERIC = _ConvArgs(0, 1, 2, stride=3, padding=4, dilation=5, transposed=6, output_padding=7, groups=8)
_BACKEND_NO_BIAS = _ConvArgs(0, 1, None, padding=2, stride=3, dilation=4, groups=5)
_BACKEND = _ConvArgs(0, 1, 2, padding=3, stride=4, dilation=5, groups=6)

_CONVS: dict[str, _ConvArgs] = {
    **dict.fromkeys(["conv1d", "conv2d", "conv3d", "_convolution_mode"], _FWD),
    **dict.fromkeys(["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"], _CONV_T),
    **dict.fromkeys(["convolution", "_convolution"], _GENERIC),
    "cudnn_convolution": _BACKEND_NO_BIAS,
    **dict.fromkeys(["mkldnn_convolution", "miopen_convolution", "miopen_depthwise_convolution",
                     "_slow_conv2d_forward", "slow_conv3d_forward"], _BACKEND),
    "cudnn_convolution_transpose": _ConvArgs(0, 1, None, padding=2, output_padding=3, stride=4, dilation=5, groups=6,
                                           transposed=True),
    "miopen_convolution_transpose": _ConvArgs(0, 1, 2, padding=3, output_padding=4, stride=5, dilation=6, groups=7,
                                            transposed=True),
    "convolution_backward": _ConvArgs(1, 2, None, stride=4, padding=5, dilation=6, transposed=7, output_padding=8,
                                    groups=9, grad_output=0, output_mask=10),
    "cudnn_convolution_backward": _ConvArgs(0, 2, None, padding=3, stride=4, dilation=5, groups=6, grad_output=1,
                                          output_mask=10),
    "cudnn_convolution_backward_input": _ConvArgs(-1, 2, None, padding=3, stride=4, dilation=5, groups=6,
                                                grad_output=1),
}


def _conv(name, args):
    lay = _CONVS[name]
    w = tensor_at(args, lay.weight)
    if w is None or len(w.dims) < 3:
        raise Malformed
    nsp = len(w.dims) - 2
    kernel = math.prod(w.dims[2:])

    def ints(i, default):
        if i is None:
            return [default] * nsp
        v = concrete_ints(args, i)
        if not v:
            return None
        return v * nsp if len(v) == 1 else v

    transposed = lay.transposed if isinstance(lay.transposed, bool) else bool(concrete_bool(args, lay.transposed))
    groups = (concrete_ints(args, lay.groups) or [None])[0] if lay.groups is not None else 1
    dtype = w.dtype
    if lay.grad_output is not None:
        return _conv_backward(name, args, lay, w, kernel, transposed)

    x = tensor_at(args, lay.input)
    if x is None or len(x.dims) != nsp + 2:
        raise Malformed
    n, c_in, in_sp = x.dims[0], x.dims[1], x.dims[2:]
    stride, padding, dilation = ints(lay.stride, 1), ints(lay.padding, None), ints(lay.dilation, 1)
    out_pad = ints(lay.output_padding, 0) or [0] * nsp
    if transposed:
        c_out = w.dims[1] * (groups or 1)
        if stride and padding and dilation:
            out_sp = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1
                      for i, s, p, d, k, op in zip(in_sp, stride, padding, dilation, w.dims[2:], out_pad)]
        else:
            out_sp = list(in_sp)
        flops = 2.0 * n * c_in * math.prod(in_sp) * w.dims[1] * kernel
    else:
        if groups is None:  # not recorded: the weight's input channels say it
            groups = max(c_in // w.dims[1], 1) if w.dims[1] else 1
        c_out = w.dims[0]
        if stride and padding and dilation:
            out_sp = [(i + 2 * p - d * (k - 1) - 1) // s + 1
                      for i, s, p, d, k in zip(in_sp, stride, padding, dilation, w.dims[2:])]
        else:
            out_sp = list(in_sp)   # assumed: stride 1, "same" padding (see the module's docstring)
        flops = 2.0 * n * c_out * math.prod(out_sp) * w.dims[1] * kernel
    if any(o <= 0 for o in out_sp):
        raise Malformed
    bias = tensor_at(args, lay.bias) if lay.bias is not None else None
    out_bytes = n * c_out * math.prod(out_sp) * bytes_of(dtype)
    nbytes = x.nbytes + w.nbytes + (bias.nbytes if bias is not None else 0) + out_bytes
    return OpCost(flops=flops, bytes=float(nbytes), dtype=dtype, kind="convolution")


def _conv_backward(name, args, lay, w, kernel, transposed):
    go = tensor_at(args, lay.grad_output)
    if go is None or len(go.dims) != len(w.dims):
        raise Malformed
    x = tensor_at(args, lay.input) if lay.input >= 0 else None
    n, go_sp = go.dims[0], go.dims[2:]
    # One pass = the forward's multiply-adds. Forward (not transposed): per output element
    # C_in/groups * kernel taps, i.e. w.dims[1]; transposed: the "output" of the equivalent
    # forward is the transposed conv's input, which has w.dims[0] channels.
    if transposed:
        if x is None:
            raise Malformed
        one_pass = 2.0 * n * x.dims[1] * math.prod(x.dims[2:]) * w.dims[1] * kernel
    else:
        one_pass = 2.0 * n * go.dims[1] * math.prod(go_sp) * w.dims[1] * kernel
    if name == "cudnn_convolution_backward_input":
        mask = [True, False]
    else:
        mask = [True, True]
        if lay.output_mask is not None:
            raw = args[lay.output_mask].concrete.strip() if lay.output_mask < len(args) else ""
            if raw.startswith("[") and raw.endswith("]"):
                vals = [v.strip() == "True" for v in raw[1:-1].split(",")]
                mask = (vals + [True, True])[:2]
    passes = int(mask[0]) + int(mask[1])
    if passes == 0:
        raise Malformed
    # Bytes: grad_output and weight read; input read for the weight gradient; each gradient written.
    in_bytes = x.nbytes if x is not None else go.nbytes   # grad_input has the input's size
    nbytes = go.nbytes + w.nbytes + (in_bytes if mask[1] and x is not None else 0)
    nbytes += (in_bytes if mask[0] else 0) + (w.nbytes if mask[1] else 0)
    return OpCost(flops=one_pass * passes, bytes=float(nbytes), dtype=w.dtype, kind="convolution")


# --------------------------------------------------------------------------------------
# Inductor's Triton kernels
# --------------------------------------------------------------------------------------

# torch.compile launches each generated kernel from a CPU op named after it
# (triton_poi_fused_add_cos_sin_0), whose Input Dims/Input type record the kernel's tensor
# arguments (inputs and outputs alike, then scalars such as xnumel). Its minimum traffic is one
# pass over each tensor argument: a lower bound (a reduction that re-reads, or a persistent
# kernel that reads twice, moves more). FLOPs are not in the name; they are left at 0, which
# places the kernel by its bytes alone. Templates (triton_tem_: GEMMs and attention written by
# Inductor) do arithmetic the arguments do not show, so they get no cost.
TRITON_PASS = "triton_pass"   # the kind of a cost that is a one-pass lower bound


def is_triton_kernel_op(base: str) -> bool:
    return base.startswith("triton_") and not base.startswith("triton_tem_")


# A fused kernel that gathers or scatters (an embedding lookup, a KV-cache index_copy) takes the
# whole table or cache as an argument but touches only the rows it indexes: such an argument is
# counted at most at the size of the largest other argument (the rows gathered, or written, are
# no larger than the values they come from or go to).
_INDEXING = ("embedding", "index", "gather", "scatter")


def _triton_pass(name, args):
    tensors = [a for a in args if a.kind == "tensor" and a.dims]
    if not tensors:
        raise Malformed
    sizes = sorted((t.numel for t in tensors), reverse=True)
    if any(word in name for word in _INDEXING) and len(sizes) > 1:
        cap = sizes[1]
        nbytes = sum(min(t.numel, cap) * bytes_of(t.dtype) for t in tensors)
    else:
        nbytes = sum(t.nbytes for t in tensors)
    return OpCost(flops=0.0, bytes=float(nbytes), dtype=main_dtype(tensors), kind=TRITON_PASS)


# --------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------

_MATMULS = {
    "mm": _mm, "addmm": _addmm, "_addmm_activation": _addmm, "bmm": _bmm,
    "baddbmm": _baddbmm, "addbmm": _baddbmm, "linear": _linear, "matmul": _matmul,
    "mv": _mv, "addmv": _mv, "dot": _dot, "_scaled_mm": _scaled_mm,
}


def _base_name(name: str) -> str:
    return name[len("aten::"):] if name.startswith("aten::") else name


def op_cost(name: str, input_dims: list | None, input_types: list | None,
            concrete_inputs: list | None = None) -> OpCost | None:
    """FLOPs and bytes of one op from its recorded shapes and dtypes.

    `name` is the cpu_op name ("aten::mm"; the "aten::" prefix is optional);
    `input_dims`, `input_types` and the optional `concrete_inputs` are the event's
    args "Input Dims", "Input type" and "Concrete Inputs". Returns None for ops it
    does not know, for missing shapes, and for anything malformed; it never raises.
    """
    try:
        if not isinstance(name, str) or input_dims is None or input_types is None:
            return None
        base = _base_name(name.strip())
        kind = _classify(base)
        if kind is None:
            return None
        args = parse_args(input_dims, input_types, concrete_inputs)
        return kind(base, args)
    except (Malformed, ValueError, TypeError, IndexError, KeyError, ZeroDivisionError,
            OverflowError, AttributeError):
        return None


def tensor_args(input_dims: list | None, input_types: list | None,
                concrete_inputs: list | None = None) -> list[tuple[tuple, str, int]]:
    """The tensor arguments of an op as (dims, canonical dtype, bytes); [] when the shapes are missing or
    malformed (the fusion ledger reads which tensors a chain of ops shares)."""
    try:
        args = parse_args(input_dims, input_types, concrete_inputs)
    except (Malformed, ValueError, TypeError):
        return []
    return [(a.dims, a.dtype, a.nbytes) for a in args if a.kind == "tensor"]


def launch_op_cost(name: str, input_dims: list | None, input_types: list | None,
                   concrete_inputs: list | None = None) -> OpCost | None:
    """The cost of an op that launches a kernel of its own name: a user's Triton kernel that
    torch.compile (or a torch.library triton_op) wraps in an op named after it, whatever its name.
    Like an Inductor kernel: one pass over its tensor arguments (inputs and outputs), a lower bound."""
    try:
        if input_dims is None or input_types is None:
            return None
        return _triton_pass(_base_name(str(name).strip()), parse_args(input_dims, input_types, concrete_inputs))
    except (Malformed, ValueError, TypeError, IndexError, KeyError, OverflowError, AttributeError):
        return None


def fusible_kind_by_name(name: str) -> str | None:
    """The kind of an op by its name alone ('elementwise', 'reduction', 'norm', 'softmax'), for a trace that recorded
    no shapes; None for any other op (a matmul, a copy, a Triton kernel Inductor fused already)."""
    base = _base_name(str(name).strip())
    if base in _NORMS:
        return "norm"
    if base in _SOFTMAX:
        return "softmax"
    if base in _REDUCTION_FLOPS:
        return "reduction"
    stem = base[:-1] if base.endswith("_") and not base.endswith("__") else base
    return "elementwise" if stem in _ELEMENTWISE_FLOPS or base == "native_dropout" else None


def _classify(base: str):
    if is_multi_tensor(base):
        return lambda n, a: OpCost(*foreach_cost(n, a))
    if base in _MATMULS:
        return _MATMULS[base]
    if base in _ATTENTION:
        return _attention
    if base in _CONVS:
        return _conv
    if is_triton_kernel_op(base):
        return _triton_pass
    if base in _NORMS:
        return _norm
    if base in _SOFTMAX:
        return _softmax
    if base == "embedding":
        return _embedding
    if base == "index_select":
        return _index_select
    if base in _COPIES:
        return _copy
    if base in _REDUCTION_FLOPS:
        return lambda n, a: _reduction(n, a, n)
    if base == "native_dropout":
        return _dropout
    stem = base[:-1] if base.endswith("_") and not base.endswith("__") else base
    if stem in _ELEMENTWISE_FLOPS:
        return lambda n, a: _elementwise(n, a, stem, inplace=stem != base)
    return None
