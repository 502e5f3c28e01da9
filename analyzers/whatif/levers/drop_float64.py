"""drop_float64: float32 in place of float64 (torch.set_default_dtype(torch.float64) removed, .double() or
dtype=torch.float64 dropped).

What the construct looks like in any trace: the GPU kernels compute in double. Their names say it where the library
writes the type into them -- template arguments (`CUDAFunctor_add<double>`, `c10::complex<double>`, cuFFT's
`regular_fft<..., double, ...>`), cuBLAS's math (`f64f64_f64f64_f64`, `dgemm`, `zgemm`) -- and where the name holds no
type (`direct_copy_kernel_cuda`, a lambda), the op that launched it records its tensors' "Input type" as `double` or
`c10::complex<double>` (record_shapes). A kernel is fp64 when its name says double, or its name says no float type
and its launching op's tensor arguments (those with at least one dimension: a Python float argument is recorded as a
dimensionless `double`) are fp64/complex128 and none is another float type.

Fix and price: the same work in fp32 moves half the bytes, and fp32 arithmetic runs at least as fast as fp64 on every
GPU the peak table knows (the H100's datasheet gives 67 TFLOP/s each; consumer cards run fp64 at 1/32 or 1/64 of
fp32). In the graph each fp64 kernel takes half its time (its bytes halve; a compute-bound one would gain more where
fp64 is the slower rate, which this does not count), the launched kernels and the work queued before the window
alike; copies, the host and every other kernel stay. Priced where the device has a peak table entry (or measured
ceilings), else named unpriced.
A kernel whose FLOPs the trace's shapes give (a GEMM) takes no less than those FLOPs at FP32_GEMM_SHARE of the fp32
peak: PyTorch runs fp32 matmuls on the CUDA cores unless TF32 is allowed, and on an A100/H100 the fp64 tensor cores
(DMMA, cuBLAS's `f64f64` and CUTLASS's `d884gemm`) run as fast as those, so a compute-bound fp64 GEMM does not halve
(an H100 MLP in fp64: the GEMMs went 2.3 / 1.2 ms -> 1.3-1.4 ms each, the elementwise kernels halved).

What would make it fire falsely: a computation kept in double on purpose (a loss, a reduction, a running statistic)
is a small share of kernel time: the lever counts nothing below FP64_SHARE of the kernel time, so such a trace gets
no such advice (tests: a trace with one double reduction beside fp32 GEMMs). A kernel whose name says `double` for
another reason (a "double buffer" tile) is not fp64: the name test wants `double` as a C++ type (after `<`, `,` or
`(`, before `>`, `,` or `)`), not a word inside an identifier.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.dtypes import FLOAT_DTYPES, normalise_dtype
from tracetriage.analyzers.model.names import name_codes
from tracetriage.analyzers.model.trace import KERNEL, NONE
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.knob import mirror_queued, peaks_of
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Options,
    Recognise,
    replay_figure,
    went,
)

# `double` as a C++ type in a kernel's template arguments or parameters, never inside an identifier
_DOUBLE_TYPE = re.compile(r"(?<![A-Za-z0-9_])double(?![A-Za-z0-9_])")
_FP64_MATH = ("f64f64", "dgemm", "zgemm")
_OTHER_FLOAT = re.compile(r"(?<![A-Za-z0-9_])(float|half|__half|bfloat16|__nv_bfloat16|c10::Half|c10::BFloat16)"
                          r"(?![A-Za-z0-9_])|f32|bf16|f16|tf32")
# fp64 kernels holding less than this share of the kernel time are a computation kept in double on purpose (a loss,
# a reduction, running statistics), not a default dtype left on: the fix would be a rewrite of the precision the user
# chose, for a saving under the replay's error
FP64_SHARE = 0.10
KEEPS = 0.5        # the share of its time an fp64 kernel keeps in fp32: its bytes halve (8 -> 4 per element)
FP64_TENSOR = frozenset(("fp64", "complex128"))
# what a large fp32 GEMM reaches of the datasheet fp32 (CUDA-core FFMA) peak under cuBLAS's SIMT kernels: the fp32
# GEMMs of traces/fixes/knobs4's float64_mlp_train after its fix ran 1.32-1.38 ms for 68.7 GFLOP on an H100 (67
# TFLOP/s), 75-78% (a typical SGEMM's share of FFMA peak)
FP32_GEMM_SHARE = 0.75


def name_says(name: str) -> str | None:
    """The float type a kernel's name says it computes in: "fp64", "other" (fp32/half named), or None (no type, or
    both: fused Adam's `FusedAdamMathFunctor<float, ...>` takes its lr and betas as `double` scalars beside float
    tensors, a kernel whose name holds both is read from its op's tensors)."""
    low = name.lower()
    double = bool(_DOUBLE_TYPE.search(name)) or any(k in low for k in _FP64_MATH)
    other = bool(_OTHER_FLOAT.search(name))
    if double and not other:
        return "fp64"
    return "other" if other and not double else None


