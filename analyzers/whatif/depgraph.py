"""The dependency graph of a trace: what waited for what, with the observed costs on each edge.

Host side, per thread (pid, tid): its top-level CUDA API calls in order, each with its duration
and the stretch before it (`gap`), the stretch split into `issue` (dispatch of the op that makes
the call) and `host` (everything else: untraced Python, CPU-only ops, sleeping). A call that
returned only when GPU work ended is `blocked` on that activity (`awaited`): a sync, or a
blocking copy (synchronous API, or pageable memory) waiting for its own copy.

Device side, per queue (device, stream), in order: each activity's duration, and why it started
when it did, as three lower bounds whose maximum is the observed start:
    its launch call's start + launch-to-start latency `lat` (the observed one where the activity
        was waiting for its launch, the trace's typical one where it was queued),
    the previous activity's end + `gap` (the observed one where it was queued, at most the
        device's minimum gap otherwise),
    the end of an activity on another stream + `delay` (`dep`): an event record -> stream wait,
        found where the start is explained by neither of the above but lines up with that end.
Graph launches are launch calls with many activities; collectives are kernels whose duration
includes the wait for the other ranks (one trace holds one rank).

Replaying the graph unchanged gives back every observed time (tracetriage.analyzers.whatif.replay); a lever
(tracetriage.analyzers.whatif) edits the edges and replays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.idle import host_long_ns
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.constructs import is_range_name
from tracetriage.analyzers.model.cupti_rows import profiler_own_rows
from tracetriage.analyzers.model.groups import any_of, distinct, pair_groups
from tracetriage.analyzers.model.lockstep import lockstep_awaited
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.runtime_calls import (
    COPY_PREFIXES,
    LAUNCH_PREFIXES,
    SYNC_CALLS,
    UNMEASURED_LAUNCH_NS,
    is_graph_launch,
    median_launch_ns,
)
from tracetriage.analyzers.model.span import PROFILER_STEP, SPAN_CATEGORIES
from tracetriage.analyzers.model.trace import (
    CAT_CODES,
    CLOCK_TOL_NS,
    CPU_OP,
    DRIVER,
    GPU_CATS,
    KERNEL,
    MEMCPY,
    NONE,
    RUNTIME,
    USER_ANNOTATION,
    Trace,
    thread_keys,
)

SPAN_CATS = tuple(CAT_CODES[c] for c in SPAN_CATEGORIES)   # tracetriage.analyzers.model.span: one definition of
                                                           # the span
DEFAULT_LAT_NS = 5_000              # launch-to-start latency when no activity shows one
DEFAULT_MIN_GAP_NS = 1_000          # kernel-to-kernel gap when no back-to-back pair shows one
QUEUE_GAP_NS = 20_000               # a queued activity starts at most this long after its predecessor

# call kinds
OTHER_CALL, LAUNCH_CALL, COPY_CALL, SYNC_CALL = range(4)


@dataclass
class Graph:
    span_start: int
    span_end: int
    # host threads
    thread_start: np.ndarray     # int64 first traced moment of each thread that makes calls
    thread_tail: np.ndarray      # int64 time from its last call's end to its last traced moment
    # host calls, in order of start (all threads)
    c_row: np.ndarray            # row in trace.ev
    c_thread: np.ndarray         # index into thread_*
    c_start: np.ndarray
    c_dur: np.ndarray
    c_gap: np.ndarray            # from the thread's previous call end (or its start) to this call
    c_host: np.ndarray           # the part of c_gap that is not dispatch of this call's op
    c_kind: np.ndarray           # OTHER_CALL, LAUNCH_CALL, COPY_CALL, SYNC_CALL
    c_blocked: np.ndarray        # bool: returned when c_awaited ended
    c_awaited: np.ndarray        # index into g_* (NONE if not blocked)
    c_tail: np.ndarray           # call end - awaited end
    c_issues: np.ndarray         # bool: some GPU activity is linked to this call
    c_in_op: np.ndarray          # bool: made inside a cpu_op (else straight from Python: torch.cuda.synchronize())
    c_outer_op: np.ndarray       # row of the outermost cpu_op around the call (aten::item), NONE if none
    c_wake: np.ndarray           # index of the call on another thread that handed this thread its work (the
                                 # autograd engine's thread starting backward), NONE if none
    c_wdelay: np.ndarray         # this call's start - that call's end
    # GPU activities, in order of (queue, call, start)
    g_row: np.ndarray
    g_queue: np.ndarray          # index of (device, stream)
    g_device: np.ndarray
    g_cat: np.ndarray
    g_start: np.ndarray
    g_dur: np.ndarray
    g_call: np.ndarray           # index into c_*: its launch call, or the last call before it (unlinked)
    g_linked: np.ndarray         # bool
    g_pinned: np.ndarray         # bool: queued before the first call, it starts where it was traced (the first of a
                                 # backlog; the rest of it follows its queue)
    g_lat: np.ndarray
    g_gap: np.ndarray
    g_dep: np.ndarray            # index into g_* or NONE
    g_delay: np.ndarray
    g_nbytes: np.ndarray
    queue_keys: list             # (device, stream) per queue
    # measured quantities
    launch_cost_ns: int
    lat_typ_ns: int
    min_gap_ns: int
    min_gap_measured: bool
    host_long_ns: int

    @property
    def span_ns(self) -> int:
        return self.span_end - self.span_start

    @property
    def n_calls(self) -> int:
        return len(self.c_row)


def _thread_index(ev, rows) -> np.ndarray:
    """One small int per host thread (0, 1, ...: an index into the thread_* arrays, which go by thread key).
    np.unique's inverse, found by a search among the few threads (half the time of its argsort over the rows)."""
    keys = thread_keys(ev, rows)
    return np.searchsorted(distinct(keys), keys)


