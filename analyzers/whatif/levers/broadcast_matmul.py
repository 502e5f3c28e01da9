"""broadcast_matmul: a broadcast product reduced by a sum is a matrix product: `(q.unsqueeze(1) * k.unsqueeze(0))
.sum(-1)` -> `q @ k.T` (or torch.einsum).

Written as a broadcast ("cosine similarity, broadcasted", pairwise scores, a hand-rolled bilinear form), the product
materialises M x N x K elements (a [256, 32768, 128] fp32 tensor is 4.3 GB), written by the multiply and read back by
the sum; as a GEMM the same M x N scores read M x K + N x K inputs once. Any trace of it recorded with shapes shows,
on one thread (found by `find`):
  1. aten::mul of two inputs of one rank >= 3 that broadcast against each other from both sides: a dimension where
     the first is 1 and the second is N > 1, another where the second is 1 and the first is M > 1, and a dimension
     K > 1 both have (the contraction);
  2. next on that thread (the first aten::sum after it), aten::sum of a tensor of exactly the broadcast shape,
     reducing the K dimension: its dim list, where the trace records concrete inputs, names only dimensions where both
     inputs are full; where it records none, the K dimension must be the last (sum(-1), the form written nearly
     always).
Priced: the multiply's and the sum's kernels go; one GEMM takes their place, at the longer of its FLOPs
(2 x M x N x K times the batch) at the inputs' precision's datasheet peak and its bytes (inputs read once, the
scores written once) at the trace's memory rate: a floor for a GEMM, as cuBLAS at these sizes reaches near its peak.
What would fire falsely: a broadcast multiply followed by a sum over a broadcast dimension (that is a scaled sum, not a
product: the dim check rules it out where recorded); a broadcast multiply whose sum is a separate, unrelated
reduction of an equal-shaped tensor (the same thread, the next sum, the identical shape make that rare).
Without shapes (record_shapes=False) a multiply and a sum are any elementwise op and reduction: not recognised.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers import sdpa
from tracetriage.analyzers.whatif.levers.knob import (
    datasheet_peak,
    mirror_queued,
    ops_named,
    peak_source,
    peaks_of,
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

MUL = "aten::mul"
SUM = "aten::sum"
BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class BroadcastProduct:
    start: int                    # the multiply's start to the sum's end, on one thread
    end: int
    thread: int
    m: int
    n: int
    k: int
    batch: int                    # the product of the other full dimensions
    precision: str
    shape: str                    # the two inputs' shapes, as recorded

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k

    def gemm_bytes(self, width: int) -> float:
        return float(width * self.batch * (self.m * self.k + self.n * self.k + self.m * self.n))

    def product_bytes(self, width: int) -> float:
        """The broadcast product the multiply writes and the sum reads."""
        return float(width * self.batch * self.m * self.n * self.k)


def _dims_of(c: Context, r: int) -> tuple[list, list, list]:
    dims, types, concrete = c.trace.shapes(r)
    return list(dims or []), list(types or []), list(concrete or [])


def _reduced(concrete: list, rank: int) -> list[int] | None:
    """The sum's dim list from its concrete inputs ('[-1]'), made non-negative; None where not recorded."""
    if len(concrete) < 2 or not isinstance(concrete[1], str) or not concrete[1].startswith("["):
        return None
    try:
        dims = [int(x) for x in concrete[1].strip("[]").split(",") if x.strip()]
    except ValueError:
        return None
    return [d % rank for d in dims] if dims else None


def broadcast(a: list, b: list) -> tuple[list, int, int, list[int]] | None:
    """The broadcast shape of two equal-rank inputs that broadcast from both sides, M, N and the full dimensions."""
    if len(a) != len(b) or len(a) < 3 or not all(isinstance(x, int) for x in a + b):
        return None
    m = [i for i in range(len(a)) if b[i] == 1 and a[i] > 1]
    n = [i for i in range(len(a)) if a[i] == 1 and b[i] > 1]
    full = [i for i in range(len(a)) if a[i] == b[i] and a[i] > 1]
    if len(m) != 1 or len(n) != 1 or not full or len(m) + len(n) + len(full) + \
            sum(1 for i in range(len(a)) if a[i] == b[i] == 1) != len(a):
        return None
    return [max(x, y) for x, y in zip(a, b)], a[m[0]], b[n[0]], full


