"""Idle gaps: when no kernel runs on a device, and why.

Compute idle on a device is the part of its active span (first to last GPU
activity) where no device work runs on any stream: device work is a kernel, a
memset or a device-to-device copy (on_device). Each idle interval gets exactly one
cause, split where the cause changes:

data_transfer    a copy over the link (host<->device, peer) occupies the device, or the host is inside
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

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from tracetriage.analyzers.analyses.first_calls import SetUp, compiling, first_calls, merged, scripting
from tracetriage.analyzers.analyses.first_compiles import compilations
from tracetriage.analyzers.analyses.held_host import host_events_in, launching_threads, python_in, ranked, top_times
from tracetriage.analyzers.analyses.sync_calls import at_window_edge, blocking_copies
from tracetriage.analyzers.analyses.sync_sites import below_regions
from tracetriage.analyzers.analyses.timed_regions import bare_syncs
from tracetriage.analyzers.loading.graphs import in_capture
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model import runtime_calls as rc
from tracetriage.analyzers.model.driver_launches import unrecorded
from tracetriage.analyzers.model.evidence import (
    CopyKind,
    Evidence,
    HostEvidence,
    LaunchEvidence,
    NameCount,
    OtherEvidence,
    SyncEvidence,
    TransferEvidence,
)
from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.large_gaps import few_large
from tracetriage.analyzers.model.lockstep import lockstep_awaited
from tracetriage.analyzers.model.module_loading import MODULE_CALLS
from tracetriage.analyzers.model.names import name_codes, name_flags, name_tests
from tracetriage.analyzers.model.op_extents import NO_EXTENTS, op_extents
from tracetriage.analyzers.model.runtime_calls import COPY_PREFIXES, SYNC_CALLS, UNMEASURED_LAUNCH_NS
from tracetriage.analyzers.model.trace import (
    CLOCK_TOL_NS,
    CPU_OP,
    DRIVER,
    GPU_CATS,
    KERNEL,
    MEMCPY,
    MEMSET,
    NONE,
    PYTHON,
    RUNTIME,
    Trace,
)
from tracetriage.analyzers.model.verdicts import CAUSES, Cause

LAUNCH, HOST, SYNC, TRANSFER, OTHER = (CAUSES.index(c) for c in (Cause.LAUNCH_OVERHEAD, Cause.HOST_WORK,
                                                                  Cause.SYNCHRONIZATION, Cause.DATA_TRANSFER,
                                                                  Cause.OTHER))

HOST_LONG_LAUNCHES = 10        # a host stretch this many launches long is "much longer than a launch"
HOST_LONG_FLOOR_NS = 50_000    # ... and never under 50 µs (a slow launch call is still a launch)
SETUP_FLOOR_NS = 1_000_000     # a quiet stretch inside an issuing op this long is set-up, not dispatch

# cudaFree synchronizes implicitly, but one that holds the host for milliseconds while the device
# already idles is the allocator (or the context's first initialisation), not a drain
ALLOCATOR_CALLS = frozenset({"cudaFree", "cudaFreeHost", "hipFree", "hipHostFree", "hipFreeHost"})

@dataclass(frozen=True)
class Gaps:
    """Every idle interval with its cause: what a timeline view colours and a grader quotes."""
    device: np.ndarray     # int32
    start: np.ndarray      # int64 ns
    end: np.ndarray        # int64 ns
    cause: np.ndarray      # int8 index into CAUSES
    next_row: np.ndarray   # the GPU activity that ended the gap (row in trace.ev), NONE if none
    host_row: np.ndarray   # the host call that explains it (sync, copy or launch call), NONE if none
    waited: np.ndarray | None = None   # bool: queued work that waited on a dependency (None: no gap did)
    piece_of: np.ndarray | None = None  # within(): the gap each piece was cut from (None: every gap is whole)

    def count(self, mask: np.ndarray) -> int:
        """How many gaps the selected ones are: pieces of one gap cut by windows count once."""
        return int(mask.sum()) if self.piece_of is None else len(distinct(self.piece_of[mask]))

    def whole(self, mask: np.ndarray) -> np.ndarray:
        """The mask with one piece per gap (the first), for counting what explains each gap once."""
        if self.piece_of is None or not len(mask):
            return mask
        return mask & np.r_[True, self.piece_of[1:] != self.piece_of[:-1]]

    def __len__(self) -> int:
        return len(self.start)

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start

    def causes(self) -> list[Cause]:
        return [CAUSES[c] for c in self.cause]

    def replace(self, **columns) -> "Gaps":
        return Gaps(**{**self.__dict__, **columns})


@dataclass(frozen=True)
class DeviceIdle:
    device: int
    span_start: int
    span_end: int
    kernel_busy_ns: int
    copy_ns: int
    idle_ns: int
    by_cause_ns: dict[Cause, int]
    gaps: Gaps
    evidence: dict[Cause, Evidence]
    setup: "SetUp | None" = None      # one-time set-up on the host (first calls), for the framework phases
    windows_ns: int | None = None   # within(): the time inside the windows (None: the whole span counts)

    @property
    def span_ns(self) -> int:
        return self.span_end - self.span_start if self.windows_ns is None else self.windows_ns

    @property
    def dominant(self) -> Cause | None:
        return dominant_cause(self.by_cause_ns, self.idle_ns)


def dominant_cause(by_cause_ns: dict[Cause, int], idle_ns: int) -> Cause | None:
    """The cause that holds the most idle time (the first in CAUSES order on a tie); None without idle."""
    if idle_ns <= 0:
        return None
    return max(by_cause_ns, key=lambda c: by_cause_ns[c])


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


@dataclass(frozen=True)
class _HostContext:
    """Per-process lookups used to explain host-caused gaps."""
    sync_s: np.ndarray       # sync-like host calls, sorted by start
    sync_e_max: np.ndarray   # running max of their ends
    sync_arg: np.ndarray     # row of the call holding that running max
    sync_is_h2d: np.ndarray  # bool per sync row index (by position): a blocking H->D copy (staging)
    issue_by_tid: dict       # tid -> (starts, ends) union of host intervals that issue GPU work
    busy_by_tid: dict        # tid -> (starts, ends) union of all traced host activity
    launch_cost_ns: int
    top_by_tid: dict         # tid -> (starts, ends, rows) of the outermost cpu_ops
    launch_measured: bool = True     # False: launch_cost_ns is UNMEASURED_LAUNCH_NS, not this trace's median
    setup_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # API calls that held the host
                                                                                  # set-up-long (not syncs/copies)
    copy_calls: tuple = (np.empty(0, np.int64),) * 3  # blocking copy calls: (starts sorted, ends, rows)
    wait_calls: dict = None          # tid -> (starts, rows) of stream-wait calls, sorted
    graph_launches: int = 0          # CUDA/HIP graph launch calls in the trace

    def outermost(self, trace: Trace, rows: np.ndarray) -> np.ndarray:
        """The outermost cpu_op around each op row (aten::item around aten::_local_scalar_dense)."""
        out = rows.copy()
        for tid in distinct(trace.ev.tid[rows]):
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


def _host_context(trace: Trace) -> _HostContext:
    ev = trace.ev
    is_call = any_of(ev.cat, (RUNTIME, DRIVER))
    call_rows = np.flatnonzero(is_call)
    # every name test of the calls on one pass over their distinct names
    name_is_sync, name_is_launch, name_is_copy, name_is_free, name_is_wait, name_is_graph = name_tests(
        trace, call_rows, lambda n: n in SYNC_CALLS, rc.is_launch, rc.is_copy, lambda n: n in ALLOCATOR_CALLS,
        rc.is_stream_wait, rc.is_graph_launch)

    # A memcpy call blocks the host when it is synchronous by API (cudaMemcpy) or touches pageable
    # memory (cudaMemcpyAsync stages pageable copies through the host), and it returned only after
    # its copy finished. A copy into pinned memory, or a memset, that merely finished quickly while
    # the call was still returning does not count.
    blocking_copy, h2d = blocking_copies(trace, call_rows, name_is_copy, name_is_sync)
    sync_mask = (name_is_sync & ~at_window_edge(trace, call_rows)) | blocking_copy
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
    # a launch that returned when a kernel ended waited for the GPU: no launch cost (model.lockstep)
    paced = lockstep_awaited(trace, call_rows[name_is_launch]) == NONE
    measured = rc.median_launch_ns(launch_durs[paced], name_is_graph[name_is_launch][paced]) if paced.any() else None
    launch_cost = measured if measured is not None else UNMEASURED_LAUNCH_NS
    setup_long = setup_long_ns(launch_cost)
    # One-time set-up held in an API call (a first launch loading its module, cudaFree or cudaMalloc
    # growing the pool, stream creation): a call this long that is neither a sync nor a copy is not
    # issuing work, whatever its name. Syncs and copies wait on the device and are judged as such.
    # A module load (MIOpen's or a JIT's code objects: hipModuleLoadData, cuModuleLoad*) is set-up whatever its length:
    # it loads code for a first call (Frameworks101's cold ConvolutionBackward0 on ROCm: three loads of 0.8-2.7 ms
    # between MIOpen's untraced find, 11.6 ms read "launch overhead")
    loads = name_flags(trace, call_rows, lambda n: n.startswith(MODULE_CALLS))
    setup_mask = ((((ev.end[call_rows] - ev.start[call_rows]) > setup_long) & ~name_is_copy
                   & (~name_is_sync | name_is_free)) | loads)
    bc = call_rows[blocking_copy]
    bc = bc[np.argsort(ev.start[bc], kind="stable")]
    wait_calls = {int(tid): (ev.start[w], w) for tid in distinct(ev.tid[call_rows[name_is_wait]])
                  for w in [call_rows[name_is_wait & (ev.tid[call_rows] == tid)]]}

    # A launch made while its stream is captured into a CUDA/HIP graph records a node and runs nothing: the host
    # recording a graph issues no GPU work (one-time set-up the replays never pay, not launch overhead; the
    # vLLM capture in the public corpus idled 56 ms behind ~430 such calls, read as launch overhead).
    recorded = in_capture(trace, call_rows)

    # Host activity that issues GPU work: every call, plus each top-level cpu_op holding a call.
    issue_by_tid, busy_by_tid, top_by_tid = {}, {}, {}
    op_rows = np.flatnonzero(ev.cat == CPU_OP)
    py_rows = np.flatnonzero(ev.cat == PYTHON)   # with_stack=True: Python frames are traced host time too
    extents = op_extents(trace)
    for tid in distinct(ev.tid[np.concatenate((op_rows, call_rows))]):
        every = call_rows[ev.tid[call_rows] == tid]
        calls = call_rows[(ev.tid[call_rows] == tid) & ~setup_mask & ~recorded]   # set-up and recorded calls issue
                                                                                     # nothing
        # top-level op extents on this thread, and the outermost op of each
        top_by_tid[int(tid)] = top_s, top_e, _ = extents.get(int(tid), NO_EXTENTS)
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
        py = py_rows[ev.tid[py_rows] == tid]
        busy_by_tid[int(tid)] = iv.union(np.concatenate((top_s, ev.start[every], ev.start[py])),
                                         np.concatenate((top_e, ev.end[every], ev.end[py])))
        if not len(is_s):
            issue_by_tid[int(tid)] = (is_s, is_e)
            continue
        qs, qe = iv.intersect(is_s, is_e, *iv.complement(cs, ce, int(is_s[0]) if len(is_s) else 0,
                                                           int(is_e[-1]) if len(is_e) else 0))
        long_q = (qe - qs) > setup_long
        if long_q.any():
            keep_s, keep_e = iv.complement(qs[long_q], qe[long_q], int(is_s[0]), int(is_e[-1]))
            is_s, is_e = iv.intersect(is_s, is_e, keep_s, keep_e)
        issue_by_tid[int(tid)] = (is_s, is_e)
    return _HostContext(ev.start[srows], run, sync_arg, sync_h2d, issue_by_tid, busy_by_tid, launch_cost, top_by_tid,
                        launch_measured=bool(len(launch_durs)), setup_rows=call_rows[setup_mask],
                        copy_calls=(ev.start[bc], ev.end[bc], bc), wait_calls=wait_calls,
                        graph_launches=int(name_is_graph.sum()))


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


# --- the steps of the classifier ---------------------------------------------------------------------

@dataclass(frozen=True)
class FreeIntervals:
    """Step 1: where a device does no compute, in [lo, hi)."""
    lo: int
    hi: int
    kernel: tuple[np.ndarray, np.ndarray]     # union of device work: kernels, memsets, device-to-device copies
    copy: tuple[np.ndarray, np.ndarray]       # union of copies over the link (host<->device, peer)
    idle: tuple[np.ndarray, np.ndarray]       # no device work on any stream
    transfer: tuple[np.ndarray, np.ndarray]   # ... while a copy runs: data_transfer by definition
    free: tuple[np.ndarray, np.ndarray]       # nothing at all runs: the intervals the rules explain


# Kineto writes a start and a duration, each rounded to the ns: an end it implies can sit a ns or two off, so two
# activities that ran back to back show a gap of 1-2 ns. A gap this short is the rounding, not idle time (an MI300X
# trace of 10 back-to-back adds read "idle <1% of the span (0.0 µs): 9 gaps with a median of 0 µs").
ROUNDING_NS = 2


def _touching(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merged intervals, those separated by no more than the timestamps' rounding joined."""
    if len(s) < 2:
        return s, e
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] - e[:-1] > ROUNDING_NS
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], e[last]


