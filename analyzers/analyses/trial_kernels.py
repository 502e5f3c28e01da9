"""cuDNN's benchmark trials: kernels run to time candidate algorithms, not the workload's convolutions.

With torch.backends.cudnn.benchmark = True the first call of a convolution at a new input shape runs every candidate
algorithm, each once as a warm-up and once between two cudaEventRecord calls, waiting for each (cudaDeviceSynchronize,
cudaEventSynchronize), then runs the fastest for the real output. In any trace the construct is: inside one call of a
cuDNN convolution op (analyses.library_syncs.CUDNN_CONV_OPS) on its thread, cudaEventRecord calls and sync-wait calls;
the GPU work launched in that call before its last sync-wait is the trials', what follows it the convolution's own.
A trial kernel is neither the workload's regime nor its kernel quality: many distinct algorithms each run once per
shape, most far below both roofs (fresh9 wav2letter_benchmark_dynamic_lengths: "100% latency-bound ... the library's
algorithm choice" over 2.0 s of trials, dgrad2d_grouped_direct_kernel 1,337 ms in 4 launches). What would make it fire
falsely: a convolution op that records events and syncs for another reason (a custom op timing itself); its kernels
before the sync would be left out of the split too, and said so.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tracetriage.analyzers.analyses.first_calls import profiler_steps
from tracetriage.analyzers.analyses.library_syncs import CUDNN_CONV_OPS, WAITS
from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.trace import CPU_OP, DRIVER, GPU_CATS, KERNEL, NONE, RUNTIME, Trace

_EVENT_RECORD = frozenset({"cudaEventRecord", "cudaEventRecordWithFlags", "hipEventRecord"})


@dataclass(frozen=True)
class Trials:
    rows: np.ndarray        # the trials' kernels (trace rows)
    kernel_ns: int          # their kernel time
    calls: int              # the convolution op calls that ran trials
    algorithms: int         # distinct kernel names among them
    steps: int = 0          # the profiled steps (ProfilerStep#N) that ran trials: two or more, the shapes change
    windows: np.ndarray = field(default_factory=lambda: np.zeros((0, 5), np.int64))
    # each trial-running call's trial stretch on the host: (its op's row, its start, its last sync-wait's end, its
    # first event record's start, its event records): the candidates' plans (built before the first record),
    # launches, event records and waits; what the call does after it is the chosen kernel's run


def trial_kernels(trace: Trace) -> Trials | None:
    """cuDNN's benchmark trial kernels, or None where no convolution call timed candidates."""
    ev, names = trace.ev, trace.names
    conv_ids = [i for i, n in enumerate(names) if n in CUDNN_CONV_OPS]
    wait_ids = [i for i, n in enumerate(names) if n in WAITS]
    rec_ids = [i for i, n in enumerate(names) if n in _EVENT_RECORD]
    if not conv_ids or not wait_ids or not rec_ids:
        return None
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    waits = calls[np.isin(ev.name[calls], wait_ids)]
    records = calls[np.isin(ev.name[calls], rec_ids)]
    ops = np.flatnonzero(np.isin(ev.name, conv_ids) & (ev.cat == CPU_OP))
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS))
    launch = trace.launch_of[gpu]
    gpu, launch = gpu[launch != NONE], launch[launch != NONE]
    order = np.argsort(ev.start[launch], kind="stable")
    gpu, launch = gpu[order], launch[order]
    out, n_calls, windows = [], 0, []
    for tid in distinct(ev.tid[ops]).tolist():
        o = ops[ev.tid[ops] == tid]
        wt = waits[ev.tid[waits] == tid]
        wt = wt[np.argsort(ev.start[wt], kind="stable")]
        w, w_end = ev.start[wt], ev.end[wt]
        r = np.sort(ev.start[records[ev.tid[records] == tid]])
        mine = ev.tid[launch] == tid
        g, ls = gpu[mine], ev.start[launch[mine]]
        for op, s, e in zip(o.tolist(), ev.start[o].tolist(), ev.end[o].tolist()):
            lo, hi = np.searchsorted(w, [s, e])
            r_lo, r_hi = np.searchsorted(r, [s, e])
            if hi <= lo or r_hi <= r_lo:
                continue            # no timed candidates in this call
            last = int(w[hi - 1])
            a, b = np.searchsorted(ls, [s, last])
            if b > a:
                out.append(g[a:b])
                n_calls += 1
                windows.append((op, s, max(int(w_end[lo:hi].max()), last), int(r[r_lo]), int(r_hi - r_lo)))
    if not out:
        return None
    rows = distinct(np.concatenate(out))
    rows = rows[ev.cat[rows] == KERNEL]
    if not len(rows):
        return None
    bounds = profiler_steps(trace)
    k = np.searchsorted(bounds, ev.start[rows], side="right") - 1 if len(bounds) else np.zeros(0, np.int64)
    steps = len(set(k[(k >= 0) & (k < len(bounds) - 1)].tolist()))
    return Trials(rows, int((ev.end[rows] - ev.start[rows]).sum()), n_calls, len(distinct(ev.name[rows])), steps,
                  np.array(windows, np.int64).reshape(-1, 5))
