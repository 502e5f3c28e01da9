"""What a GPU kernel is, by its name: a collective or not, and which one.

Collectives spin while they wait for peers, so their time says nothing about arithmetic or bytes on
this device: the roofline keeps them out of its vote, the rank report times them per step. NCCL and
RCCL (ROCm's NCCL, whose kernels keep the nccl names or say rccl), DeepEP's expert-parallel
dispatch/combine (namespaces internode::/intranode::, dpsk::ep::, deep_ep::), custom all-reduce
kernels (vLLM's cross_device_reduce_*stage, symmetric-memory multimem/one-shot/two-shot all-reduce)
and NVSHMEM.
"""
from __future__ import annotations

import re

COLLECTIVE_NAME = re.compile(
    r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv|nvshmem|deep_?ep::|dpsk::ep::|"
    r"\b(?:internode|intranode)::|cross_device_reduce|multimem_|(?:one|two)_shot_", re.I)
_COLLECTIVE_KIND = re.compile(r"nccl(?:DevKernel|Kernel)?_([A-Za-z]+?)(?:_|\(|$)", re.IGNORECASE)


def is_collective(kernel: str) -> bool:
    return COLLECTIVE_NAME.search(kernel) is not None


def collective_kind(kernel: str) -> str:
    """'ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)' -> 'AllReduce'."""
    m = _COLLECTIVE_KIND.search(kernel)
    return m.group(1) if m else "collective"


# TF32 tensor-core GEMMs and convolutions name their math: cuBLAS "ampere_tf32_s1688gemm_...",
# "sm80_xmma_gemm_f32f32_tf32f32_f32_...", CUTLASS "cutlass_80_tensorop_s1688gemm_..." (s1688/s16816:
# the TF32 tensor-core instruction shapes), cuDNN "..._implicit_gemm_tf32f32_...". A plain fp32 GEMM
# on CUDA cores says sgemm ("ampere_sgemm_128x64_nn") and runs at the fp32 rate, not the TF32 one.
_TF32_NAME = re.compile(r"tf32|tensorop_s16?8|_s16?8(?:16|8)gemm", re.I)


def is_tf32(kernel: str) -> bool:
    """A kernel that computes fp32 data on TF32 tensor cores, by its name."""
    return _TF32_NAME.search(kernel) is not None