def on_device(trace: Trace, acts: np.ndarray) -> np.ndarray:
    """Per GPU activity: device work (a kernel, a memset, a device-to-device copy), not a copy over the link. A DtoD
    copy reads and writes the device's own memory like a memory-bound kernel, and a memset writes it: neither is the
    GPU waiting on the host (fresh4 gpt2_manual_attention-before: 90 DtoD copies, 18 GB from .contiguous() inside
    attention, read as idle 'data transfer' on a 97%-busy device)."""
    cat = trace.ev.cat[acts]
    return (cat == KERNEL) | (cat == MEMSET) | ((cat == MEMCPY) & name_flags(trace, acts, lambda n: "DtoD" in n))


def free_intervals(trace: Trace, acts: np.ndarray, window: tuple[int, int] | None) -> FreeIntervals:
    ev = trace.ev
    work = on_device(trace, acts)
    kern = acts[work]
    copies = acts[~work]
    lo, hi = int(ev.start[acts].min()), int(ev.end[acts].max())
    if window is not None:
        lo, hi = max(lo, window[0]), min(hi, window[1])
    ks, ke = _touching(*iv.union(np.clip(ev.start[kern], lo, hi), np.clip(ev.end[kern], lo, hi)))
    cs, ce = _touching(*iv.union(np.clip(ev.start[copies], lo, hi), np.clip(ev.end[copies], lo, hi)))
    idle_s, idle_e = iv.complement(ks, ke, lo, hi)
    xfer = iv.intersect(idle_s, idle_e, cs, ce)
    any_s, any_e = iv.union(np.concatenate((ks, cs)), np.concatenate((ke, ce)))
    return FreeIntervals(lo, hi, (ks, ke), (cs, ce), (idle_s, idle_e), xfer, iv.complement(any_s, any_e, lo, hi))


