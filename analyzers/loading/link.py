"""Link the events: the fourth step of loading, which makes the finished Trace.

cpu_op <-> launch call by External id; launch call (runtime *or* driver API: cuBLAS
launches through cuLaunchKernelEx) <-> GPU activity by correlation, else (a ROCm/HIP trace: no correlation key at
all) by an External id one call and one activity share (tracetriage.analyzers.loading.external_pairs); a
CUDA-graph replay's activities <-> the ops that launched them at capture (tracetriage.analyzers.loading.graphs).
An External id is trusted when its op encloses the call on the call's thread; where it names no op, or an
op that does not enclose the call (torch 2.0/2.1 wrote the correlation id there), the
call belongs to the innermost op around it on its thread (tracetriage.analyzers.loading.containment).
What the links reveal about the file (GPU work with no launch call, External ids no op
has or that name the wrong op, streams that overlap themselves) becomes the trace's caveats.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from tracetriage.analyzers.loading.assemble import THREADED_ROWS
from tracetriage.analyzers.loading.containment import innermost_enclosing
from tracetriage.analyzers.loading.external_pairs import pair_by_external_id
from tracetriage.analyzers.loading.graphs import join as join_graph_replays
from tracetriage.analyzers.model.driver_launches import unrecorded_launches
from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.trace import (
    CPU_OP,
    GPU_CATS,
    HOST_CALL_CATS,
    KERNEL,
    NONE,
    STREAM_OVERLAP_NS,
    Caveat,
    Events,
    Tables,
    Trace,
)


def _match(keys_from: np.ndarray, keys_to: np.ndarray, to_rows: np.ndarray) -> np.ndarray:
    """For each key in keys_from, the row in to_rows whose key matches (NONE if none)."""
    out = np.full(len(keys_from), NONE, dtype=np.int64)
    if len(keys_to) == 0:
        return out
    order = np.argsort(keys_to, kind="stable")
    sk = keys_to[order]
    pos = np.searchsorted(sk, keys_from)
    pos_c = np.minimum(pos, len(sk) - 1)
    hit = (pos < len(sk)) & (sk[pos_c] == keys_from) & (keys_from != NONE)
    out[hit] = to_rows[order[pos_c[hit]]]
    return out


def link(a: Tables) -> Trace:
    """The finished Trace: cpu_op <-> launch call <-> GPU activity, and what the links say about the file."""
    ev = a.ev
    n = len(ev)
    launch_of = np.full(n, NONE, dtype=np.int64)
    op_of = np.full(n, NONE, dtype=np.int64)
    calls = np.flatnonzero(any_of(ev.cat, HOST_CALL_CATS) & (ev.corr != NONE))
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS))
    allcalls = np.flatnonzero(any_of(ev.cat, HOST_CALL_CATS))
    # the calls' ops (by External id, else by time) read no launch: from THREADED_ROWS rows on they are found in a
    # second thread while this one links the activities to their launches (numpy's sorts and searches let go of the
    # GIL; a 1M-event trace: ~30 ms beside ~8, in the load's one-thread stretch while the other core waited)
    pool = ThreadPoolExecutor(1) if n >= THREADED_ROWS else None
    ops_of = pool.submit(_ops_of_calls, ev, allcalls) if pool is not None else None
    try:
        launch_of[gpu] = _match(ev.corr[gpu], ev.corr[calls], calls)
        pair_by_external_id(ev, gpu, allcalls, launch_of)
        op_of[allcalls], by_time = ops_of.result() if ops_of is not None else _ops_of_calls(ev, allcalls)
    finally:
        if pool is not None:
            pool.shutdown()     # (its thread ends here: the levers' child forks later)
    caveats = list(a.caveats) + _link_caveats(ev, a.names, gpu, allcalls, launch_of, op_of, by_time)
    trace = Trace(path=a.path, names=a.names, ev=ev, device_names=a.device_names, rank=a.rank,
                  world_size=a.world_size, base_time_ns=a.base_time_ns, events_in_file=a.events_in_file,
                  shapes_raw=a.shapes_raw, launch_of=launch_of, op_of=op_of, caveats=tuple(caveats),
                  merged_ranks=a.merged_ranks)
    graph_op_of, graph_caveats = join_graph_replays(trace)
    if graph_op_of is None:
        return trace
    return replace(trace, graph_op_of=graph_op_of, caveats=trace.caveats + tuple(graph_caveats))


def _ops_of_calls(ev: Events, calls: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """The cpu_op of each host call, and how many calls time placed where their External id did not, by what the
    id was (the call's own correlation id, its own id in a trace with no correlation, another op's).

    By External id where that op encloses the call on its thread; else the innermost op that does;
    else (no op around the call) the id's op, unless the id is the call's own correlation id, which
    names no op (the torch 2.0/2.1 bug)."""
    ops = np.flatnonzero(ev.cat == CPU_OP)
    with_id = ops[ev.ext[ops] != NONE]
    by_id = _match(ev.ext[calls], ev.ext[with_id], with_id)
    o = np.maximum(by_id, 0)
    encloses = (by_id != NONE) & (ev.pid[o] == ev.pid[calls]) & (ev.tid[o] == ev.tid[calls]) & \
        (ev.start[o] <= ev.start[calls]) & (ev.end[o] >= ev.end[calls])
    out = by_id.copy()
    doubt = np.flatnonzero(~encloses)
    if len(doubt) == 0:   # every call sits inside the op its id names: a sound trace, nothing to search
        return out, {}
    around = innermost_enclosing(ev, ops, calls[doubt])
    inside = around != NONE
    out[doubt[inside]] = around[inside]
    own_corr = (ev.ext[calls[doubt]] == ev.corr[calls[doubt]]) & (ev.ext[calls[doubt]] != NONE)
    out[doubt[~inside & own_corr]] = NONE
    placed = inside & (ev.ext[calls[doubt]] != NONE)
    # why each placed call's id named no op around it: torch 2.0/2.1 wrote the call's own correlation id there; a
    # ROCm trace (roctracer under Kineto) writes no correlation at all, its External id being the call's own id,
    # shared with the activity it launched (tracelens gemm01 on an MI300X was said to carry torch 2.0/2.1's bug)
    no_corr = ev.corr[calls[doubt]] == NONE
    return out, {"own_correlation": int(np.sum(placed & own_corr)), "own_id": int(np.sum(placed & no_corr)),
                 "elsewhere": int(np.sum(placed & ~own_corr & ~no_corr))}


BY_TIME_CAVEATS = {"own_correlation": "external_id_by_time", "own_id": "external_id_own_id",
                   "elsewhere": "external_id_elsewhere"}


def _link_caveats(ev: Events, names, gpu: np.ndarray, allcalls: np.ndarray, launch_of: np.ndarray,
                  op_of: np.ndarray, by_time: dict[str, int] | None = None) -> list[Caveat]:
    if len(gpu) == 0:
        return [Caveat("no_gpu_activity")]
    out = []
    driver = int(unrecorded_launches(ev, gpu, allcalls[ev.corr[allcalls] != NONE], launch_of).sum())
    unlinked = int(np.sum(launch_of[gpu] == NONE)) - driver
    if driver:
        out.append(Caveat("unrecorded_launches", driver, len(gpu)))
    if unlinked:
        out.append(Caveat("unlinked_gpu", unlinked, len(gpu)))
    for form, n in (by_time or {}).items():
        if n:
            out.append(Caveat(BY_TIME_CAVEATS[form], n, int(np.sum(ev.ext[allcalls] != NONE))))
    dangling = int(np.sum((ev.ext[allcalls] != NONE) & (op_of[allcalls] == NONE)))
    if dangling:
        out.append(Caveat("dangling_external_id", dangling))
    overlaps = _stream_overlaps(ev, gpu, names, launch_of)
    if overlaps:
        out.append(Caveat("stream_overlap", overlaps))
    return out


# Programmatic dependent launch (Hopper and later): a kernel launched with the attribute (through the extended
# launch, cudaLaunchKernelExC / cuLaunchKernelEx: cuDNN's and cuBLASLt's kernels) may start its prologue while the
# previous kernel on its stream still runs its last wave. fresh7's cifar and ddpm H100 captures: cuDNN dgrad kernels
# of 37-75 µs overlapped by the next kernel's start by up to 13 µs (a fifth of their run), plain captures. Where the
# next kernel's launch is not in the trace (queued before the window), a previous kernel built for Hopper or later
# (sm90, sm100, sm120 in its name) stands for it.
_EX_LAUNCHES = ("cudaLaunchKernelExC", "cuLaunchKernelEx")
_PDL_ARCH = re.compile(r"sm_?(?:9\d|1\d\d)(?!\d)")
PDL_MAX_SHARE = 0.5     # the dependent starts inside the previous kernel's second half: its tail, not its body


def _stream_overlaps(ev: Events, gpu: np.ndarray, names=None, launch_of: np.ndarray | None = None) -> int:
    """GPU activities that start well before the previous activity on their (device, stream) ends, less the
    overlaps programmatic dependent launch makes: a kernel after a kernel, launched by an extended launch (or, its
    launch untraced, after a Hopper-or-later kernel), starting in the previous one's second half and ending after
    it. A merged or edited trace overlaps otherwise: a copy, a kernel inside another, one started early in the
    previous one's run."""
    order = np.lexsort((ev.start[gpu], ev.stream[gpu], ev.device[gpu]))
    rows = gpu[order]
    dev, stream, start, end = ev.device[rows], ev.stream[rows], ev.start[rows], ev.end[rows]
    same = (dev[1:] == dev[:-1]) & (stream[1:] == stream[:-1])
    over = same & (end[:-1] - start[1:] > STREAM_OVERLAP_NS)
    if names is not None and launch_of is not None and over.any():
        i = np.flatnonzero(over)
        prev, nxt = rows[i], rows[i + 1]
        kernels = (ev.cat[prev] == KERNEL) & (ev.cat[nxt] == KERNEL)
        tail = (end[i] - start[i + 1] <= PDL_MAX_SHARE * (end[i] - start[i])) & (end[i + 1] >= end[i])
        call = launch_of[nxt]
        ex = np.array([c != NONE and names[int(ev.name[c])] in _EX_LAUNCHES for c in call.tolist()], bool)
        arch = np.array([c == NONE and bool(_PDL_ARCH.search(names[int(ev.name[r])]))
                         for c, r in zip(call.tolist(), prev.tolist())], bool)
        over[i[kernels & tail & (ex | arch)]] = False
    return int(np.sum(over))
