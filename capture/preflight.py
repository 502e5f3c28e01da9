"""Warn before a capture writes a trace that will fail the report's health check.

Two moments: before recording, from the settings (a machine with a GPU profiled without CUDA activity, shapes
not recorded); and after recording, before the trace is written, from the trace itself (the health check of
tracetriage.analyzers.analyses.health: the model left on the CPU, activity dropped ...). Warnings go to stderr as
`warning: ...` lines; the trace is still written (a CPU capture may be what the user wants).
"""
from __future__ import annotations

import sys
from pathlib import Path


def settings_warnings(device: str, *, cuda_activity: bool, record_shapes: bool, gpu_name: str | None) -> list[str]:
    """What the profiler's settings will leave out of the trace. `gpu_name`: this machine's GPU (None: none)."""
    out = []
    if gpu_name is not None and not cuda_activity:
        out.append(f"this machine has a GPU ({gpu_name}) but the capture records no CUDA activity "
                   f"(device {device}): the trace will have no GPU timeline, so no idle split, regime or what-if; "
                   "capture with --device cuda (ProfilerActivity.CUDA)")
    if not record_shapes:
        out.append("record_shapes is off: the trace will carry no input shapes, so no roofline and no "
                   "compute/memory regime; profile with record_shapes=True")
    return out


def trace_warnings(raw_trace: Path) -> list[str]:
    """The health check of the trace just recorded (its Health line), or nothing where the analyzers cannot
    run here (a GPU machine with torch but without the analyzers' own dependencies)."""
    try:
        from tracetriage.analyzers.analyses.health import check
        from tracetriage.analyzers.loading.load import load
        from tracetriage.analyzers.model.trace import TraceError
        from tracetriage.analyzers.voice.health import health_line
    except ImportError:
        return []
    try:
        line = health_line(check(load(raw_trace, use_cache=False)))
    except (TraceError, OSError):
        return []
    return [line[len("Health: "):].rstrip(".")] if line else []


def this_gpu() -> str | None:
    import torch

    return torch.cuda.get_device_name(torch.cuda.current_device()) if torch.cuda.is_available() else None


def warn(lines: list[str]) -> None:
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)