@dataclass(frozen=True)
class WhatFollows:
    """Step 2: for each free interval, the GPU activity that ends it, the call that issued that
    activity, and what the host was in when the device drained."""
    next_row: np.ndarray     # the activity that ends the interval, NONE at the span's end
    call: np.ndarray         # its launch (or copy) call, NONE if unlinked
    call_start: np.ndarray
    call_tid: np.ndarray
    call_is_copy: np.ndarray  # the call stages data (pageable or synchronous memcpy): transfer, not launch
    in_sync: np.ndarray       # the host was inside a sync-like call when the device drained
    sync_row: np.ndarray
    sync_end: np.ndarray
    sync_is_h2d: np.ndarray   # ... a sync that waits for a host->device copy it just issued
    call_end: np.ndarray = None
    call_is_setup: np.ndarray = None   # the launch call itself held the host set-up-long (a first launch)


def what_follows(trace: Trace, acts: np.ndarray, free_s: np.ndarray, free_e: np.ndarray,
                 ctx: _HostContext) -> WhatFollows:
    ev = trace.ev
    act_order = acts[np.argsort(ev.start[acts], kind="stable")]
    k = np.searchsorted(ev.start[act_order], free_e, side="left")
    nxt = np.where(k < len(act_order), act_order[np.minimum(k, len(act_order) - 1)], NONE)
    call = np.where(nxt != NONE, trace.launch_of[np.maximum(nxt, 0)], NONE)
    cidx = np.maximum(call, 0)
    # A copy call in flight while the device waits is transfer time only when the host is staging
    # data for it (pageable memory, or a synchronous cudaMemcpy): an async device-to-device or
    # pinned copy call is a launch like any other.
    copy_call = name_flags(trace, cidx, lambda n: n.startswith(COPY_PREFIXES))
    sync_api = name_flags(trace, cidx, lambda n: "Async" not in n)
    pageable = name_flags(trace, np.maximum(nxt, 0), lambda n: "Pageable" in n)
    in_sync, sync_row, sync_end = _sync_at(ctx, free_s)
    sync_is_h2d = np.zeros(len(free_s), dtype=bool)
    if len(ctx.sync_s):
        j = np.maximum(np.searchsorted(ctx.sync_s, free_s + CLOCK_TOL_NS, side="right") - 1, 0)
        sync_is_h2d = ctx.sync_is_h2d[j] & in_sync
    return WhatFollows(nxt, call, ev.start[cidx], ev.tid[cidx], copy_call & (pageable | sync_api),
                       in_sync, sync_row, sync_end, sync_is_h2d, ev.end[cidx],
                       (call != NONE) & np.isin(cidx, ctx.setup_rows))


