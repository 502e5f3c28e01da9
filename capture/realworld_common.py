"""What the real-world captures share: a profiled run with no named ranges, the facts a trace holds, JSON out.

Everything here reads the exported JSON alone (the device machine has no msgspec), so the lead can check
from the sidecars that a fix measured is the fix intended (CAPTURE-NOTES: a "cuda_graphs" pair with no
`cudaGraphLaunch` in its trace is a fusion pair).
"""
from __future__ import annotations

import gzip
import json
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

import torch
from torch.profiler import ProfilerActivity, profile

from tracetriage.capture.fixes import FixWorkload, span_us

# Host calls and ranges whose counts say what a trace holds (each a name test on one event).
_RUNTIME_COUNTS = {
    "graph_launches": lambda n: n in ("cudaGraphLaunch", "hipGraphLaunch"),
    "graph_captures": lambda n: n in ("cudaStreamBeginCapture", "hipStreamBeginCapture"),
    "graph_instantiations": lambda n: n.startswith(("cudaGraphInstantiate", "hipGraphInstantiate")),
    "kernel_launches": lambda n: n in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC",
                                       "hipLaunchKernel", "hipExtModuleLaunchKernel"),
    "cuda_mallocs": lambda n: n in ("cudaMalloc", "hipMalloc"),
    "cuda_frees": lambda n: n in ("cudaFree", "hipFree"),
    "stream_syncs": lambda n: n in ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"),
}
_HOST_COUNTS = {
    # one per dynamo frame compile (torch/_dynamo/utils.py dynamo_timed names its ranges "... (dynamo_timed)")
    "compiles": lambda n: n == "_compile.compile_inner (dynamo_timed)",
    "compiled_region_calls": lambda n: n.startswith("Torch-Compiled Region"),
    "optimizer_steps": lambda n: n.startswith("Optimizer.step#"),
    "dataloader_nexts": lambda n: n.startswith("enumerate(DataLoader)#"),
    "profiler_steps": lambda n: n.startswith("ProfilerStep#"),
}


def trace_facts(path: Path) -> dict[str, Any]:
    """Counts of the events a capture relies on, the span, and the file's size."""
    data = json.loads(gzip.decompress(path.read_bytes()))
    events = data.get("traceEvents", [])
    cats = Counter(str(e.get("cat", "")).lower() for e in events)
    facts: dict[str, Any] = {k: 0 for k in [*_RUNTIME_COUNTS, *_HOST_COUNTS]}
    for e in events:
        cat, name = str(e.get("cat", "")).lower(), str(e.get("name", ""))
        tests = _RUNTIME_COUNTS if cat in ("cuda_runtime", "cuda_driver") else (
            _HOST_COUNTS if cat in ("cpu_op", "user_annotation") else {})
        for key, test in tests.items():
            facts[key] += test(name)
    user_ranges = sorted({str(e.get("name")) for e in events if str(e.get("cat", "")).lower() == "user_annotation"})
    facts.update(events=len(events), kernels=cats.get("kernel", 0), cpu_ops=cats.get("cpu_op", 0),
                 cuda_sync_events=cats.get("cuda_sync", 0), memcpys=cats.get("gpu_memcpy", 0),
                 user_ranges=user_ranges[:20], span_us=span_us(data), bytes_gz=path.stat().st_size)
    return facts


def profiler_activities(device: str) -> list:
    return [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.device(device).type == "cuda" else [])


def warm_gpu(device: str) -> None:
    """Clocks up and cuBLAS loaded before the first capture (as tracetriage.capture.fixes.main does)."""
    if torch.device(device).type != "cuda":
        return
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    for _ in range(200):
        a @ a
    torch.cuda.synchronize()


def warm_profiler(device: str) -> None:
    """One throwaway profiling session: CUPTI's first-start set-up stays out of the traces kept."""
    with profile(activities=profiler_activities(device)):
        torch.ones(8, device=device).sum()
    _sync(device)


