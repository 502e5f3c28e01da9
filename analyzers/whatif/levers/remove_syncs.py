"""remove_syncs: the host no longer waits in syncs (`only`: the syncs called from one op).

The fix: keep values and decisions on the device, read them once every N steps. In the graph the
sync calls vanish (with the Python that called them straight, like torch.cuda.synchronize()), and a
copy to the host (.item(), .cpu(), .tolist() of a result) returns after one call's cost; the GPU
work stays. Not removed: a sync that waits for a host-to-device copy (the blocking .to(device) of a
pageable tensor: the copy's own wait, async_copies' fix), a bulk pageable copy to the host (BULK_COPY_BYTES or more:
data the host reads, whose wait only pinned memory and non_blocking take off it) and the sync after it, nor one that
waits for work launched before the profiled window (the first recorded step draining the unrecorded warm-up's kernels:
the window's edge), nor a timer's sync (analyses.timed_regions: the measurement's, not the workload's).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.sync_sites import below_regions
from tracetriage.analyzers.analyses.timed_regions import timing_syncs
from tracetriage.analyzers.model.runtime_calls import ALLOCATOR_SYNC_CALLS, SYNC_CALLS
from tracetriage.analyzers.model.trace import CPU_OP
from tracetriage.analyzers.model.units import duration_ns
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers import element_reads
from tracetriage.analyzers.whatif.levers.host_windows import gap_inside_the_loop, longest_loop_gap_ns
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    WhatIfError,
    went,
)

_API_PREFIXES = ("cuda", "cu", "hip")   # a sync called straight from Python is its own outermost "op"
# A pageable copy of this many bytes or more is data the host needs, not a value read: at PCIe rates (5-25 GB/s) its
# bytes take 40-200 µs, past a sync's round trip (~10 µs), so "read it once every N steps" cannot remove it; only
# pinned memory and non_blocking (async_copies) take its wait off the host. A scalar (.item(): 4-8 bytes), a few
# values (.tolist() of a batch's losses) or a row of logits read for a decision stay well under it. gp_streams
# (heldout-user19): 100 pageable `.to("cpu")` of 4 MB each were "syncs" to "keep on the device", −26%, the pinned
# copies demoted.
BULK_COPY_BYTES = 1 << 20


@dataclass(frozen=True)
class SyncsGone(Assumption):
    only: str | None = None          # the op whose syncs go (None: every sync)
    call_ns: int = 0                 # what a copy to the host still costs (a launch call)
    element_reads: int = 0           # reads of a tensor element by element in a loop, gone whole (element_reads)
    element_shape: tuple = ()        # ... the tensor those loops slice (the largest loop's)
    timers: int = 0                  # blocking syncs kept as a benchmark's timer's (analyses.timed_regions)


def apply(c: Context, p, o: Options) -> tuple[SyncsGone, dict]:
    g = c.g
    # a sync call, or a copy to the host that blocks (.item(), .cpu(), .tolist() of a result)
    aw = np.maximum(p.c_awaited, 0)
    to_host = c.gpu_named(lambda n: "DtoH" in n, aw) if g.n_calls and len(g.g_row) else np.zeros(g.n_calls, bool)
    # ... but not a sync that waits for its own host-to-device copy (.to(device) without non_blocking: the copy's
    # wait, which async_copies prices with the copy pinned and overlapped), nor one at the window's edge
    to_device = c.gpu_named(lambda n: "HtoD" in n, aw) if g.n_calls and len(g.g_row) else np.zeros(g.n_calls, bool)
    # ... nor a bulk pageable copy to the host (BULK_COPY_BYTES or more: the data itself, which the host reads, into
    # memory the copy engine cannot write on its own) or a sync that waits for one (torch's blocking .to("cpu") syncs
    # its stream after the copy): async_copies' fix too. A pinned one's wait is the code's to drop (save_on_cpu's
    # activation copies: library_syncs names them), and stays this lever's
    bulk = np.zeros(g.n_calls, bool)
    if g.n_calls and len(g.g_row):
        bulk = ((g.g_nbytes[aw] >= BULK_COPY_BYTES) & to_host & (p.c_awaited >= 0)
                & c.gpu_named(lambda n: "Pageable" in n, aw))
    # ... nor a timer's: the sync closing each repetition of a timed region, or waiting on an elapsed_time() pair,
    # is the measurement's (analyses.timed_regions): removing it changes what is timed, not the code timed
    timer = np.isin(g.c_row, timing_syncs(c.trace)) if g.n_calls else np.zeros(0, bool)
    sync = ((g.c_kind == dg.SYNC_CALL) & ~_context_creation(c) & ~_drains_the_backlog(c, p)
            & ~(to_device & p.c_blocked) & ~(bulk & p.c_blocked) & ~timer)
    copy = (g.c_kind == dg.COPY_CALL) & to_host & p.c_blocked & ~bulk
    if o.only:
        inside = _inside_op(c, o.only)
        sync &= inside
        copy &= inside
    gone = np.flatnonzero(sync | copy)
    by_op = _waits_by_op(c, gone, np.where(p.c_blocked[gone], g.c_dur[gone] - p.c_min[gone], 0))
    waited = sum(by_op.values())
    n_blocking = int((sync & p.c_blocked).sum() + copy.sum())
    # the sync call goes, and so does the Python that led to it when it was called straight from Python
    # (torch.cuda.synchronize(); measured: traces/fixes item_python); the copy stays, returning at once. Where no
    # sync blocked at all there is nothing to remove, and the replay stays as traced: the Python before a sync
    # that never waited is other work (issue 33: 900 ms of torch.compile compiling before 105 syncs that never
    # blocked "vanished" with them, -52%, in a row that said "nothing to remove")
    if n_blocking == 0:
        sync[:] = False
        copy[:] = False
    p.c_blocked[sync | copy] = False
    p.c_dur[sync] = 0
    # a sync after the loop's last GPU work (a closing torch.cuda.synchronize()) takes with it at most one
    # iteration's Python: the rest of the stretch before it is the script after the loop, which stays
    straight, inside = sync & ~g.c_in_op, gap_inside_the_loop(g)
    p.c_gap[straight & inside] = 0
    after = straight & ~inside
    p.c_gap[after] = np.maximum(p.c_gap[after] - longest_loop_gap_ns(g), 0)
    p.c_dur[copy] = p.c_min[copy]
    # a loop reading one tensor's elements one at a time: one read of the tensor takes each iteration's round trip
    # whole, its dispatch and launches with its wait (element_reads)
    loops = element_reads.find(c, np.flatnonzero(copy)) if n_blocking else []
    element_reads.remove(c, p, loops)
    n_reads = sum(x.reads for x in loops)
    shape = max(loops, key=lambda x: x.reads).source_shape if loops else ()
    return (SyncsGone("remove_syncs", n_blocking, only=o.only, call_ns=g.launch_cost_ns, element_reads=n_reads,
                      element_shape=shape, timers=int((timer & p.c_blocked).sum()) if g.n_calls else 0),
            {"syncs": int(sync.sum()), "blocking_copies": int(copy.sum()), "waited_ns": waited,
             "waited_ns_by_op": by_op, "element_reads": n_reads})


def focus_op(detail: dict) -> str | None:
    """The outermost op that waited longest in syncs (None: the syncs are called straight from Python)."""
    by_op = detail.get("waited_ns_by_op") or {}
    return next((name for name, ns in by_op.items() if ns > 0 and not name.startswith(_API_PREFIXES)), None)


def _context_creation(c: Context) -> np.ndarray:
    """The allocator's frees before the first launch: they create the CUDA context (set-up, the warm-up's to
    remove), not a sync the code could defer. A later cudaFree is torch.cuda.empty_cache() and stays a sync."""
    g = c.g
    ids = [i for i, n in enumerate(c.trace.names) if n in ALLOCATOR_SYNC_CALLS]
    launches = g.c_start[g.c_kind == dg.LAUNCH_CALL]
    if not ids or not g.n_calls or not len(launches):
        return np.zeros(g.n_calls, bool)
    return np.isin(c.trace.ev.name[g.c_row], ids) & (g.c_start < launches.min())


def _drains_the_backlog(c: Context, p) -> np.ndarray:
    """Blocked syncs that wait for work launched before the profiled window (no launch call in the trace): the
    window's edge, where the first recorded step drains what the unrecorded warm-up steps queued, not a sync the loop
    makes every step. Removing one lets the host run ahead through a backlog it is ahead of anyway in the steady
    state (bert_pad_max_length-before: the 18.3 ms cudaDeviceSynchronize at the window's start held 5.3 ms of a
    -8% "remove the syncs" whose only syncs of the loop, the pageable ids/mask copies, saved 4.7 ms)."""
    g = c.g
    aw = p.c_awaited
    out = np.zeros(g.n_calls, bool)
    if not g.n_calls or not len(g.g_row):
        return out
    has = p.c_blocked & (aw >= 0)
    out[has] = ~g.g_linked[aw[has]]
    return out


def _inside_op(c: Context, op: str) -> np.ndarray:
    """Calls made inside a cpu_op named `op` (at any depth) on the same thread."""
    ev, g = c.trace.ev, c.g
    try:
        nid = c.trace.names.index(op)
    except ValueError:
        nid = -1
    ops = np.flatnonzero((ev.cat == CPU_OP) & (ev.name == nid)) if nid >= 0 else np.zeros(0, np.int64)
    if not len(ops):
        sync_ops = _sync_ops(c)
        hint = f"ops that wait in a sync here: {', '.join(sync_ops)}" if sync_ops else "no op here waits in a sync"
        raise WhatIfError(f"--only {op}: no op of that name in the trace ({hint})")
    out = np.zeros(g.n_calls, bool)
    c_pid, c_tid = ev.pid[g.c_row], ev.tid[g.c_row]
    for pid, tid in set(zip(ev.pid[ops].tolist(), ev.tid[ops].tolist())):
        o = ops[(ev.pid[ops] == pid) & (ev.tid[ops] == tid)]
        s, e = ev.start[o], np.maximum.accumulate(ev.end[o])
        m = np.flatnonzero((c_pid == pid) & (c_tid == tid))
        k = np.searchsorted(s, g.c_start[m], side="right") - 1
        out[m] = (k >= 0) & (g.c_start[m] < e[np.maximum(k, 0)])
    return out


def _waits_by_op(c: Context, calls: np.ndarray, waited: np.ndarray) -> dict[str, int]:
    """Host time spent waiting, by the outermost op that made the call (aten::item, aten::nonzero ...),
    most first; a sync made straight from Python counts under its call's name."""
    g, ev = c.g, c.trace.ev
    outer = g.c_outer_op[calls]
    # below torch.compile's regions: the op the compiled function fell back to (aten::is_nonzero), not the region
    outer = below_regions(c.trace, c.trace.op_of[g.c_row[calls]], outer)
    name_rows = np.where(outer >= 0, outer, g.c_row[calls])
    out: dict[str, int] = {}
    for nid, w in zip(ev.name[name_rows].tolist(), waited.tolist()):
        out[c.trace.names[nid]] = out.get(c.trace.names[nid], 0) + int(w)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _sync_ops(c: Context) -> list[str]:
    g = c.g
    calls = np.flatnonzero((g.c_kind == dg.SYNC_CALL) & g.c_blocked & (g.c_outer_op >= 0))
    return list(_waits_by_op(c, calls, g.c_dur[calls]))[:5]


