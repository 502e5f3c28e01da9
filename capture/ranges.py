"""One named range, seen by both profilers.

Kineto (torch.profiler) records no NVTX, and Nsight Systems sees no
record_function. A range that should show up in both must open both, so every
workload names its phases through `named_range` and nothing else.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch

try:  # the `nvtx` package: a no-op unless a tool such as Nsight Systems is attached
    import nvtx as _nvtx
except ImportError:  # pragma: no cover - falls back to torch's binding below
    _nvtx = None


def _nvtx_push(name: str) -> None:
    if _nvtx is not None:
        _nvtx.push_range(name)
    elif torch.cuda.is_available():
        torch.cuda.nvtx.range_push(name)


def _nvtx_pop() -> None:
    if _nvtx is not None:
        _nvtx.pop_range()
    elif torch.cuda.is_available():
        torch.cuda.nvtx.range_pop()


@contextlib.contextmanager
def named_range(name: str) -> Iterator[None]:
    """A `record_function` (Kineto's user_annotation) and an NVTX range, opened together."""
    _nvtx_push(name)
    try:
        with torch.profiler.record_function(name):
            yield
    finally:
        _nvtx_pop()
