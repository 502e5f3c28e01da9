"""CUDA/HIP graph replays joined to the ops that launched their kernels when the graph was captured.

A replay is one launch call (cudaGraphLaunch, hipGraphLaunch) whose GPU activities all carry its
correlation, with no op, shapes or stack of their own. While a stream is being captured
(cudaStreamBeginCapture ... cudaStreamEndCapture on one thread) each launch and copy call records a
node instead of running: the call is in the trace, inside its op with the op's shapes, and no GPU
activity follows it. A replay runs those nodes, so the i-th activity of a replay is the node of the
i-th call captured, when the two sequences agree kind by kind (a kernel for a launch call, a copy or
memset for a copy call). The activities are put in node order by CUPTI's graph node ids where the
trace has them (Kineto 2026+ on CUDA 12+ writes "graph node id"), else in the order they started.

A replay is joined to the one capture whose sequence agrees with it; several that agree are one
capture when they captured the same ops with the same shapes (a graph captured again), else the
replay stays unjoined: vLLM captures one graph per batch size with the same kernels, and charging a
replay to the wrong size's shapes would put it on the roofline at the wrong place.

The capture may be in the replay's own trace (captured inside the profiled window), or in a separate
capture trace, as vLLM and SGLang write one: `with_capture` carries that trace's ops into the
replay's trace as CAPTURED_OP rows (zero-length, at the trace's end, which no analysis of time reads).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.names import name_tests
from tracetriage.analyzers.model.runtime_calls import (
    is_capture_begin,
    is_capture_end,
    is_copy,
    is_graph_launch,
    is_launch,
)
from tracetriage.analyzers.model.trace import (
    CAPTURED_OP,
    GPU_CATS,
    GRAPH_UNJOINED_KINDS,
    HOST_CALL_CATS,
    KERNEL,
    NONE,
    Caveat,
    Events,
    Trace,
)

KERNEL_NODE, COPY_NODE = 0, 1      # what a captured call records, and what a replayed activity is


@dataclass(frozen=True)
class Capture:
    """One captured graph: the calls that recorded its nodes, in order, and what each recorded."""
    calls: np.ndarray      # rows of the launch and copy calls made while the stream was captured
    kinds: np.ndarray      # KERNEL_NODE / COPY_NODE per call
    ops: np.ndarray        # the op row of each call (NONE where the call is in no op)
    end_ns: int            # when the capture ended


@dataclass(frozen=True)
class Replay:
    call: int              # the graph launch call's row
    rows: np.ndarray       # its GPU activities, in node order
    kinds: np.ndarray


def captures(trace: Trace) -> list[Capture]:
    """The graphs captured in a trace, in the order their captures began."""
    ev = trace.ev
    if not any(map(is_capture_begin, trace.names)):
        return []
    calls = np.flatnonzero(any_of(ev.cat, HOST_CALL_CATS))
    begin, end, launch, copy, graph = name_tests(trace, calls, is_capture_begin, is_capture_end, is_launch, is_copy,
                                                 is_graph_launch)
    if not begin.any():
        return []
    # a call that ran GPU work was not captured (another stream, or a relaxed capture mode)
    ran = np.zeros(len(ev), bool)
    issued = trace.launch_of[any_of(ev.cat, GPU_CATS)]
    ran[issued[issued != NONE]] = True
    recording = _ByThread(ev, calls[(launch & ~graph | copy) & ~ran[calls]])
    ends = _ByThread(ev, calls[end])
    copy_row = np.zeros(len(ev), bool)
    copy_row[calls[copy]] = True
    out = []
    for b in calls[begin].tolist():
        pid, tid, t = int(ev.pid[b]), int(ev.tid[b]), int(ev.start[b])
        after = ends.between(pid, tid, t, None)
        stop = int(ev.start[after[0]]) if len(after) else int(ev.end.max())
        on = _outermost(ev, recording.between(pid, tid, t, stop))
        if not len(on):
            continue
        kinds = np.where(copy_row[on], COPY_NODE, KERNEL_NODE).astype(np.int8)
        out.append(Capture(on, kinds, trace.op_of[on], stop))
    return out


class _ByThread:
    """Rows grouped by thread, each thread's in row order (rows sort by start): one thread's rows inside a time
    window are two binary searches away, not a pass over every row per question."""

    def __init__(self, ev: Events, rows: np.ndarray):
        order = np.lexsort((rows, ev.tid[rows], ev.pid[rows]))
        self.rows = rows[order]
        self.pid, self.tid, self.start = ev.pid[self.rows], ev.tid[self.rows], ev.start[self.rows]

    def between(self, pid: int, tid: int, after: int, before: int | None, at_or_after: int | None = None) -> np.ndarray:
        """The thread's rows that start after `after` (and at or after `at_or_after`) and before `before` (None:
        no bound), in row order."""
        lo = np.searchsorted(self.pid, pid, side="left")
        hi = np.searchsorted(self.pid, pid, side="right")
        lo, hi = lo + np.searchsorted(self.tid[lo:hi], tid, side="left"), lo + np.searchsorted(self.tid[lo:hi], tid,
                                                                                                side="right")
        start = self.start[lo:hi]
        a = np.searchsorted(start, after, side="right")
        if at_or_after is not None:
            a = max(a, np.searchsorted(start, at_or_after, side="left"))
        b = np.searchsorted(start, before, side="left") if before is not None else len(start)
        return self.rows[lo + a:lo + max(a, b)]


def capture_windows(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pid, tid, start, end) of each stream capture: from its begin call's start to its end call's end, and
    on to the end of the graph instantiation that follows it on the thread (the capture's set-up)."""
    ev = trace.ev
    empty = np.zeros(0, np.int64)
    if not any(map(is_capture_begin, trace.names)):    # (a few thousand names, not a million rows)
        return empty, empty, empty, empty
    calls = np.flatnonzero(any_of(ev.cat, HOST_CALL_CATS))
    begin, end, inst = name_tests(trace, calls, is_capture_begin, is_capture_end, lambda n: "GraphInstantiate" in n)
    begins, ends, insts = _ByThread(ev, calls[begin]), _ByThread(ev, calls[end]), _ByThread(ev, calls[inst])
    pid, tid, start, stop = [], [], [], []
    for b in calls[begin].tolist():
        p, t, s = int(ev.pid[b]), int(ev.tid[b]), int(ev.start[b])
        after = ends.between(p, t, s, None)
        e = int(ev.end[after[0]]) if len(after) else int(ev.end.max())
        nxt = insts.between(p, t, s, None, at_or_after=e)
        if len(nxt) and (not len(after) or len(begins.between(p, t, s, int(ev.start[nxt[0]]))) == 0):
            e = int(ev.end[nxt[0]])      # the instantiation of this capture, before any next capture begins
        pid.append(p), tid.append(t), start.append(s), stop.append(e)
    return (np.array(pid, np.int64), np.array(tid, np.int64), np.array(start, np.int64), np.array(stop, np.int64))