def says(a: SyncsGone) -> str:
    where = f"syncs called from {a.only}" if a.only else "syncs"
    if a.count == 0 and a.timers:
        return (f"no blocking {where} but a benchmark's timer's ({a.timers} closing its timed regions: the "
                "measurement's, not the workload's): nothing to remove")
    if a.count == 0:
        return f"no blocking {where} in this trace: nothing to remove"
    loop = (f"; a loop's {a.element_reads:,} reads of a {list(a.element_shape)} tensor, one element each, go but the "
            "first (their indexing and copy ops, calls, copies and waits: one read of the tensor), the host ops on "
            "each value stay" if a.element_reads else "")
    return (f"the host no longer waits in {where}: sync calls vanish (with the Python that called them "
            f"directly), copies to the host return after one call's cost ({duration_ns(a.call_ns)}, the median "
            f"launch call here); the GPU work stays{loop}")


def sync_points(m: Measured) -> int:
    """Sync calls, and copies to the host (each waits for the device): counted whether or not they blocked."""
    ev, names = m.trace.ev, m.trace.names
    ids, counts = np.unique(ev.name, return_counts=True)
    return sum(int(n) for i, n in zip(ids.tolist(), counts.tolist())
               if names[i] in SYNC_CALLS or ("DtoH" in names[i] and names[i].startswith("Memcpy")))


SPEC = LeverSpec(
    name="remove_syncs", effort=1, cause=Cause.SYNCHRONIZATION, apply=apply, says=says, words="removing the syncs",
    fix="the sync is gone: the value stays on the device (read once, after the window)",
    recognise=Recognise(order=3, evidence="sync_points", because="its sync points went", amount=sync_points,
                        acted=lambda m: m.by_cause_ns.get(Cause.SYNCHRONIZATION, 0),
                        applied=went),
    takes_only=True)
