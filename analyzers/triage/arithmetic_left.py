"""A compute-bound step whose arithmetic runs well already: "do less or cheaper arithmetic" is a restructure, not a
Next in hand.

What any trace of such a step shows: the device busy most of the span (no idle for a host-side lever), its
compute-bound kernels in a low precision (bf16/fp16/fp8) at half the device's peak for that precision or more (the
tensor cores are fed: no algorithm or layout problem left to find), and no lever the replay prices saves LEVER_FLOOR
of the span. Then the report should say the step is healthy: no change in hand buys more than a few percent; what is
left is a restructure (a cheaper precision still, or less arithmetic), said as what is left with the headroom's bound
(fresh11 reranker_compiled_bf16_healthy: bf16 GEMMs at 650 of 990 TFLOP/s, 96% busy, told "do less arithmetic or
cheaper arithmetic: lower precision on tensor cores (fp8), skip work (...)" with a 47% bound; measured 0.99x for the
one-liner tried, and a blind judge's "healthy workload not declared healthy").

What would make it fire falsely: a step whose compute-bound kernels reach half the peak while most of its kernel
time is elsewhere (the regime votes compute only where compute holds most of it); a TF32/fp32 step (left out: a
cheaper precision is then a one-line knob, autocast or TF32, not a restructure); an achieved rate above the peak
(an attribution error: the roofline leaves those out of the rate).
"""
from __future__ import annotations

from dataclasses import dataclass

# (the device busy BUSY_AT_LEAST of the span and a low precision: the healthy memory-bound step's own bounds)
from tracetriage.analyzers.triage.bytes_left import BUSY_AT_LEAST, LOW_PRECISION, best_priced_saving

PEAK_AT_LEAST = 0.5         # compute-bound kernels at this share of the precision's peak or more: the cores are fed


@dataclass(frozen=True)
class ArithmeticWell:
    peak_share: float        # the compute-bound kernels' FLOP/s against the device's peak for their precision
    busy_share: float        # the device's busy share of the span
    dtype: str               # the precision most of the costed kernel time runs in
    best_saving: float       # the best priced lever's saving (the headroom aside), share of the span


def arithmetic_well(verdict, peaks, busy_share: float, choices, floor: float,
                    headroom: str) -> ArithmeticWell | None:
    """The step's figures where its arithmetic already runs well (module docstring), else None."""
    dtype, achieved = verdict.dtype, verdict.achieved_tflops
    if dtype not in LOW_PRECISION or achieved is None or peaks is None or busy_share < BUSY_AT_LEAST:
        return None
    peak = peaks.flops(dtype) / 1e12
    if peak <= 0 or not PEAK_AT_LEAST <= achieved / peak <= 1.0:
        return None
    best = best_priced_saving(choices, headroom)
    if best >= floor:
        return None
    return ArithmeticWell(achieved / peak, busy_share, dtype, best)
