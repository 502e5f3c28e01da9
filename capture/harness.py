"""Profile a workload: warm up outside the profiler, time it honestly, record a
Kineto trace with shapes and CUDA sync events, and write a sidecar beside it.

Output: NAME.json.gz (the trace, exactly as torch.profiler exports it, gzipped)
and NAME.meta.json (device, versions, workload parameters, timing, git revision).
Both are written atomically.
"""
from __future__ import annotations

import datetime as _dt
import gzip
import json
import os
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from tracetriage.analyzers.loading.atomic import write_bytes_atomic, write_json_atomic
from tracetriage.analyzers.loading.formats import SIDECAR_SUFFIX, trace_stem
from tracetriage.capture.preflight import settings_warnings, this_gpu, trace_warnings, warn
from tracetriage.capture.stacks import choose, copy_generated, measure_cost
from tracetriage.capture.timer import honest_time
from tracetriage.capture.workload import Workload


def sidecar_path(trace_path: Path) -> Path:
    """NAME.meta.json beside NAME.json.gz: where loading looks for it (tracetriage.analyzers.loading.side_inputs)."""
    return trace_path.with_name((trace_stem(trace_path.name) or trace_path.name) + SIDECAR_SUFFIX)


def experimental_config():
    """CUDA sync events on, where this torch has the switch (2.3+)."""
    try:
        from torch.profiler import _ExperimentalConfig

        return _ExperimentalConfig(enable_cuda_sync_events=True)
    except (ImportError, TypeError):
        return None


def device_info(device: str) -> dict:
    if torch.device(device).type != "cuda":
        return {"type": "cpu", "name": platform.processor() or platform.machine(), "cpus": os.cpu_count()}
    idx = torch.cuda.current_device()
    p = torch.cuda.get_device_properties(idx)
    return {
        "type": "cuda",
        "name": p.name,
        "index": idx,
        "capability": f"{p.major}.{p.minor}",
        "sm_count": p.multi_processor_count,
        "total_memory_bytes": p.total_memory,
        "l2_cache_bytes": getattr(p, "L2_cache_size", None),
        "driver": _nvidia_smi_driver(),
    }


def _nvidia_smi_driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def versions() -> dict:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {"torch": torch.__version__, "triton": triton_version, "cuda": torch.version.cuda,
            "python": platform.python_version()}


def git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def profiler(device: str, with_stack: bool = False):
    """torch.profiler with the capture's settings: CPU (+ CUDA) activity, shapes, CUDA sync events."""
    activities = [ProfilerActivity.CPU]
    on_gpu = torch.device(device).type == "cuda"
    if on_gpu:
        activities.append(ProfilerActivity.CUDA)
    return profile(activities=activities, record_shapes=True, with_stack=with_stack,
                   experimental_config=experimental_config() if on_gpu else None)


def record(step_fn, *, device: str, steps: int, out_path: Path, prologue=None, with_stack: bool = False) -> None:
    """Profile `steps` calls of step_fn and export a gzipped Kineto trace to out_path.

    `prologue` runs inside the profiled region before the first step: a multi-rank run
    passes a barrier so that every rank's trace starts at the same moment. With stacks, the
    Inductor wrappers the trace names are copied beside it (tracetriage.capture.stacks.copy_generated).
    """
    on_gpu = torch.device(device).type == "cuda"
    # a capture that would fail the report's health check says so first (tracetriage.capture.preflight)
    warn(settings_warnings(device, cuda_activity=on_gpu, record_shapes=True, gpu_name=this_gpu()))
    with profiler(device, with_stack) as prof:
        if prologue is not None:
            prologue()
        for _ in range(steps):
            step_fn()
            prof.step()  # (torch records ProfilerStep#N ranges only under a schedule; we name our own)
        if on_gpu:
            torch.cuda.synchronize()  # everything issued lands inside the trace
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(raw))
        warn(trace_warnings(raw))     # ... and so does a trace that fails it (the model left on the CPU ...)
        write_bytes_atomic(out_path, gzip.compress(raw.read_bytes(), compresslevel=6))
        if with_stack:
            copy_generated(raw, out_path)


def capture_workload(workload: Workload, out_path: str | os.PathLike, *, name: str,
                     label: dict | None = None, time_repeats: int = 10, stacks: str = "auto") -> dict:
    """Run, time and profile one workload; return the sidecar dict (also written to disk).
    stacks: auto (on when they cost little, measured here: tracetriage.capture.stacks), on or off."""
    out_path = Path(out_path)
    if not out_path.name.endswith(".json.gz"):
        out_path = out_path.with_name(out_path.name + ".json.gz")
    workload.setup()
    for _ in range(workload.warmup):
        workload.step()
    workload.sync()
    timing = honest_time(workload.step, device=workload.device, tensors=workload.inputs(),
                         warmup=0, repeats=time_repeats)
    stack = choose(stacks, lambda: measure_cost(workload.step, workload.sync,
                                                lambda ws: profiler(workload.device, ws)))
    record(workload.step, device=workload.device, steps=workload.steps, out_path=out_path, with_stack=stack.on)
    meta: dict[str, Any] = {
        "name": name,
        "trace": out_path.name,
        "workload": workload.kind,
        "params": workload.params(),
        "label": label or {},
        "device": device_info(workload.device),
        "versions": versions(),
        "timing_per_step": timing.to_dict(),
        "stacks": stack.to_dict(),
        "measurements": workload.summary(),
        "git_revision": git_revision(),
        "captured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "trace_bytes_gz": out_path.stat().st_size,
    }
    write_json_atomic(sidecar_path(out_path), json.loads(json.dumps(meta, default=str)))
    return meta