def in_capture(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """For host rows: whether each is made on a thread while it captures a graph (or instantiates it)."""
    ev = trace.ev
    out = np.zeros(len(rows), bool)
    pid, tid, s, e = capture_windows(trace)
    for p, t in set(zip(pid.tolist(), tid.tolist())):   # per capturing thread: its windows merged, then a search
        mine = (pid == p) & (tid == t)
        ws, we = iv.union(s[mine], e[mine])
        on = np.flatnonzero((ev.pid[rows] == p) & (ev.tid[rows] == t))
        k = np.searchsorted(ws, ev.start[rows[on]], side="right") - 1
        out[on] = (k >= 0) & (ev.start[rows[on]] < we[np.maximum(k, 0)])
    return out


def _outermost(ev: Events, calls: np.ndarray) -> np.ndarray:
    """Calls not nested in another of them (a runtime launch that wraps a driver launch records one node)."""
    if len(calls) < 2:
        return calls
    ends = np.maximum.accumulate(ev.end[calls])
    return calls[np.r_[True, ev.start[calls][1:] >= ends[:-1]]]


def replays(trace: Trace) -> list[Replay]:
    """Every graph launch that ran GPU work, with its activities in node order."""
    ev = trace.ev
    if not any(map(is_graph_launch, trace.names)):    # (a few thousand names, not a million rows)
        return []
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS))
    call = trace.launch_of[gpu]
    linked = gpu[call != NONE]
    if not len(linked):
        return []
    linked = linked[np.argsort(trace.launch_of[linked], kind="stable")]   # by call, each call's in start order
    uniq, first = np.unique(trace.launch_of[linked], return_index=True)
    graph = name_tests(trace, uniq, is_graph_launch)[0]
    bounds = np.r_[first, len(linked)]
    out = []
    for i in np.flatnonzero(graph).tolist():
        rows = linked[bounds[i]:bounds[i + 1]]
        nodes = ev.graph_node[rows]
        if (nodes != NONE).all():
            rows = rows[np.argsort(nodes, kind="stable")]
        kinds = np.where(ev.cat[rows] == KERNEL, KERNEL_NODE, COPY_NODE).astype(np.int8)
        out.append(Replay(int(uniq[i]), rows, kinds))
    return out


