"""Idle gaps: when no kernel runs on a device, and why.

Compute idle on a device is the part of its active span (first to last GPU
activity) where no kernel runs on any stream. Each idle interval gets exactly one
cause, split where the cause changes:

data_transfer    a copy (memcpy/memset) occupies the device, or the host is inside
                 a blocking host->device copy call (pageable staging) that feeds
                 the next activity.
synchronization  the host sat in a sync (cuda*Synchronize, a blocking D2H copy
                 behind .item()/.cpu()/nonzero) when the device drained; the idle
                 runs from the drain until new work arrives.
launch_overhead  the next work was already issued when the device went idle
                 (device-side launch latency), or the host was issuing it: the
                 stretch is short or spent in framework dispatch and launch calls.
host_work        the host did something that issues no GPU work (untraced Python,
                 numpy, sleeping, CPU-only aten ops) for much longer than a launch.
other            no launch call found for the next work (unlinked), and the rest.

The thresholds are in units of the trace's own launch cost, not tuned constants:
"much longer than a launch" is HOST_LONG_LAUNCHES times the median launch call.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analyzers import intervals as iv
from analyzers import runtime_calls as rc
from analyzers.trace import (CPU_OP, DRIVER, GPU_CATS, KERNEL, MEMCPY, NONE, RUNTIME, Trace)

CAUSES = ("launch_overhead", "host_work", "synchronization", "data_transfer", "other")
LAUNCH, HOST, SYNC, TRANSFER, OTHER = range(5)

HOST_LONG_LAUNCHES = 10        # a host stretch this many launches long is "much longer than a launch"
HOST_LONG_FLOOR_NS = 50_000    # ... and never under 50 µs (a slow launch call is still a launch)
SETUP_FLOOR_NS = 1_000_000     # a quiet stretch inside an issuing op this long is set-up, not dispatch
CLOCK_TOL_NS = 2_000           # CPU and GPU clocks are aligned by CUPTI to within ~µs

# CUDA and HIP call names alike (analyzers.runtime_calls)
SYNC_CALLS = rc.SYNC_CALLS
LAUNCH_CALL_PREFIXES = rc.LAUNCH_PREFIXES
MEMCPY_CALL_PREFIXES = rc.COPY_PREFIXES
# cudaFree synchronizes implicitly, but one that holds the host for milliseconds while the device
# already idles is the allocator (or the context's first initialisation), not a drain
_ALLOCATOR_CALLS = {"cudaFree", "cudaFreeHost", "hipFree", "hipHostFree", "hipFreeHost"}
FALLBACK_LAUNCH_NS = 5_000     # thresholds only, when the trace has no launch call to measure; never printed

FIRST_EXPERIMENT = {
    "launch_overhead": "fuse the small kernels: torch.compile, CUDA graphs (mode='reduce-overhead'), "
                       "or a bigger batch per launch",
    "host_work": "move the host work off the critical path: DataLoader workers / prefetch, overlap it with "
                 "queued GPU work, then profile the host itself with py-spy",
    "synchronization": "remove or defer the sync: drop .item()/.cpu()/torch.cuda.synchronize() from the loop, "
                       "keep decisions on the device, read values once per N steps",
    "data_transfer": "pin host memory and copy with non_blocking=True on a side stream to overlap compute, "
                     "or keep the data resident on the device",
    "other": "look at the trace edges and unlinked events; this bucket should stay small",
}


@dataclass
class Gaps:
    """Every idle interval with its cause: what a timeline view colours and a grader quotes."""
    device: np.ndarray     # int32
    start: np.ndarray      # int64 ns
    end: np.ndarray        # int64 ns
    cause: np.ndarray      # int8 index into CAUSES
    next_row: np.ndarray   # the GPU activity that ended the gap (row in trace.ev), NONE if none
    host_row: np.ndarray   # the host call that explains it (sync, copy or launch call), NONE if none

    def __len__(self) -> int:
        return len(self.start)

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start

    def cause_names(self) -> list[str]:
        return [CAUSES[c] for c in self.cause]


@dataclass
class DeviceIdle:
    device: int
    span_start: int
    span_end: int
    kernel_busy_ns: int
    copy_ns: int
    idle_ns: int
    by_cause_ns: dict[str, int]
    gaps: Gaps
    evidence: dict[str, dict] = field(default_factory=dict)

    @property
    def span_ns(self) -> int:
        return self.span_end - self.span_start

    @property
    def dominant(self) -> str | None:
        if self.idle_ns <= 0:
            return None
        return max(self.by_cause_ns, key=lambda c: self.by_cause_ns[c])


def _empty_gaps() -> Gaps:
    z = np.empty(0, np.int64)
    return Gaps(z.astype(np.int32), z, z, z.astype(np.int8), z, z)


def setup_long_ns(launch_cost_ns: int) -> int:
    """A quiet stretch inside an issuing op this long is set-up, not dispatch. Framework code
    between the launches of one op (a compiled graph's wrapper, guards, an optimizer's Python)
    runs up to a few hundred µs; library set-up (cuBLAS handles, lazy module loading) for ms."""
    return max(SETUP_FLOOR_NS, 100 * launch_cost_ns)


def host_long_ns(launch_cost_ns: int) -> int:
    """'Much longer than a launch': HOST_LONG_LAUNCHES launch calls, and never under the floor."""
    return max(HOST_LONG_FLOOR_NS, HOST_LONG_LAUNCHES * launch_cost_ns)


@dataclass
class _HostContext:
    """Per-process lookups used to explain host-caused gaps."""
    sync_s: np.ndarray       # sync-like host calls, sorted by start
    sync_e_max: np.ndarray   # running max of their ends
    sync_arg: np.ndarray     # row of the call holding that running max
    sync_is_h2d: np.ndarray  # bool per sync row index (by position): a blocking H->D copy (staging)
    issue_by_tid: dict       # tid -> (starts, ends) union of host intervals that issue GPU work
    busy_by_tid: dict        # tid -> (starts, ends) union of all traced host activity
    launch_cost_ns: int
    top_by_tid: dict = None  # tid -> (starts, ends, rows) of the outermost cpu_ops
    launch_measured: bool = True   # False: launch_cost_ns is FALLBACK_LAUNCH_NS, not a median of this trace
    setup_rows: np.ndarray = None  # API calls that held the host for set-up-long stretches (not syncs/copies)
    copy_call_s: np.ndarray = None   # blocking (pageable or synchronous) copy calls: starts, sorted
    copy_call_e: np.ndarray = None
    copy_call_rows: np.ndarray = None
    wait_calls: dict = None          # tid -> (starts, rows) of stream-wait calls, sorted

    def outermost(self, trace: Trace, rows: np.ndarray) -> np.ndarray:
        """The outermost cpu_op around each op row (aten::item around aten::_local_scalar_dense)."""
        out = rows.copy()
        for tid in np.unique(trace.ev.tid[rows]):
            s_, e_, r_ = self.top_by_tid.get(int(tid), (None, None, None))
            if s_ is None or len(s_) == 0:
                continue
            m = trace.ev.tid[rows] == tid
            k = np.searchsorted(s_, trace.ev.start[rows[m]], side="right") - 1
            ok = (k >= 0) & (trace.ev.start[rows[m]] < e_[np.maximum(k, 0)])
            sub = out[m]
            sub[ok] = r_[k[ok]]
            out[m] = sub
        return out


def _name_flags(trace: Trace, rows: np.ndarray, test) -> np.ndarray:
    """test(name) for each row, evaluated once per distinct name (a trace has ~100 of them)."""
    ids, inv = np.unique(trace.ev.name[rows], return_inverse=True)
    return np.array([bool(test(trace.names[i])) for i in ids], dtype=bool)[inv] if len(rows) else \
        np.zeros(0, dtype=bool)


def _host_context(trace: Trace) -> _HostContext:
    ev, names = trace.ev, trace.names
    is_call = np.isin(ev.cat, (RUNTIME, DRIVER))
    call_rows = np.flatnonzero(is_call)
    name_is_sync = _name_flags(trace, call_rows, lambda n: n in SYNC_CALLS)
    name_is_launch = _name_flags(trace, call_rows, lambda n: n.startswith(LAUNCH_CALL_PREFIXES))
    name_is_copy = _name_flags(trace, call_rows, lambda n: n.startswith(MEMCPY_CALL_PREFIXES))

    # A memcpy call blocks the host when it is synchronous by API (cudaMemcpy) or touches pageable
    # memory (cudaMemcpyAsync stages pageable copies through the host), and it returned only after
    # its copy finished. A copy into pinned memory, or a memset, that merely finished quickly while
    # the call was still returning does not count.
    gpu_rows = np.flatnonzero(ev.cat == MEMCPY)
    copy_end_by_call, copy_kind_by_call = {}, {}
    for g in gpu_rows:
        c = trace.launch_of[g]
        if c != NONE:
            copy_end_by_call[int(c)] = max(copy_end_by_call.get(int(c), 0), int(ev.end[g]))
            copy_kind_by_call[int(c)] = names[ev.name[g]]
    blocking_copy = np.zeros(len(call_rows), dtype=bool)
    h2d = np.zeros(len(call_rows), dtype=bool)
    for k in np.flatnonzero(name_is_copy):
        r = int(call_rows[k])
        ce = copy_end_by_call.get(r)
        if ce is None or ev.end[r] + CLOCK_TOL_NS < ce:
            continue
        kind = copy_kind_by_call[r]
        synchronous_api = "Async" not in names[ev.name[r]]
        if synchronous_api or "Pageable" in kind:
            blocking_copy[k] = True
            h2d[k] = "HtoD" in kind
    # A stream sync that belongs to a host->device copy (`.to("cuda")` without non_blocking:
    # cudaMemcpyAsync then cudaStreamSynchronize, one op, one External id) waits for the
    # copy it just issued: the idle it causes is part of the transfer, not a drain.
    h2d_ops = {int(ev.ext[call_rows[k]]) for k in np.flatnonzero(name_is_copy)
               if "HtoD" in copy_kind_by_call.get(int(call_rows[k]), "") and ev.ext[call_rows[k]] != NONE}
    if h2d_ops:
        for k in np.flatnonzero(name_is_sync):
            if int(ev.ext[call_rows[k]]) in h2d_ops:
                h2d[k] = True
    sync_mask = name_is_sync | blocking_copy
    srows = call_rows[sync_mask]
    order = np.argsort(ev.start[srows], kind="stable")
    srows = srows[order]
    s_h2d = h2d[sync_mask][order]
    if len(srows):
        e = ev.end[srows]
        run = np.maximum.accumulate(e)
        # which row holds the running max: index of last position where e == run
        holder = np.where(e == run, np.arange(len(e)), 0)
        holder = np.maximum.accumulate(holder)
        sync_arg = srows[holder]
        sync_h2d = s_h2d[holder]
    else:
        run = np.empty(0, np.int64)
        sync_arg = np.empty(0, np.int64)
        sync_h2d = np.empty(0, bool)

    launch_durs = ev.end[call_rows[name_is_launch]] - ev.start[call_rows[name_is_launch]]
    launch_cost = int(np.median(launch_durs)) if len(launch_durs) else FALLBACK_LAUNCH_NS
    setup_long = setup_long_ns(launch_cost)
    # One-time set-up held in an API call (a first cudaLaunchKernel loading its module, cudaFree
    # or cudaMalloc growing the pool, stream creation): a non-sync, non-copy call this long is not
    # issuing work, whatever its name. Syncs and copies wait on the device and are judged as such.
    call_dur = ev.end[call_rows] - ev.start[call_rows]
    name_is_free = _name_flags(trace, call_rows, lambda n: n in _ALLOCATOR_CALLS)
    setup_mask = (call_dur > setup_long) & ~name_is_copy & (~name_is_sync | name_is_free)
    setup_rows = call_rows[setup_mask]
    bc = call_rows[blocking_copy]
    bc = bc[np.argsort(ev.start[bc], kind="stable")]
    name_is_wait = _name_flags(trace, call_rows, rc.is_stream_wait)
    wait_calls = {}
    for tid in np.unique(ev.tid[call_rows[name_is_wait]]):
        w = call_rows[name_is_wait & (ev.tid[call_rows] == tid)]
        wait_calls[int(tid)] = (ev.start[w], w)

    # Host activity that issues GPU work: every call, plus each top-level cpu_op holding a call.
    issue_by_tid, busy_by_tid, top_by_tid = {}, {}, {}
    op_rows = np.flatnonzero(ev.cat == CPU_OP)
    for tid in np.unique(ev.tid[np.concatenate((op_rows, call_rows))]):
        ops = op_rows[ev.tid[op_rows] == tid]
        calls = call_rows[(ev.tid[call_rows] == tid) & ~setup_mask]
        top_s, top_e = iv.union(ev.start[ops], ev.end[ops])  # top-level op extents on this thread
        # rows are sorted by (start, -end): the first op at each extent's start is the outermost
        top_by_tid[int(tid)] = (top_s, top_e, ops[np.searchsorted(ev.start[ops], top_s)] if len(ops) else ops)
        if len(calls) and len(top_s):
            k = np.searchsorted(top_s, ev.start[calls], side="right") - 1
            inside = (k >= 0) & (ev.start[calls] < top_e[np.maximum(k, 0)])
            issuing_top = np.zeros(len(top_s), dtype=bool)
            issuing_top[k[inside]] = True
        else:
            issuing_top = np.zeros(len(top_s), dtype=bool)
        s = np.concatenate((top_s[issuing_top], ev.start[calls]))
        e = np.concatenate((top_e[issuing_top], ev.end[calls]))
        is_s, is_e = iv.union(s, e)
        # Inside an issuing op, a stretch with no API call that is much longer than a launch is
        # not dispatch: first-call library set-up (cuBLAS handles, lazy kernel loading), an
        # allocator's cudaMalloc storm, CPU work in a custom op. Carve such stretches out.
        cs, ce = iv.union(ev.start[calls], ev.end[calls])
        if not len(is_s):
            issue_by_tid[int(tid)] = (is_s, is_e)
            busy_by_tid[int(tid)] = iv.union(np.concatenate((top_s, ev.start[call_rows[ev.tid[call_rows] == tid]])),
                                             np.concatenate((top_e, ev.end[call_rows[ev.tid[call_rows] == tid]])))
            continue
        qs, qe = iv.intersect(is_s, is_e, *iv.complement(cs, ce, int(is_s[0]) if len(is_s) else 0,
                                                           int(is_e[-1]) if len(is_e) else 0))
        long_q = (qe - qs) > setup_long
        if long_q.any():
            keep_s, keep_e = iv.complement(qs[long_q], qe[long_q], int(is_s[0]), int(is_e[-1]))
            is_s, is_e = iv.intersect(is_s, is_e, keep_s, keep_e)
        issue_by_tid[int(tid)] = (is_s, is_e)
        every = call_rows[ev.tid[call_rows] == tid]   # set-up calls too: traced host time
        busy_by_tid[int(tid)] = iv.union(np.concatenate((top_s, ev.start[every])),
                                         np.concatenate((top_e, ev.end[every])))
    return _HostContext(ev.start[srows], run, sync_arg, sync_h2d, issue_by_tid, busy_by_tid, launch_cost, top_by_tid,
                        launch_measured=bool(len(launch_durs)), setup_rows=setup_rows,
                        copy_call_s=ev.start[bc], copy_call_e=ev.end[bc], copy_call_rows=bc, wait_calls=wait_calls)


def _sync_at(ctx: _HostContext, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each time t: (is a sync-like call in progress?, its row, its end)."""
    if len(ctx.sync_s) == 0:
        z = np.zeros(len(t), dtype=bool)
        return z, np.full(len(t), NONE, np.int64), np.zeros(len(t), np.int64)
    j = np.searchsorted(ctx.sync_s, t + CLOCK_TOL_NS, side="right") - 1
    jc = np.maximum(j, 0)
    end = ctx.sync_e_max[jc]
    hit = (j >= 0) & (end >= t - CLOCK_TOL_NS)
    return hit, np.where(hit, ctx.sync_arg[jc], NONE), end


