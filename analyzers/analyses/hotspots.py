"""Hotspots: where device time goes, by the op that launched it and by kernel.

A GPU activity is charged to the cpu_op that issued its launch call (the innermost
op, e.g. aten::mm under aten::linear), or for a CUDA-graph replay the op that launched
it when the graph was captured. Activities whose launch has no op (Inductor's Triton
launches) are charged to the kernel's own name, unless their launch call is missing from the trace and their
kernel is one that a single op launched elsewhere in it (then that op's: _unlaunched_to_their_op).

GPU work launched while torch.compile compiles (Inductor benchmarking its choices, lifting constants) is the
compiler's, not the program's: outside_compiling() keeps it out of the program's hotspots (CS521-mp2's cold compiled
convolution: "aten::copy_ 59% (48 calls)", 48 copies of pad_mm's benchmark and lift_fresh, ranked over the model's own
kernels).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.kernel_label import kernel_label
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
    return kernel_label(name, width)


def gpu_rows(trace: Trace, device: int | None = None) -> np.ndarray:
    m = any_of(trace.ev.cat, GPU_CATS)
    if device is not None:
        m &= trace.ev.device == device
    return np.flatnonzero(m)


def outside_compiling(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The rows whose launch call is not inside torch.compile's compiling (its dynamo_timed ranges); all of them where
    every one is (a trace of the compile alone still has hotspots to show)."""
    from tracetriage.analyzers.analyses.first_calls import compiling_windows  # (first_calls imports much)

    cs, ce = compiling_windows(trace)
    if not len(cs) or not len(rows):
        return rows
    call = trace.launch_of[rows]
    t = trace.ev.start[np.maximum(call, 0)]
    k = np.searchsorted(cs, t, side="right") - 1
    inside = (call != NONE) & (k >= 0) & (t < ce[np.maximum(k, 0)])
    return rows[~inside] if (~inside).any() else rows


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
    key = np.where(op != NONE, ev.name[np.maximum(op, 0)].astype(np.int64), -1 - ev.name[rows].astype(np.int64))
    return _unlaunched_to_their_op(trace, rows, op, key), op


def _unlaunched_to_their_op(trace: Trace, rows: np.ndarray, op: np.ndarray, key: np.ndarray) -> np.ndarray:
    """An activity whose launch call is not in the trace (launched before the profiled window, or its correlation
    lost) runs the same kernel as its launched twins: where every launched activity of that kernel name was
    launched by one op (by name), it is that op's, not an item of its own under the kernel's name ("aten::gather
    17% (12), vectorized_gather_kernel 17% (12)" was one op at 33%). A kernel name launched by several ops, or by
    none, stays under its own name: which op ran it is not in the trace."""
    unlaunched = (op == NONE) & (trace.launch_of[rows] == NONE)
    launched = op != NONE
    if not unlaunched.any() or not launched.any():
        return key
    kname = trace.ev.name[rows].astype(np.int64)
    pairs = np.unique(np.stack([kname[launched], key[launched]]), axis=1)   # (kernel name, op name) met
    kn, first, per_kernel = np.unique(pairs[0], return_index=True, return_counts=True)
    one_op = per_kernel == 1
    owner_k, owner = kn[one_op], pairs[1][first[one_op]]
    twin = np.flatnonzero(unlaunched)
    twin = twin[np.isin(kname[twin], owner_k)]
    out = key.copy()
    out[twin] = owner[np.searchsorted(owner_k, kname[twin])]
    return out


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
        # each run of the op once; its twins whose launch is not in the trace at the op's own kernels per run (a
        # batch norm's two kernels a call are one call); a kernel name's own item: each activity once
        runs = run[mask]
        ran = runs != NONE
        n_runs, twins = len(distinct(runs[ran])), int((~ran).sum())
        return n_runs + (int(round(twins * n_runs / int(ran.sum()))) if n_runs else twins)

    return group(trace, rows, keys, label, k, calls_of)


def call_shares(trace: Trace, rows: np.ndarray, keys: np.ndarray, op: np.ndarray) -> np.ndarray:
    """Each GPU activity's share of its op's calls, as by_op counts them: a run of the op is one call however many
    activities it launched (aten::mm's cuBLAS workspace memset and its GEMM: two activities, one call), a twin whose
    launch is not in the trace at the op's activities per run, a kernel name's own item one per activity. Summed
    over a call site's activities, the site's calls: gp_streams said "2,000 kernels from streams1, 2,000 kernels
    from streams2" of aten::mm's 2,000 calls, each site's 1,000 GEMMs and 1,000 memsets counted."""
    run = trace.op_run(rows, op)
    out = np.ones(len(rows), np.float64)
    ran = run != NONE
    if not ran.any():
        return out
    runs, inverse, per_run = np.unique(run[ran], return_inverse=True, return_counts=True)
    out[ran] = 1.0 / per_run[inverse.ravel()]
    twins = ~ran & (keys >= 0)          # an op's activities without a launch: at the op's activities per run
    for key in distinct(keys[twins]).tolist():
        mine = keys == key
        n_runs, n_ran = len(distinct(run[mine & ran])), int((mine & ran).sum())
        if n_runs:
            out[twins & mine] = n_runs / n_ran
    return out


def by_kernel(trace: Trace, rows: np.ndarray, k: int = 10) -> tuple[Hotspot, ...]:
    return group(trace, rows, trace.ev.name[rows], lambda key: _short(trace.names[key]), k)
