"""A memory-bound step whose bytes are moved well already: the "move fewer bytes" advice has nothing left to name.

"Move fewer bytes" names three ways: fuse the elementwise chains, keep activations/weights in lower precision, avoid
materialised copies. What any trace of a step that has taken all three shows: its kernels are Inductor's (fused by
torch.compile: triton_poi_fused_... names), in bf16/fp16/fp8, with almost no kernel time in copy ops, and the device
busy most of the span; no lever the replay prices saves LEVER_FLOOR of it. Then the advice names fixes already made
(fresh10 convnext_compiled_scoring_healthy: compiled, bf16, no copies, 95% busy at 38% of HBM peak, told "move fewer
bytes: fuse elementwise chains, keep ... lower precision, avoid materialised copies"; measured 1.00x for the change
tried) and the report should say the step is healthy: no change in hand buys more than a few percent; what is left
is the kernels' own speed (the headroom's bound, said as a bound).

What would make it fire falsely: an Inductor step whose eager remainder (an unfused softmax, an explicit attention)
moves most bytes: those kernels are not Inductor's, so COMPILED_AT_LEAST of kernel time stays unmet only where they
dominate; a step whose lever the replay cannot price (a need_weights attention): the knob levers price those.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.inductor import is_inductor_kernel
from tracetriage.analyzers.model.names import name_codes
from tracetriage.analyzers.model.trace import NONE, Trace

COMPILED_AT_LEAST = 0.15    # Inductor's kernels hold this share of kernel time or more: the step is compiled
COPIES_AT_MOST = 0.05       # copy ops' kernels hold under this share of kernel time: no materialised copies to cut
BUSY_AT_LEAST = 0.9         # the device busy this share of the span: no idle for a host-side lever
LOW_PRECISION = ("bf16", "fp16", "fp8")
COPY_OPS = frozenset({"aten::copy_", "aten::contiguous", "aten::clone", "aten::_to_copy", "aten::to"})


@dataclass(frozen=True)
class BytesMovedWell:
    compiled_share: float    # kernel time in Inductor-generated kernels
    copy_share: float        # kernel time launched by copy ops
    dtype: str               # the precision most of the costed kernel time runs in
    best_saving: float       # the best priced lever's saving (the headroom aside), share of the span


def best_priced_saving(choices, headroom: str) -> float:
    """The best saving the replay prices for a fix (the headroom's bound aside), as a share of its baseline."""
    return max((c.saving_ns / c.baseline_ns for c in choices if c.lever != headroom and c.baseline_ns), default=0.0)


def moved_well(trace: Trace, kernels: np.ndarray, dtype: str | None, busy_share: float, choices, floor: float,
               headroom: str) -> BytesMovedWell | None:
    """The step's figures where it has taken every way "move fewer bytes" names (module docstring), else None."""
    if dtype not in LOW_PRECISION or busy_share < BUSY_AT_LEAST or not len(kernels):
        return None
    best = best_priced_saving(choices, headroom)
    if best >= floor:
        return None
    ev = trace.ev
    dur = (ev.end[kernels] - ev.start[kernels]).astype(np.float64)
    total = float(dur.sum())
    if total <= 0:
        return None
    ids, inv = name_codes(trace, kernels)
    inductor = np.array([is_inductor_kernel(trace.names[i]) for i in ids], bool)[inv]
    op = trace.launching_op(kernels)
    has = op != NONE
    copy = np.zeros(len(kernels), bool)
    if has.any():
        oids, oinv = name_codes(trace, op[has])
        copy[has] = np.array([trace.names[i] in COPY_OPS for i in oids], bool)[oinv]
    compiled, copies = float(dur[inductor].sum()) / total, float(dur[copy].sum()) / total
    if compiled < COMPILED_AT_LEAST or copies >= COPIES_AT_MOST:
        return None
    return BytesMovedWell(compiled, copies, dtype, best)