def analyze_device(trace: Trace, device: int, ctx: _HostContext | None = None,
                   window: tuple[int, int] | None = None) -> DeviceIdle:
    ev = trace.ev
    on_dev = ev.device == device
    acts = np.flatnonzero(on_dev & np.isin(ev.cat, GPU_CATS))
    if len(acts) == 0:
        return DeviceIdle(device, 0, 0, 0, 0, 0, {c: 0 for c in CAUSES}, _empty_gaps())
    kern = acts[ev.cat[acts] == KERNEL]
    copies = acts[ev.cat[acts] != KERNEL]
    lo, hi = int(ev.start[acts].min()), int(ev.end[acts].max())
    if window is not None:
        lo, hi = max(lo, window[0]), min(hi, window[1])
    ks, ke = iv.union(np.clip(ev.start[kern], lo, hi), np.clip(ev.end[kern], lo, hi))
    cs, ce = iv.union(np.clip(ev.start[copies], lo, hi), np.clip(ev.end[copies], lo, hi))
    idle_s, idle_e = iv.complement(ks, ke, lo, hi)            # no kernel on any stream
    xfer_s, xfer_e = iv.intersect(idle_s, idle_e, cs, ce)     # ... while a copy runs
    any_s, any_e = iv.union(np.concatenate((ks, cs)), np.concatenate((ke, ce)))
    free_s, free_e = iv.complement(any_s, any_e, lo, hi)      # device fully idle
    ctx = ctx or _host_context(trace)

    # The activity that ends each fully idle segment, and the host call that issued it.
    act_order = acts[np.argsort(ev.start[acts], kind="stable")]
    act_start = ev.start[act_order]
    k = np.searchsorted(act_start, free_e, side="left")
    nxt = np.where(k < len(act_order), act_order[np.minimum(k, len(act_order) - 1)], NONE)
    call = np.where(nxt != NONE, trace.launch_of[np.maximum(nxt, 0)], NONE)
    has_call = call != NONE
    cidx = np.maximum(call, 0)
    call_s = ev.start[cidx]
    call_tid = ev.tid[cidx]
    # A copy call in flight while the device waits is transfer time only when the host is staging
    # data for it (pageable memory, or a synchronous cudaMemcpy): an async device-to-device or
    # pinned copy call is a launch like any other.
    copy_call = _name_flags(trace, cidx, lambda n: n.startswith(MEMCPY_CALL_PREFIXES))
    sync_api = _name_flags(trace, cidx, lambda n: "Async" not in n)
    pageable = _name_flags(trace, np.maximum(nxt, 0), lambda n: "Pageable" in n)
    call_is_copy = copy_call & (pageable | sync_api)
    host_long = host_long_ns(ctx.launch_cost_ns)

    in_sync, sync_row, sync_end = _sync_at(ctx, free_s)
    sync_is_h2d = np.zeros(len(free_s), dtype=bool)
    if len(ctx.sync_s):
        j = np.maximum(np.searchsorted(ctx.sync_s, free_s + CLOCK_TOL_NS, side="right") - 1, 0)
        sync_is_h2d = ctx.sync_is_h2d[j] & in_sync

    out_s, out_e, out_c, out_next, out_host = [xfer_s], [xfer_e], [np.full(len(xfer_s), TRANSFER, np.int8)], \
        [np.full(len(xfer_s), NONE, np.int64)], [np.full(len(xfer_s), NONE, np.int64)]

    def emit(mask, s, e, cause, host):
        m = mask & (e > s)
        out_s.append(s[m]); out_e.append(e[m]); out_c.append(np.full(int(m.sum()), cause, np.int8))
        out_next.append(nxt[m]); out_host.append(host[m] if isinstance(host, np.ndarray) else np.full(int(m.sum()), host))

    # 1. No launch call for the next work: we cannot say.
    emit(~has_call, free_s, free_e, OTHER, NONE)
    queued = has_call & (call_s <= free_s + CLOCK_TOL_NS)
    # 2. Issued before the device went idle: device-side launch latency, or a blocking copy's staging.
    #    Launch latency is bounded by what launching costs: queued work that sits far longer than a
    #    launch waits on a dependency (a stream-wait event, a copy, a sync), not on the launch.
    waits_for = []   # (cause, rows, start, end) of the waits, for the evidence

    def emit_wait(mask, s, e):
        m = mask & (e > s)
        if not m.any():
            return
        cause, host = _waited_on(trace, ctx, s[m], e[m], call_s[m], call_tid[m], sync_row[m], in_sync[m])
        for c in (SYNC, TRANSFER, OTHER):
            k = cause == c
            if k.any():
                sub = np.zeros(len(m), bool)
                sub[np.flatnonzero(m)[k]] = True
                emit(sub, s, e, c, np.where(sub, _scatter(m, host, NONE), NONE))
                waits_for.append((c, host[k], s[m][k], e[m][k]))

    long_gap = (free_e - free_s) > host_long
    emit(queued & call_is_copy, free_s, free_e, TRANSFER, call)
    emit(queued & ~call_is_copy & ~long_gap, free_s, free_e, LAUNCH, call)
    emit_wait(queued & ~call_is_copy & long_gap, free_s, free_e)
    host_caused = has_call & ~queued
    # 3. The host was blocked in a sync (or a blocking copy) when the device drained. The idle runs
    #    from the drain until new work arrives: re-issuing after the sync is part of its cost. Only a
    #    long stretch of host work that issues nothing (measured below) is split off as host_work.
    synced = host_caused & in_sync
    # 4. What was the launching thread doing between the drain (or the sync's return) and the launch?
    hs = np.where(synced, np.clip(sync_end, free_s, free_e), free_s)    # host stretch start
    he = np.minimum(call_s, free_e)
    issuing = np.zeros(len(free_s), np.int64)
    for tid in np.unique(call_tid[host_caused]):
        m = host_caused & (call_tid == tid)
        s_, e_ = ctx.issue_by_tid.get(int(tid), (np.empty(0, np.int64), np.empty(0, np.int64)))
        issuing[m] = iv.covered(s_, e_, hs[m], he[m])
    stretch = np.maximum(he - hs, 0)
    non_issuing = stretch - issuing
    long_host = (non_issuing >= host_long) & (non_issuing >= issuing)
    sync_cause = np.where(sync_is_h2d, TRANSFER, SYNC)
    for cause in (SYNC, TRANSFER):
        emit(synced & ~long_host & (sync_cause == cause), free_s, free_e, cause, sync_row)
        emit(synced & long_host & (sync_cause == cause), free_s, hs, cause, sync_row)
    todo = host_caused & (~synced | long_host)
    is_host = todo & long_host
    emit(is_host, hs, he, HOST, NONE)
    emit(todo & ~is_host, hs, he, LAUNCH, call)
    # the launch call itself, in flight when the device could have started: launch (or copy staging);
    # when the work still does not start long after the call returned, it waits on a dependency
    emit(todo & call_is_copy, he, free_e, TRANSFER, call)
    call_e = np.clip(ev.end[cidx], he, free_e)
    late = todo & ~call_is_copy & ((free_e - call_e) > host_long)
    setup_call = has_call & np.isin(cidx, ctx.setup_rows) if ctx.setup_rows is not None and len(ctx.setup_rows) \
        else np.zeros(len(cidx), bool)
    emit(todo & ~call_is_copy & setup_call, he, free_e, HOST, NONE)   # a launch call doing set-up
    late &= ~setup_call
    emit(todo & ~call_is_copy & ~late & ~setup_call, he, free_e, LAUNCH, call)
    emit(late, he, call_e, LAUNCH, call)
    emit_wait(late, call_e, free_e)

    s = np.concatenate(out_s); e = np.concatenate(out_e); c = np.concatenate(out_c)
    nx = np.concatenate(out_next); hr = np.concatenate(out_host)
    order = np.argsort(s, kind="stable")
    gaps = Gaps(np.full(len(s), device, np.int32), s[order], e[order], c[order], nx[order], hr[order])
    _charge_sync_recovery(trace, gaps)
    gaps = _merge_adjacent(gaps)
    by_cause = {name: int(np.sum(gaps.dur[gaps.cause == i])) for i, name in enumerate(CAUSES)}
    result = DeviceIdle(device=device, span_start=lo, span_end=hi, kernel_busy_ns=iv.total(ks, ke),
                        copy_ns=iv.total(cs, ce), idle_ns=iv.total(idle_s, idle_e), by_cause_ns=by_cause,
                        gaps=gaps)
    result.evidence = _evidence(trace, result, copies, ctx, host_long)
    for cause, name in ((SYNC, "synchronization"), (TRANSFER, "data_transfer"), (OTHER, "other")):
        parts = [(h, s_, e_) for c, h, s_, e_ in waits_for if c == cause]
        if parts:
            rows = np.concatenate([h for h, _, _ in parts])
            d = np.concatenate([e_ - s_ for _, s_, e_ in parts])
            known = rows != NONE
            result.evidence[name]["waited_on"] = _top_names(trace, rows[known], d[known]) if known.any() else []
            result.evidence[name]["queued_waits"] = int(len(rows))
            result.evidence[name]["queued_wait_us"] = round(float(d.sum()) / 1e3, 1)
    return result


