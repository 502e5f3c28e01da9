"""sdpa_math: F.scaled_dot_product_attention forced onto its math backend -> the flash or memory-efficient kernel.

`with sdpa_kernel(SDPBackend.MATH):` (left from comparing outputs with a reference; torch.backends.cuda's
enable_flash_sdp(False) and enable_mem_efficient_sdp(False) do the same) makes every SDPA call run
aten::_scaled_dot_product_attention_math: the attention written out in ATen. Any trace of it shows, on one thread:
  1. the op aten::_scaled_dot_product_attention_math, its inputs q [..., T, d], k [..., S, d], v [..., S, dv];
  2. inside it, for half-precision inputs, aten::to of q/k/v to float (allow_fp16_bf16_reduction_math_sdp is off
     by default), then fp32 GEMMs (aten::bmm/matmul of [B*H, T, d] by [B*H, d, S], the scores, and of
     [B*H, T, S] by [B*H, S, dv]) with aten::_softmax over the materialised [..., T, S] scores between them; the
     GEMM kernels are cuBLAS's f32 tiles, the scores B x H x T x S x 4 bytes written and read several times;
  3. in training, autograd's SoftmaxBackward0 between BmmBackward0s (the same as attention written by hand).
The fix is one line (drop the context manager), and the window of each math op runs one fused kernel instead: its
FLOPs (2 x B x H x T x S x (d + dv)) at the inputs' precision's datasheet peak times the share PyTorch's fused kernels
reach (sdpa.FLASH_SHARE), the backward at sdpa.BACKWARD_FLOPS times that; is_causal is not in the shapes, so every
attention is priced whole (a causal one would take about half: the price errs on the slow side).
What would fire falsely: nothing runs the math op but this backend (a flash or efficient SDPA call shows
aten::_scaled_dot_product_flash_attention/_efficient_attention/_cudnn_attention instead); a math op PyTorch chose by
itself (an attention mask or dtype no fused kernel supports, e.g. fp64 inputs or a head dim over 256) is found the
same, and its says() names the inputs so the user can tell. Inputs in fp32 have no upcast; the flash kernel then
does not apply (memory-efficient does), and the price is at the fp32 peak.
The GEMMs inside the math op are its own upcast: autocast_bf16 leaves them out (`launched_inside`), so bf16 is never
advised for them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers import sdpa
from tracetriage.analyzers.whatif.levers.knob import (
    calls_inside,
    datasheet_peak,
    mirror_queued,
    ops_named,
    outermost,
    peak_source,
    peaks_of,
    queued_counterparts,
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
    went,
)

MATH = sdpa.MATH_BACKEND
FP32_BYTES = 4


def math_ops(c: Context) -> np.ndarray:
    """The outermost math-backend SDPA ops (cpu_op rows)."""
    return outermost(c, ops_named(c, lambda n: n.startswith(MATH)))


def launched_inside(c: Context, rows: np.ndarray) -> np.ndarray:
    """For each of these GPU activity rows: was it launched from inside a math-backend SDPA op."""
    ops = math_ops(c)
    if not len(ops) or not len(rows):
        return np.zeros(len(rows), bool)
    mark = np.zeros(c.g.n_calls, bool)
    mark[calls_inside(c, ops)] = True
    call = c.g.g_call
    inside = (call >= 0) & mark[np.maximum(call, 0)]
    queued, like = queued_counterparts(c)       # queued before the window: as its launched counterpart
    inside[queued] = inside[like]
    return inside[rows]


@dataclass(frozen=True)
class MathAttention:
    start: int
    end: int
    thread: int
    heads: int                       # B x H
    queries: int
    keys: int
    dim: int
    value_dim: int
    precision: str                   # the inputs': bf16, fp16, fp32

    @property
    def flops(self) -> float:
        return 2.0 * self.heads * self.queries * self.keys * (self.dim + self.value_dim)

    @property
    def score_bytes(self) -> int:
        """The fp32 scores the math backend materialises: B x H x T x S x 4 bytes."""
        return self.heads * self.queries * self.keys * FP32_BYTES


def find(c: Context) -> list[MathAttention]:
    from tracetriage.analyzers.model.trace import thread_keys

    ev = c.trace.ev
    out = []
    for r in math_ops(c).tolist():
        dims = [d for d in (c.trace.shapes(r)[0] or []) if isinstance(d, list) and d]
        types = list(c.trace.shapes(r)[1] or [])
        if len(dims) < 3 or min(len(d) for d in dims[:3]) < 3:
            continue
        q, k, v = dims[:3]
        if q[-1] != k[-1] or k[-2] != v[-2]:
            continue
        out.append(MathAttention(start=int(ev.start[r]), end=int(ev.end[r]),
                                 thread=int(thread_keys(ev, r)),
                                 heads=int(np.prod(q[:-2])), queries=q[-2], keys=k[-2], dim=q[-1], value_dim=v[-1],
                                 precision=sdpa._PRECISION.get(next(iter(types), ""), "fp32")))
    return out


@dataclass(frozen=True)
class SdpaMath(Assumption):
    backward: int = 0
    kernel_ns: int = 0               # the kernels the math ops (and their backward) launched
    fused_ns: int = 0                # the fused kernels' predicted time
    score_bytes: int = 0             # the fp32 scores one attention materialises (the largest)
    shape: str = ""                  # q's shape of that attention, as the trace records it
    tflops: float = 0.0
    precision: str = ""
    source: str = ""
    found: int = 0
    device: str = ""


def apply(c: Context, p, o: Options) -> tuple[SdpaMath, dict]:
    found = find(c)
    detail = {"math_attention": len(found), "queued_kernels": 0}
    device = c.trace.device_name() or "this device"
    peaks = peaks_of(c)
    if not found or peaks is None:
        return SdpaMath("sdpa_math", 0, found=len(found), device=device), detail
    precision, sheet, peak = datasheet_peak(peaks, [a.precision for a in found])
    if not peak:
        return SdpaMath("sdpa_math", 0, found=len(found), device=device, precision=precision), detail
    forward = [(a.start, a.end, a.thread, sdpa.NS_PER_S * a.flops / (peak * sdpa.FLASH_SHARE["forward"]))
               for a in found]
    by_shape = {(a.heads, a.queries, a.keys): a for a in found}
    backward = []
    for s, e, k, shape in sdpa.backward_windows(c):
        a = by_shape.get((int(np.prod(shape[:-2])), shape[-2], shape[-1])) if len(shape) >= 3 else None
        if a is not None:
            backward.append((s, e, k, sdpa.NS_PER_S * sdpa.BACKWARD_FLOPS * a.flops
                             / (peak * sdpa.FLASH_SHARE["backward"])))
    kernel_ns, fused_ns = sdpa.fuse_windows(c, p, forward, backward)
    queued = mirror_queued(c, p)          # the window's first step, queued before it: its attentions go too
    big = max(found, key=lambda a: a.score_bytes)
    return (SdpaMath("sdpa_math", len(found), backward=len(backward), kernel_ns=kernel_ns, fused_ns=fused_ns,
                     score_bytes=big.score_bytes, shape=f"[{big.heads} heads x {big.queries} x {big.dim}]",
                     tflops=peak / 1e12, precision=precision, source=peak_source(sheet)),
            detail | {"queued_kernels": queued})


def says(a: SdpaMath) -> str:
    if a.count == 0 and a.found:
        return (f"{a.found} attentions run SDPA's math backend (aten::_scaled_dot_product_attention_math) in this "
                f"trace, but the peak table gives no {a.precision or 'FLOP'} peak for {a.device}: what a fused kernel "
                "would take is unknown")
    if a.count == 0:
        return "no attention runs SDPA's math backend (aten::_scaled_dot_product_attention_math) in this trace"
    back = f" and their {units.integer(a.backward)} backward passes" if a.backward else ""
    return (f"the {units.integer(a.count)} attentions on SDPA's math backend{back} ({a.precision} inputs upcast, "
            f"{units.size(a.score_bytes)} of fp32 scores materialised per attention; "
            f"{units.duration_ns(a.kernel_ns)} of kernels) run the flash or memory-efficient kernel instead, priced "
            f"at their FLOPs at {units.share(sdpa.FLASH_SHARE['forward'])} of the {units.tflops(a.tflops)} "
            f"{a.precision} peak ({SOURCE_WORDS[a.source]}): {units.duration_ns(a.fused_ns)}")



CHANGE = ("drop `with sdpa_kernel(SDPBackend.MATH):` (or torch.backends.cuda.enable_flash_sdp(True) / "
          "enable_mem_efficient_sdp(True)) so F.scaled_dot_product_attention runs the flash or memory-efficient "
          "kernel, not the math backend")

SPEC = LeverSpec(
    name="sdpa_math", effort=1, cause=None, apply=apply, says=says, words="the flash attention backend",
    fix="sdpa_kernel(SDPBackend.MATH) removed: SDPA's flash or memory-efficient kernel in place of its math backend",
    recognise=Recognise(order=1, evidence="math_attention", because="its aten::_scaled_dot_product_attention_math "
                        "ops became a fused attention kernel", amount=replay_figure("sdpa_math", "math_attention"),
                        acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="the flash attention backend (sdpa_math)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE,
              evidence="aten::_scaled_dot_product_attention_math with aten::to of q/k/v to float inside it, fp32 "
                       "GEMMs (aten::bmm) and aten::_softmax over the materialised [..., T, S] scores",
              applies="every CUDA device (flash kernels for fp16/bf16 on Ampere and later, memory-efficient kernels "
                      "elsewhere, fp32 included); PyTorch 2.0 and later",
              model="each math op's kernels go; one fused kernel each: the attention FLOPs (2.5x backward) at the "
                    "inputs' precision's datasheet peak x the share PyTorch's fused kernels reach (0.29 forward, "
                    "0.22 backward: measured on an H200); is_causal is not recorded, so priced whole",
              guide="torch.nn.attention.sdpa_kernel and SDPBackend (PyTorch 2.3); torch.backends.cuda.enable_flash_sdp",
              ops=(MATH,)))
