"""Hotspots: where device time goes, by the op that launched it and by kernel.

A GPU activity is charged to the cpu_op that issued its launch call (the innermost
op, e.g. aten::mm under aten::linear). Activities whose launch has no op (Inductor's
Triton launches, CUDA-graph replays) are charged to the kernel's own name.
"""
from __future__ import annotations

import numpy as np

from analyzers.trace import GPU_CATS, NONE, Trace


def _short(name: str, width: int = 80) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def gpu_rows(trace: Trace, device: int | None = None) -> np.ndarray:
    m = np.isin(trace.ev.cat, GPU_CATS)
    if device is not None:
        m &= trace.ev.device == device
    return np.flatnonzero(m)


def _group(trace: Trace, rows: np.ndarray, keys: np.ndarray, label, k: int, calls_of=None) -> list[dict]:
    ev = trace.ev
    if len(rows) == 0:
        return []
    dur = (ev.end[rows] - ev.start[rows]).astype(np.float64)
    total = dur.sum()
    uniq, inv = np.unique(keys, return_inverse=True)
    t = np.bincount(inv, weights=dur)
    n = np.bincount(inv)
    out = []
    for i in np.argsort(-t)[:k]:
        calls = int(calls_of(inv == i)) if calls_of is not None else int(n[i])
        out.append({"name": label(uniq[i]), "device_us": round(float(t[i]) / 1e3, 1),
                    "share": round(float(t[i] / total), 4) if total else 0.0, "calls": calls, "kernels": int(n[i])})
    return out


def by_op(trace: Trace, rows: np.ndarray, k: int = 10) -> list[dict]:
    """Ops by device time. Key: the op's name id, or -(kernel name id) - 1 when no op launched it."""
    ev = trace.ev
    call = trace.launch_of[rows]
    op = np.where(call != NONE, trace.op_of[np.maximum(call, 0)], NONE)
    keys = np.where(op != NONE, ev.name[np.maximum(op, 0)].astype(np.int64), -1 - ev.name[rows].astype(np.int64))

    def label(key):
        return trace.names[key] if key >= 0 else _short(trace.names[-1 - key])

    def calls_of(mask):
        ops = op[mask]
        return len(np.unique(ops[ops != NONE])) or int(mask.sum())

    return _group(trace, rows, keys, label, k, calls_of)


def by_kernel(trace: Trace, rows: np.ndarray, k: int = 10) -> list[dict]:
    return _group(trace, rows, trace.ev.name[rows], lambda key: _short(trace.names[key]), k)