def find(c: Context) -> list[BroadcastProduct]:
    ev = c.trace.ev
    muls = ops_named(c, lambda x: x == MUL)
    sums = ops_named(c, lambda x: x == SUM)
    if not len(muls) or not len(sums):
        return []
    s_key = thread_keys(ev, sums)
    order = np.argsort(ev.start[sums], kind="stable")
    sums, s_key = sums[order], s_key[order]
    out = []
    for r in muls.tolist():
        dims, types, _ = _dims_of(c, r)
        dims = [d for d in dims if isinstance(d, list)]
        if len(dims) < 2:
            continue
        b = broadcast(dims[0], dims[1])
        if b is None:
            continue
        shape, m, n, full = b
        key = int(thread_keys(ev, r))
        mine = sums[(s_key == key) & (ev.start[sums] >= ev.end[r])]
        if not len(mine):
            continue
        s = int(mine[0])
        s_dims, _, s_concrete = _dims_of(c, s)
        if not s_dims or s_dims[0] != shape:
            continue
        reduced = _reduced(s_concrete, len(shape))
        if reduced is None:
            if full[-1] != len(shape) - 1:
                continue
            reduced = [len(shape) - 1]
        if not set(reduced) <= set(full):
            continue
        k = int(np.prod([shape[i] for i in reduced]))
        batch = int(np.prod([shape[i] for i in full if i not in reduced]))
        out.append(BroadcastProduct(start=int(ev.start[r]), end=int(ev.end[s]), thread=key, m=m, n=n, k=k,
                                    batch=batch, precision=sdpa._PRECISION.get(next(iter(types), ""), "fp32"),
                                    shape=f"{dims[0]} x {dims[1]}"))
    return out


@dataclass(frozen=True)
class BroadcastMatmul(Assumption):
    kernel_ns: int = 0
    gemm_ns: int = 0
    product_bytes: float = 0.0       # the largest one's materialised product
    shape: str = ""
    tflops: float = 0.0
    precision: str = ""
    source: str = ""
    found: int = 0
    device: str = ""


def apply(c: Context, p, o: Options) -> tuple[BroadcastMatmul, dict]:
    found = find(c)
    detail = {"broadcast_products": len(found), "queued_kernels": 0}
    device = c.trace.device_name() or "this device"
    peaks = peaks_of(c)
    if not found or peaks is None:
        return BroadcastMatmul("broadcast_matmul", 0, found=len(found), device=device), detail
    precision, sheet, peak = datasheet_peak(peaks, [a.precision for a in found])
    if not peak:
        return BroadcastMatmul("broadcast_matmul", 0, found=len(found), device=device, precision=precision), detail
    rate = c.memory_rate or (peaks.bytes_per_s / 1e9)          # bytes per ns
    width = BYTES.get(precision, 4)
    windows = [(a.start, a.end, a.thread,
                max(sdpa.NS_PER_S * a.flops / peak, a.gemm_bytes(width) / rate)) for a in found]
    kernel_ns, gemm_ns = sdpa.fuse_windows(c, p, windows)
    queued = mirror_queued(c, p)
    big = max(found, key=lambda a: a.product_bytes(width))
    return (BroadcastMatmul("broadcast_matmul", len(found), kernel_ns=kernel_ns, gemm_ns=gemm_ns,
                            product_bytes=big.product_bytes(width), shape=big.shape, tflops=peak / 1e12,
                            precision=precision, source=peak_source(sheet)),
            detail | {"queued_kernels": queued})


def says(a: BroadcastMatmul) -> str:
    if a.count == 0 and a.found:
        return (f"{a.found} broadcast products reduced by a sum (a matrix product) in this trace, but the peak table "
                f"gives no {a.precision or 'FLOP'} peak for {a.device}: what the GEMM would take is unknown")
    if a.count == 0:
        return ("no broadcast product reduced by a sum (aten::mul of [M, 1, K] by [1, N, K], then aten::sum over K) "
                "in this trace, or no shapes recorded to see one")
    return (f"the {units.integer(a.count)} broadcast products reduced by a sum (aten::mul of {a.shape}, "
            f"{units.size(a.product_bytes)} materialised, then aten::sum over the shared dimension; "
            f"{units.duration_ns(a.kernel_ns)} of kernels) become one GEMM each, priced at the longer of its FLOPs at "
            f"the {units.tflops(a.tflops)} {a.precision} peak ({SOURCE_WORDS[a.source]}) and its inputs and scores "
            f"moved once at this trace's memory rate: {units.duration_ns(a.gemm_ns)}")



SPEC = LeverSpec(
    name="broadcast_matmul", effort=1, cause=None, apply=apply, says=says, words="the broadcast product as a matmul",
    fix="(q.unsqueeze(1) * k.unsqueeze(0)).sum(-1) -> q @ k.T (torch.einsum)",
    recognise=Recognise(order=1, evidence="broadcast_products", because="its broadcast aten::mul reduced by aten::sum "
                        "became a matrix product", amount=replay_figure("broadcast_matmul", "broadcast_products"),
                        acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="the broadcast product as a matmul (broadcast_matmul)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change="a broadcast product reduced by sum is a matmul: scores = q @ k.T (or torch.einsum('md,nd->mn', "
                     "q, k)) in place of (q.unsqueeze(1) * k.unsqueeze(0)).sum(-1)",
              evidence="aten::mul of [M, 1, K] by [1, N, K] (a product broadcast from both sides), then aten::sum of "
                       "the [M, N, K] result over K, on one thread (needs record_shapes=True)",
              applies="every device and precision",
              model="the multiply's and the sum's kernels go; one GEMM each at the longer of its FLOPs at the "
                    "precision's datasheet peak and its bytes at the trace's memory rate",
              guide="torch.matmul / torch.einsum (PyTorch reference); past the tuning guides",
              ops=(MUL, SUM)))