class _Pieces:
    """Step 4, splitting: the classified pieces of the free intervals, collected rule by rule."""

    def __init__(self, next_row: np.ndarray):
        self.next_row = next_row
        self.s, self.e, self.c, self.nxt, self.host, self.waited = [], [], [], [], [], []

    def add(self, mask, s, e, cause: int, host, waited: bool = False) -> None:
        m = mask & (e > s)
        n = int(m.sum())
        self.s.append(s[m])
        self.e.append(e[m])
        self.c.append(np.full(n, cause, np.int8))
        self.nxt.append(self.next_row[m])
        self.host.append(host[m] if isinstance(host, np.ndarray) else np.full(n, host, np.int64))
        self.waited.append(np.full(n, waited))

    def gaps(self, device: int, transfer: tuple[np.ndarray, np.ndarray]) -> Gaps:
        xs, xe = transfer
        s = np.concatenate([xs] + self.s)
        e = np.concatenate([xe] + self.e)
        c = np.concatenate([np.full(len(xs), TRANSFER, np.int8)] + self.c)
        nx = np.concatenate([np.full(len(xs), NONE, np.int64)] + self.nxt)
        hr = np.concatenate([np.full(len(xs), NONE, np.int64)] + self.host)
        w = np.concatenate([np.zeros(len(xs), bool)] + self.waited)
        order = np.argsort(s, kind="stable")
        return Gaps(np.full(len(s), device, np.int32), s[order], e[order], c[order], nx[order], hr[order],
                    w[order] if w.any() else None)


# Step 3: one rule per cause. Each rule claims the free intervals (or their parts) it explains.

def rule_unlinked(p: _Pieces, free_s, free_e, f: WhatFollows, unrecorded_call: np.ndarray) -> None:
    """No launch call for the next work, recorded or not: the trace cannot say why (other)."""
    p.add((f.call == NONE) & ~unrecorded_call, free_s, free_e, OTHER, NONE)


def _unrecorded_calls(trace: Trace, f: WhatFollows, free_e, ctx: _HostContext) -> tuple[WhatFollows, np.ndarray]:
    """Work launched by an API the capture does not record (Triton's cuLaunchKernel: model.driver_launches) has a
    launch call all the same, made at the latest when the work started, on the thread issuing GPU work then: its gap
    is read from what that thread ran in it (host work, launch overhead, a sync), as a recorded launch's is, where
    it read 'other' (heldout-user19 gp_fusion: 49% of the span, in the compiled call's Python wrappers)."""
    nxt = np.maximum(f.next_row, 0)
    mine = (f.call == NONE) & (f.next_row != NONE) & unrecorded(trace)[nxt]
    if not mine.any() or not ctx.issue_by_tid:
        return f, np.zeros(len(free_e), bool)
    tids = [t for t, (s_, _) in ctx.issue_by_tid.items() if len(s_)]
    # the thread that began issuing GPU work last before the work started
    last = np.stack([np.where((k := np.searchsorted(ctx.issue_by_tid[t][0], free_e, side="right")) > 0,
                              ctx.issue_by_tid[t][0][np.maximum(k - 1, 0)], -1) for t in tids])
    tid = np.asarray(tids, np.int64)[np.argmax(last, axis=0)]
    return dataclasses.replace(f, call_start=np.where(mine, free_e, f.call_start),
                               call_end=np.where(mine, free_e, f.call_end),
                               call_tid=np.where(mine, tid, f.call_tid)), mine


def rule_queued(trace: Trace, p: _Pieces, free_s, free_e, f: WhatFollows, ctx: _HostContext) -> np.ndarray:
    """The next work was issued before the device went idle: device-side launch latency (launch
    overhead), or a blocking copy's staging (data transfer). Launch latency is bounded by what
    launching costs: queued work that sits far longer waits on a dependency (rule_wait).
    Returns the intervals the host caused (neither queued nor held by a loading launch call)."""
    has_call = f.call != NONE
    queued = has_call & (f.call_start <= free_s + CLOCK_TOL_NS)
    # a set-up-long launch call (a first launch loading its kernel's module) still in flight when the device drained
    # had not queued its work yet: the device waited for the call, one-time set-up (heldout-user15 switch_moe_128tok:
    # 81 ms of first launches' gaps read "other: work already launched started late with nothing to wait on")
    loading = queued & f.call_is_setup & ~f.call_is_copy & (f.call_end > free_s + CLOCK_TOL_NS)
    p.add(loading, free_s, free_e, HOST, NONE)
    queued &= ~loading
    long_gap = (free_e - free_s) > host_long_ns(ctx.launch_cost_ns)
    p.add(queued & f.call_is_copy, free_s, free_e, TRANSFER, f.call)
    p.add(queued & ~f.call_is_copy & ~long_gap, free_s, free_e, LAUNCH, f.call)
    rule_wait(trace, p, queued & ~f.call_is_copy & long_gap, free_s, free_e, f, ctx)
    return has_call & ~queued & ~loading