def build(trace: Trace) -> Graph:
    """The trace's dependency graph. This only runs the steps below in order, each from what the ones before
    it found: the span, the host threads' top-level calls, their kinds, the host work in their gaps, the GPU
    activities and why each started when it did, the calls blocked on GPU work, the hand-offs between
    threads."""
    ev = trace.ev
    span_rows, span_start, span_end = _span(trace)
    calls = _host_calls(trace, span_rows)
    kinds = _call_kinds(trace, calls)
    host_long = host_long_ns(kinds.launch_cost_ns)
    c_wake, c_wdelay = _handoffs(calls.start, calls.dur, calls.gap, calls.thread, calls.thread_start, host_long)
    gpu = _gpu_activities(trace, calls)
    blocked = _blocked_calls(trace, calls, kinds, gpu)
    host = _host_work(trace, calls, host_long, _handed_at(calls, c_wake, blocked.issues))
    return Graph(
        span_start=span_start, span_end=span_end, thread_start=calls.thread_start, thread_tail=calls.thread_tail,
        c_row=calls.row, c_thread=calls.thread, c_start=calls.start, c_dur=calls.dur, c_gap=calls.gap,
        c_host=host.host, c_kind=kinds.kind, c_blocked=blocked.blocked, c_awaited=blocked.awaited,
        c_tail=blocked.tail, c_issues=blocked.issues, c_in_op=host.in_op, c_outer_op=host.outer_op,
        c_wake=c_wake, c_wdelay=c_wdelay,
        g_row=gpu.row, g_queue=gpu.queue, g_device=ev.device[gpu.row], g_cat=ev.cat[gpu.row], g_start=gpu.start,
        g_dur=gpu.dur, g_call=gpu.call, g_linked=gpu.linked, g_pinned=gpu.pinned, g_lat=gpu.lat, g_gap=gpu.gap,
        g_dep=gpu.dep,
        g_delay=gpu.delay, g_nbytes=ev.nbytes[gpu.row], queue_keys=gpu.queue_keys,
        launch_cost_ns=kinds.launch_cost_ns, lat_typ_ns=gpu.lat_typ_ns, min_gap_ns=gpu.min_gap_ns,
        min_gap_measured=gpu.min_gap_measured, host_long_ns=host_long,
    )


# --- 1. the span ---------------------------------------------------------------------------------------

def _span(trace: Trace) -> tuple[np.ndarray, int, int]:
    """The rows of the traced span (tracetriage.analyzers.model.span: never the profiler's own ProfilerStep#
    ranges, which wrap the user's work with its step bookkeeping), and its first start and last end."""
    ev = trace.ev
    span_rows = np.flatnonzero(any_of(ev.cat, SPAN_CATS))
    if len(span_rows):
        ann = span_rows[ev.cat[span_rows] == USER_ANNOTATION]
        if len(ann):
            step = name_flags(trace, ann, lambda n: n.startswith(PROFILER_STEP))
            span_rows = np.setdiff1d(span_rows, ann[step], assume_unique=True)
    span_start = int(ev.start[span_rows].min()) if len(span_rows) else 0
    span_end = int(ev.end[span_rows].max()) if len(span_rows) else 0
    return span_rows, span_start, span_end


# --- 2. the host threads and their top-level calls ---------------------------------------------------