def _scatter(mask: np.ndarray, values: np.ndarray, fill) -> np.ndarray:
    out = np.full(len(mask), fill, values.dtype if len(values) else np.int64)
    out[mask] = values
    return out


def _waited_on(trace: Trace, ctx: _HostContext, s, e, call_s, call_tid, sync_row, in_sync):
    """What queued work waited on during [s, e): (cause, host row) per wait.

    A blocking copy call (pageable staging, a synchronous memcpy) in flight -> data_transfer; a
    stream-wait call issued on the launching thread just before the launch, or a sync the host sat
    in -> synchronization; nothing the trace records -> other."""
    ev = trace.ev
    n = len(s)
    cause = np.full(n, OTHER, np.int8)
    host = np.full(n, NONE, np.int64)
    if len(ctx.copy_call_s):
        j = np.searchsorted(ctx.copy_call_s, e, side="left") - 1
        ok = (j >= 0) & (ctx.copy_call_e[np.maximum(j, 0)] > s)
        cause[ok], host[ok] = TRANSFER, ctx.copy_call_rows[j[ok]]
    todo = cause == OTHER
    window = max(host_long_ns(ctx.launch_cost_ns), SETUP_FLOOR_NS)
    for i in np.flatnonzero(todo):
        ws = (ctx.wait_calls or {}).get(int(call_tid[i]))
        if ws is None:
            continue
        k = int(np.searchsorted(ws[0], call_s[i], side="right")) - 1
        if k >= 0 and ws[0][k] >= call_s[i] - window:
            cause[i], host[i] = SYNC, ws[1][k]
    todo = (cause == OTHER) & in_sync
    cause[todo], host[todo] = SYNC, sync_row[todo]
    return cause, host