def rule_wait(trace: Trace, p: _Pieces, mask, s, e, f: WhatFollows, ctx: _HostContext) -> None:
    """Queued work that waited on a dependency over [s, e): a blocking copy call (pageable staging, a
    synchronous memcpy) in flight -> data transfer; a stream-wait call issued on the launching thread
    just before the launch, or a sync the host sat in -> synchronization; nothing the trace records ->
    other. The gap's host call is what was waited on."""
    idx = np.flatnonzero(mask & (e > s))
    if not len(idx):
        return
    cause = np.full(len(idx), OTHER, np.int8)
    host = np.full(len(idx), NONE, np.int64)
    cs, ce, crows = ctx.copy_calls
    if len(cs):
        j = np.searchsorted(cs, e[idx], side="left") - 1
        ok = (j >= 0) & (ce[np.maximum(j, 0)] > s[idx])
        cause[ok], host[ok] = TRANSFER, crows[j[ok]]
    window = max(host_long_ns(ctx.launch_cost_ns), SETUP_FLOOR_NS)
    for i in np.flatnonzero(cause == OTHER):
        ws = (ctx.wait_calls or {}).get(int(f.call_tid[idx[i]]))
        if ws is not None:
            k = int(np.searchsorted(ws[0], f.call_start[idx[i]], side="right")) - 1
            if k >= 0 and ws[0][k] >= f.call_start[idx[i]] - window:
                cause[i], host[i] = SYNC, ws[1][k]
    rest = (cause == OTHER) & f.in_sync[idx]
    cause[rest], host[rest] = SYNC, f.sync_row[idx][rest]
    for c in (SYNC, TRANSFER, OTHER):
        sel = np.zeros(len(s), bool)
        sel[idx[cause == c]] = True
        rows = np.full(len(s), NONE, np.int64)
        rows[idx] = host
        p.add(sel, s, e, c, rows, waited=True)


def host_stretches(trace: Trace, free_s, free_e, f: WhatFollows, host_caused: np.ndarray, ctx: _HostContext):
    """What the launching thread did between the drain (or the sync's return) and the launch:
    (stretch start, stretch end, the time of it spent issuing GPU work)."""
    synced = host_caused & f.in_sync
    hs = np.where(synced, np.clip(f.sync_end, free_s, free_e), free_s)
    he = np.minimum(f.call_start, free_e)
    issuing = np.zeros(len(free_s), np.int64)
    for tid in distinct(f.call_tid[host_caused]):
        m = host_caused & (f.call_tid == tid)
        s_, e_ = ctx.issue_by_tid.get(int(tid), (np.empty(0, np.int64), np.empty(0, np.int64)))
        issuing[m] = iv.covered(s_, e_, hs[m], he[m])
    return hs, he, issuing


def rule_sync(p: _Pieces, free_s, free_e, f: WhatFollows, synced, long_host, hs) -> None:
    """The host was blocked in a sync (or a blocking copy) when the device drained: the idle runs from
    the drain until new work arrives (re-issuing after the sync is part of its cost), except a long
    stretch of host work that issues nothing, which rule_host splits off. A sync that waits for the
    host->device copy it just issued is that copy's transfer."""
    cause = np.where(f.sync_is_h2d, TRANSFER, SYNC)
    for c in (SYNC, TRANSFER):
        p.add(synced & ~long_host & (cause == c), free_s, free_e, c, f.sync_row)
        p.add(synced & long_host & (cause == c), free_s, hs, c, f.sync_row)


def _lead_lost_in_sync(trace: Trace, free_s: np.ndarray, f: WhatFollows) -> np.ndarray:
    """How far the host was ahead of the device when it drained: how long the host had waited in the sync by then.
    Host work after a bare sync (one that reads nothing back: the work cannot need its result; after .item() or
    .cpu() it uses the value) no longer than this would have run while the queued kernels did, had the host not
    waited: the sync exposed it, and its idle is the sync's (a benchmark's timing loop: ~150 µs of the loop's Python
    after each torch.cuda.synchronize() it had waited 1.5 ms in read "host work", transformer_nuggets' qlora bench).
    Longer host work would idle the device even without the sync: host work still (rule_host_or_launch)."""
    row = np.maximum(f.sync_row, 0)
    return np.where(f.sync_row != NONE, free_s - trace.ev.start[row], 0)


def rule_host_or_launch(p: _Pieces, free_e, f: WhatFollows, todo, long_host, hs, he, host_long: int):
    """The host's stretch before the launch: host work when it is much longer than a launch and mostly
    issues nothing, launch overhead otherwise; then the launch call itself, in flight when the device
    could have started (launch overhead, or a copy's staging: data transfer). Returns the intervals
    whose work still had not started long after its call returned, and when the call returned:
    waits on a dependency, for rule_wait."""
    is_host = todo & long_host
    p.add(is_host, hs, he, HOST, NONE)
    p.add(todo & ~is_host, hs, he, LAUNCH, f.call)
    p.add(todo & f.call_is_copy, he, free_e, TRANSFER, f.call)
    # a launch call that held the host set-up-long (a first launch loading its module) is set-up
    p.add(todo & ~f.call_is_copy & f.call_is_setup, he, free_e, HOST, NONE)
    todo = todo & ~f.call_is_copy & ~f.call_is_setup
    # ... and work that still does not start long after its call returned waits on a dependency
    call_e = np.clip(f.call_end, he, free_e)
    late = todo & ((free_e - call_e) > host_long)
    p.add(todo & ~late, he, free_e, LAUNCH, f.call)
    p.add(late, he, call_e, LAUNCH, f.call)
    return late, call_e


