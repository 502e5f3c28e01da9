"""What held the host through host-work gaps (the Idle line's evidence for host work), on the threads that issue
GPU work: the outermost CPU ops in the gaps, the Python frames (stacks recorded), the user's ranges around time no
op traced, and the share left untraced.

Input: the trace, the host-work gaps (sorted, disjoint starts and ends, ns) and idle's per-thread host context
(`issue_by_tid`, `busy_by_tid`, `top_by_tid`). Output: NameTime tuples (name, count, µs) and shares.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.evidence import NameTime
from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.names import name_codes, name_flags
from tracetriage.analyzers.model.trace import CPU_OP, GPU_CATS, NONE, PYTHON, USER_ANNOTATION, Trace


def top_times(trace: Trace, rows: np.ndarray, weights: np.ndarray, k: int = 5) -> tuple[NameTime, ...]:
    """The k names that hold the most time (weights, ns) among rows."""
    return tuple(NameTime(trace.names[n], int(c), round(float(t) / 1e3, 1))
                 for n, c, t in ranked(trace, rows, weights, k))


def ranked(trace: Trace, rows: np.ndarray, weights: np.ndarray, k: int) -> list[tuple[int, int, float]]:
    if len(rows) == 0:
        return []
    uniq, inv = name_codes(trace, rows)
    tot = np.bincount(inv, weights=weights)
    cnt = np.bincount(inv)
    return [(int(uniq[i]), int(cnt[i]), float(tot[i])) for i in np.argsort(-tot)[:k]]


def host_events_in(trace: Trace, s: np.ndarray, e: np.ndarray, ctx, setup_long: int,
                   host_long: int) -> tuple[tuple[NameTime, ...], float, tuple[NameTime, ...], float]:
    """Top-level CPU ops that overlap host-work gaps (they issue no GPU work), and the untraced share."""
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if len(s) == 0:
        return (), 0.0, (), 0.0
    # ops starting inside a gap, weighted by their overlap with it
    os_, oe = ev.start[ops], ev.end[ops]
    k = np.searchsorted(s, os_, side="right") - 1
    inside = (k >= 0) & (os_ < e[np.maximum(k, 0)])
    overlap = np.where(inside, np.minimum(oe, e[np.maximum(k, 0)]) - os_, 0)
    # an outermost op that launched nothing, began before a gap and held the host through it (the kernel before the
    # gap still ran when it started): CPU work as much as one starting inside (a framework range around the gap, a
    # compiled region that launches, says less than what ran inside it). A public RTX 3080 trace's aten::randn ran
    # 654 ms on the host from before the previous step's last kernel ended, and the Idle line named no op at all.
    # (an op covers at most its own length of the gaps: only the ops not inside a gap and at least host_long long can
    # qualify, a few hundred of x5's 300k, so the coverage and the outermost test run on those alone)
    cand = np.flatnonzero(~inside & (np.maximum(oe - os_, 0) >= host_long))
    held = iv.covered(s, e, os_[cand], oe[cand])
    cand = cand[held >= host_long]
    held = held[held >= host_long]
    keep_ = _outermost(ops[cand], ctx, ev)
    cand, held = cand[keep_], held[keep_]
    keep_ = _launches_nothing(ops[cand], ctx, ev)
    cand, held = cand[keep_], held[keep_]
    inside[cand] = True
    overlap[cand] = held
    rows, overlap = ops[inside], overlap[inside]
    # keep the ops that issue no GPU work, and issuing ops that held the host for a long stretch
    # (a first call that initialises a library); the launching op that merely ends a gap is not host work
    issuing = np.zeros(len(rows), dtype=bool)
    for tid in distinct(ev.tid[rows]):
        m = ev.tid[rows] == tid
        s_, e_ = ctx.issue_by_tid.get(int(tid), (np.empty(0, np.int64), np.empty(0, np.int64)))
        if len(s_):
            j = np.searchsorted(s_, ev.start[rows[m]], side="right") - 1
            issuing[m] = (j >= 0) & (ev.start[rows[m]] < e_[np.maximum(j, 0)])
    keep = ~issuing | (overlap >= setup_long)
    rows, overlap = rows[keep], overlap[keep]
    # each gap's traced time is what the thread that traced most of it covers: a first call's self-time on the main
    # thread (cuDNN's set-up inside aten::_convolution) is traced beside autograd's thread's gaps (heldout-user17
    # r18compile: a 9.77 ms stall inside the first convolution read as untraced Python, the autograd thread's
    # coverage being the larger in all)
    best, busy = 0, (np.empty(0, np.int64), np.empty(0, np.int64))
    per_gap = np.zeros(len(s), np.int64)
    for tid, (bs, be) in ctx.busy_by_tid.items():
        c = iv.covered(bs, be, s, e)
        np.maximum(per_gap, c, out=per_gap)
        if int(c.sum()) > best:
            best, busy = int(c.sum()), (bs, be)
    traced = int(per_gap.sum())
    total = int(np.sum(e - s))
    ranges, in_ranges = _ranges_around(trace, s, e, busy)
    untraced_share = 1.0 - (traced + in_ranges) / total if total else 0.0
    # keep only the outermost ops (children double-count)
    return (top_times(trace, rows, overlap), round(max(untraced_share, 0.0), 3), ranges,
            round(in_ranges / total, 3) if total else 0.0)


def _outermost(ops: np.ndarray, ctx, ev) -> np.ndarray:
    """Per cpu_op row: not nested inside another op of its thread (the first op of a top-level extent)."""
    out = np.zeros(len(ops), bool)
    for tid, (_, _, rows) in ctx.top_by_tid.items():
        if len(rows):
            out |= np.isin(ops, rows) & (ev.tid[ops] == tid)
    return out


def _launches_nothing(ops: np.ndarray, ctx, ev) -> np.ndarray:
    """Per cpu_op row: no host activity that issues GPU work (a launch or copy call, an op holding one) lies inside
    it on its thread."""
    out = np.ones(len(ops), bool)
    for tid in distinct(ev.tid[ops]).tolist():
        m = ev.tid[ops] == tid
        s_, e_ = ctx.issue_by_tid.get(int(tid), (np.empty(0, np.int64), np.empty(0, np.int64)))
        if len(s_):
            out[m] = iv.covered(s_, e_, ev.start[ops[m]], ev.end[ops[m]]) == 0
    return out


def _ranges_around(trace: Trace, s: np.ndarray, e: np.ndarray, busy) -> tuple[tuple[NameTime, ...], int]:
    """The user's own ranges (record_function, the DataLoader's enumerate(DataLoader)#...__next__, the optimizer's
    Optimizer.step#...; not ProfilerStep#N, which holds everything) around the gaps' time no op or call traced:
    that time is not untraced, its range names it (heldout-user3 wenlu_train_opt_4090m: 8.6 ms of host-work idle
    inside enumerate(DataLoader) ranges said '89% untraced: Python, numpy, sleeping'). The ranges, each with the
    untraced time it holds, and the time they hold together."""
    ev = trace.ev
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    if not len(ann) or not len(s):
        return (), 0
    ann = ann[~name_flags(trace, ann, lambda n: n.startswith("ProfilerStep#"))]
    # a range around half the GPU span or more is the harness's window, not a phase of the loop (fixes/item_python:
    # fix_window around everything, iteration around each step)
    gpu = any_of(ev.cat, GPU_CATS)
    if gpu.any():
        ann = ann[(ev.end[ann] - ev.start[ann]) < (ev.end[gpu].max() - ev.start[gpu].min()) // 2]
    if not len(ann):
        return (), 0
    gs, ge = iv.union(s, e)
    lo, hi = int(gs[0]), int(ge[-1])
    us, ue = iv.intersect(gs, ge, *iv.complement(*busy, lo, hi))       # the gaps' untraced time
    as_, ae = iv.union(ev.start[ann], ev.end[ann])
    held = iv.intersect(us, ue, as_, ae)
    per = iv.covered(*held, ev.start[ann], ev.end[ann])
    ann, per = ann[per > 0], per[per > 0]
    return top_times(trace, ann, per.astype(np.int64), k=3), iv.total(*held)


def launching_threads(trace: Trace, next_row: np.ndarray) -> np.ndarray:
    """For each gap, the thread whose host work it is: the thread of the call that issued the work ending it, else
    (-1) any thread that issues GPU work. A thread that launches nothing (a DataLoader's pin-memory or queue-feeder
    thread waiting on its lock) cannot hold the GPU idle: a public RTX 3080 trace's gaps were said to be 'in Python:
    acquire of _thread.lock, threading.py wait' on the multiprocessing queue's feeder thread, while the main thread
    that launches sat untraced."""
    call = np.where(next_row != NONE, trace.launch_of[np.maximum(next_row, 0)], NONE)
    return np.where(call != NONE, trace.ev.tid[np.maximum(call, 0)], -1)


def _issuing_tids(ctx) -> np.ndarray:
    return np.array([t for t, (s_, _) in ctx.issue_by_tid.items() if len(s_)], np.int64)


def python_in(trace: Trace, s: np.ndarray, e: np.ndarray, tids: np.ndarray | None = None,
               ctx=None) -> tuple[NameTime, ...]:
    """With stacks recorded, the Python frame that held the host through each host-work gap: the
    deepest frame (the shortest) that covers at least half of the gap, on the thread that launches the work
    after it (`tids`, per gap; -1: a thread that issues GPU work)."""
    ev = trace.ev
    py = np.flatnonzero(ev.cat == PYTHON)
    if len(py) == 0 or len(s) == 0:
        return ()
    rows, held = [], []
    ps, pe = ev.start[py], ev.end[py]
    issuing = np.isin(ev.tid[py], _issuing_tids(ctx)) if ctx is not None else np.ones(len(py), bool)
    longest = np.argsort(-(e - s), kind="stable")[:200]   # the gaps that hold the time; bounded work
    for i, a, b in zip(longest.tolist(), s[longest].tolist(), e[longest].tolist()):
        over = np.minimum(pe, b) - np.maximum(ps, a)
        mine = issuing if tids is None or tids[i] < 0 else ev.tid[py] == tids[i]
        cand = np.flatnonzero((over >= (b - a) // 2) & mine)
        if len(cand):
            k = cand[np.argmin(pe[cand] - ps[cand])]
            rows.append(py[k])
            held.append(int(over[k]))
    if not rows:
        return ()
    return top_times(trace, np.array(rows, np.int64), np.array(held, np.int64), k=3)
