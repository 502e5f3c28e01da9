"""Replay a dependency graph (tracetriage.analyzers.whatif.depgraph) as a discrete-event simulation.

The host threads run their calls in order, each call `gap` after the previous one ends; a
blocked call ends `tail` after its awaited GPU activity ends (never sooner than `c_min` after it
starts). Each GPU activity starts at the latest of: its call's start + `lat`, the previous
activity on its queue's end + `gap`, its dependency's end + `delay`.

Blocked calls are the only points where the host waits for the device, so the replay walks
from one blocked call to the next: between two, every host time is a cumulative sum, and every
queue is a max-plus recurrence, end_k = dur_k + max(end_{k-1} + gap_k, ready_k), which is a
cumulative sum plus a running maximum (numpy, no Python loop). A stretch in which one queue
waits for another (event record -> stream wait) is walked activity by activity instead.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import NONE
from tracetriage.analyzers.whatif.depgraph import Graph

NEG = -(np.int64(1) << 60)


@dataclass
class Plan:
    """The editable edges of a graph; Plan.of(graph) reproduces the trace."""
    c_gap: np.ndarray
    c_dur: np.ndarray
    c_min: np.ndarray            # a blocked call's cost when its GPU work is already done
    c_blocked: np.ndarray
    c_awaited: np.ndarray
    c_tail: np.ndarray
    g_queue: np.ndarray
    g_call: np.ndarray
    g_dur: np.ndarray
    g_lat: np.ndarray
    g_gap: np.ndarray
    g_dep: np.ndarray
    g_delay: np.ndarray
    thread_tail: np.ndarray
    c_wake: np.ndarray           # a call handed its thread's work by a call on another thread (NONE: none)
    c_wdelay: np.ndarray
    thread_start: np.ndarray     # each thread's first moment (a lever may move a thread that began waiting earlier)

    @classmethod
    def of(cls, g: Graph) -> "Plan":
        return cls(c_gap=g.c_gap.copy(), c_dur=g.c_dur.copy(),
                   c_min=np.minimum(g.c_dur, g.launch_cost_ns), c_blocked=g.c_blocked.copy(),
                   c_awaited=g.c_awaited.copy(), c_tail=g.c_tail.copy(), g_queue=g.g_queue.copy(),
                   g_call=g.g_call.copy(),
                   g_dur=g.g_dur.copy(), g_lat=g.g_lat.copy(), g_gap=g.g_gap.copy(), g_dep=g.g_dep.copy(),
                   g_delay=g.g_delay.copy(), thread_tail=g.thread_tail.copy(), c_wake=g.c_wake.copy(),
                   c_wdelay=g.c_wdelay.copy(), thread_start=g.thread_start.copy())

    def copy(self) -> "Plan":
        """A plan to edit, the same as this one. Each of its arrays is copied the first time it is asked for: a
        lever edits a few of the seventeen, and a replay reads them (Plan.read) without a copy (the report's child
        copied 20 whole plans, 13 MB each on a 300 MB trace, for the levers' few edits)."""
        return _Edited(self)

    def read(self) -> "Plan":
        """The plan's arrays as they stand, to read and not to edit (no copy is made)."""
        return self


class _Edited(Plan):
    """Plan.copy's plan: an array is its own copy from the first time it is asked for, its source's until then."""

    def __init__(self, source: Plan):   # (not the dataclass's: no array is copied yet)
        self.__dict__["_source"] = source

    def __getattr__(self, name: str) -> np.ndarray:   # (asked only for an attribute not set yet: not copied yet)
        if name not in _ARRAYS:
            raise AttributeError(name)
        own = self.__dict__[name] = getattr(self._source.read(), name).copy()
        return own

    def read(self) -> Plan:
        source = self._source.read()
        return Plan(**{k: self.__dict__[k] if k in self.__dict__ else getattr(source, k) for k in _ARRAYS})

    def same_as_source(self) -> bool:
        """Every array as its source's: nothing asked for, or what was asked for left as it was (a lever that looked
        and found nothing to change). Its replay is then its source's, value for value."""
        source = self._source.read()
        return all(np.array_equal(v, getattr(source, k)) for k, v in self.__dict__.items() if k in _ARRAYS)


_ARRAYS = frozenset(f.name for f in fields(Plan))


@dataclass(frozen=True)
class Replayed:
    span_ns: int
    gpu_busy_ns: int           # kernel time on the busiest queue (a sanity figure for the levers)
    c_start: np.ndarray
    c_end: np.ndarray
    g_start: np.ndarray
    g_end: np.ndarray


def replay(g: Graph, p: Plan) -> Replayed:
    p = p.read()
    n_c, n_g = g.n_calls, len(g.g_row)
    if n_c == 0:   # no host call to move anything: the device timeline stays as traced
        g_e = g.g_start + p.g_dur
        span = max(g.span_end, int(g_e.max()) if n_g else g.span_end) - g.span_start
        return Replayed(span_ns=int(span), gpu_busy_ns=int(p.g_dur.sum()), c_start=g.c_start, c_end=g.c_start,
                        g_start=g.g_start, g_end=g_e)
    # GPU activities in queue order; a plan may have moved some to another queue
    order = _queue_order(g, p)
    inv = None          # (None: the graph's own order, which a plan that moves no activity keeps: no gather)
    if order is not None:
        inv = np.empty(n_g, np.int64)
        inv[order] = np.arange(n_g)
    sorted_queue = _take(order, p.g_queue)    # ascending: the queue is the sort's first key
    q = np.cumsum(np.r_[False, sorted_queue[1:] != sorted_queue[:-1]]) if n_g else np.zeros(0, np.int64)
    call = _take(order, p.g_call)
    dur, lat, gap = _take(order, p.g_dur), _take(order, p.g_lat), _take(order, p.g_gap)
    dep = _take(order, p.g_dep)
    any_dep = bool((dep >= 0).any())   # (most traces have no cross-queue dependency: the column stays NONE)
    if any_dep:
        dep = np.where(dep >= 0, _moved(inv, np.maximum(dep, 0)), NONE)
    delay = _take(order, p.g_delay)
    # before the first call: stays where it was, but for a backlog behind the activity before it (it follows that one)
    fixed = np.where((call < 0) & _take(order, g.g_pinned), _take(order, g.g_start), NEG)
    first_in_q = np.r_[True, q[1:] != q[:-1]] if n_g else np.zeros(0, bool)
    gap = np.where(first_in_q, 0, gap)
    awaited = np.where(p.c_awaited >= 0, _moved(inv, np.maximum(p.c_awaited, 0)), NONE)
    blocked = p.c_blocked & (awaited >= 0)
    if n_g:
        b = np.flatnonzero(blocked)
        blocked[b] = call[awaited[b]] <= b   # its work was issued by then

    # segments: host calls up to and including each blocked call; a handed-off call begins one (its
    # waker, earlier in start order, has its end by then)
    b_idx = np.flatnonzero(blocked)
    woken = np.flatnonzero(p.c_wake >= 0)
    seg_end = np.r_[b_idx + 1, woken, n_c] if n_c else np.zeros(1, np.int64)
    seg_end = distinct(seg_end)
    # per queue: where each segment's activities begin and end (activities sorted by call in a queue)
    qs = np.flatnonzero(first_in_q)
    qe = np.r_[qs[1:], n_g]
    bounds = [lo + np.searchsorted(call[lo:hi], np.r_[-2, seg_end - 1], side="right") for lo, hi in zip(qs, qe)]
    seg_has_dep = np.zeros(len(seg_end), bool)
    if any_dep:
        gseg = np.searchsorted(seg_end, np.maximum(call, 0), side="right")
        intra = (dep >= 0) & (gseg[np.maximum(dep, 0)] == gseg)
        seg_has_dep[gseg[intra]] = True
    rank = None                                           # observed start order: a topological order (where
                                                          # a segment's queues wait for each other)

    c_s = np.zeros(n_c, np.int64)
    c_e = np.zeros(n_c, np.int64)
    g_s = np.zeros(n_g, np.int64)
    g_e = np.full(n_g, NEG, np.int64)
    cur = p.thread_start.copy()
    first_call = np.full(len(cur), -1, np.int64)
    if n_c and len(woken):   # (only a handed-off call asks whether it is its thread's first)
        first_call[g.c_thread[::-1]] = np.arange(n_c - 1, -1, -1)
    q_end = np.full(len(qs), NEG, np.int64)
    single_thread = bool((g.c_thread == g.c_thread[0]).all())
    a = 0
    for s, b in enumerate(seg_end):
        if b <= a:
            continue
        w = p.c_wake[a]
        if w >= 0:   # the thread waited for its work: it starts when the waker's call ended, plus the delay
            th = int(g.c_thread[a])
            first = a == first_call[th]   # a thread's first call: it begins with its work, not at a clock time
            start = int(c_e[w] + p.c_wdelay[a]) if first else max(int(cur[th]), int(c_e[w] + p.c_wdelay[a]))
            cur[th] = start - int(p.c_gap[a])   # (its own wait is no host work)
        # host: cumulative sums per thread
        if single_thread:
            th = int(g.c_thread[a])
            st = cur[th] + np.cumsum(p.c_gap[a:b] + p.c_dur[a:b]) - p.c_dur[a:b]
            c_s[a:b] = st
            c_e[a:b] = st + p.c_dur[a:b]
            cur[th] = c_e[b - 1]
        else:
            ths = g.c_thread[a:b]
            for th in distinct(ths):
                m = a + np.flatnonzero(ths == th)
                st = cur[th] + np.cumsum(p.c_gap[m] + p.c_dur[m]) - p.c_dur[m]
                c_s[m] = st
                c_e[m] = st + p.c_dur[m]
                cur[th] = c_e[m[-1]]
        # device: every queue's activities issued in this segment
        if n_g:
            if seg_has_dep[s]:
                lo_all = [bd[s] for bd in bounds]
                hi_all = [bd[s + 1] for bd in bounds]
                idx = np.concatenate([np.arange(lo, hi) for lo, hi in zip(lo_all, hi_all)])
                if rank is None:
                    rank = np.empty(n_g, np.int64)
                    rank[np.argsort(_take(order, g.g_start), kind="stable")] = np.arange(n_g)
                idx = idx[np.argsort(rank[idx], kind="stable")]
                _walk(idx, q, call, dur, lat, gap, dep, delay, fixed, c_s, g_s, g_e, q_end)
            else:
                for qi, bd in enumerate(bounds):
                    lo, hi = bd[s], bd[s + 1]
                    if hi <= lo:
                        continue
                    ready = np.where(call[lo:hi] >= 0, c_s[np.maximum(call[lo:hi], 0)] + lat[lo:hi], fixed[lo:hi])
                    d = dep[lo:hi]
                    has = d >= 0
                    if has.any():
                        ready = np.where(has, np.maximum(ready, g_e[np.maximum(d, 0)] + delay[lo:hi]), ready)
                    dd, gg = dur[lo:hi], gap[lo:hi]
                    incl = np.cumsum(dd + gg)
                    prev = incl - dd - gg
                    m = np.maximum.accumulate(ready - gg - prev)
                    m = np.maximum(m, q_end[qi])
                    e = incl + m
                    g_e[lo:hi] = e
                    g_s[lo:hi] = e - dd
                    q_end[qi] = e[-1]
        # the blocked call at the end of the segment
        last = b - 1
        if blocked[last]:
            end = max(c_s[last] + p.c_min[last], g_e[awaited[last]] + p.c_tail[last])
            c_e[last] = end
            cur[g.c_thread[last]] = end
        a = b
    ends = [g.span_start]
    if n_c:
        has_calls = np.zeros(len(cur), bool)
        has_calls[g.c_thread[0] if single_thread else g.c_thread] = True
        ends.append(int((cur + p.thread_tail)[has_calls].max()))
    if n_g:
        ends.append(int(g_e.max()))
    span = max(ends) - g.span_start
    busy = 0
    if n_g:
        busy = int(np.bincount(q, weights=dur).max()) if len(qs) > 1 else int(dur.sum())
    return Replayed(span_ns=int(span), gpu_busy_ns=busy, c_start=c_s, c_end=c_e, g_start=_take(inv, g_s),
                    g_end=_take(inv, g_e))


def _queue_order(g: Graph, p: Plan) -> np.ndarray | None:
    """The GPU activities' order by (queue, call, start), as np.lexsort's stable sort gives it; None where they lie
    in it already (the graph builds them so, and most levers move none): checked in one pass, no sort or gather."""
    n_g = len(g.g_row)
    q, c, s = p.g_queue, p.g_call, g.g_start
    if n_g < 2:
        return None
    same_q, same_c = q[1:] == q[:-1], c[1:] == c[:-1]
    in_order = (q[1:] > q[:-1]) | (same_q & ((c[1:] > c[:-1]) | (same_c & (s[1:] >= s[:-1]))))
    return None if in_order.all() else np.lexsort((s, c, q))


def _take(order: np.ndarray | None, a: np.ndarray) -> np.ndarray:
    """a[order]; `a` itself where the order is the graph's own (None)."""
    return a if order is None else a[order]


def _moved(inv: np.ndarray | None, a: np.ndarray) -> np.ndarray:
    """inv[a]: where the activities `a` (sorted positions) lie in the graph's order; `a` itself where that is the
    sorted order (inv None)."""
    return a if inv is None else inv[a]


def _walk(idx, q, call, dur, lat, gap, dep, delay, fixed, c_s, g_s, g_e, q_end) -> None:
    """Activity by activity, in observed start order (every dependency ends before its dependant)."""
    for i in idx.tolist():
        qi = q[i]
        c = call[i]
        ready = int(c_s[c] + lat[i]) if c >= 0 else int(fixed[i])
        d = dep[i]
        if d >= 0:
            ready = max(ready, int(g_e[d] + delay[i]))
        st = max(int(q_end[qi] + gap[i]), ready)
        en = st + int(dur[i])
        g_s[i], g_e[i] = st, en
        q_end[qi] = en
