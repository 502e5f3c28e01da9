"""Who issued the syncs: the user's value reads, or a library's own machinery.

A sync the user wrote (`.item()`, `.cpu()`, `torch.cuda.synchronize()`) reads a value or a decision back to the host;
its fix is to keep the value on the device and read it once every N steps. Two kinds of library machinery sync
without reading any value, and there that advice has nothing to act on:

    cudnn_benchmark   torch.backends.cudnn.benchmark = True: for each new input shape cuDNN times its candidate
                      algorithms, each trial bracketed by cudaEventRecord and waited for (cudaEventSynchronize,
                      cudaDeviceSynchronize), inside aten::cudnn_convolution / aten::convolution_backward. The fix
                      is shapes that repeat (pad or bucket the lengths) or the flag off, never a deferred read.
    offload_copies    a saved-tensor hook that copies every activation autograd saves to host memory
                      (torch.autograd.graph.save_on_cpu): inside compute ops of many kinds (aten::layer_norm,
                      aten::linear, ...), an aten::copy_ issues a device-to-host copy and the host waits for it. No
                      value is read; the fix is to keep the activations on the device (or to copy without waiting).

In any trace the construct is: the host's sync-wait calls (cuda*Synchronize, and blocking copy calls) whose waiting
is mostly (HOLDS) inside one of those constructs. A user's own read inside a conv op cannot exist (the op runs no
Python); a user's own copy to the host is an op of its own (aten::to, aten::copy_, aten::item at the top of its
stack), never nested in a compute op, and a user read sits in one or two places, where a saved-tensor hook fires in
every op that saves a tensor (OFFLOAD_OPS kinds at least). What would make it fire falsely: a custom op that copies
to the host inside itself in several kinds of op (a dispatch mode logging tensors): it is library machinery too, and
the words say what the trace shows, device-to-host copies inside compute ops.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.sparse_syncs import inside_ops
from tracetriage.analyzers.analyses.sync_calls import at_window_edge
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.op_extents import op_extents
from tracetriage.analyzers.model.runtime_calls import ALLOCATOR_SYNC_CALLS, SYNC_CALLS
from tracetriage.analyzers.model.trace import CPU_OP, MEMCPY, NONE, Trace

CUDNN_BENCHMARK = "cudnn_trials"
OFFLOAD_COPIES = "offload_copies"
# the ops cuDNN runs a convolution in (forward, transposed, fused, and the backward's data and weight gradients)
CUDNN_CONV_OPS = frozenset({"aten::cudnn_convolution", "aten::cudnn_convolution_transpose",
                            "aten::convolution_backward", "aten::cudnn_convolution_relu",
                            "aten::cudnn_convolution_add_relu", "aten::miopen_convolution"})
# a copy to the host that is the user's own read: the outermost op is the copy or read itself
USER_READ_OPS = frozenset({"aten::to", "aten::_to_copy", "aten::copy_", "aten::item", "aten::_local_scalar_dense",
                           "aten::cpu", "aten::tolist", "aten::numpy", "aten::clone", "aten::contiguous",
                           "aten::nonzero", "aten::is_nonzero", "aten::equal", "aten::allclose", "aten::masked_select",
                           "aten::unique", "aten::_unique2", "aten::index", "aten::repeat_interleave"})
HOLDS = 0.5         # the library's syncs hold at least this share of the host's time in sync-wait calls
OFFLOAD_OPS = 3     # a saved-tensor hook fires in this many kinds of op or more (a user's read sits in one or two)
WAITS = SYNC_CALLS - ALLOCATOR_SYNC_CALLS - {"cudaStreamQuery", "hipStreamQuery"}


@dataclass(frozen=True)
class LibrarySyncs:
    kind: str                   # CUDNN_BENCHMARK or OFFLOAD_COPIES
    syncs: int                  # sync-wait calls the library made
    total: int                  # sync-wait calls in the trace
    waited_ns: int              # the host's time in the library's calls
    share: float                # ... of its time in every sync-wait call
    ops: tuple[str, ...]        # the outermost ops they were made in, most time first
    copies: int = 0             # offload_copies: the device-to-host copies those ops made
    copy_bytes: int = 0         # ... and their bytes


def library_syncs(trace: Trace) -> LibrarySyncs | None:
    """The library machinery that holds most of the host's time in sync-wait calls, or None (the user's reads)."""
    ev = trace.ev
    ids = [i for i, n in enumerate(trace.names) if n in WAITS]
    waits = np.flatnonzero(np.isin(ev.name, ids) & (ev.cat != CPU_OP)) if ids else np.zeros(0, np.int64)
    # the window's edges drain what was queued before the profiler started (the harness's synchronize): no one's
    # sync of the loop (pythia_activations_offloaded-before: two such calls held 72 of the 138 ms)
    waits = waits[~at_window_edge(trace, waits)]
    if not len(waits):
        return None
    dur = (ev.end[waits] - ev.start[waits]).astype(np.int64)
    total_ns = int(dur.sum())
    if total_ns <= 0:
        return None
    outer = _outermost_ops(trace, waits)
    conv = inside_ops(trace, waits, CUDNN_CONV_OPS)
    offload, copies = _offload_waits(trace, waits, outer)
    for kind, m in ((CUDNN_BENCHMARK, conv), (OFFLOAD_COPIES, offload & ~conv)):
        held = int(dur[m].sum())
        if not m.any() or held < HOLDS * total_ns:
            continue
        ops = _by_time(trace, outer[m], dur[m])
        if kind == OFFLOAD_COPIES and len(ops) < OFFLOAD_OPS:
            continue
        nb = ev.nbytes[copies] if kind == OFFLOAD_COPIES else np.zeros(0, np.int64)
        return LibrarySyncs(kind, int(m.sum()), len(waits), held, held / total_ns, tuple(ops[:3]),
                            copies=len(nb), copy_bytes=int(nb[nb > 0].sum()))
    return None


def _offload_waits(trace: Trace, waits: np.ndarray, outer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per wait call: it waits for a device-to-host copy issued by the same op (one External id: the copy call and
    its stream sync inside aten::copy_) whose outermost op is a compute op, not the user's own copy or read; and the
    device-to-host copies those ops made."""
    ev = trace.ev
    rows = np.flatnonzero(ev.cat == MEMCPY)
    launch = trace.launch_of[rows]
    ok = launch != NONE
    rows, launch = rows[ok], launch[ok]
    dtoh = np.array(["DtoH" in trace.names[n] for n in ev.name[rows].tolist()], bool) if len(rows) else \
        np.zeros(0, bool)
    rows, launch = rows[dtoh], launch[dtoh]
    if not len(rows):
        return np.zeros(len(waits), bool), rows
    ext = ev.ext[launch]
    copy_outer = _outermost_ops(trace, launch)
    in_compute = np.array([o != NONE and trace.name_of(int(o)) not in USER_READ_OPS for o in copy_outer.tolist()],
                          bool)
    hooked = rows[in_compute & (ext != NONE)]
    hooked_ext = ext[in_compute & (ext != NONE)]
    same_op = np.isin(ev.ext[waits], hooked_ext) & (ev.ext[waits] != NONE)
    # a blocking copy call is its own wait: it is one of the launching calls
    own = np.isin(waits, launch[in_compute])
    m = (same_op | own) & (outer != NONE)
    return m, hooked


def _outermost_ops(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The outermost cpu_op around each row on its thread (NONE where no op encloses it)."""
    ev = trace.ev
    out = np.full(len(rows), NONE, np.int64)
    extents = op_extents(trace)     # (the idle analysis's host context asks them too)
    for tid in distinct(ev.tid[rows]).tolist():
        if tid not in extents:
            continue
        top_s, top_e, top_r = extents[tid]
        m = np.flatnonzero(ev.tid[rows] == tid)
        k = np.searchsorted(top_s, ev.start[rows[m]], side="right") - 1
        inside = (k >= 0) & (ev.start[rows[m]] < top_e[np.maximum(k, 0)])
        out[m[inside]] = top_r[k[inside]]
    return out


def _by_time(trace: Trace, ops: np.ndarray, dur: np.ndarray) -> list[str]:
    """The distinct names of these ops, most waiting first."""
    acc: dict[str, int] = {}
    for o, d in zip(ops.tolist(), dur.tolist()):
        if o != NONE:
            name = trace.name_of(int(o))
            acc[name] = acc.get(name, 0) + int(d)
    return [n for n, _ in sorted(acc.items(), key=lambda kv: -kv[1])]
