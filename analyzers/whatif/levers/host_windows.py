"""The edit shared by the levers whose fix makes stretches of host time vanish: one-time set-up
(warm_up) and compilation (no_recompiles). A window is a stretch of one host thread (start, end, its
thread key: tracetriage.analyzers.model.trace.thread_key); the part of every call's preceding stretch and
of every call that lies in a window goes, a call keeping at least what a launch costs; GPU work launched
from inside a window can go with it (Inductor's autotuning benchmarks run kernels while it compiles).
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import distinct

__all__ = ["calls_inside", "gap_inside_the_loop", "loop_host_ns", "remove_host_windows", "shorten_wakes",
           "longest_loop_gap_ns"]


def gap_inside_the_loop(g) -> np.ndarray:
    """Per call of graph `g`, whether the host stretch before it lies between the first and the last call that
    issues GPU work: the loop. The stretch before the first (the script's start-up, building the model, spawning
    DataLoader workers) and those after the last (the script after the loop, its closing synchronize) are no host
    work a fix takes off the loop's critical path (heldout-user3 wenlu_train_opt_4090m: a 38 ms lead-in and a
    14.4 ms tail priced as host work, no_host_work −73% where the loop's own stretches hold about 40 ms)."""
    out = np.zeros(g.n_calls, bool)
    issuing = np.flatnonzero(g.c_issues)
    if len(issuing):
        first, last = g.c_start[issuing].min(), g.c_start[issuing].max()
        out = (g.c_start > first) & (g.c_start <= last)
    return out


def longest_loop_gap_ns(g) -> int:
    """The longest gap before one of the loop's calls that waits on host work: the most of a stretch outside the
    loop (the last iteration's Python before a closing sync) that can still be one iteration's."""
    own = g.c_gap[gap_inside_the_loop(g) & (g.c_host > 0)]
    return int(own.max()) if len(own) else 0


def loop_host_ns(g) -> np.ndarray:
    """Per call, the host work before it that belongs to the loop: all of it inside the loop; before the loop's first
    GPU work at most the longest stretch its own thread has inside the loop, since the first iteration's own host
    work precedes its first launch too (a loop that sleeps 55 ms before each step, a first batch as slow as the rest),
    while what a lead-in holds beyond that is the script's start-up; after the loop's last GPU work none: the window's
    tail is in no step (the script after the loop, the profiler's stop). A thread's own: a serving engine's other
    threads wait for requests through the loop (heldout-user9 vllm_h100: a 99.9 ms wait on a worker thread let 19 ms
    before the first and 97 ms after the last GPU activity be priced as host work, -33% on an 89%-busy decode whose
    in-window host idle was 4%)."""
    inside = gap_inside_the_loop(g)
    host = g.c_host.copy()
    issuing = np.flatnonzero(g.c_issues)
    after = g.c_start > g.c_start[issuing].max() if len(issuing) else np.zeros(g.n_calls, bool)
    host[after] = 0
    lead = ~inside & ~after
    own = inside & (host > 0)
    longest = np.zeros(int(g.c_thread.max()) + 1 if g.n_calls else 0, np.int64)
    np.maximum.at(longest, g.c_thread[own], host[own])
    host[lead] = np.minimum(host[lead], longest[g.c_thread[lead]])
    return host