def match(replay: Replay, caps: list[Capture], source: Trace) -> Capture | None:
    """The capture a replay ran, or None when no capture agrees with it, or several captured other shapes."""
    agree = [c for c in caps if len(c.kinds) == len(replay.kinds) and (c.kinds == replay.kinds).all()]
    if not agree:
        return None
    ev = source.ev
    sigs = {tuple(np.where(c.ops != NONE, ev.name[np.maximum(c.ops, 0)].astype(np.int64) * (1 << 32)
                           + ev.shape[np.maximum(c.ops, 0)], NONE).tolist()) for c in agree}
    return agree[-1] if len(sigs) == 1 else None


def join(trace: Trace) -> tuple[np.ndarray | None, list[Caveat]]:
    """graph_op_of for a trace whose graphs were captured inside it, and the caveat for replays left unjoined."""
    reps = replays(trace)
    if not reps:
        return None, []
    caps = captures(trace)
    graph_op_of = np.full(len(trace.ev), NONE, np.int64)
    joined = []
    for r in reps:
        c = match(r, caps, trace)
        if c is not None:
            graph_op_of[r.rows] = c.ops       # (a node whose call was in no op stays NONE, as an eager one would)
            joined.append(r)
    return graph_op_of, _caveats(reps, joined, trace, caps)


def _caveats(reps: list[Replay], joined: list[Replay], trace: Trace, caps: list[Capture]) -> list[Caveat]:
    """The GPU activities of replays that no capture explains: graph_capture_unrecorded where the trace holds
    captures (cudaStreamBeginCapture ... EndCapture) but no launch call made under any of them (the profiler of
    some torch/CUDA versions records none: heldout-user19 gp_cudagraph captures its graph in the window, and was
    told it was 'captured outside the profiled window ... profile the capture too'), else graph_replay_unjoined."""
    total = sum(len(r.rows) for r in reps)
    done = sum(len(r.rows) for r in joined)
    if done >= total:
        return []
    if not caps and len(capture_windows(trace)[2]):
        return [Caveat("graph_capture_unrecorded", total - done, total)]
    return [Caveat("graph_replay_unjoined", total - done, total)]


def with_capture(trace: Trace, capture: Trace) -> Trace:
    """The replay trace with its graph replays joined to the ops of a separate capture trace: those ops
    become CAPTURED_OP rows of the trace (zero-length, at its end); the caveat counts what stays unjoined."""
    reps = replays(trace)
    own, caps = captures(trace), captures(capture)
    ev = trace.ev
    graph_op_of = trace.graph_op_of.copy() if trace.graph_op_of is not None else np.full(len(ev), NONE, np.int64)
    wanted: dict[int, int] = {}        # op row in the capture trace -> its new row in the trace
    pairs, joined = [], []
    for r in reps:
        if match(r, own, trace) is not None:
            joined.append(r)           # captured inside the trace itself
            continue
        c = match(r, caps, capture)
        if c is not None:
            pairs.append((r, c))
            joined.append(r)
            for op in c.ops[c.ops != NONE].tolist():
                wanted.setdefault(op, len(ev) + len(wanted))
    ops = np.array(list(wanted), np.int64)
    names, shapes = list(trace.names), list(trace.shapes_raw)
    name_ids = {n: i for i, n in enumerate(names)}
    shape_ids = {s: i for i, s in enumerate(shapes)}
    new_name = np.array([name_ids.setdefault(capture.names[i], len(name_ids)) for i in capture.ev.name[ops]], np.int32)
    names += [n for n in name_ids if name_ids[n] >= len(names)]
    sid = capture.ev.shape[ops]
    new_shape = np.array([NONE if s == NONE else shape_ids.setdefault(capture.shapes_raw[s], len(shape_ids))
                          for s in sid.tolist()], np.int32)
    shapes += [s for s in shape_ids if shape_ids[s] >= len(shapes)]
    at = int(ev.end.max()) if len(ev) else 0      # at the end: the rows stay sorted by start, no span grows
    k = len(ops)
    added = {"cat": np.full(k, CAPTURED_OP, np.int8), "name": new_name, "start": np.full(k, at, np.int64),
             "end": np.full(k, at, np.int64), "shape": new_shape,
             "device": np.full(k, NONE, np.int32)}
    cols = {c: np.concatenate([getattr(ev, c), added.get(c, np.full(k, NONE, getattr(ev, c).dtype))])
            for c in ev.__dict__}
    for r, c in pairs:
        graph_op_of[r.rows] = [wanted[o] if o != NONE else NONE for o in c.ops.tolist()]
    pad = np.full(k, NONE, np.int64)
    graph_op_of = np.concatenate([graph_op_of, pad])
    caveats = [x for x in trace.caveats if x.kind not in GRAPH_UNJOINED_KINDS] + _caveats(reps, joined, trace, own)
    return replace(trace, names=names, shapes_raw=shapes, ev=Events(**cols),
                   launch_of=np.concatenate([trace.launch_of, pad]), op_of=np.concatenate([trace.op_of, pad]),
                   graph_op_of=graph_op_of, caveats=tuple(caveats))
