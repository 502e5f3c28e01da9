"""Hotspots: where device time goes, by the op that launched it and by kernel.

A GPU activity is charged to the cpu_op that issued its launch call (the innermost
op, e.g. aten::mm under aten::linear), or for a CUDA-graph replay the op that launched
it when the graph was captured. Activities whose launch has no op (Inductor's Triton
launches) are charged to the kernel's own name.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.trace import GPU_CATS, NONE, Trace


@dataclass(frozen=True)
class Hotspot:
    """An op (or a kernel) and the device time it holds."""
    name: str
    device_us: float
    share: float       # of the device time of the rows grouped
    calls: int         # distinct ops (for by_op), activities otherwise
    kernels: int       # GPU activities charged to it


def _short(name: str, width: int = 80) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def gpu_rows(trace: Trace, device: int | None = None) -> np.ndarray:
    m = any_of(trace.ev.cat, GPU_CATS)
    if device is not None:
        m &= trace.ev.device == device
    return np.flatnonzero(m)


def group(trace: Trace, rows: np.ndarray, keys: np.ndarray, label, k: int, calls_of=None) -> tuple[Hotspot, ...]:
    ev = trace.ev
    if len(rows) == 0:
        return ()
    dur = (ev.end[rows] - ev.start[rows]).astype(np.float64)
    total = dur.sum()
    uniq, inv = np.unique(keys, return_inverse=True)
    t = np.bincount(inv, weights=dur)
    n = np.bincount(inv)
    out = []
    for i in np.argsort(-t)[:k]:
        calls = int(calls_of(inv == i)) if calls_of is not None else int(n[i])
        out.append(Hotspot(label(uniq[i]), round(float(t[i]) / 1e3, 1), round(float(t[i] / total), 4) if total else 0.0,
                           calls, int(n[i])))
    return tuple(out)


def op_keys(trace: Trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(key, op) per GPU row: the row of the op that launched it (NONE when none did; a graph replay's kernels:
    the op captured) and the key it is grouped under: the op's name id, or -(kernel name id) - 1 when no op
    launched it."""
    ev = trace.ev
    op = trace.launching_op(rows)
    return np.where(op != NONE, ev.name[np.maximum(op, 0)].astype(np.int64), -1 - ev.name[rows].astype(np.int64)), op


def op_label(trace: Trace, key: int) -> str:
    """The name an op_keys key stands for (a kernel's name shortened)."""
    return trace.names[key] if key >= 0 else _short(trace.names[-1 - key])


def by_op(trace: Trace, rows: np.ndarray, k: int = 10) -> tuple[Hotspot, ...]:
    """Ops by device time, keyed by op_keys."""
    keys, op = op_keys(trace, rows)
    run = trace.op_run(rows, op)     # an op captured into a CUDA graph runs once per replay

    def label(key):
        return op_label(trace, key)

    def calls_of(mask):
        runs = run[mask]
        return len(distinct(runs[runs != NONE])) or int(mask.sum())

    return group(trace, rows, keys, label, k, calls_of)


def by_kernel(trace: Trace, rows: np.ndarray, k: int = 10) -> tuple[Hotspot, ...]:
    return group(trace, rows, trace.ev.name[rows], lambda key: _short(trace.names[key]), k)