@dataclass(frozen=True)
class _HostCalls:
    row: np.ndarray              # the top-level calls' rows, in order of start (all threads)
    thread: np.ndarray           # each call's thread index
    start: np.ndarray
    end: np.ndarray
    dur: np.ndarray
    gap: np.ndarray              # from the thread's previous call end (or its start) to this call
    index_of_row: np.ndarray     # for every row of the trace: the index of the top-level call it is (or is
                                 # nested in), NONE where it is no call
    thread_start: np.ndarray     # each thread's first traced moment (0: a thread that makes no call)
    thread_tail: np.ndarray      # from each thread's last call's end to its last traced moment


def _host_calls(trace: Trace, span_rows: np.ndarray) -> _HostCalls:
    ev = trace.ev
    host_rows = span_rows[~any_of(ev.cat[span_rows], GPU_CATS)]
    all_calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    keys = np.concatenate([host_rows, all_calls])
    tkey = _thread_index(ev, keys) if len(keys) else np.zeros(0, np.int64)
    h_thread, c_thread_all = tkey[: len(host_rows)], tkey[len(host_rows):]
    # a call nested in another call of its thread (a runtime call wrapping a driver call) is
    # part of its parent: its GPU activity is credited to the parent
    order = np.lexsort((-ev.end[all_calls], ev.start[all_calls], c_thread_all))
    calls_s, thr_s = all_calls[order], c_thread_all[order]
    top = np.ones(len(calls_s), bool)
    parent_of = np.arange(len(calls_s))
    for t in distinct(thr_s):
        m = np.flatnonzero(thr_s == t)          # contiguous: sorted by thread first
        ends = ev.end[calls_s[m]]
        prev_run = np.r_[np.iinfo(np.int64).min, np.maximum.accumulate(ends)[:-1]]
        top[m] = ev.start[calls_s[m]] >= prev_run
        parent_of[m] = m[np.maximum.accumulate(np.where(top[m], np.arange(len(m)), 0))]
    # global call order: by start (ties: by thread)
    top_pos = np.flatnonzero(top)
    c_row0 = calls_s[top_pos]
    c_thr0 = thr_s[top_pos]
    gorder = np.lexsort((c_thr0, ev.start[c_row0]))
    c_row, c_thread = c_row0[gorder], c_thr0[gorder]
    # map every call row (nested ones too) to its index among the top-level calls
    idx_of_top = np.empty(len(top_pos), np.int64)
    idx_of_top[gorder] = np.arange(len(gorder))
    pos_in_top = np.cumsum(top) - 1           # for each sorted call: its top-level position
    call_index_of_row = np.full(len(ev), NONE, np.int64)
    if len(calls_s):
        call_index_of_row[calls_s] = idx_of_top[pos_in_top[parent_of]]

    n_threads = int(tkey.max()) + 1 if len(tkey) else 0
    c_start, c_end = ev.start[c_row], ev.end[c_row]
    c_dur = c_end - c_start
    thread_first = np.full(n_threads, np.iinfo(np.int64).max, np.int64)
    thread_last = np.full(n_threads, np.iinfo(np.int64).min, np.int64)
    if len(host_rows):
        np.minimum.at(thread_first, h_thread, ev.start[host_rows])
        np.maximum.at(thread_last, h_thread, ev.end[host_rows])
    if len(c_row):
        np.minimum.at(thread_first, c_thread, c_start)
        np.maximum.at(thread_last, c_thread, c_end)
    # previous call end on the same thread
    prev_end = np.empty(len(c_row), np.int64)
    last_call_end = np.full(n_threads, np.iinfo(np.int64).min, np.int64)
    if len(c_row):
        by_t = np.lexsort((c_start, c_thread))
        t_sorted = c_thread[by_t]
        first = np.r_[True, t_sorted[1:] != t_sorted[:-1]]
        pe = np.r_[0, c_end[by_t][:-1]]
        pe[first] = thread_first[t_sorted[first]]
        prev_end[by_t] = pe
        last = np.r_[t_sorted[1:] != t_sorted[:-1], True]
        last_call_end[t_sorted[last]] = c_end[by_t][last]
    c_gap = c_start - prev_end
    has_calls = last_call_end > np.iinfo(np.int64).min
    thread_tail = np.where(has_calls, thread_last - last_call_end, 0)
    thread_start = np.where(has_calls, thread_first, 0)
    return _HostCalls(row=c_row, thread=c_thread, start=c_start, end=c_end, dur=c_dur, gap=c_gap,
                      index_of_row=call_index_of_row, thread_start=thread_start, thread_tail=thread_tail)


# --- 3. call kinds, and what a launch costs --------------------------------------------------------