def _charge_sync_recovery(trace: Trace, g: Gaps) -> None:
    """After a sync drains a queue the host had filled ahead, the device starves until the host
    gets ahead again: the launch gaps of that recovery exist only because of the sync.

    The host's lost lead is how long it waited inside the sync for the device to drain. Host-
    issued launch gaps that follow the drain are charged to synchronization up to that lead
    (never more); a later sync in the same recovery (print(tensor) syncs several times while it
    formats) renews the lead if it lost more, and host work, a transfer or an unexplained gap
    ends the recovery. A sync that found the device already idle (the host was not ahead)
    charges nothing extra.
    """
    ev = trace.ev
    if not (g.cause == SYNC).any():
        return
    host_start = np.where(g.host_row != NONE, ev.start[np.maximum(g.host_row, 0)], 0)
    budget, source = 0, NONE
    for j in range(len(g)):
        cause = g.cause[j]
        if cause == SYNC:
            if g.host_row[j] != NONE and ev.end[g.host_row[j]] + CLOCK_TOL_NS >= g.start[j]:
                lead = int(g.start[j] - host_start[j])      # how long the host waited: its lost lead
                if lead > budget:
                    budget, source = lead, g.host_row[j]
            continue
        if cause != LAUNCH:
            budget = 0
            continue
        if budget <= 0 or (g.host_row[j] != NONE and host_start[j] <= g.start[j] + CLOCK_TOL_NS):
            continue  # queued work: device-side latency, not the host catching up
        d = int(g.end[j] - g.start[j])
        if d > budget:
            budget = 0
            continue
        g.cause[j] = SYNC
        g.host_row[j] = source
        budget -= d


