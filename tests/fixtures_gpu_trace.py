"""A tiny synthetic Kineto GPU trace with hand-computed answers.

Stands in for real GPU traces until they land in traces/. Times are written
here in integer nanoseconds and exported as µs with three decimals, on top of
a torch-2.11-like origin near 5e12 µs, as torch.profiler does.

Two streams on device 0, rank 0:

stream 7 (compute)
  k1  [100.000, 110.500)  launched by cudaLaunchKernel at 90
  k2  [112.000, 120.000)  launched at 95 (before k1 ended); gap 1.5 µs  -> kernel_wait
  k3  [200.000, 210.000)  launched at 150 (after k2 ended); gap 80 µs   -> host_wait
  k4  [250.000, 260.250)  launched by cuLaunchKernelEx (cuda_driver) at 190,
                          before k3 ended; gap 40 µs >= 30              -> other
stream 20 (copies and a kernel)
  m1  Memcpy HtoD [105.000, 125.000)  launched by cudaMemcpyAsync at 96
  k5  [130.000, 135.000)  launched at 97; gap 5 µs                      -> kernel_wait
  s1  Memset     [300.000, 302.000)  launched by cudaMemsetAsync at 280; gap 165 µs -> host_wait
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

ORIGIN_NS = 5_000_000_000_000_000  # 5e12 µs, like torch 2.11 on an H200
LAUNCH_DUR_NS = 4_000  # every launch call lasts 4 µs
PID_CPU, TID_CPU = 1234, 1234


@dataclass(frozen=True)
class GpuActivity:
    name: str
    cat: str  # kernel | gpu_memcpy | gpu_memset
    stream: int
    start_ns: int
    end_ns: int
    launch_ns: int
    launch_name: str = "cudaLaunchKernel"
    launch_cat: str = "cuda_runtime"


ACTIVITIES: tuple[GpuActivity, ...] = (
    GpuActivity("k1_gemm", "kernel", 7, 100_000, 110_500, 90_000),
    GpuActivity("k2_add", "kernel", 7, 112_000, 120_000, 95_000),
    GpuActivity("k3_mul", "kernel", 7, 200_000, 210_000, 150_000),
    GpuActivity("k4_cublas", "kernel", 7, 250_000, 260_250, 190_000,
                "cuLaunchKernelEx", "cuda_driver"),
    GpuActivity("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 20, 105_000, 125_000,
                96_000, "cudaMemcpyAsync"),
    GpuActivity("k5_relu", "kernel", 20, 130_000, 135_000, 97_000),
    GpuActivity("Memset (Device)", "gpu_memset", 20, 300_000, 302_000, 280_000,
                "cudaMemsetAsync"),
)


@dataclass(frozen=True)
class Expected:
    """Hand-computed answers, in µs, under HTA's definitions."""

    kernel_us: dict = field(default_factory=lambda: {
        7: 10.5 + 8 + 10 + 10.25,  # 38.75
        20: 20 + 5 + 2,            # 27
    })
    host_wait_us: dict = field(default_factory=lambda: {7: 80.0, 20: 165.0})
    kernel_wait_us: dict = field(default_factory=lambda: {7: 1.5, 20: 5.0})
    other_us: dict = field(default_factory=lambda: {7: 40.0, 20: 0.0})

    def idle_us(self, stream: int) -> float:
        return self.host_wait_us[stream] + self.kernel_wait_us[stream] + self.other_us[stream]


EXPECTED = Expected()


def _us(ns: int) -> float:
    """Absolute µs with three decimals, as Kineto writes them."""
    return round((ORIGIN_NS + ns) / 1000, 3)


def make_trace(*, rank: int | None = 0, with_kernels: bool = True) -> dict:
    events: list[dict] = []
    for i, act in enumerate(ACTIVITIES if with_kernels else ()):
        corr, ext = 1000 + i, 500 + i
        events.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op_{i}",
                       "pid": PID_CPU, "tid": TID_CPU,
                       "ts": _us(act.launch_ns - 1_000), "dur": (LAUNCH_DUR_NS + 2_000) / 1000,
                       "args": {"External id": ext}})
        events.append({"ph": "X", "cat": act.launch_cat, "name": act.launch_name,
                       "pid": PID_CPU, "tid": TID_CPU,
                       "ts": _us(act.launch_ns), "dur": LAUNCH_DUR_NS / 1000,
                       "args": {"External id": ext, "cbid": 211, "correlation": corr}})
        events.append({"ph": "X", "cat": act.cat, "name": act.name, "pid": 0, "tid": act.stream,
                       "ts": _us(act.start_ns), "dur": (act.end_ns - act.start_ns) / 1000,
                       "args": {"External id": ext, "device": 0, "stream": act.stream,
                                "correlation": corr, "context": 1}})
        events.append({"ph": "s", "id": corr, "pid": PID_CPU, "tid": TID_CPU,
                       "ts": _us(act.launch_ns), "cat": "ac2g", "name": "ac2g"})
        events.append({"ph": "f", "id": corr, "pid": 0, "tid": act.stream,
                       "ts": _us(act.start_ns), "cat": "ac2g", "name": "ac2g", "bp": "e"})
    if not with_kernels:  # a CPU-only trace still has CPU ops
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": PID_CPU,
                       "tid": TID_CPU, "ts": _us(0), "dur": 5.0, "args": {"External id": 1}})
    trace: dict = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150_000_000_000,
                              "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
        "traceEvents": events,
        "traceName": "synthetic",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }
    if rank is not None:
        trace["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 8}
    return trace


def write_trace(path: Path, trace: dict | None = None) -> Path:
    """Write as torch does: indented JSON, gzip when the name ends with .gz."""
    text = json.dumps(trace if trace is not None else make_trace(), indent=1)
    path = Path(path)
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path
