"""Who sets the pace, decided where the report's lines need it: the host's window around the GPU span, the launch
queue, the kernels themselves, and a memory rate no GPU is that slow at.

Input: the trace, the devices' idle, the regime verdict, the peaks. Output: a `Pace` the voice reads (it makes no
decision of its own: tests/test_imports.py).

- window (triage.window): host time outside the GPU span that dwarfs it (a first batch's DataLoader wait);
- dry (triage.launch_queue): the launch-overhead gaps where the queue ran dry, apart from queued ones;
- gpu_bound_share: the kernels' busy share of the span where it is GPU_BOUND_BUSY or more and no host window dwarfs
  the span: GPU-bound whatever roof holds the kernels, decidable without a cost model (a ResNet-50 forward 99.7% busy
  and recorded without shapes read "Regime: unknown ... nothing else to decide by"). It would misread a span whose
  kernels are busy waiting (a spin kernel, a collective waiting on a peer): those are still the GPU's pace, and the
  communication regime speaks for collectives first;
- slowest_gpu_gbps (analyses.slow_rates): the slowest GPU's memory bandwidth, where the memory-bound ops' rate on a
  device of unknown peaks is under it;
- arithmetic_matters: compute-bound kernels hold ARITHMETIC_MATTERS of the kernel time or more: cheaper arithmetic
  (tensor cores) is no waste of a week beside a memory-bound majority (a ResNet-20's fp32 convolutions, ~1/3 of the
  kernel time at 0.1 TFLOP/s, were told tensor-core tuning would waste the week).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.decode_steps import STEADY_BUSY, steady_busy_share
from tracetriage.analyzers.analyses.slow_rates import SLOWEST_GPU_GBPS, below_any_gpu
from tracetriage.analyzers.analyses.steps import Steps, steady
from tracetriage.analyzers.model.trace import Trace
from tracetriage.analyzers.model.verdicts import Regime
from tracetriage.analyzers.triage.launch_queue import DryQueue, dry_queue
from tracetriage.analyzers.triage.window import TracedWindow, traced_window

# kernels busy this share of the span or more: the span is GPU-bound (faster kernels shorten it nearly one for one;
# the host's part is the rest, a tenth at most)
GPU_BOUND_BUSY = 0.9
# the median steady step busy this share of its wall or more: the loop's kernels set its steps' length (a blind judge:
# vLLM decode steps 87-91% busy between their syncs are GPU-bound, where the span's 79% busy said nothing)
STEPS_GPU_BOUND = STEADY_BUSY
# compute-bound kernels holding this share of kernel time or more: what halving them gives back is of the order of
# what the memory-bound majority's bytes give, so arithmetic is part of the limit
ARITHMETIC_MATTERS = 1 / 3


@dataclass(frozen=True)
class Pace:
    window: TracedWindow | None
    dry: DryQueue | None
    gpu_bound_share: float | None      # the busy share of a GPU-bound span (None: not GPU-bound, or a window dwarfs it)
    slowest_gpu_gbps: float | None     # set where the memory-bound rate is under any GPU's memory bandwidth
    arithmetic_matters: bool
    steps_busy_share: float | None = None   # the median steady step's busy share, where the span is not GPU-bound as a
    steady_steps: int = 0                   # whole but its steps are (STEPS_GPU_BOUND): the loop's kernels pace it


def pace(trace: Trace, devs, gpu_rows: np.ndarray, busy_ns: int, span_ns: int, verdict, peaks,
         whole_trace: bool, steps: Steps | None = None) -> Pace:
    window = traced_window(trace, gpu_rows, busy_ns) if whole_trace else None
    busy = busy_ns / span_ns if span_ns else 0.0
    slow = verdict.regime is Regime.MEMORY and below_any_gpu(verdict.achieved_gbps or 0.0, peaks)
    gpu_bound = busy >= GPU_BOUND_BUSY and window is None
    # the loop's steps between their syncs, where the span is not GPU-bound as a whole (a cold first step, a prefill)
    per_step = steady_busy_share(steps) if not gpu_bound else None
    return Pace(window=window, dry=dry_queue(trace, devs),
                steps_busy_share=per_step if per_step is not None and per_step >= STEPS_GPU_BOUND else None,
                steady_steps=len(steady(steps.steps)) if steps is not None and steps.found else 0,
                gpu_bound_share=busy if gpu_bound else None,
                slowest_gpu_gbps=SLOWEST_GPU_GBPS if slow else None,
                arithmetic_matters=bool(verdict.kernel_us
                                        and verdict.compute_us >= ARITHMETIC_MATTERS * verdict.kernel_us))