def classify(trace: Trace, device: int, free: FreeIntervals, f: WhatFollows, ctx: _HostContext) -> Gaps:
    """Steps 3 and 4: every free interval gets exactly one cause, split where the cause changes."""
    free_s, free_e = free.free
    p = _Pieces(f.next_row)
    f, unrecorded_call = _unrecorded_calls(trace, f, free_e, ctx)
    rule_unlinked(p, free_s, free_e, f, unrecorded_call)
    host_caused = rule_queued(trace, p, free_s, free_e, f, ctx) | unrecorded_call
    synced = host_caused & f.in_sync
    hs, he, issuing = host_stretches(trace, free_s, free_e, f, host_caused, ctx)
    non_issuing = np.maximum(he - hs, 0) - issuing
    long_host = (non_issuing >= host_long_ns(ctx.launch_cost_ns)) & (non_issuing >= issuing)
    exposed = synced & np.isin(f.sync_row, bare_syncs(trace)) & (non_issuing <= _lead_lost_in_sync(trace, free_s, f))
    long_host &= ~exposed   # host work a bare sync exposed is the sync's (_lead_lost_in_sync)
    rule_sync(p, free_s, free_e, f, synced, long_host, hs)
    late, call_e = rule_host_or_launch(p, free_e, f, host_caused & (~synced | long_host), long_host, hs, he,
                                       host_long_ns(ctx.launch_cost_ns))
    rule_wait(trace, p, late, call_e, free_e, f, ctx)
    return merge_adjacent(charge_sync_recovery(trace, p.gaps(device, free.transfer)))


def analyze_device(trace: Trace, device: int, ctx: _HostContext | None = None,
                   window: tuple[int, int] | None = None) -> DeviceIdle:
    ev = trace.ev
    acts = np.flatnonzero((ev.device == device) & any_of(ev.cat, GPU_CATS))
    ctx = ctx or _host_context(trace)
    if len(acts) == 0:
        gaps = _empty_gaps()
        return DeviceIdle(device, 0, 0, 0, 0, 0, {c: 0 for c in CAUSES}, gaps,
                          evidence(trace, device, gaps, acts, ctx))
    free = free_intervals(trace, acts, window)
    gaps = classify(trace, device, free, what_follows(trace, acts, *free.free, ctx), ctx)
    by_cause = {c: int(np.sum(gaps.dur[gaps.cause == i])) for i, c in enumerate(CAUSES)}
    copies = acts[~on_device(trace, acts)]
    setup = set_up(trace, gaps, ctx)
    return DeviceIdle(device=device, span_start=free.lo, span_end=free.hi, kernel_busy_ns=iv.total(*free.kernel),
                      copy_ns=iv.total(*free.copy), idle_ns=iv.total(*free.idle), by_cause_ns=by_cause, gaps=gaps,
                      evidence=evidence(trace, device, gaps, copies, ctx, setup), setup=setup)


def charge_sync_recovery(trace: Trace, g: Gaps) -> Gaps:
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
        return g
    cause, host_row = g.cause.copy(), g.host_row.copy()
    host_start = np.where(host_row != NONE, ev.start[np.maximum(host_row, 0)], 0)
    budget, source = 0, NONE
    for j in range(len(g)):
        c = cause[j]
        if c == SYNC:
            # a wait of queued work on a dependency (rule_wait) cost the host no lead: it was not blocked
            if host_row[j] != NONE and not (g.waited is not None and g.waited[j]):
                lead = int(g.start[j] - host_start[j])      # how long the host waited: its lost lead
                if lead > budget:
                    budget, source = lead, host_row[j]
            continue
        if c != LAUNCH:
            budget = 0
            continue
        if budget <= 0 or (host_row[j] != NONE and host_start[j] <= g.start[j] + CLOCK_TOL_NS):
            continue  # queued work: device-side latency, not the host catching up
        d = int(g.end[j] - g.start[j])
        if d > budget:
            budget = 0
            continue
        cause[j] = SYNC
        host_row[j] = source
        budget -= d
    return g.replace(cause=cause, host_row=host_row)


def merge_adjacent(g: Gaps) -> Gaps:
    """Pieces of one idle interval with the same cause become one gap again."""
    if len(g) < 2:
        return g
    same = (g.start[1:] == g.end[:-1]) & (g.cause[1:] == g.cause[:-1])
    if not same.any():
        return g
    new = np.concatenate(([True], ~same))
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(g) - 1)
    waited = np.logical_or.reduceat(g.waited, first) if g.waited is not None else None
    return Gaps(g.device[first], g.start[first], g.end[last], g.cause[first], g.next_row[last], g.host_row[first],
                waited)


def _median_us(x: np.ndarray) -> float:
    return round(float(np.median(x)) / 1e3, 2) if len(x) else 0.0


def _top_names(trace: Trace, rows: np.ndarray, k: int = 5) -> tuple[NameCount, ...]:
    """The k most frequent names among rows."""
    return tuple(NameCount(trace.names[n], int(c)) for n, c, _ in ranked(trace, rows, np.ones(len(rows)), k))


# --- step 5: the evidence of each cause ------------------------------------------------------------

def set_up(trace: Trace, g: Gaps, ctx: _HostContext) -> SetUp:
    """The one-time set-up that held the host while this device idled: in a host-work gap, and in a launch
    gap too (a first launch loading its kernel's module keeps the host in the launch call)."""
    m = (g.cause == HOST) | (g.cause == LAUNCH)
    found = first_calls(trace, g.start[m], g.end[m], ctx, host_long_ns(ctx.launch_cost_ns))
    h = g.cause == HOST
    b = compiling(trace, g.start[h], g.end[h], g.next_row[h], setup_long_ns(ctx.launch_cost_ns))
    # a profile of first compiled calls: the compile spans are set-up, not only the gap before a first launch
    c = compilations(trace, g.start[m], g.end[m], found.start, found.end, b.start, b.end)
    # TorchScript compiling a scripted function on its first call, recorded as no event at all
    return merged(merged(found, b if c is None else SetUp((c,), b.start, b.end, b.pid, b.tid)),
                  scripting(trace, g.start[h], g.end[h]))


