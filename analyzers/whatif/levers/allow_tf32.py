"""allow_tf32: fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32 = True).

PyTorch runs fp32 matmuls in full fp32 on CUDA cores by default (cuDNN's convolutions already take
TF32 unless torch.backends.cudnn.allow_tf32 was turned off). The trace shows it in the kernels' names:
cuBLAS and cuDNN name the math they run (`sgemm`, `f32f32_f32f32_f32`: fp32; `tf32`: TF32). In the
graph each fp32 GEMM/convolution kernel takes its time times the device's fp32 peak over its TF32
peak (measured ceilings beside the trace first, else the datasheet): the kernel keeps the share of
its precision's peak that it reached, a model measured right on the H200 (traces/fixes/knobs).
"""
from __future__ import annotations

from dataclasses import dataclass

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.knob import (
    has_fast,
    kernel_rows,
    matrix_precision,
    peak_source,
    peaks_of,
    scale,
    unpriced,
    unpriced_words,
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

_CONV = ("fprop", "dgrad", "wgrad", "conv", "implicit")


@dataclass(frozen=True)
class TF32On(Assumption):
    kernel_ns: int = 0               # the fp32 GEMM/convolution kernels' time
    convs: int = 0                   # how many of them are convolutions (cudnn.allow_tf32 turned off)
    fp32_tflops: float = 0.0
    tf32_tflops: float = 0.0
    source: str = ""                 # where the peaks come from (SOURCE_WORDS)
    found: int = 0                   # fp32 GEMM/convolution kernels seen, priced or not
    device: str = ""
    unpriced: str = ""               # why the found kernels are not priced (knob.unpriced)


def apply(c: Context, p, o: Options) -> tuple[TF32On, dict]:
    peaks = peaks_of(c)
    tf32_now = len(kernel_rows(c, lambda n: matrix_precision(n) == "tf32"))
    rows = kernel_rows(c, lambda n: matrix_precision(n) == "fp32")
    detail = {"fp32_kernels": len(rows), "tf32_kernels": tf32_now}
    if not len(rows) or not has_fast(peaks, "tf32"):
        return (TF32On("allow_tf32", 0, found=len(rows), device=c.trace.device_name() or "",
                       unpriced=unpriced(peaks, "tf32") if len(rows) else "",
                       fp32_tflops=peaks.flops("fp32") / 1e12 if peaks is not None else 0.0), detail)
    fp32, tf32 = peaks.flops("fp32"), peaks.flops("tf32")
    names = c.gpu_named(lambda n: any(k in n.lower() for k in _CONV), rows)
    kernel_ns = int(c.g.g_dur[rows].sum())
    scale(p, rows, fp32 / tf32)
    return (TF32On("allow_tf32", len(rows), kernel_ns=kernel_ns, convs=int(names.sum()), fp32_tflops=fp32 / 1e12,
                   tf32_tflops=tf32 / 1e12, source=peak_source(peaks)), detail)


def says(a: TF32On) -> str:
    if a.count == 0 and a.found and a.unpriced:
        return unpriced_words(a.found, "fp32 GEMM/convolution kernels on CUDA cores", a.device, a.unpriced, "TF32",
                              a.fp32_tflops)
    if a.count == 0:
        return "no fp32 GEMM or convolution on CUDA cores in this trace"
    return (f"the {units.integer(a.count)} fp32 GEMM/convolution kernels ({units.duration_ns(a.kernel_ns)}) run on "
            f"TF32 tensor cores, each keeping its share of the peak: {units.tflops(a.fp32_tflops)} fp32 → "
            f"{units.tflops(a.tf32_tflops)} TF32 ({SOURCE_WORDS[a.source]})")


def change(a: TF32On) -> str:
    line = "torch.backends.cuda.matmul.allow_tf32 = True (or torch.set_float32_matmul_precision(\"high\"))"
    return line + (" and torch.backends.cudnn.allow_tf32 = True" if a.convs else "")


SPEC = LeverSpec(
    name="allow_tf32", effort=1, cause=None, apply=apply, says=says, words="TF32 for fp32 matmuls",
    fix="torch.backends.cuda.matmul.allow_tf32 = True for the variant's windows (fp32 matmuls on TF32 tensor cores)",
    recognise=Recognise(order=1, evidence="fp32_matrix_kernels", because="its fp32 GEMM kernels became TF32 ones",
                        amount=replay_figure("allow_tf32", "fp32_kernels"),
                        acted=lambda m: m.kernel_busy_ns, applied=went,
                        also=replay_figure_grew("allow_tf32", "tf32_kernels")),
    applied_words="TF32 matmuls (allow_tf32)", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change="torch.backends.cuda.matmul.allow_tf32 = True (or torch.set_float32_matmul_precision(\"high\"))",
              evidence="fp32 GEMM/convolution kernels on CUDA cores: cuBLAS/cuDNN kernel names with sgemm or "
                       "f32f32_f32f32_f32 (no tf32), launched by aten::mm/addmm/bmm/linear/convolution on float inputs",
              applies="fp32 matmuls and convolutions on devices with TF32 tensor cores (NVIDIA Ampere and later, "
                      "MI300); never below Ampere",
              model="each fp32 GEMM/convolution kernel takes its time x fp32 peak / TF32 peak of the device "
                    "(measured ceilings, else the datasheet); every other kernel, copy and host call stays",
              guide="CUDA semantics: TensorFloat-32 (TF32) on Ampere (and later) devices", needs="tf32", line=change))