def profile_bare(fn: Callable[[], Any], out_path: Path, *, device: str, record_shapes: bool = True,
                 sync_events: bool = True, activities: list | None = None) -> dict:
    """One profiled call of fn with no schedule, no prof.step() and no named range of ours: the trace holds
    only what torch.profiler records by default (no ProfilerStep#, no user_annotation we opened).

    Returns the host clock around the call (time.perf_counter_ns, with time.time_ns at the start to place
    it in the trace: see trace_us) and fn's return value under "result". The time_ns reading comes at most
    "unix_read_ns" after call_start_ns (perf_counter_ns read again after it), so trace_us's times are late by
    at most that.
    """
    from tracetriage.capture.harness import experimental_config

    gpu = torch.device(device).type == "cuda"
    raw = out_path.with_name(out_path.name.removesuffix(".gz"))
    _sync(device)
    with profile(activities=activities or profiler_activities(device), record_shapes=record_shapes,
                 experimental_config=experimental_config() if gpu and sync_events else None) as prof:
        t0, t0_unix, t0_after = time.perf_counter_ns(), time.time_ns(), time.perf_counter_ns()
        result = fn()
        _sync(device)
        t1 = time.perf_counter_ns()
    prof.export_chrome_trace(str(raw))
    out_path.write_bytes(gzip.compress(raw.read_bytes(), compresslevel=6))
    raw.unlink()
    return {"call_start_ns": t0, "call_end_ns": t1, "call_start_unix_ns": t0_unix, "unix_read_ns": t0_after - t0,
            "clock": "time.perf_counter_ns", "result": result}


def trace_us(trace_path: Path, perf_ns: list[int], run: dict) -> list[float]:
    """perf_counter_ns readings as the trace's `ts` (µs). Kineto writes ts as CLOCK_REALTIME minus the trace's
    baseTimeNanoseconds (absolute when there is none), so a reading maps through the run's time.time_ns anchor."""
    data = json.loads(gzip.decompress(trace_path.read_bytes()))
    base = int(data.get("baseTimeNanoseconds", 0))
    shift = run["call_start_unix_ns"] - run["call_start_ns"] - base
    return [round((t + shift) / 1e3, 3) for t in perf_ns]


def wall_clock_ms(fn: Callable[[], Any], device: str) -> float:
    """fn unprofiled, host clock between two device syncs."""
    _sync(device)
    t0 = time.perf_counter()
    fn()
    _sync(device)
    return (time.perf_counter() - t0) * 1e3


def runs_summary(xs: list[float]) -> dict:
    """The runs, sorted, with their median, min and max: the shape of measured.json's span_us and wall_ms."""
    s = sorted(xs)
    return {"runs": s, "median": statistics.median(s), "min": s[0], "max": s[-1]}


def write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=1, default=str))


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


@dataclass
class RealWorkload(FixWorkload):
    """A ground-truth workload built from a library people profile, keeping what it measured besides spans.

    `record` is plain data (the byte ledger, per-window host clocks, ...) that outlives the workload: the
    runner keeps it, not the model, so a finished scenario's GPU memory is freed.
    """
    needs: ClassVar[tuple[str, ...]] = ()      # modules it imports (tests skip without them)
    smoke: ClassVar[dict] = {"iters": 1}       # field overrides for a quick shake-out run

    def __post_init__(self):
        super().__post_init__()
        self.record: dict[str, Any] = {}

    def note_window(self, **data) -> None:
        """One window's own measurements; `profiled` tells the profiler's recording windows from the rest."""
        self.record.setdefault("windows", []).append({"profiled": torch.autograd._profiler_enabled(), **data})

    @classmethod
    def summarize(cls, record: dict) -> dict:
        """The record with figures derived from its windows added (the runner calls this on kept records)."""
        return record

    def summary(self) -> dict:
        return self.summarize(self.record)


def timed_windows(windows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(profiled windows, unprofiled timed windows) from the order fixes.capture_scenario runs them in:
    two warm-up windows, then per rep the profiler's warm-up cycle, its recorded window, and the wall-clock
    window, which is thus the unprofiled window that follows a profiled one."""
    prof = [w for w in windows if w["profiled"]]
    wall = [w for prev, w in zip(windows, windows[1:]) if prev["profiled"] and not w["profiled"]]
    return prof, wall


class LoaderFed:
    """A RealWorkload mixin for a loop fed by next() on one DataLoader iterator (`self.it` over `self.loader`):
    before each window, with workers, `settle` more steps so the window sees the steady queue, not the one workers
    filled while the window's set-up ran; each window notes how long its next() calls waited (`next_batch`)."""
    settle: int
    loader: Any
    it: Any
    waited_ns: int = 0

    def before_window(self):
        if self.loader.num_workers:        # no workers, no queue to settle
            for _ in range(self.settle):
                self.step()
            self.sync()

    def window(self):
        self.waited_ns = 0
        super().window()
        self.note_window(next_wait_ms=self.waited_ns / 1e6)

    def next_batch(self):
        """The iterator's next batch, its wait counted in the window's next_wait_ms."""
        t0 = time.perf_counter_ns()
        batch = next(self.it)
        self.waited_ns += time.perf_counter_ns() - t0
        return batch
