"""The words for a span whose kernels carry no cost model but whose names say fp32 arithmetic on CUDA cores
(tracetriage.analyzers.analyses.roofline: RegimeVerdict.fp32_cuda_core_us): the Regime line says what the names
decide (the kernels hold the time, in fp32 GEMMs and convolutions) and what they do not (which roof), and the Next
is mixed precision on the device's tensor cores (heldout-user3 hpdl_vgg16_t4: 99% busy in volta_sgemm and
cudnn_volta_scudnn kernels read "nothing else to decide by" and "capture again with record_shapes")."""
from __future__ import annotations

from tracetriage.analyzers.model.units import num, share, tflops
from tracetriage.analyzers.voice.common import uncosted_phrase
from tracetriage.analyzers.voice.said import claim

_NAME_WIDTH = 40


def _short(kernel: str) -> str:
    """'void cudnn::cnn::wgrad_alg1_engine<float, float, 512, ...>(int, ...)' -> 'cudnn::cnn::wgrad_alg1_engine'."""
    name = kernel.removeprefix("void ").split("(")[0].split("<")[0]
    return name if len(name) <= _NAME_WIDTH else name[: _NAME_WIDTH - 1] + "…"


def fp32_share(v, key: str) -> str:
    """'92% of kernel time is fp32 GEMMs and convolutions on CUDA cores (by name: volta_sgemm_128x64_nt, ...)',
    the share claimed under `key`."""
    x = v.fp32_cuda_core_us / max(v.kernel_us - v.comm_us, 1e-9)
    names = ", ".join(_short(k) for k in v.fp32_cuda_core_kernels)
    return (f"{claim(key, x, share(x))} of kernel time is fp32 GEMMs and convolutions on CUDA cores (by name: "
            f"{names})")


def regime_line(v, trace=None) -> str:
    """The Regime line of a span the names say is fp32 math on CUDA cores, its bound unmeasured."""
    busy = 1 - v.idle_share
    return (f"Regime: GPU-bound in fp32 math on CUDA cores, its roof unmeasured: the device is busy {share(busy)} of "
            f"the span and {fp32_share(v, 'regime.fp32_math_share')}; whether they are compute- or memory-bound is "
            f"unknown, because {uncosted_phrase(v, trace=trace)}.")


def _lower(pk) -> str:
    """The half precision this device runs fastest on its tensor cores: bf16 where it beats fp32 (Ampere on), else
    fp16 (Volta, Turing: no bf16 tensor cores)."""
    return "bf16" if pk.flops("bf16") >= pk.flops("fp16") else "fp16"


def next_words(a) -> dict[str, str]:
    """Next: mixed precision, whichever roof holds the kernels (tensor-core arithmetic, half the bytes)."""
    v, pk = a.verdict, a.roof.peaks
    low = _lower(pk)
    said = claim(f"next.precision.{low}", 1, low)
    device = a.trace.device_name() or "this device"
    if low == "bf16":
        how = f"torch.autocast('cuda', dtype=torch.bfloat16) ({said}: fp32's range, no loss scaling)"
    else:
        how = (f"torch.autocast('cuda', dtype=torch.float16) ({said}; when training, a torch.amp.GradScaler('cuda') "
               "scales the loss)")
    fast, slow = pk.flops(low) / 1e12, pk.flops("fp32") / 1e12
    lever = (f"mixed precision: run the forward and the loss under {how}, so the GEMMs and convolutions run on "
             f"tensor cores, and channels_last for the convolutions; record_shapes=True in the next capture "
             "prices what is left")
    busy = 1 - v.idle_share
    why = (f"{fp32_share(v, 'next.because.fp32_math_share')} while the device is busy "
           f"{claim('next.because.busy_share', busy, share(busy))} of the span, and {device} runs {low} on its "
           f"tensor cores at "
           f"{claim('next.tensor_core.peak_tflops', fast, tflops(fast))} against "
           f"{claim('next.fp32.peak_tflops', slow, tflops(slow))} in fp32; half-precision operands also halve the "
           "bytes, so this helps whichever roof holds them")
    return {"lever": lever, "why": why,
            "waste": "cutting launches or host work: the kernels hold the span"}


def tensor_core_roof(v, pk) -> str:
    """After a compute-bound span's '... of the 19.5 TFLOP/s peak (71%)' where that peak is the CUDA cores' fp32 one:
    ' on CUDA cores (fp32 GEMMs, by name: ampere_sgemm_128x64_nn): the TF32 tensor-core roof is 156 TFLOP/s, 11x
    what they reach' (heldout-user15 switch_moe_8k: '71% of the peak' read as little headroom, with 8x above it one
    flag away); '' where the tensor cores are in use or the device has none faster."""
    if pk is None or not v.compute_on_cuda_cores or not v.achieved_tflops:
        return ""
    kind = "tf32" if pk.flops_per_s.get("tf32", 0.0) > pk.flops("fp32") else _lower(pk)
    roof = pk.flops(kind) / 1e12
    if roof <= pk.flops("fp32") / 1e12:
        return ""
    names = ", ".join(_short(k) for k in v.fp32_cuda_core_kernels)
    label = "TF32" if kind == "tf32" else kind
    return (f" on CUDA cores (fp32 GEMMs, by name: {names}): the {label} tensor-core roof is "
            f"{claim('regime.tensor_core_peak_tflops', roof, tflops(roof))}, "
            f"{roof / v.achieved_tflops:.0f}× what they reach")


def other_ridge(other, i: int) -> str:
    """', its fp16 ones 283 against a fp16 ridge of 203' (other: (dtype, FLOP/byte, ridge)), the figure claimed."""
    dtype, x, ridge = other
    said = claim(f"regime.other_intensity.{i}", x, num(x))
    return f", its {dtype} ones {said} against a {dtype} ridge of {num(ridge)}"