def evidence(trace: Trace, device: int, g: Gaps, copies: np.ndarray, ctx: _HostContext,
             setup: SetUp | None = None, kernels: np.ndarray | None = None) -> dict[Cause, Evidence]:
    """Each cause's evidence from its gaps; `kernels`: the kernels the launch evidence counts (None: the device's)."""
    host_long = host_long_ns(ctx.launch_cost_ns)
    setup = setup if setup is not None else set_up(trace, g, ctx)
    out: dict[Cause, Evidence] = {}
    for i, cause in enumerate(CAUSES):
        m = g.cause == i
        d = g.dur[m]
        base = dict(cause=cause, gaps=g.count(m), total_us=round(float(d.sum()) / 1e3, 1), median_gap_us=_median_us(d),
                    max_gap_us=round(float(d.max()) / 1e3, 1) if len(d) else 0.0)
        host = g.host_row[g.whole(m)]
        waited_on = ()
        if g.waited is not None and (g.waited & m).any():
            w = g.waited & m & (g.host_row != NONE)
            waited_on = top_times(trace, g.host_row[w], g.dur[w].astype(np.int64))
        if cause is Cause.LAUNCH_OVERHEAD:
            out[cause] = _launch_evidence(trace, device, g, m, ctx, base, kernels)
        elif cause is Cause.HOST_WORK:
            # what the host did: in the few large gaps where they hold the idle, not in the short ones (large_gaps)
            big = few_large(g.dur[m]) if g.piece_of is None else None
            m_all, m = m, m if big is None else np.flatnonzero(m)[big]
            top, untraced, ranges, in_ranges = host_events_in(trace, g.start[m], g.end[m], ctx,
                                                              setup_long_ns(ctx.launch_cost_ns), host_long)
            out[cause] = HostEvidence(**base, host_events=top, untraced_share=untraced, ranges=ranges,
                                      in_ranges_share=in_ranges,
                                      threshold_us=round(host_long / 1e3, 1),
                                      warmup=setup.calls,
                                      python_functions=python_in(trace, g.start[m], g.end[m],
                                                                 launching_threads(trace, g.next_row[m]), ctx),
                                      setup_us=round(_in_setup_ns(g.start[m_all], g.end[m_all], setup) / 1e3, 1))
        elif cause is Cause.SYNCHRONIZATION:
            # one sync call is one drain, however many gaps its recovery charged to it (fresh4
            # preprocess_compiled_roof-before: one cudaDeviceSynchronize read as 'cudaDeviceSynchronize x7')
            every = g.host_row[m]
            calls, per_call = np.unique(every[every != NONE], return_inverse=True)
            cost = np.bincount(per_call, weights=g.dur[m][every != NONE]) if len(calls) else np.zeros(0)
            ops = trace.op_of[calls]
            ops = ops[ops != NONE]
            # named below torch.compile's regions (a region around a graph-broken value read names nothing)
            sites = below_regions(trace, ops, ctx.outermost(trace, ops))
            out[cause] = SyncEvidence(**base, sync_calls=_top_names(trace, calls),
                                      called_from=_top_names(trace, sites) if len(ops) else (),
                                      waited_on=waited_on, drains=int(len(calls)), median_drain_us=_median_us(cost))
        elif cause is Cause.DATA_TRANSFER:
            nb = trace.ev.nbytes[copies]
            out[cause] = TransferEvidence(**base, copies=_copy_kinds(trace, copies), copy_count=int(len(copies)),
                                          copy_bytes=int(nb[nb > 0].sum()),
                                          blocking_calls=_top_names(trace, host[host != NONE]), waited_on=waited_on)
        else:
            waited = g.waited[g.whole(m)] if g.waited is not None else np.zeros(len(host), bool)
            out[cause] = OtherEvidence(**base, unlinked_gaps=int(np.sum((host == NONE) & ~waited)),
                                       waited_on=waited_on)
    return out


def _in_setup_ns(s: np.ndarray, e: np.ndarray, setup: SetUp) -> int:
    """How much of these gaps the host spent in one-time set-up (its windows on any thread)."""
    if not len(s) or not len(setup.start):
        return 0
    gs, ge = iv.union(s, e)
    ws, we = iv.union(setup.start, setup.end)
    return iv.total(*iv.intersect(gs, ge, ws, we))


def _launch_evidence(trace: Trace, device: int, g: Gaps, m: np.ndarray, ctx: _HostContext, base: dict,
                     kernels: np.ndarray | None = None) -> LaunchEvidence:
    ev = trace.ev
    nxt = g.next_row[m]
    nxt = nxt[nxt != NONE]
    host = g.host_row[m]
    queued = int(np.sum((host != NONE) & (ev.start[np.maximum(host, 0)] <= g.start[m])))
    ops = trace.op_of[np.maximum(host, 0)]
    ops = ops[(host != NONE) & (ops != NONE)]
    kern = np.flatnonzero((ev.device == device) & (ev.cat == KERNEL)) if kernels is None else \
        kernels[ev.device[kernels] == device]
    whole, part, shared = _whole_gaps(g, m)
    return LaunchEvidence(**base, whole_gaps=len(whole), whole_gap_median_us=_median_us(whole),
                          part_median_us=_median_us(part), shared_gaps=shared,
                          next_kernel_median_us=_median_us(ev.end[nxt] - ev.start[nxt]),
                          launch_call_median_us=round(ctx.launch_cost_ns / 1e3, 2) if ctx.launch_measured else None,
                          queued_gaps=queued,
                          launching_ops=_top_names(trace, ops), kernels=int(len(kern)),
                          kernel_median_us=_median_us(ev.end[kern] - ev.start[kern]), graph_launches=ctx.graph_launches,
                          graphed_kernels=_graphed(trace, kern))