@dataclass(frozen=True)
class _CallKinds:
    kind: np.ndarray             # OTHER_CALL, LAUNCH_CALL, COPY_CALL, SYNC_CALL
    is_sync: np.ndarray
    is_copy: np.ndarray
    is_sync_api: np.ndarray      # a call whose API returns when its work is done (no "Async" in its name)
    launch_cost_ns: int          # the median launch call, where the trace has one
    awaited: np.ndarray          # per call, the kernel row a launch returned with (model.lockstep), else NONE


def _call_kinds(trace: Trace, calls: _HostCalls) -> _CallKinds:
    c_row = calls.row
    is_sync = name_flags(trace, c_row, lambda n: n in SYNC_CALLS and not n.startswith(COPY_PREFIXES))
    is_copy = name_flags(trace, c_row, lambda n: n.startswith(COPY_PREFIXES))
    is_launch = name_flags(trace, c_row, lambda n: n.startswith(LAUNCH_PREFIXES))
    is_sync_api = name_flags(trace, c_row, lambda n: "Async" not in n)
    c_kind = np.full(len(c_row), OTHER_CALL, np.int8)
    c_kind[is_launch] = LAUNCH_CALL
    c_kind[is_copy] = COPY_CALL
    c_kind[is_sync] = SYNC_CALL
    graph = name_flags(trace, c_row[is_launch], is_graph_launch)
    # a launch that returned when a kernel ended waited for the GPU: not what a launch costs (model.lockstep)
    awaited = np.full(len(c_row), NONE, np.int64)
    awaited[is_launch] = lockstep_awaited(trace, c_row[is_launch])
    waited = awaited[is_launch] != NONE
    measured = median_launch_ns(calls.dur[is_launch][~waited], graph[~waited]) if not waited.all() else None
    launch_cost = measured if measured is not None else UNMEASURED_LAUNCH_NS
    return _CallKinds(kind=c_kind, is_sync=is_sync, is_copy=is_copy, is_sync_api=is_sync_api,
                      launch_cost_ns=launch_cost, awaited=awaited)


# --- 4. host work in each gap: long stretches with no call and no op that makes one ---------------

@dataclass(frozen=True)
class _HostWork:
    host: np.ndarray             # the part of each call's gap that is not dispatch of its op
    in_op: np.ndarray            # bool: made inside a cpu_op
    outer_op: np.ndarray         # row of the outermost cpu_op around the call, NONE if none


def _handed_at(calls: _HostCalls, c_wake: np.ndarray, c_issues: np.ndarray) -> np.ndarray:
    """Per call, when the GPU work it issues was handed to its thread: the end of its waker's call (step 7) where that
    call issued GPU work itself (the autograd engine's thread running the backward while the forward's thread waits),
    else 0: a waker that issued none (a DataLoader's pin-memory thread pinning a batch) handed over data the thread
    waited for, and that wait stays the host work a fix moves off the loop."""
    woken = (c_wake >= 0) & c_issues[np.maximum(c_wake, 0)]
    out = np.zeros(len(c_wake), np.int64)
    out[woken] = calls.start[c_wake[woken]] + calls.dur[c_wake[woken]]
    return out


