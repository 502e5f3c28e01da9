"""The honest timer of course drill M01.03.

Device work is asynchronous: a host clock around a launch measures the launch.
So on a GPU we warm up (module load, autotuning, allocator growth stay out of the
numbers), time each repeat between CUDA events, and report the median and the
spread. It refuses to time a "GPU" workload whose tensors sit on the CPU: that
is the classic way to benchmark a CPU fallback by accident.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterable

import torch


class CpuFallbackError(ValueError):
    """A GPU timing was asked for, but the work would run on the CPU."""


@dataclass(frozen=True)
class Timing:
    device: str
    method: str          # "cuda-events" or "perf_counter"
    repeats: int
    warmup: int
    median_ms: float
    min_ms: float
    p10_ms: float
    p90_ms: float
    spread_pct: float    # (p90 - p10) / median: how much to trust a difference

    def to_dict(self) -> dict:
        return asdict(self)


def _tensors_in(obj) -> Iterable[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors_in(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors_in(v)


def check_on_device(device: str, tensors) -> None:
    """Raise CpuFallbackError if any tensor is not on the device being timed."""
    want = torch.device(device).type
    if want == "cuda" and not torch.cuda.is_available():
        raise CpuFallbackError("refusing to time on cuda: no CUDA device is available here")
    for i, t in enumerate(_tensors_in(tensors)):
        if t.device.type != want:
            raise CpuFallbackError(
                f"refusing to time a {want} workload: tensor {i} (shape {tuple(t.shape)}) "
                f"is on {t.device.type}; move it with .to('{want}') or time it as a {t.device.type} workload"
            )


def _quantile(sorted_xs: list[float], q: float) -> float:
    if len(sorted_xs) == 1:
        return sorted_xs[0]
    pos = q * (len(sorted_xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def honest_time(
    fn: Callable[[], object],
    *,
    device: str,
    tensors=(),
    warmup: int = 3,
    repeats: int = 20,
    check_output: bool = True,
) -> Timing:
    """Median time of fn() in ms. `tensors` are the inputs to check for the device.

    check_output=False is for work whose result belongs on the host by design
    (a device-to-host copy); the inputs are still checked.
    """
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    check_on_device(device, tensors)
    on_gpu = torch.device(device).type == "cuda"
    for _ in range(warmup):
        out = fn()
    if warmup and check_output:
        check_on_device(device, out)  # the output too: a silent .cpu() inside fn is a fallback
    samples: list[float] = []
    if on_gpu:
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        for s, e in zip(starts, ends):
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        samples = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t0) * 1e3)
    xs = sorted(samples)
    med = statistics.median(xs)
    p10, p90 = _quantile(xs, 0.1), _quantile(xs, 0.9)
    return Timing(
        device=torch.device(device).type,
        method="cuda-events" if on_gpu else "perf_counter",
        repeats=repeats,
        warmup=warmup,
        median_ms=med,
        min_ms=xs[0],
        p10_ms=p10,
        p90_ms=p90,
        spread_pct=100.0 * (p90 - p10) / med if med > 0 else 0.0,
    )