def op_tensors_fp64(tr, op: int) -> bool:
    """The op's tensor arguments (a dimension or more) are all fp64/complex128, and there is at least one."""
    dims, types, _ = tr.shapes(op)
    if not dims or not types or len(dims) != len(types):
        return False
    seen = set()
    for d, t in zip(dims, types):
        if not isinstance(d, list) or not d or not isinstance(t, str):
            continue
        dt = normalise_dtype(t)
        if dt in FP64_TENSOR or dt in FLOAT_DTYPES or dt in ("complex64", "complex32"):
            seen.add(dt)
    return bool(seen) and seen <= FP64_TENSOR


def fp64_kernels(c: Context) -> np.ndarray:
    """Indices into the graph's GPU activities of the kernels that compute in double."""
    g, tr = c.g, c.trace
    k = np.flatnonzero(g.g_cat == KERNEL)
    if not len(k):
        return k
    # a kernel's type is its name's: each distinct name read once (a 942k-event trace holds ~110k kernels of a few
    # hundred names)
    names, each = name_codes(tr, g.g_row[k])
    says = np.array([name_says(tr.names[int(n)]) for n in names.tolist()], dtype=object)[each]
    hit = says == "fp64"
    untyped = np.flatnonzero((says == None) & (g.g_call[k] >= 0) & g.g_linked[k])   # noqa: E711 (object array)
    if len(untyped):
        ops = tr.op_of[g.c_row[g.g_call[k[untyped]]]]
        has = ops != NONE
        untyped, ops = untyped[has], ops[has]
        # an op's tensors are its shape record's: each distinct record read once, from its first op (at 942k events
        # ~15k launching ops share far fewer records; decoding each op's own was most of this lever's ~0.09 s there),
        # and given to every kernel by its op's record (a table, not a loop over the ~110k kernels)
        _, first, each_op = np.unique(tr.ev.shape[ops], return_index=True, return_inverse=True)
        fp64 = np.array([op_tensors_fp64(tr, int(op)) for op in ops[first].tolist()], bool)
        hit[untyped] = fp64[each_op]
    return k[hit]


@dataclass(frozen=True)
class Float32(Assumption):
    kernel_ns: int = 0           # the fp64 kernels' time, before
    kernel_share: float = 0.0    # of all kernel time
    fp64_tflops: float = 0.0     # the device's rates, as the peak table (or measured ceilings) gives them
    fp32_tflops: float = 0.0
    found: int = 0               # fp64 kernels seen, priced or not
    unpriced: str = ""           # "unknown_device": no peaks to say fp32 runs at least as fast; "minor": under
                                 # FP64_SHARE of the kernel time