def _merge_adjacent(g: Gaps) -> Gaps:
    """Pieces of one idle interval with the same cause become one gap again."""
    if len(g) < 2:
        return g
    same = (g.start[1:] == g.end[:-1]) & (g.cause[1:] == g.cause[:-1])
    if not same.any():
        return g
    new = np.concatenate(([True], ~same))
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(g) - 1)
    return Gaps(g.device[first], g.start[first], g.end[last], g.cause[first], g.next_row[last], g.host_row[first])


def _median_us(x: np.ndarray) -> float:
    return round(float(np.median(x)) / 1e3, 2) if len(x) else 0.0


def _top_names(trace: Trace, rows: np.ndarray, weights: np.ndarray | None = None, k: int = 5) -> list[dict]:
    if len(rows) == 0:
        return []
    names = trace.ev.name[rows]
    w = weights if weights is not None else np.ones(len(rows), np.int64)
    uniq, inv = np.unique(names, return_inverse=True)
    tot = np.bincount(inv, weights=w)
    cnt = np.bincount(inv)
    order = np.argsort(-tot)[:k]
    return [{"name": trace.names[uniq[i]], "count": int(cnt[i]),
             **({"us": round(float(tot[i]) / 1e3, 1)} if weights is not None else {})} for i in order]


def _host_events_in(trace: Trace, s: np.ndarray, e: np.ndarray, ctx) -> tuple[list[dict], float]:
    """Top-level CPU ops that overlap host-work gaps (they issue no GPU work), and the untraced share."""
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if len(s) == 0:
        return [], 0.0
    # ops starting inside a gap, weighted by their overlap with it
    os_, oe = ev.start[ops], ev.end[ops]
    k = np.searchsorted(s, os_, side="right") - 1
    inside = (k >= 0) & (os_ < e[np.maximum(k, 0)])
    rows = ops[inside]
    kk = k[inside]
    overlap = np.minimum(oe[inside], e[kk]) - os_[inside]
    # keep the ops that issue no GPU work, and issuing ops that held the host for a long stretch
    # (a first call that initialises a library); the launching op that merely ends a gap is not host work
    issuing = np.zeros(len(rows), dtype=bool)
    for tid in np.unique(ev.tid[rows]):
        m = ev.tid[rows] == tid
        s_, e_ = ctx.issue_by_tid.get(int(tid), (np.empty(0, np.int64), np.empty(0, np.int64)))
        if len(s_):
            j = np.searchsorted(s_, ev.start[rows[m]], side="right") - 1
            issuing[m] = (j >= 0) & (ev.start[rows[m]] < e_[np.maximum(j, 0)])
    keep = ~issuing | (overlap >= setup_long_ns(ctx.launch_cost_ns))
    rows, overlap = rows[keep], overlap[keep]
    traced = 0
    for tid, (bs, be) in ctx.busy_by_tid.items():
        traced = max(traced, int(iv.covered(bs, be, s, e).sum()))
    total = int(np.sum(e - s))
    untraced_share = 1.0 - traced / total if total else 0.0
    # keep only the outermost ops (children double-count)
    return _top_names(trace, rows, overlap), round(max(untraced_share, 0.0), 3)


