"""What a Regime line may call the step's bound, where the trace cannot ground a roof.

A bound is a claim about a roof: "compute-bound" says the arithmetic runs near the device's peak. Two things in a
trace take that ground away. Without the device's peaks (an unnamed or ROCm device, a GPU missing from the table) the
roofline places a dense op (a matmul, a convolution) by its kind and FLOP/byte alone, so its share is dense
arithmetic, not arithmetic near a peak: cifar_mi300_r0/r3 (MI300X, unnamed) called MIOpen convolutions reaching
11 TFLOP/s, about 1% of the device's fp16 peak, "compute-bound". And where collectives hold most of the kernel time
(waiting on a late peer counts as busy), no roof bounds the step: cifar_mi300_r0 headlined "compute-bound" with 58%
of its kernel time in all-reduces waiting for a straggler and 31% in compute. The memory-bound share without peaks
stays: an op under the lowest ridge of any listed device is memory-bound wherever it runs.
"""
from __future__ import annotations

COLLECTIVES_MOST = 0.5   # collectives hold more than this share of the kernel time: they, not a roof, are the bound


def collectives_most(v) -> bool:
    return bool(v.kernel_us) and v.comm_us > COLLECTIVES_MOST * v.kernel_us


def compute_words(roofs: bool) -> str:
    """The compute share's words in the kernel-time split: bound by a roof only where the device's peaks are known.
    Without them the share holds the dense ops above the lowest listed ridge, not every matmul: a small or
    tall-skinny matmul falls under the memory or latency share (heldout-user16 mlp_bs16_nw0: GEMMs 15% of kernel
    time, none above a ridge, read '0% is dense arithmetic (matmuls, convolutions ...)')."""
    if roofs:
        return "compute-bound"
    return "dense arithmetic above the lowest ridge of any listed GPU (no roof known to bound it)"


def headline(v, bound: str, roofs: bool) -> str:
    """The Regime line's verdict word for a compute- or memory-bound span (`bound`), as far as the trace grounds it."""
    if collectives_most(v):
        return "mostly collectives (waiting on a peer included), not a roof"
    if bound == "compute-bound" and not roofs:
        return "mostly dense arithmetic, its roof unknown"
    return bound
