"""cudnn_benchmark: torch.backends.cudnn.benchmark = True, recognised and left unpriced.

With benchmark off (PyTorch's default) cuDNN's heuristics pick each convolution's algorithm; with it on, the first
call of each new shape times the candidates and keeps the fastest. The trace shows where the knob applies:
convolutions run by cuDNN (aten::cudnn_convolution, aten::cudnn_convolution_transpose, and their backward in
aten::convolution_backward), whose kernels are cuDNN's. It does not show what the knob would buy: a trace records
the algorithm cuDNN picked, never the ones it did not try, nor the flag (with it on, the trials ran in the first
calls, outside a warmed-up window). So the replay changes nothing (a prediction of 1.00, never a made-up saving)
and says so; `tracetriage try SCRIPT` measures it (levers/outside.py: cudnn_benchmark).

diff recognises it from what changed: the same convolutions (as many convolution ops, with the same input shapes and
dtypes) ran other cuDNN kernels. A model or batch change changes the shapes, autocast the dtypes; channels_last and
TF32 keep both, but their own recognisers (the layout transposes went, the fp32 kernels became TF32 ones) come first
(Recognise.order). Kernel names alone cannot tell the precision apart: cuDNN names some of its kernels only by a
mangled CUTLASS template (deeplabv3's before trace), so the names' precision words are not compared.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.knob import calls_inside, gpu_of_calls, ops_named
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
)

CUDNN_CONV = ("aten::cudnn_convolution", "aten::cudnn_convolution_transpose", "aten::convolution_backward",
              "aten::cudnn_convolution_relu", "aten::cudnn_convolution_add_relu")
NOT_CUDNN = ("elementwise", "reduce_kernel", "at::native")       # ATen's own kernels inside those ops (bias grads)


@dataclass(frozen=True)
class CudnnBenchmark(Assumption):
    kernel_ns: int = 0               # the cuDNN convolution kernels' time
    ops: int = 0


def conv_kernels(c: Context) -> tuple[np.ndarray, int]:
    """The kernels cuDNN ran for the trace's convolutions, and how many convolution ops launched them."""
    ops = ops_named(c, lambda n: n in CUDNN_CONV)
    rows = gpu_of_calls(c, calls_inside(c, ops)) if len(ops) else np.zeros(0, np.int64)
    if len(rows):
        rows = rows[~c.gpu_named(lambda n: any(k in n for k in NOT_CUDNN), rows)]
    return rows, len(ops)


def apply(c: Context, p, o: Options) -> tuple[CudnnBenchmark, dict]:
    rows, ops = conv_kernels(c)
    names = sorted({c.trace.name_of(int(r)) for r in c.g.g_row[rows].tolist()})
    detail = {"conv_ops": ops, "conv_kernel_names": names, "conv_inputs": _inputs_digest(c)}
    if not len(rows):
        return CudnnBenchmark("cudnn_benchmark", 0), detail
    return CudnnBenchmark("cudnn_benchmark", len(rows), kernel_ns=int(c.g.g_dur[rows].sum()), ops=ops), detail


def _inputs_digest(c: Context) -> str:
    """What the convolutions were asked to compute, as one short digest: their input shapes and dtypes, in time order
    (two traces of the same model at the same sizes and precision give the same digest whatever kernels ran)."""
    ops = ops_named(c, lambda n: n in CUDNN_CONV)
    h = hashlib.sha256()
    for o in ops[np.argsort(c.trace.ev.start[ops], kind="stable")].tolist():
        dims, types, _ = c.trace.shapes(o)
        h.update(f"{c.trace.name_of(o)}{dims}{types};".encode())
    return h.hexdigest()[:16]


def says(a: CudnnBenchmark) -> str:
    if a.count == 0:
        return "no cuDNN convolution in this trace"
    return (f"{units.integer(a.ops)} cuDNN convolutions ({units.integer(a.count)} kernels, "
            f"{units.duration_ns(a.kernel_ns)}) take the algorithm cuDNN's heuristics or its auto-tuner picked; "
            "the trace does not say which, nor what the others would take: not priced (measure it: tracetriage try "
            "SCRIPT)")


def _names(m: Measured) -> set:
    return set(m.whatif.lever("cudnn_benchmark").detail.get("conv_kernel_names", []))


def _conv_ops(m: Measured) -> int:
    return m.whatif.lever("cudnn_benchmark").detail.get("conv_ops", 0)


def other_algorithms(before: Measured, after: Measured) -> bool:
    """The same convolutions (as many ops, the same input shapes and dtypes) ran other cuDNN kernels."""
    b, a = _names(before), _names(after)
    if not b or not a or b == a or _conv_ops(before) != _conv_ops(after):
        return False
    digest = [m.whatif.lever("cudnn_benchmark").detail.get("conv_inputs") for m in (before, after)]
    return digest[0] == digest[1]


def changed_kernels(m: Measured) -> float:
    return float(len(_names(m)))


SPEC = LeverSpec(
    name="cudnn_benchmark", effort=1, cause=None, apply=apply, says=says, words="cuDNN's auto-tuner",
    fix="torch.backends.cudnn.benchmark = True (each variant in its own process: cuDNN's plan cache does not key "
        "on the flag)",
    recognise=Recognise(order=9, evidence="conv_kernel_names", because="its convolutions ran other cuDNN kernels, "
                        "other algorithms for the same shapes and dtypes", amount=changed_kernels,
                        acted=lambda m: m.kernel_busy_ns, applied=lambda before, after: True,
                        also=other_algorithms),
    applied_words="cudnn.benchmark (cuDNN's auto-tuner)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change="torch.backends.cudnn.benchmark = True (before the first convolution; fixed input shapes)",
              evidence="convolutions run by cuDNN: aten::cudnn_convolution / cudnn_convolution_transpose and "
                       "aten::convolution_backward launching cuDNN's kernels",
              applies="NVIDIA GPUs with cuDNN (MIOpen's find mode on ROCm), convolution models whose input "
                      "shapes repeat",
              model="not priced: the algorithms cuDNN would try are not in a trace made without them; the "
                    "replay predicts no change (1.00), the knob is named where it applies",
              guide="Performance Tuning Guide: enable cuDNN auto-tuner", ops=("aten::cudnn_convolution",),
              priced=False))
