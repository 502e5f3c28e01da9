"""What a GPU kernel is, by its name: a collective or not, and which one.

Collectives spin while they wait for peers, so their time says nothing about arithmetic or bytes on
this device: the roofline keeps them out of its vote, the rank report times them per step. NCCL and
RCCL (ROCm's NCCL, whose kernels keep the nccl names or say rccl), DeepEP's expert-parallel
dispatch/combine (namespaces internode::/intranode::, dpsk::ep::, deep_ep::), custom all-reduce
kernels (vLLM's cross_device_reduce_*stage, symmetric-memory multimem/one-shot/two-shot all-reduce)
and NVSHMEM.

How many bytes a collective puts on the link per rank, for a message of S bytes over n ranks, is its
bus factor (nccl-tests' PERFORMANCE.md): bus bandwidth = S / time x factor, the figure to hold against
the link's own bandwidth whatever the collective and the number of ranks.
"""
from __future__ import annotations

import re

COLLECTIVE_NAME = re.compile(
    r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv|nvshmem|deep_?ep::|dpsk::ep::|"
    r"\b(?:internode|intranode)::|cross_device_reduce|multimem_|(?:one|two)_shot_", re.I)
_COLLECTIVE_KIND = re.compile(r"nccl(?:DevKernel|Kernel)?_([A-Za-z]+?)(?:_|\(|$)", re.IGNORECASE)
# Kernels that are one kind whatever their name says beyond it: custom all-reduces, expert-parallel a2a
_KIND_BY_NAME = ((re.compile(r"cross_device_reduce|multimem_|(?:one|two)_shot_|all_?reduce", re.I), "AllReduce"),
                 (re.compile(r"all_?gather", re.I), "AllGather"),
                 (re.compile(r"reduce_?scatter", re.I), "ReduceScatter"),
                 (re.compile(r"all_?to_?all|deep_?ep::|dpsk::ep::|\b(?:internode|intranode)::", re.I), "AllToAll"))
GENERIC_KIND = "collective"     # a kernel that serves every collective (NCCL 2.19+'s ncclDevKernel_Generic)


# A piece of text every match of COLLECTIVE_NAME holds, lowercased (all_?to_?all: "toall" or "to_all"; deep_?ep::,
# dpsk::ep::: "ep::"; (inter|intra)node::: "node::"; all_?reduce, reduce_?scatter, cross_device_reduce: "reduce"):
# a name with none of them is no collective, told without the regex, whose fourteen alternatives tried at every
# position of a templated kernel name (up to ~1,000 characters) cost ~35 µs a name (the report asks ~500 names: 30 ms
# at 942k events, where the substring tests take ~1 µs a name)
_COLLECTIVE_PARTS = ("nccl", "rccl", "reduce", "gather", "toall", "to_all", "sendrecv", "nvshmem", "ep::", "node::",
                     "multimem_", "shot_")


def is_collective(kernel: str) -> bool:
    # (an ASCII name's case folds as re.I folds it; any other goes to the regex whole)
    if kernel.isascii():
        low = kernel.lower()
        if not any(part in low for part in _COLLECTIVE_PARTS):
            return False
    return COLLECTIVE_NAME.search(kernel) is not None


def collective_kind(kernel: str) -> str:
    """'ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)' -> 'AllReduce'; 'ncclDevKernel_Generic' -> 'collective'."""
    m = _COLLECTIVE_KIND.search(kernel)
    if m and m.group(1).lower() != "generic":
        return m.group(1)
    if m is None:
        for pattern, kind in _KIND_BY_NAME:
            if pattern.search(kernel):
                return kind
    return GENERIC_KIND


def bus_factor(kind: str, ranks: int | None) -> float | None:
    """Bytes on the link per byte of message, per rank (nccl-tests' bus bandwidth factor); None when the
    number of ranks is not known for a kind that needs it."""
    k = kind.lower()
    if k in ("broadcast", "reduce", "sendrecv", "send", "recv"):
        return 1.0
    if not ranks or ranks < 2:
        return None
    if k == "allreduce":
        return 2 * (ranks - 1) / ranks
    if k in ("allgather", "reducescatter", "alltoall"):
        return (ranks - 1) / ranks
    return None


# TF32 tensor-core GEMMs and convolutions name their math: cuBLAS "ampere_tf32_s1688gemm_...",
# "sm80_xmma_gemm_f32f32_tf32f32_f32_...", CUTLASS "cutlass_80_tensorop_s1688gemm_..." (s1688/s16816:
# the TF32 tensor-core instruction shapes), cuDNN "..._implicit_gemm_tf32f32_...". A plain fp32 GEMM
# on CUDA cores says sgemm ("ampere_sgemm_128x64_nn") and runs at the fp32 rate, not the TF32 one.
_TF32_NAME = re.compile(r"tf32|tensorop_s16?8|_s16?8(?:16|8)gemm", re.I)