def apply(c: Context, p, o: Options) -> tuple[Float32, dict]:
    g = c.g
    rows = fp64_kernels(c)
    all_k = g.g_cat == KERNEL
    total = int(g.g_dur[all_k].sum())
    kernel_ns = int(g.g_dur[rows].sum())
    share = kernel_ns / total if total else 0.0
    detail = {"fp64_kernels": len(rows), "fp64_kernel_ns": kernel_ns}
    if not len(rows):
        return Float32("drop_float64", 0), detail
    if share < FP64_SHARE:
        return Float32("drop_float64", 0, kernel_ns=kernel_ns, kernel_share=share, found=len(rows),
                       unpriced="minor"), detail
    peaks = peaks_of(c)
    if peaks is None or "fp64" not in peaks.flops_per_s or "fp32" not in peaks.flops_per_s \
            or peaks.flops("fp32") < peaks.flops("fp64"):
        return Float32("drop_float64", 0, kernel_ns=kernel_ns, kernel_share=share, found=len(rows),
                       unpriced="unknown_device"), detail
    # bytes halve; a kernel's FLOPs (where the shapes give them) at the fp32 rate bound it from below
    flops = c.roof.kernel_flops[g.g_row[rows]].astype(np.float64)
    floor = flops / (peaks.flops("fp32") * FP32_GEMM_SHARE) * 1e9
    p.g_dur[rows] = np.round(np.minimum(g.g_dur[rows], np.maximum(g.g_dur[rows] * KEEPS, floor))).astype(p.g_dur.dtype)
    mirror_queued(c, p)
    return (Float32("drop_float64", len(rows), kernel_ns=kernel_ns, kernel_share=share,
                    fp64_tflops=peaks.flops("fp64") / 1e12, fp32_tflops=peaks.flops("fp32") / 1e12,
                    found=len(rows)), detail)


def says(a: Float32) -> str:
    if a.count == 0 and a.unpriced == "minor":
        return (f"{units.integer(a.found)} fp64 kernels hold {units.share(a.kernel_share)} of the kernel time: "
                "a computation kept in double, not a default dtype left on")
    if a.count == 0 and a.unpriced:
        return (f"{units.integer(a.found)} fp64 kernels ({units.share(a.kernel_share)} of the kernel time) in this "
                "trace, but no peak table entry for the device: what fp32 would buy is unknown")
    if a.count == 0:
        return "no fp64 kernel in this trace"
    return (f"the {units.integer(a.count)} fp64 kernels ({units.duration_ns(a.kernel_ns)}, "
            f"{units.share(a.kernel_share)} of the kernel time) run in fp32 at half their time: their bytes halve, "
            f"and fp32 runs at least as fast as fp64 ({units.tflops(a.fp32_tflops)} fp32 vs "
            f"{units.tflops(a.fp64_tflops)} fp64, the device's datasheet)")


def most_saved(a: Float32) -> int:
    return int(a.kernel_ns * (1 - KEEPS)) if a.count else 0


SPEC = LeverSpec(
    name="drop_float64", effort=1, cause=None, apply=apply, says=says, words="float32 in place of float64",
    fix="float32 in place of float64 (torch.set_default_dtype(torch.float64) removed)",
    recognise=Recognise(order=1, evidence="fp64_kernels", because="its fp64 kernels went",
                        amount=replay_figure("drop_float64", "fp64_kernel_ns"),
                        acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="float32 in place of float64", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    most_saved=most_saved,
    knob=Knob(change="drop float64: remove torch.set_default_dtype(torch.float64) (and .double(), "
                     "dtype=torch.float64) so the model and its inputs are float32",
              evidence="GPU kernels computing in double: names with double/complex<double> template arguments, "
                       "cuBLAS f64f64/dgemm, cuFFT <double>, or launched by ops whose tensor inputs are double, "
                       "holding at least a tenth of the kernel time",
              applies="every GPU: fp32 moves half of fp64's bytes and runs at least at its rate (consumer cards "
                      "run fp64 at 1/32-1/64 of fp32)",
              model="each fp64 kernel takes half its time (its bytes halve); copies, the host and every other "
                    "kernel stay; compute-bound kernels on cards with slow fp64 would gain more",
              guide="torch.set_default_dtype; CUDA semantics: precision of floating-point arithmetic"))