def _first_calls(trace: Trace, s: np.ndarray, e: np.ndarray, ctx, host_long: int) -> list[dict]:
    """One-time set-up caught in the profile: the first call of an op that held the host through
    a host-work gap for much longer than its later calls take (cuBLAS handles, lazy module
    loading, allocator growth). The fix is a warm-up before profiling, not a code change."""
    ev = trace.ev
    out = []
    for tid, (ts, te, rows) in (ctx.top_by_tid or {}).items():
        if len(rows) == 0:
            continue
        k = np.searchsorted(s, ts, side="right") - 1
        inside = (k >= 0) & (ts < e[np.maximum(k, 0)])
        overlap = np.where(inside, np.minimum(te, e[np.maximum(k, 0)]) - ts, 0)
        for i in np.flatnonzero(overlap >= host_long):
            name = ev.name[rows[i]]
            same = rows[ev.name[rows] == name]
            later = same[same > rows[i]]
            if same[0] != rows[i] or len(later) == 0:
                continue
            typical = float(np.median(ev.end[later] - ev.start[later]))
            if overlap[i] >= 10 * max(typical, 1.0):
                out.append({"name": trace.names[name], "first_call_us": round(float(te[i] - ts[i]) / 1e3, 1),
                            "later_median_us": round(typical / 1e3, 1), "idle_us": round(float(overlap[i]) / 1e3, 1),
                            "_span": (int(ts[i]), int(te[i]))})
    # Set-up held in an API call outside any op listed above (a first launch loading its module with
    # no op recorded, cudaFree/cudaMalloc/stream creation): whatever the call, it is set-up.
    rows = ctx.setup_rows if ctx.setup_rows is not None else np.empty(0, np.int64)
    if len(rows) and len(s):
        cs, ce = ev.start[rows], ev.end[rows]
        over = iv.covered(s, e, cs, ce)
        for r, o in zip(rows.tolist(), over.tolist()):
            if o < host_long or any(a <= ev.start[r] and ev.end[r] <= b for a, b in (w["_span"] for w in out)):
                continue
            same = rows[ev.name[rows] == ev.name[r]]
            later = np.flatnonzero((ev.name == ev.name[r]) & (ev.start > ev.start[r]) & (ev.tid == ev.tid[r]))
            typical = float(np.median(ev.end[later] - ev.start[later])) if len(later) else None
            if same[0] != r and typical is not None:
                continue   # not the first long one of its name
            out.append({"name": trace.names[ev.name[r]], "first_call_us": round(float(ev.end[r] - ev.start[r]) / 1e3, 1),
                        "later_median_us": None if typical is None else round(typical / 1e3, 1),
                        "idle_us": round(float(o) / 1e3, 1), "_span": (int(ev.start[r]), int(ev.end[r]))})
    out = sorted(out, key=lambda x: -x["idle_us"])[:5]
    for w in out:
        del w["_span"]
    return out


