"""weight_only_int8: the weights of a decode step's matrix products stored in int8 (weight-only quantization:
torchao's quantize_(model, int8_weight_only()); fp8 where the device runs it), the activations left as they are.

What any trace of it shows (record_shapes): the roofline's memory-bound matrix products of a few rows (<= 32) against
one big 2-D weight (analyses/weight_streaming), holding most of the memory-bound kernel time: each call reads the
weight once, so nearly all its bytes are the weight's. fresh5 decode_mlp_compile_roof: aten::mm [4, 8192] x
[8192, 28672] bf16, 470 MB of weights a call at 91% of HBM's 3,350 GB/s.

Price (in the graph): each such product's kernels run at the rate they reach now with the weight's bytes at one a
value (half of bf16/fp16, a quarter of fp32); the activations' and the output's bytes unchanged. Memory-bound: time
scales with bytes. fp8 (one byte too) prices the same; the words name it only where the device's peak table has fp8.
The dequantize's arithmetic is not priced (a few FLOP a byte against the ridge's hundreds).

What the price assumes and no before trace can show: an int8 product that costs the host what the bf16 one does (one
kernel a product, the dequantize inside it: torchao's int8 weight-only GEMV). An int8 path that adds host work to each
product (a per-Linear torch.compile region's guards and call, a dequantize launched beside the product) pays that on
every call, and on a host-paced step (the device busy under HOST_PACED_BELOW of the span) it lands on the span in
full: traces/pending2 mistral_decode_bf16_weights (the device busy 48% of the span) halved its products' kernels
(3.17 -> 1.67 ms over two steps) with a compiled per-Linear dequantize and ran 2.1x slower, the step's outermost
host ops 1.96 -> 4.17 ms a step, where 0.95 was predicted. The lever's words (the Next's reason) say so where the
step is host-paced.

What would make it fire falsely: a compute-bound product (a prefill, a training GEMM: the point is not memory-bound,
not counted); elementwise memory work (no 2-D weight: not a weight product); a sweep whose small products stream
weights beside big square ones (matmul-sweep-bf16: the products are counted, but they are little of the span, so
the saving is small and the report keeps its regime). A weight already in int8/fp8 (one byte a value) saves nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.roofline import shape_str
from tracetriage.analyzers.analyses.weight_streaming import weight_product, weight_streaming
from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct, pair_codes
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import Trace
from tracetriage.analyzers.model.verdicts import Bound, Experiment
from tracetriage.analyzers.whatif.levers.knob import calls_inside, mirror_queued, ranges_named
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    went,
)

VALUE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}    # a weight's bytes a value now (the point's dtype)
QUANTIZED_BYTES = 1                                # int8 (or fp8): one byte a value
KERNELS_FELL = 0.8      # diff calls the change this lever only where kernel busy time fell below this share of before
HOST_PACED_BELOW = 0.6  # the device busy under this share of the span: the host paces the step, its added work counts


@dataclass(frozen=True)
class WeightBytes(Assumption):
    rows: int = 0               # the biggest product's activation rows
    k: int = 0                  # ... and its weight, K x N
    n: int = 0
    dtype: str = ""             # the weights' precision now
    products_ns: int = 0        # the products' kernels, before (all steps)
    quantized_ns: int = 0       # ... after
    calls: int = 0              # the products' calls a step
    device_busy: float = 0.0    # the device's busy share of the span (GPU activity's time over the span)


def _products(c: Context) -> list[tuple[str, str, float]]:
    """(op name, shapes, the share of its bytes left) of each memory-bound weight-streaming product, where such
    products hold the memory-bound kernel time (analyses.weight_streaming); [] elsewhere."""
    roof = c.roof
    if roof is None or weight_streaming(roof.points) is None:
        return []
    out = []
    for p in roof.points:
        w = weight_product(p) if p.bound is Bound.MEMORY else None
        if w is None or p.dtype not in VALUE_BYTES or p.bytes <= 0 or p.calls <= 0:
            continue
        _, k, n = w
        saved = p.calls * k * n * (VALUE_BYTES[p.dtype] - QUANTIZED_BYTES)   # weight bytes no longer read, all calls
        out.append((p.name, p.shapes, max(1.0 - saved / p.bytes, 0.0)))
    return out


# what weight-only int8 leaves in a trace: torch's int8-weight product ops (what torchao's int8_weight_only calls),
# a torchao op, or an op handed an int8 tensor ("signed char" in Input type)
_INT8_OPS = re.compile(r"_weight_int8pack_mm|_int_mm|int8|torchao", re.I)


def int8_weights_seen(trace: Trace) -> bool:
    """The trace runs products on int8 weights: an op named for them, or an op whose recorded input types hold int8."""
    if any(_INT8_OPS.search(n) for n in trace.names):
        return True
    return any(raw is not None and len(raw) > 1 and raw[1] is not None and b"signed char" in bytes(raw[1])
               for raw in trace.shapes_raw)


def apply(c: Context, p, o: Options) -> tuple[WeightBytes, dict]:
    g, tr = c.g, c.trace
    found = _products(c)
    if not found:
        return WeightBytes("weight_only_int8", 0), {"products": 0}
    keeps = {(name, shapes): keep for name, shapes, keep in found}
    wanted = {name for name, _ in keeps}
    names = [i for i, nm in enumerate(tr.names) if nm in wanted]
    ops = np.flatnonzero(np.isin(tr.ev.name, names)) if names else np.empty(0, np.int64)
    # each op's share of its bytes kept, looked up once per distinct (name, shape id): a transformer's projections
    # are 10k ops of a few signatures at x5 (a Python step per op took 13 ms of the levers' child)
    _, _, sig = pair_codes(tr.ev.name[ops], tr.ev.shape[ops])
    first = np.zeros(int(sig.max(initial=-1)) + 1, np.intp)
    first[sig[::-1]] = np.arange(len(sig) - 1, -1, -1)
    by_sig = [keeps.get((tr.name_of(op), shape_str(tr.shapes(op)[0]))) for op in ops[first].tolist()]
    known = np.array([k is not None for k in by_sig], bool)[sig]
    keep_of = np.array([np.nan if k is None else k for k in by_sig], np.float64)[sig]
    before = 0
    for keep in sorted({by_sig[i] for i in distinct(sig[known]).tolist()}):
        calls = calls_inside(c, ops[known & (keep_of == keep)])
        mark = np.zeros(g.n_calls, bool)
        mark[calls] = True
        acts = np.flatnonzero(g.g_linked & (g.g_call >= 0) & mark[np.maximum(g.g_call, 0)])
        acts = acts[p.g_dur[acts] == g.g_dur[acts]]          # (an op nested in another counted: scaled once)
        if not len(acts):
            continue
        t = g.g_dur[acts].astype(np.float64)
        p.g_dur[acts] = np.round(t * keep).astype(p.g_dur.dtype)   # memory-bound: time scales with bytes
        before += int(t.sum())
    if not before:
        return WeightBytes("weight_only_int8", 0), {"products": 0}
    mirror_queued(c, p)
    # the products' kernels queued before the window shrink too (mirror_queued): counted in what the edit takes out
    changed = np.flatnonzero(p.g_dur != g.g_dur)
    before, after = int(g.g_dur[changed].sum()), int(p.g_dur[changed].sum())
    w = weight_streaming(c.roof.points)
    top = next(pt for pt in c.roof.points if (pt.name, pt.shapes) in keeps and weight_product(pt) == (w.rows, w.k, w.n))
    steps = max(len(ranges_named(c, lambda n: n.startswith(PROFILER_STEP))), 1)
    n_calls = sum(pt.calls for pt in c.roof.points if (pt.name, pt.shapes) in keeps)
    busy = min(float(g.g_dur.sum()) / max(g.span_ns, 1), 1.0)     # (streams that overlap count twice: a ceiling)
    return (WeightBytes("weight_only_int8", len(keeps), rows=w.rows, k=w.k, n=w.n, dtype=top.dtype,
                        products_ns=before, quantized_ns=after, calls=round(n_calls / steps), device_busy=busy),
            {"products": len(keeps)})


def says(a: WeightBytes) -> str:
    if a.count == 0:
        return "no memory-bound products of a few rows against a big weight hold the memory-bound time"
    return (f"with the weights in int8 ({QUANTIZED_BYTES} byte a value, {a.dtype} now) the weight-streaming "
            f"products ({units.integer(a.count)} shape{'s' if a.count != 1 else ''}) read fewer bytes at the rate "
            f"they reach now: {units.duration_ns(a.quantized_ns)} in place of {units.duration_ns(a.products_ns)}"
            + (f", priced for an int8 product that adds no host work a call (torchao's int8 GEMV): the device is "
               f"busy {units.share(a.device_busy)} of the span, so the host paces this step, and a path that wraps "
               f"each of its {units.integer(a.calls)} products a step in a call of its own (a per-Linear "
               "torch.compile region, a dequantize beside the product) adds that host time to the step and can "
               "make it slower" if host_paced(a) else ""))


def host_paced(a: WeightBytes) -> bool:
    return a.count > 0 and 0 < a.device_busy < HOST_PACED_BELOW


def products(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("products", 0)


def most_saved(a: WeightBytes) -> int:
    return max(a.products_ns - a.quantized_ns, 0) if a.count else 0


SPEC_CHANGE = ("store the weights in int8 (weight-only quantization: torchao's quantize_(model, int8_weight_only()), "
               "half the bytes of bf16)")

SPEC = LeverSpec(
    name="weight_only_int8", effort=1, cause=None, apply=apply, says=says, words="int8 weights",
    fix="the weights of the decode step's products stored in int8 (weight-only quantization)",
    recognise=Recognise(order=2, evidence="products", because="its weight-streaming products read fewer weight bytes",
                        amount=products, acted=lambda m: m.kernel_busy_ns, applied=went,
                        # (the products gone from the roofline alone is a graph replay hiding their ops: the kernels
                        # must have got faster, as half the weight bytes make them, and the after trace must hold
                        # int8 weights: hf_llama_generate's CUDA graphs took the products out of sight and their
                        # kernels' time down 4x, and diff called it "the weights stored in int8")
                        also=lambda before, after: after.kernel_busy_ns < KERNELS_FELL * before.kernel_busy_ns
                        and int8_weights_seen(after.trace)),
    applied_words="the weights stored in int8", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change=SPEC_CHANGE,
              evidence="memory-bound matrix products of 32 rows or fewer against one 2-D weight of 512 or more a "
                       "side (Input Dims), holding half the memory-bound kernel time or more",
              applies="every device (int8 weights dequantized in the kernel); fp8 where the device runs it",
              model="each such product's kernels at the rate they reach now with the weight's bytes at one a value "
                    "(the activations' and output's bytes unchanged)",
              guide="torchao: quantize_(model, int8_weight_only())"))
