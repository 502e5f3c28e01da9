"""dequantize_once: quantized weights dequantized once (or inside the product), not materialised before every matmul.

What any trace of it shows: kernels named for a dequantize (bitsandbytes' kDequantizeBlockwise, a `dequantize_*`
kernel) launched inside the op that then launches the matrix product reading their output (bitsandbytes' MatMul4Bit:
fill, the scales' dequantize, their offset, the weight's dequantize, its cast to the activations' dtype, then the
GEMM). Each call writes the whole weight in full precision and the GEMM reads it back: pure bytes, paid again every
call. transformer_nuggets' qlora bench (an A100, bitsandbytes NF4 MLP): 49% of the kernel time in that
materialisation beside GEMMs at 75% of the bf16 peak, where the report proposed ncu on the kernels.

Price (in the graph): the GPU work those ops launch other than the matrix products (and the cuBLAS workspace memsets
the products' own ops launch) goes, with its launches and its op's dispatch: the weights kept dequantized in the
activations' dtype (memory permitting: each weight's full-precision bytes stay resident), or a fused quantized matmul
that dequantizes in its tiles (torchao's int4 weight-only, a fused NF4 GEMM), whose product then reads a quarter of
the weight's bytes: not priced (a compute-bound product's time barely moves; a memory-bound decode product's would
fall, which this leaves out).

What would make it fire falsely: an op around many products (a compiled region, a whole layer) holding one dequantize:
only ops that launch no more matrix kernels than dequantize kernels count (one product a weight); a dequantize whose
output no product reads (an export, a checkpoint): no product in its op, not counted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import KERNEL, MEMSET, NONE
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.knob import is_matrix_kernel, outermost_ops, remove_gpu_work, window_of_calls
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

_DEQUANTIZE = re.compile(r"dequant", re.I)


@dataclass(frozen=True)
class Dequantized(Assumption):
    products: int = 0           # quantized products (ops launching a dequantize and a matrix kernel)
    kernels: int = 0            # the materialising GPU activities that go
    gpu_ns: int = 0             # ... their time
    product_ns: int = 0         # the products' own matrix kernels, kept
    op: str = ""                # the op that materialises (bitsandbytes' MatMul4Bit)
    host_ns: int = 0            # the host time their launches and dispatch took, gone with them


def materialising(c: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the graph's GPU activities that materialise a quantized weight before its product, the products' matrix
    kernels, the outermost op rows that do both): found once per replay."""
    return c.once("dequantize_once", lambda: _materialising(c))


def _materialising(c: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g, tr = c.g, c.trace
    none = np.empty(0, np.int64)
    acts = np.flatnonzero((g.g_call >= 0) & g.g_linked)
    if not len(acts):
        return none, none, none
    kern = acts[g.g_cat[acts] == KERNEL]
    deq = kern[name_flags(tr, g.g_row[kern], lambda n: bool(_DEQUANTIZE.search(n)))]
    if not len(deq):
        return none, none, none
    ops = outermost_ops(c)
    win = window_of_calls(c, ops)[g.g_call[acts]]          # per activity: the outermost op it was launched inside
    at = np.full(len(g.g_row), -1, np.int64)
    at[acts] = win
    matrix = kern[name_flags(tr, g.g_row[kern], is_matrix_kernel)]
    n = len(ops)
    deq_per = np.bincount(at[deq][at[deq] >= 0], minlength=n)
    mat_per = np.bincount(at[matrix][at[matrix] >= 0], minlength=n) if len(matrix) else np.zeros(n, np.int64)
    # one product a weight: ops that dequantize and multiply, with no more products than dequantizes
    quantized = np.flatnonzero((deq_per > 0) & (mat_per > 0) & (mat_per <= deq_per))
    if not len(quantized):
        return none, none, none
    mine = np.isin(at[acts], quantized)
    own = acts[mine]
    is_matrix = np.isin(own, matrix)
    memset = g.g_cat[own] == MEMSET
    # a memset the product's own op launches is its cuBLAS workspace: the product's, kept
    op_of = tr.op_of[g.c_row[g.g_call[own]]]
    product_ops = set(op_of[is_matrix].tolist()) - {NONE}
    workspace = memset & np.isin(op_of, list(product_ops))
    return own[~is_matrix & ~workspace], own[is_matrix], ops[quantized]


def apply(c: Context, p, o: Options) -> tuple[Dequantized, dict]:
    gone, products, ops = materialising(c)
    if not len(gone):
        return Dequantized("dequantize_once", 0), {"products": 0}
    g = c.g
    gpu_ns = int(g.g_dur[gone].sum())
    host_before = int(p.c_dur.sum() + p.c_gap.sum())
    remove_gpu_work(c, p, gone, dispatch="op")
    host_ns = max(host_before - int(p.c_dur.sum() + p.c_gap.sum()), 0)   # their launches and their ops' dispatch
    names = [c.trace.name_of(int(r)) for r in ops[:50]]
    op = max(set(names), key=names.count) if names else ""
    return (Dequantized("dequantize_once", len(products), products=len(products), kernels=len(gone), gpu_ns=gpu_ns,
                        product_ns=int(g.g_dur[products].sum()), op=op, host_ns=host_ns),
            {"products": len(products), "materialising_ns": gpu_ns})


def says(a: Dequantized) -> str:
    if a.count == 0:
        return "no quantized weight dequantized before its product in this trace"
    return (f"the {units.integer(a.kernels)} kernels that materialise each quantized weight before its product "
            f"({units.duration_ns(a.gpu_ns)} of GPU time, in {a.op or 'the quantized products'}: the dequantize, its "
            f"scales, casts and fills) go with their launches; the {units.integer(a.products)} products' own kernels "
            f"({units.duration_ns(a.product_ns)}) stay as they are")


def products(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("products", 0)


def most_saved(a: Dequantized) -> int:
    return a.gpu_ns + a.host_ns if a.count else 0


SPEC = LeverSpec(
    name="dequantize_once", effort=1, cause=None, apply=apply, says=says, words="weights dequantized once",
    fix="the quantized weights dequantized once (kept in the activations' dtype) or inside a fused quantized matmul",
    recognise=Recognise(order=2, evidence="products", because="its weights' dequantize before each product went",
                        amount=products, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="the weights dequantized once", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change="stop dequantizing the weights before every matmul: keep them dequantized in the activations' "
                     "dtype where memory allows (dequantize once at load), or use a fused quantized matmul that "
                     "dequantizes inside its tiles (torchao's int4 weight-only, a fused NF4 GEMM under torch.compile)",
              evidence="kernels named for a dequantize launched inside the op that then launches the matrix product "
                       "(bitsandbytes' MatMul4Bit), no more products than dequantizes an op",
              applies="every device and dtype (a quantized weight dequantized before each product)",
              model="the GPU work those ops launch besides the products (dequantize, scales, casts, fills) goes with "
                    "its launches and dispatch; the products' kernels unchanged",
              guide="bitsandbytes / torchao: weight-only quantization with a fused dequantizing matmul"))