def _host_work(trace: Trace, calls: _HostCalls, host_long: int, handed_at: np.ndarray) -> _HostWork:
    """The long stretches of each call's gap with no call and no op that makes one: the host work the call
    waited for (the rest of a gap is dispatch and interpreter glue between the ops that issue GPU work). A call
    another thread handed its work by issuing GPU work counts only what follows the hand-over: before it the
    thread waited for the other's work (the forward's thread sitting in torch.autograd.backward while the engine's
    thread runs the backward, the engine's thread idle through the forward), which is no host work: leimao's eager
    MLP had 18.5 ms of such waits priced as host work in a 17.5 ms span."""
    ev = trace.ev
    c_row, c_thread, c_start, c_end = calls.row, calls.thread, calls.start, calls.end
    c_host = np.zeros(len(c_row), np.int64)
    c_in_op = np.zeros(len(c_row), bool)
    c_outer_op = np.full(len(c_row), NONE, np.int64)
    op_rows = np.flatnonzero(ev.cat == CPU_OP)
    # torch 1.x records ProfilerStep#, the DataLoader's __next__ and the optimizer's step as cpu_ops: ranges, which
    # cut untraced time like user ranges do, never an op whose extent covers (and hides) the host work inside it
    ranged = name_flags(trace, op_rows, is_range_name) if len(op_rows) else np.zeros(0, bool)
    op_rows, range_ops = op_rows[~ranged], op_rows[ranged]
    own = profiler_own_rows(trace)
    if len(c_row):
        ann_rows = np.sort(np.concatenate([np.flatnonzero(ev.cat == USER_ANNOTATION), range_ops]))
        okey = _thread_index(ev, np.concatenate([op_rows, ann_rows, c_row]))
        o_thr, a_thr = okey[: len(op_rows)], okey[len(op_rows): len(op_rows) + len(ann_rows)]
        cc_thr = okey[len(op_rows) + len(ann_rows):]
        for t in distinct(cc_thr):
            m = np.flatnonzero(cc_thr == t)              # this thread's calls, in start order
            ops = op_rows[o_thr == t]
            s_, e_ = ev.start[ops], ev.end[ops]
            top_s, top_e = iv.union(s_, e_)
            k = np.searchsorted(c_start[m], top_s, side="left")   # the first call at or after each extent
            issuing = k != np.searchsorted(c_start[m], top_e, side="left")   # some call inside
            if len(top_s):
                j = np.searchsorted(top_s, c_start[m], side="right") - 1
                c_in_op[m] = (j >= 0) & (c_start[m] < top_e[np.maximum(j, 0)])
                top_row = ops[np.searchsorted(s_, top_s)]   # rows sort by (start, -end): first is outermost
                c_outer_op[m] = np.where(c_in_op[m], top_row[np.maximum(j, 0)], NONE)
            # user ranges cut untraced time: the Python inside a step and the loop between steps are
            # two stretches, not one (only the first is the user's host work)
            ann = ann_rows[a_thr == t]
            cuts = np.concatenate([ev.start[ann], ev.end[ann]])
            # the profiler's own work (CUPTI's Activity Buffer Request, a row of its own) is no host work of
            # the program's: no lever moves it (a first launch waiting 3 ms for a trace buffer)
            cov_s, cov_e = iv.union(np.concatenate([top_s[issuing], c_start[m], cuts, ev.start[own]]),
                                    np.concatenate([top_e[issuing], c_end[m], cuts, ev.end[own]]))
            lo = int(calls.thread_start[c_thread[m[0]]])
            gs, ge = iv.complement(cov_s, cov_e, lo, int(c_start[m[-1]]))
            long_ = ge - gs >= host_long
            w = np.searchsorted(c_start[m], ge, side="left")
            ok = w < len(m)
            to, s_from = m[w[ok]], np.maximum(gs[ok], handed_at[m[w[ok]]])
            held = ge[ok] - s_from
            long_ = held >= host_long
            np.add.at(c_host, to[long_], held[long_])
    c_host = np.minimum(c_host, np.maximum(calls.gap, 0))
    return _HostWork(host=c_host, in_op=c_in_op, outer_op=c_outer_op)


# --- 5. GPU activities, and why each started when it did -------------------------------------------

@dataclass(frozen=True)
class _GpuActivities:
    row: np.ndarray              # in order of (queue, call, start)
    queue: np.ndarray            # index of (device, stream)
    call: np.ndarray             # index into the calls: its launch call, or the last call before it (unlinked)
    linked: np.ndarray
    pinned: np.ndarray           # before the first call, at its traced start (not a backlog that follows its queue)
    start: np.ndarray
    end: np.ndarray
    dur: np.ndarray
    lat: np.ndarray
    gap: np.ndarray
    dep: np.ndarray              # index into these activities or NONE
    delay: np.ndarray
    queue_keys: list             # (device, stream) per queue
    lat_typ_ns: int
    min_gap_ns: int
    min_gap_measured: bool