def _whole_gaps(g: Gaps, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The whole idle gaps (device work to device work: a cause's pieces of one gap are contiguous) that hold the
    selected pieces, their lengths and the selected cause's part of each in ns, and how many of them another cause
    shares: what a reader measures between
    kernels is the whole gap (leimao's eager MLP: '250 gaps with a median of 15.1 µs between kernels', the median of
    the launch-overhead pieces, where the gaps between kernels had a median of 24.6 µs, 34 of them part host work)."""
    if not m.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    grp = np.cumsum(np.r_[True, g.start[1:] != g.end[:-1]]) - 1
    whole = np.bincount(grp, weights=g.dur)
    mine = grp[m]
    mine = mine[np.r_[True, mine[1:] != mine[:-1]]]    # (grp ascends: its distinct values where it steps)
    own = np.bincount(grp[m], weights=g.dur[m], minlength=len(whole))
    return whole[mine].astype(np.int64), own[mine].astype(np.int64), int(np.sum(own[mine] < whole[mine]))


def _graphed(trace: Trace, kern: np.ndarray) -> int:
    """Kernels a CUDA/HIP graph launch issued (a replay), of these."""
    calls = trace.launch_of[kern]
    calls = calls[calls != NONE]
    if not len(calls):
        return 0
    names, inv = name_codes(trace, calls)
    graph = np.array([rc.is_graph_launch(trace.names[i]) for i in names.tolist()], bool)
    return int(graph[inv.ravel()].sum())


def _copy_kinds(trace: Trace, copies: np.ndarray) -> tuple[CopyKind, ...]:
    """The six copy kinds that hold the most time, with their bytes and measured GB/s."""
    ev = trace.ev
    if len(copies) == 0:
        return ()
    kinds = []
    for name, n, t_ns in ranked(trace, copies, (ev.end[copies] - ev.start[copies]).astype(np.int64), 6):
        sel = copies[ev.name[copies] == name]
        b = ev.nbytes[sel]
        t = ev.end[sel] - ev.start[sel]
        ok = b > 0
        gbps = float(b[ok].sum()) / float(t[ok].sum()) if ok.any() and t[ok].sum() else None
        kinds.append(CopyKind(trace.names[name], n, round(t_ns / 1e3, 1), int(b[ok].sum()),
                              round(gbps, 1) if gbps else None))
    return tuple(kinds)


def analyze(trace: Trace, window: tuple[int, int] | None = None) -> list[DeviceIdle]:
    ctx = _host_context(trace)
    return [analyze_device(trace, d, ctx, window) for d in trace.devices]


def within(trace: Trace, devs: list[DeviceIdle], starts: np.ndarray, ends: np.ndarray,
           gpu_rows: np.ndarray) -> list[DeviceIdle]:
    """Each device's idle inside disjoint sorted windows (a repeating range's instances), nothing between
    them: its span is the windows inside the device's span, its gaps are cut to them, its busy time is the
    kernel time inside them (so busy + idle = span still), and the evidence is that of those gaps, with
    the kernels `gpu_rows` (what the windows launched) as the kernels the launch evidence counts."""
    ev = trace.ev
    ctx = _host_context(trace)
    out = []
    for d in devs:
        ws, we = iv.intersect(starts, ends, np.array([d.span_start]), np.array([d.span_end]))
        acts = np.flatnonzero((ev.device == d.device) & any_of(ev.cat, GPU_CATS))
        work = on_device(trace, acts)
        kern, copies = acts[work], acts[~work]
        ks, ke = iv.intersect(*iv.union(ev.start[kern], ev.end[kern]), ws, we)
        cs, ce = iv.intersect(*iv.union(ev.start[copies], ev.end[copies]), ws, we)
        g = _cut(d.gaps, ws, we)
        by_cause = {c: int(np.sum(g.dur[g.cause == i])) for i, c in enumerate(CAUSES)}
        mine = gpu_rows[ev.device[gpu_rows] == d.device]
        lo, hi = (int(ws[0]), int(we[-1])) if len(ws) else (d.span_start, d.span_start)
        setup = set_up(trace, g, ctx)
        out.append(DeviceIdle(device=d.device, span_start=lo, span_end=hi, kernel_busy_ns=iv.total(ks, ke),
                              copy_ns=iv.total(cs, ce), idle_ns=int(g.dur.sum()), by_cause_ns=by_cause, gaps=g,
                              evidence=evidence(trace, d.device, g, mine[~on_device(trace, mine)], ctx, setup,
                                                kernels=mine[ev.cat[mine] == KERNEL]),
                              setup=setup, windows_ns=iv.total(ws, we)))
    return out


def _cut(g: Gaps, ws: np.ndarray, we: np.ndarray) -> Gaps:
    """The gaps' pieces inside disjoint sorted windows, each piece keeping its gap's cause and rows."""
    if len(g) == 0 or len(ws) == 0:
        return _empty_gaps()
    lo = np.searchsorted(g.end, ws, side="right")    # first gap ending after each window starts
    hi = np.searchsorted(g.start, we, side="left")   # gaps starting before it ends
    counts = np.maximum(hi - lo, 0)
    w_idx = np.repeat(np.arange(len(ws)), counts)
    offs = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    i = np.repeat(lo, counts) + offs
    s, e = np.maximum(g.start[i], ws[w_idx]), np.minimum(g.end[i], we[w_idx])
    keep = e > s
    i, s, e = i[keep], s[keep], e[keep]
    return Gaps(g.device[i], s, e, g.cause[i], g.next_row[i], g.host_row[i],
                g.waited[i] if g.waited is not None else None, piece_of=i)