def calls_inside(c, starts: np.ndarray, ends: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per call of context `c`, whether it starts inside a window of its own thread."""
    g = c.g
    out = np.zeros(g.n_calls, bool)
    if not len(starts) or not g.n_calls:
        return out
    c_key = c.call_keys
    for k in distinct(keys).tolist():
        ws, we = iv.union(starts[keys == k], ends[keys == k])
        m = np.flatnonzero(c_key == k)
        j = np.searchsorted(ws, g.c_start[m], side="right") - 1
        out[m] = (j >= 0) & (g.c_start[m] < we[np.maximum(j, 0)])
    return out


def remove_host_windows(c, p, starts: np.ndarray, ends: np.ndarray, keys: np.ndarray,
                        drop_gpu: bool = False) -> tuple[int, int]:
    """Edit plan `p` of context `c` so the host time inside the windows is gone. Returns (calls touched,
    host ns removed)."""
    g = c.g
    if not len(starts) or not g.n_calls:
        return 0, 0
    c_key = c.call_keys
    c_start = g.c_start
    c_end = g.c_start + g.c_dur
    touched, removed = np.zeros(g.n_calls, bool), 0
    for k in distinct(keys).tolist():
        ws, we = iv.union(starts[keys == k], ends[keys == k])
        m = np.flatnonzero(c_key == k)
        if not len(m):
            continue
        in_gap = iv.covered(ws, we, c_start[m] - g.c_gap[m], c_start[m])
        in_call = iv.covered(ws, we, c_start[m], c_end[m])
        p.c_gap[m] = np.maximum(p.c_gap[m] - in_gap, 0)
        keep = np.minimum(p.c_dur[m], g.launch_cost_ns)      # (a call an earlier edit took away stays away)
        before = p.c_dur[m].copy()
        p.c_dur[m] = np.maximum(p.c_dur[m] - in_call, keep)
        cut = np.zeros(g.n_calls, np.int64)
        cut[m] = before - p.c_dur[m]
        # a kernel whose launch loaded its module started only once the call returned: its latency from the
        # call's start shrinks with the call (else a cold pass's first launches keep 4-29 ms each on the device)
        late = np.flatnonzero((g.g_call >= 0) & g.g_linked)
        late = late[cut[g.g_call[late]] > 0]
        if len(late):
            p.g_lat[late] = np.maximum(p.g_lat[late] - cut[g.g_call[late]],
                                       np.minimum(p.g_lat[late], g.launch_cost_ns))
        p.c_tail[m] = np.maximum(p.c_tail[m] - in_call, 0)
        touched[m] |= (in_gap > 0) | (in_call > 0)
        removed += int(in_gap.sum() + np.minimum(in_call, g.c_dur[m] - keep).sum())
    if drop_gpu:
        inside = calls_inside(c, starts, ends, keys)
        gone = g.g_linked & inside[np.maximum(g.g_call, 0)]
        p.g_dur[gone] = 0
        p.g_gap[gone] = 0
        # ... and the calls that launched it and waited for it (autotuning's benchmark launches, its syncs) go
        # whole: they are the window's work, not a launch the steady state makes (compile_recompile-before kept
        # 5,035 such calls at a launch's cost, 60 ms of 62.8 predicted, 0.011 of the span against 0.0009 measured)
        removed += int(np.where(inside, p.c_dur, 0).sum())
        p.c_dur[inside] = 0
        p.c_min[inside] = 0
    return int(touched.sum()), removed


def shorten_wakes(c, p, starts: np.ndarray, ends: np.ndarray) -> int:
    """Edit plan `p` so a call handed its work by another thread (depgraph's wake: it starts when its waker's
    call ended, plus the delay the trace shows) no longer waits through the windows: the part of its delay that
    lies in a window goes. A DataLoader's pin-memory thread waits for a worker's batch, which no traced call
    hands it: the trace shows that wait as a delay after the main thread's last call, and taking the main
    thread's wait for the batch away without it leaves the pin thread's (and the step's) as it was. A thread
    whose first traced moment lies after a window (the pin thread's first batch) begins earlier by as much.
    Returns the delay removed (ns)."""
    g = c.g
    if not len(starts):
        return 0
    ws, we = iv.union(starts, ends)
    began = g.thread_start > 0
    moved = np.zeros(len(g.thread_start), np.int64)
    moved[began] = iv.covered(ws, we, np.full(int(began.sum()), g.span_start, np.int64), g.thread_start[began])
    p.thread_start -= moved
    woken = np.flatnonzero(p.c_wake >= 0)
    if not len(woken):
        return int(moved.sum())
    waker = p.c_wake[woken]
    lo = g.c_start[waker] + g.c_dur[waker]
    hi = g.c_start[woken]
    cut = np.minimum(iv.covered(ws, we, lo, np.maximum(hi, lo)), p.c_wdelay[woken])
    cut = np.maximum(cut, 0)
    p.c_wdelay[woken] -= cut
    return int(cut.sum() + moved.sum())
