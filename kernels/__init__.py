"""Triton kernels with torch references: fused elementwise chain, fused softmax.

Each module: kernel, wrapper, float64 reference, bytes ledger, CUDA benchmark.
Without a GPU, set TRITON_INTERPRET=1 before importing triton to run on the CPU.
"""

from tracetriage.kernels.fused_chain import (
    EAGER_PASSES,
    FUSED_PASSES,
    chain_eager,
    chain_reference,
    fused_chain,
)
from tracetriage.kernels.fused_chain import benchmark as benchmark_chain
from tracetriage.kernels.fused_chain import bytes_moved as chain_bytes_moved
from tracetriage.kernels.fused_softmax import benchmark as benchmark_softmax
from tracetriage.kernels.fused_softmax import bytes_moved as softmax_bytes_moved
from tracetriage.kernels.fused_softmax import fused_softmax, softmax_reference

__all__ = [
    "EAGER_PASSES",
    "FUSED_PASSES",
    "benchmark_chain",
    "benchmark_softmax",
    "chain_bytes_moved",
    "chain_eager",
    "chain_reference",
    "fused_chain",
    "fused_softmax",
    "softmax_bytes_moved",
    "softmax_reference",
]