def is_tf32(kernel: str) -> bool:
    """A kernel that computes fp32 data on TF32 tensor cores, by its name."""
    return _TF32_NAME.search(kernel) is not None


# fp32 GEMMs and convolutions on CUDA cores name themselves without shapes: cuBLAS "volta_sgemm_128x64_nt",
# cuDNN "cudnn_volta_scudnn_128x32_sliced1x4_..." (s: single precision), "implicit_convolve_sgemm", and cuDNN's
# templated engines on float data ("cudnn::cnn::wgrad_alg1_engine<float, float, ...>",
# "cudnn::winograd_nonfused::winogradForwardData4x4<float, float>"). A tensor-core kernel names its instruction
# shape or its kind (h884, s884 = fp16 in, fp32 accumulate; h1688, s1688, i8816, hmma, tensorop, xmma, wmma, tf32):
# those are no CUDA-core math.
_FP32_MATH_NAME = re.compile(r"sgemm|scudnn|cudnn::.*(?:engine|winograd|conv|gemm).*<float\b", re.I)
_TENSOR_CORE_NAME = re.compile(r"[hsi]\d{3,5}(?:gemm|cudnn)|hmma|tensorop|xmma|wmma|tf32|bf16|f16|half", re.I)


# Not fp32 math whatever else the name says: half-precision data (cuDNN's generic implicit_convolveNd_sgemm runs
# <__nv_bfloat16, ...> too: CUDA cores, but no mixed precision left to turn on) and cuDNN's layout transposes (their
# parameters are <float>: "nchwToNhwcKernel<__nv_bfloat16, ...>(nchw2nhwc_params_t<float>, ...)"). fresh4
# r3d_cudnn_benchmark (bf16 under autocast) read 50% "fp32 on CUDA cores" from these two.
_NOT_FP32_MATH = re.compile(r"bfloat16|__half\b|nchwToNhwc|nhwcToNchw", re.I)


def is_fp32_cuda_core_math(kernel: str) -> bool:
    """A GEMM or convolution kernel doing fp32 arithmetic on CUDA cores (no tensor cores), by its name."""
    return _FP32_MATH_NAME.search(kernel) is not None and _TENSOR_CORE_NAME.search(kernel) is None \
        and _NOT_FP32_MATH.search(kernel) is None


# The precision a GEMM or convolution kernel computes in, by its name, for kernels whose ops carry no shapes
# (replayed from CUDA graphs, compiled regions): cuBLASLt's nvjet kernels name their types in three letters after
# the architecture, A/B first ("nvjet_sm90_tst_...": bf16 in, fp32 accumulate, bf16 out; h: fp16; s: fp32; e: fp8),
# cuBLAS/cuDNN/CUTLASS name theirs in words (bf16, f16/h884/h1688/h16816, tf32/s1688, e4m3).
_NVJET_TYPES = re.compile(r"nvjet_(?:sm\d+_)?([a-z])[a-z]{2}_", re.I)
_NVJET_LETTER = {"t": "bf16", "h": "fp16", "s": "fp32", "e": "fp8"}
_MATRIX_NAME = re.compile(r"gemm|xmma|cutlass|nvjet|fprop|dgrad|wgrad|conv|cublas|scudnn", re.I)
_WORD_PRECISIONS = ((re.compile(r"e4m3|e5m2|fp8", re.I), "fp8"), (re.compile(r"bf16|bfloat16", re.I), "bf16"),
                    (re.compile(r"f16|fp16|half|h\d{3,5}(?:gemm|cudnn)|hmma", re.I), "fp16"))


def matrix_precision_by_name(kernel: str) -> str | None:
    """"bf16", "fp16", "fp8", "tf32" or "fp32" for a GEMM/convolution kernel whose name says it, else None."""
    if _MATRIX_NAME.search(kernel) is None or "elementwise" in kernel:
        return None
    m = _NVJET_TYPES.search(kernel)
    if m is not None and m.group(1).lower() in _NVJET_LETTER:
        return _NVJET_LETTER[m.group(1).lower()]
    for pattern, precision in _WORD_PRECISIONS:
        if pattern.search(kernel):
            return precision
    if is_tf32(kernel):
        return "tf32"
    return "fp32" if is_fp32_cuda_core_math(kernel) else None


# Attention by its name, op or kernel: SDPA and its backends (aten::scaled_dot_product_attention, _flash_attention_*,
# _efficient_attention_*), flash-attn's and cuDNN's kernels (flash_fwd_kernel, fmha_*, cudnn's "sdpa"), xFormers'.
_ATTENTION_NAME = re.compile(r"attention|flash_fwd|flash_bwd|fmha|sdpa|xformers", re.I)


def is_attention(name: str) -> bool:
    """An attention op or kernel, by its name."""
    return _ATTENTION_NAME.search(name) is not None