def _gpu_activities(trace: Trace, calls: _HostCalls) -> _GpuActivities:
    ev = trace.ev
    c_start = calls.start
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS))
    q_dev, q_stream, g_queue0 = pair_groups(ev.device[gpu].astype(np.int64), ev.stream[gpu])
    lrow = trace.launch_of[gpu]
    linked = lrow != NONE
    g_call0 = np.where(linked, calls.index_of_row[np.maximum(lrow, 0)], NONE)
    linked &= g_call0 != NONE
    # unlinked activity: anchored to the last call that started before it (so it moves with the host) ...
    anchor = np.searchsorted(c_start, ev.start[gpu], side="right") - 1
    # ... but a stream runs its work in the order it was queued: an activity that ran before a linked one on its
    # queue was queued before that one's launch call, so it is anchored before that call too. Else a backlog queued
    # before the window (the unrecorded steps' kernels) sorts behind the window's own launches on its queue, and
    # the queue's order, its gaps and the launch latency measured from them are those of a shuffled queue
    # (trace_with_manual_capture: 75 backlog kernels anchored to calls made while they ran put every graph-replayed
    # kernel 2-5 ms "late" after its launch, pinned there under every lever)
    anchor = np.minimum(anchor, _before_next_linked(g_queue0, ev.start[gpu], np.where(linked, g_call0, NONE)))
    g_call0 = np.where(linked, g_call0, anchor)
    o = np.lexsort((ev.start[gpu], g_call0, g_queue0))
    g_row, g_queue, g_call, g_linked = gpu[o], g_queue0[o], g_call0[o], linked[o]
    g_start, g_end = ev.start[g_row], ev.end[g_row]
    g_dur = g_end - g_start
    n_g = len(g_row)
    first_in_q = np.r_[True, g_queue[1:] != g_queue[:-1]] if n_g else np.zeros(0, bool)
    prev_end_g = np.r_[0, g_end[:-1]] if n_g else np.zeros(0, np.int64)
    big = np.int64(1) << 50
    g_prev_gap = np.where(first_in_q, big, g_start - prev_end_g)
    call_start = np.where(g_call >= 0, c_start[np.maximum(g_call, 0)], g_start)
    lat_obs = g_start - call_start
    waited = g_linked & (g_prev_gap > 5_000)
    # where no launched activity found its queue idle, each one's start after its call bounds the latency from above
    # only (it waited behind the work before it): a host that runs milliseconds ahead would otherwise make that wait
    # the "typical latency", and every kernel would keep it under every lever
    lat_typ = int(np.median(lat_obs[waited])) if waited.any() else (
        min(int(np.median(lat_obs[g_linked])), DEFAULT_LAT_NS) if g_linked.any() else DEFAULT_LAT_NS)
    lat_typ = max(lat_typ, 0)
    late_tol = max(CLOCK_TOL_NS, lat_typ // 2)
    # issued while the device was still busy with the previous activity on the queue
    busy_at_issue = g_linked & ~first_in_q & (call_start + lat_typ <= prev_end_g + CLOCK_TOL_NS)
    on_time = ~g_linked | (lat_obs <= lat_typ + late_tol)
    # the device's minimum kernel-to-kernel gap: kernels queued behind a kernel
    kk = (ev.cat[g_row] == KERNEL) & busy_at_issue & (g_prev_gap >= 0)
    kk[1:] &= ev.cat[g_row][:-1] == KERNEL
    if kk.sum() >= 5:
        min_gap, measured = int(np.percentile(g_prev_gap[kk], 5)), True
    else:
        min_gap, measured = DEFAULT_MIN_GAP_NS, False
    min_gap = max(min_gap, 0)
    queued = ~on_time & busy_at_issue & (g_prev_gap <= QUEUE_GAP_NS)
    g_lat = np.where(on_time, lat_obs, np.minimum(lat_obs, lat_typ))
    g_gap = np.where(queued, g_prev_gap, np.minimum(g_prev_gap, min_gap))
    # waiting for another stream: the start lines up with the end of an activity elsewhere
    g_dep = np.full(n_g, NONE, np.int64)
    g_delay = np.zeros(n_g, np.int64)
    cand = np.flatnonzero(~queued & ~on_time)
    if len(cand) and len(q_dev) > 1:
        explained = np.maximum(np.where(first_in_q, 0, prev_end_g), call_start + lat_typ)
        dev = ev.device[g_row]
        for q in distinct(g_queue[cand]):
            cq = cand[g_queue[cand] == q]
            other = np.flatnonzero((g_queue != q) & (dev == dev[cq[0]]))
            if not len(other):
                continue
            oi = other[np.argsort(g_end[other], kind="stable")]
            oe = g_end[oi]
            k = np.searchsorted(oe, g_start[cq] + CLOCK_TOL_NS, side="right") - 1
            kk_ = np.maximum(k, 0)
            ok = (k >= 0) & (oe[kk_] >= explained[cq] - CLOCK_TOL_NS)
            hit = cq[ok]
            g_dep[hit] = oi[kk_[ok]]
            g_delay[hit] = g_start[hit] - g_end[g_dep[hit]]
    # the rest: a long device-side gap after a busy queue, else a launch that took long to start. An activity that
    # started only once its launch call returned, its queue drained before that, waited for the call, not for the
    # device, however busy the queue was when the call began: a first launch loading its kernel's module (heldout-user15
    # switch_moe_128tok: 18.5 ms calls whose kernels kept 81 ms of "device-side gaps" that no warm-up shortened)
    call_end = np.where(g_call >= 0, c_start[np.maximum(g_call, 0)] + calls.dur[np.maximum(g_call, 0)], g_start)
    after_call = g_linked & (g_start + CLOCK_TOL_NS >= call_end) & (prev_end_g < call_end)
    rest = ~on_time & ~queued & (g_dep == NONE)
    device_side = rest & busy_at_issue & ~after_call
    g_gap = np.where(device_side, g_prev_gap, g_gap)
    g_lat = np.where(rest & ~device_side, lat_obs, g_lat)
    # a backlog the host queued before the traced window (or out of sight): an unlinked activity that starts behind
    # its queue's previous one, whose anchor call began before that one ended, waited for that one, not for a clock
    # time. It follows it (at the observed gap) rather than keeping its traced offset from the call, so a lever that
    # shortens the backlog moves what waits for it (the sync that drains warm-up steps' kernels at the window's
    # start: vit_fp32_train-before's 143 ms stayed 143 ms under autocast_bf16).
    # An activity queued before the first traced call (no call to anchor it) that runs behind the one before it is
    # such a backlog too: it follows that one, where the first of the queue keeps its traced start (kernels_2x on
    # trace_with_manual_capture left 2 ms of the unrecorded steps' kernels where they ran, at full length)
    # A start a hair before the previous one's end (-128 ns: a split-K reduce behind its GEMM, programmatic launch or
    # the clock's grain) is behind it too: fresh9 whisper_decode_reencodes_audio's two such kernels in 103 ms of
    # pre-window backlog kept their traced offsets (56 ms, 102 ms) from the draining sync, and every lever with them
    backlog = (~g_linked & ~first_in_q & ((g_call < 0) | (call_start <= prev_end_g + CLOCK_TOL_NS))
               & (g_prev_gap >= -CLOCK_TOL_NS) & (g_prev_gap <= QUEUE_GAP_NS))
    g_lat = np.where(backlog, 0, g_lat)
    g_gap = np.where(backlog, g_prev_gap, g_gap)
    pinned = (g_call < 0) & ~backlog
    g_gap = np.where(first_in_q, 0, g_gap)
    return _GpuActivities(row=g_row, queue=g_queue, call=g_call, linked=g_linked, pinned=pinned, start=g_start,
                          end=g_end, dur=g_dur, lat=g_lat, gap=g_gap, dep=g_dep, delay=g_delay,
                          queue_keys=list(zip(q_dev.tolist(), q_stream.tolist())), lat_typ_ns=lat_typ,
                          min_gap_ns=min_gap, min_gap_measured=measured)


def _before_next_linked(queue: np.ndarray, start: np.ndarray, call: np.ndarray) -> np.ndarray:
    """Per activity: the call before the earliest launch call among the linked activities that start after it on its
    queue (`call` NONE for an unlinked activity), the last call index a FIFO queue lets it have been queued by; the
    largest int where none follows."""
    n = len(queue)
    out = np.full(n, np.iinfo(np.int64).max, np.int64)
    if not n:
        return out
    o = np.lexsort((start, queue))
    q, c = queue[o], np.where(call[o] >= 0, call[o], np.iinfo(np.int64).max)
    # a suffix minimum within each queue (reversed: a running minimum that restarts at each queue's end)
    rq, rc = q[::-1], c[::-1]
    after = np.full(n, np.iinfo(np.int64).max, np.int64)
    for lo, hi in _runs(rq):
        run = np.minimum.accumulate(rc[lo:hi])
        after[lo + 1:hi] = run[:-1]             # strictly after: the activities later on the queue
    after = after[::-1]
    out[o] = np.where(after < np.iinfo(np.int64).max, after - 1, after)
    return out


def _runs(keys: np.ndarray) -> list[tuple[int, int]]:
    """The [lo, hi) bounds of each run of equal keys in a sorted array."""
    cut = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    edges = np.r_[0, cut, len(keys)]
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


# --- 6. calls blocked on GPU work -----------------------------------------------------------------

@dataclass(frozen=True)
class _Blocked:
    blocked: np.ndarray          # bool: returned when `awaited` ended
    awaited: np.ndarray          # index into the GPU activities (NONE if not blocked)
    tail: np.ndarray             # call end - awaited end
    issues: np.ndarray           # bool: some GPU activity is linked to this call


def _blocked_calls(trace: Trace, calls: _HostCalls, kinds: _CallKinds, gpu: _GpuActivities) -> _Blocked:
    ev = trace.ev
    c_row, c_start, c_end = calls.row, calls.start, calls.end
    g_row, g_call, g_linked, g_end = gpu.row, gpu.call, gpu.linked, gpu.end
    n_g = len(g_row)
    c_blocked = np.zeros(len(c_row), bool)
    c_awaited = np.full(len(c_row), NONE, np.int64)
    if n_g and len(c_row):
        pos_of_gpu_row = np.full(len(ev), NONE, np.int64)
        pos_of_gpu_row[g_row] = np.arange(n_g)
        # a copy call waits for its own copy when the API is synchronous or the memory pageable
        copy_rows = g_row[(ev.cat[g_row] == MEMCPY) & g_linked]
        if len(copy_rows):
            cp = pos_of_gpu_row[copy_rows]
            pageable = name_flags(trace, copy_rows, lambda n: "Pageable" in n)
            ci = g_call[cp]
            blocks = (pageable | kinds.is_sync_api[ci]) & (kinds.is_copy[ci]) & (c_end[ci] + CLOCK_TOL_NS >= g_end[cp])
            c_blocked[ci[blocks]] = True
            c_awaited[ci[blocks]] = cp[blocks]
        # a sync waits for the last GPU activity to end while it was in the call
        si = np.flatnonzero(kinds.is_sync)
        if len(si):
            eo = np.argsort(g_end, kind="stable")
            es = g_end[eo]
            k = np.searchsorted(es, c_end[si] + CLOCK_TOL_NS, side="right") - 1
            ok = (k >= 0)
            kk_ = np.maximum(k, 0)
            ok &= es[kk_] > c_start[si] + CLOCK_TOL_NS
            aw = eo[kk_]
            ok &= g_call[aw] <= si          # issued no later than the sync
            c_blocked[si[ok]] = True
            c_awaited[si[ok]] = aw[ok]
        # a launch that returned when a kernel on its stream ended (model.lockstep): blocked on that kernel, so a
        # faster kernel or fewer of them shorten it, and a launch made without it costs a launch
        li = np.flatnonzero(kinds.kind == LAUNCH_CALL)
        aw_row = kinds.awaited[li]
        ok = aw_row != NONE
        ok[ok] = pos_of_gpu_row[aw_row[ok]] != NONE
        if ok.any():
            c_blocked[li[ok]] = True
            c_awaited[li[ok]] = pos_of_gpu_row[aw_row[ok]]
    c_tail = np.where(c_blocked, c_end - g_end[np.maximum(c_awaited, 0)] if n_g else 0, 0)
    c_issues = np.zeros(len(c_row), bool)
    c_issues[g_call[g_linked]] = True
    return _Blocked(blocked=c_blocked, awaited=c_awaited, tail=c_tail, issues=c_issues)


# --- 7. work handed from one host thread to another ---------------------------------------------------

def _handoffs(c_start: np.ndarray, c_dur: np.ndarray, c_gap: np.ndarray, c_thread: np.ndarray,
              thread_start: np.ndarray, long_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """Work handed from one host thread to another: a call after a long wait on its thread whose waiting
    another thread filled with calls and then went quiet (the forward's thread starting the autograd
    engine's thread on backward, and taking over again for the optimizer step), and the first call of a
    thread that started after another thread's calls. The woken call starts when the waker's last call
    ended, plus what the trace shows between them, not after its own wait."""
    n = len(c_start)
    wake = np.full(n, NONE, np.int64)
    wdelay = np.zeros(n, np.int64)
    if n == 0 or len(distinct(c_thread)) < 2:
        return wake, wdelay
    c_end = c_start + c_dur
    by_end = np.argsort(c_end, kind="stable")
    ends_sorted = c_end[by_end]
    # each call's next call on its own thread (to see that the waker went quiet)
    order = np.lexsort((c_start, c_thread))
    nxt = np.full(n, np.iinfo(np.int64).max, np.int64)
    same = c_thread[order][1:] == c_thread[order][:-1]
    nxt[order[:-1][same]] = c_start[order[1:][same]]
    first_of_thread = np.zeros(n, bool)
    first_of_thread[order[np.r_[True, ~same]]] = True
    begun = thread_start[c_thread]
    late_thread = first_of_thread & (begun > begun.min())       # a thread that began after the first one
    cand = np.flatnonzero((c_gap >= long_ns) | late_thread)
    k = np.searchsorted(ends_sorted, c_start[cand], side="right") - 1
    # the latest call on another thread that ended before this one began, inside this call's wait: the last
    # call ended by then, or, where that one is on the candidate's own thread, the call before its run of
    # same-thread calls (in end order)
    thr_by_end = c_thread[by_end]
    run_start = np.maximum.accumulate(np.where(np.r_[True, thr_by_end[1:] != thr_by_end[:-1]], np.arange(n), 0))
    kc = np.maximum(k, 0)
    j = np.where(thr_by_end[kc] == c_thread[cand], run_start[kc] - 1, kc)
    cand, j = cand[(k >= 0) & (j >= 0)], j[(k >= 0) & (j >= 0)]
    w = by_end[j]
    hand = (first_of_thread[cand] | (c_end[w] > c_start[cand] - c_gap[cand])) & (nxt[w] > c_start[cand])
    wake[cand[hand]] = w[hand]
    wdelay[cand[hand]] = c_start[cand[hand]] - c_end[w[hand]]
    return wake, wdelay
