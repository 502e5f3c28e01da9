"""A memory rate no GPU's memory is that slow: kernels that are not bandwidth-limited.

Input: a rate the roofline read (GB/s) and the device's peaks (None: no table entry, no ceilings). Output: whether
the rate is below any GPU's memory bandwidth.

Where the device's peaks are known, a kernel far below its own roofs is latency-bound already (analyses.roofline). A
device with no table entry has no roof to be far below, and a "memory-bound" verdict by intensity then states a rate
as if it were the memory's limit. Any trace shows this as memory-bound ops whose achieved bytes per second are under
the memory bandwidth of the slowest GPU PyTorch runs CUDA on (SLOWEST_GPU_GBPS): no memory is that slow, so the
kernels are held by something else (clocks cold or throttled, a laptop's power limit, small kernels' latency, the
first call's set-up). An RTX 500 Ada laptop GPU (~128 GB/s rated) moved 5.4 GB/s in its memory-bound ops, a cold
ResNet-20 forward.

It would fire falsely on a rate computed from bytes that undercount what moved (an input only sliced, views): then
the rate is low because the bytes are, and the clause still sends the user to check what limits the kernels rather
than to move fewer bytes: no harm beyond a check. A GPU slower than SLOWEST_GPU_GBPS (none that runs current
PyTorch) would be flagged too.
"""
from __future__ import annotations

# GeForce GT 1030 (DDR4), 16.8 GB/s: the slowest memory of a GPU current PyTorch runs CUDA on (Pascal and later;
# NVIDIA's spec sheet). Jetson Nano's 25.6 GB/s and every laptop GPU's are above it.
SLOWEST_GPU_GBPS = 16.8


def below_any_gpu(achieved_gbps: float, peaks) -> bool:
    """A memory rate under any GPU's memory bandwidth, on a device whose own peaks are unknown."""
    return peaks is None and 0 < achieved_gbps < SLOWEST_GPU_GBPS