def _evidence(trace: Trace, r: DeviceIdle, copies: np.ndarray, ctx, host_long: int) -> dict:
    ev, g = trace.ev, r.gaps
    out: dict[str, dict] = {}
    for i, cause in enumerate(CAUSES):
        m = g.cause == i
        d = g.dur[m]
        item = {"gaps": int(m.sum()), "total_us": round(float(d.sum()) / 1e3, 1), "median_gap_us": _median_us(d),
                "max_gap_us": round(float(d.max()) / 1e3, 1) if len(d) else 0.0,
                "first_experiment": FIRST_EXPERIMENT[cause]}
        if cause == "launch_overhead" and m.any():
            nxt = g.next_row[m]
            nxt = nxt[nxt != NONE]
            item["next_kernel_median_us"] = _median_us(ev.end[nxt] - ev.start[nxt])
            # a median of this trace's launch calls; None when it has none (the fallback is never printed)
            item["launch_call_median_us"] = round(ctx.launch_cost_ns / 1e3, 2) if ctx.launch_measured else None
            queued = int(np.sum((g.host_row[m] != NONE) & (ev.start[np.maximum(g.host_row[m], 0)] <= g.start[m])))
            item["queued_gaps"] = queued   # issued before the drain: device-side launch latency
            ops = trace.op_of[np.maximum(g.host_row[m], 0)]
            ops = ops[(g.host_row[m] != NONE) & (ops != NONE)]
            item["launching_ops"] = _top_names(trace, ops)
            kern = np.flatnonzero((ev.device == r.device) & (ev.cat == KERNEL))
            item["kernels"] = int(len(kern))
            item["kernel_median_us"] = _median_us(ev.end[kern] - ev.start[kern])
        elif cause == "host_work" and m.any():
            top, untraced = _host_events_in(trace, g.start[m], g.end[m], ctx)
            item["host_events"] = top
            item["untraced_share"] = untraced
            item["threshold_us"] = round(host_long / 1e3, 1)
            item["warmup"] = _first_calls(trace, g.start[m], g.end[m], ctx, host_long)
        elif cause == "synchronization" and m.any():
            rows = g.host_row[m]
            rows = rows[rows != NONE]
            item["sync_calls"] = _top_names(trace, rows)
            ops = trace.op_of[rows]
            ops = ops[ops != NONE]
            item["called_from"] = _top_names(trace, ctx.outermost(trace, ops)) if len(ops) else []
        elif cause == "data_transfer":
            if len(copies):
                dur = ev.end[copies] - ev.start[copies]
                nb = ev.nbytes[copies]
                kinds = []
                for ent in _top_names(trace, copies, dur.astype(np.int64), k=6):
                    sel = copies[np.array([trace.names[ev.name[c]] == ent["name"] for c in copies])]
                    b = ev.nbytes[sel]
                    t = ev.end[sel] - ev.start[sel]
                    ok = b > 0
                    gbps = float(b[ok].sum()) / float(t[ok].sum()) if ok.any() and t[ok].sum() else None
                    kinds.append({**ent, "bytes": int(b[ok].sum()), "gbps": round(gbps, 1) if gbps else None})
                item["copies"] = kinds
                item["copy_count"] = int(len(copies))
                item["copy_bytes"] = int(nb[nb > 0].sum())
            rows = g.host_row[m]
            rows = rows[rows != NONE]
            item["blocking_calls"] = _top_names(trace, rows)
        elif cause == "other" and m.any():
            item["unlinked_gaps"] = int(np.sum(g.host_row[m] == NONE))
        out[cause] = item
    return out


def analyze(trace: Trace, window: tuple[int, int] | None = None) -> list[DeviceIdle]:
    ctx = _host_context(trace)
    return [analyze_device(trace, d, ctx, window) for d in trace.devices]
