"""The timeline as arrays: what a timeline view draws and a drill grader quotes.

Every bar is (lane, start, end, kind, name) in µs from the first GPU activity:
GPU lanes per (device, stream), host lanes per thread (cpu_ops, launch calls),
named ranges, and the idle gaps with their causes. Nothing here re-derives a
number: gaps and causes come from the analysis.

Two levels of detail, so that a trace of a million events stays drawable:
`overview()` bins a window into busy shares per lane and idle shares per cause
(a few thousand numbers whatever the trace's size); `build()` gives the raw bars
of a window, which a view asks for only when `count()` says the window is small.

As Perfetto and Nsight Systems draw them: host bars carry their nesting depth in their
lane (an op inside an op one row down), every bar an anchor on the host (its own span,
or its launch call's for GPU work) so that a view can light up an op's launch calls and
kernels (the flow), and host runtime calls are told apart as launch, sync or other calls.
`matches()` finds events by name for a search box, `flow()` lists what one event launched
or was launched by.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.framework import marking_rows
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.dtypes import normalise_dtype
from tracetriage.analyzers.model.names import name_tests
from tracetriage.analyzers.model.runtime_calls import is_copy, is_launch, is_sync
from tracetriage.analyzers.model.trace import (
    CPU_OP,
    DRIVER,
    GPU_CATS,
    HOST_CALL_CATS,
    KERNEL,
    MEMCPY,
    MEMSET,
    NONE,
    RUNTIME,
    USER_ANNOTATION,
    Trace,
)
from tracetriage.analyzers.model.verdicts import CAUSES, CONSTRUCTS, Construct
from tracetriage.analyzers.triage.report import Analysis

KINDS = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset", CPU_OP: "cpu_op", RUNTIME: "launch call",
         DRIVER: "launch call", USER_ANNOTATION: "range"}
SYNC_CALL, OTHER_CALL = "sync call", "runtime call"   # host calls that wait for the device / that issue nothing


@dataclass(frozen=True)
class Timeline:
    origin_ns: int
    lanes: list[str]
    lane: np.ndarray      # int32 index into lanes
    start_us: np.ndarray  # float64, from origin
    end_us: np.ndarray
    kind: list[str]
    name: list[str]
    gap_device: np.ndarray
    gap_start_us: np.ndarray
    gap_end_us: np.ndarray
    gap_cause: list[str]
    row: np.ndarray | None = None            # each bar's row in trace.ev
    shapes: list[str] | None = None          # each bar's input shapes and dtypes ("" when not recorded)
    gap_host_call: list[str] | None = None   # the host call that explains each gap ("" when none)
    gap_called_from: list[str] | None = None  # the op that made that call ("" when none)
    gap_next: list[str] | None = None        # the GPU activity that ended each gap ("" when none)
    depth: np.ndarray | None = None          # int32: each bar's nesting depth in its lane (0 outermost; GPU 0)
    anchor_tid: np.ndarray | None = None     # int64: the host thread of the bar, or of its launch call (NONE)
    anchor_start_us: np.ndarray | None = None   # the bar's own span on the host, or its launch call's (NaN)
    anchor_end_us: np.ndarray | None = None

    def records(self) -> list[dict]:
        """Bars then gaps, as plain dicts (for Altair / pandas)."""
        bars = [{"lane": self.lanes[lane], "start_us": float(s), "end_us": float(e), "kind": k, "name": n}
                for lane, s, e, k, n in zip(self.lane, self.start_us, self.end_us, self.kind, self.name)]
        gaps = [{"lane": f"gpu{d} idle", "start_us": float(s), "end_us": float(e), "kind": "idle", "name": c}
                for d, s, e, c in zip(self.gap_device, self.gap_start_us, self.gap_end_us, self.gap_cause)]
        return bars + gaps


@dataclass(frozen=True)
class Overview:
    """A window cut into equal bins: how busy each lane is and why each device idles, per bin."""
    origin_ns: int
    edges_us: np.ndarray        # bins + 1 edges, µs from the origin
    lanes: tuple[str, ...]
    busy: np.ndarray            # [lane, bin] share of the bin covered by the lane's activity, 0..1
    idle_devices: tuple[int, ...]
    idle: np.ndarray            # [device, cause (CAUSES order), bin] share of the bin idle for that cause
    events: int                 # drawable events overlapping the window

    @property
    def bins(self) -> int:
        return len(self.edges_us) - 1


def origin_ns(trace: Trace) -> int:
    """Time zero of the view: the first GPU activity (the first event when there is none)."""
    ev = trace.ev
    gpu = np.isin(ev.cat, GPU_CATS)
    return int(ev.start[gpu].min()) if gpu.any() else int(ev.start.min(initial=0))


def _drawn_rows(trace: Trace) -> np.ndarray:
    return np.flatnonzero(np.isin(trace.ev.cat, list(KINDS)))


def extent_us(a: Analysis) -> tuple[float, float]:
    """First start and last end of everything drawn, µs from the origin."""
    ev = a.trace.ev
    rows = _drawn_rows(a.trace)
    if len(rows) == 0:
        return 0.0, 0.0
    o = origin_ns(a.trace)
    return (int(ev.start[rows].min()) - o) / 1e3, (int(ev.end[rows].max()) - o) / 1e3


def count(a: Analysis, window_us: tuple[float, float]) -> int:
    """How many drawable events overlap the window: the view draws raw bars only when this is small."""
    ev = a.trace.ev
    rows = _drawn_rows(a.trace)
    lo, hi = _window_ns(a.trace, window_us)
    return int(np.count_nonzero((ev.end[rows] > lo) & (ev.start[rows] < hi)))


def _window_ns(trace: Trace, window_us: tuple[float, float]) -> tuple[int, int]:
    o = origin_ns(trace)
    return o + int(round(window_us[0] * 1e3)), o + int(round(window_us[1] * 1e3))


def _lane_index(trace: Trace, rows: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Lane names (host threads first, then GPU streams) and each row's lane, without a loop over rows."""
    ev = trace.ev
    cat = ev.cat[rows]
    gpu = np.isin(cat, GPU_CATS)
    group = np.where(gpu, 2, np.where(cat == USER_ANNOTATION, 1, 0)).astype(np.int64)
    a = np.where(gpu, ev.device[rows].astype(np.int64), ev.tid[rows])
    b = np.where(gpu, ev.stream[rows], 0)
    # One int64 code per (group, a, b), so a 1-D unique does the work (a row-wise unique sorts structs: 50x slower).
    ua, ia = np.unique(a, return_inverse=True)
    ub, ib = np.unique(b, return_inverse=True)
    code = (group * len(ua) + ia.reshape(-1)) * max(len(ub), 1) + ib.reshape(-1)
    ucode, inv = np.unique(code, return_inverse=True)
    uniq = np.stack([ucode // (len(ua) * max(len(ub), 1)), ua[(ucode // max(len(ub), 1)) % max(len(ua), 1)],
                     ub[ucode % max(len(ub), 1)]], axis=1) if len(rows) else np.zeros((0, 3), np.int64)
    names = [f"gpu{k[1]} stream {k[2]}" if k[0] == 2 else f"host thread {k[1]}" + (" ranges" if k[0] == 1 else "")
             for k in uniq.tolist()]
    order = sorted(range(len(names)), key=lambda i: (not names[i].startswith("host"), names[i]))
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return [names[i] for i in order], rank[inv.reshape(-1)] if len(rows) else np.zeros(0, np.int64)


def overview(a: Analysis, bins: int = 400, window_us: tuple[float, float] | None = None) -> Overview:
    """Busy share per lane and idle share per cause, in `bins` equal bins over the window (the whole
    trace by default). Vectorised: a million events take a fraction of a second."""
    tr = a.trace
    ev = tr.ev
    o = origin_ns(tr)
    if window_us is None:
        window_us = extent_us(a)
    lo, hi = _window_ns(tr, window_us)
    hi = max(hi, lo + bins)  # at least 1 ns per bin
    edges = np.linspace(lo, hi, bins + 1).round().astype(np.int64)
    width = np.diff(edges).astype(np.float64)
    rows = _drawn_rows(tr)
    inside = (ev.end[rows] > lo) & (ev.start[rows] < hi)
    rows = rows[inside]
    lanes, lane = _lane_index(tr, rows)
    busy = lane_busy(lane, ev.start[rows], ev.end[rows], len(lanes), edges)
    devices = tuple(int(d.device) for d in a.devices)
    idle = np.zeros((len(devices), len(CAUSES), bins))
    for j, d in enumerate(a.devices):
        g = d.gaps
        for c in range(len(CAUSES)):
            m = g.cause == c
            if m.any():
                s, e = iv.union(g.start[m], g.end[m])
                idle[j, c] = iv.covered(s, e, edges[:-1], edges[1:]) / width
    return Overview(origin_ns=o, edges_us=(edges - o) / 1e3, lanes=tuple(lanes), busy=busy, idle_devices=devices,
                    idle=idle, events=int(len(rows)))


def lane_busy(lane: np.ndarray, start: np.ndarray, end: np.ndarray, n_lanes: int, edges: np.ndarray) -> np.ndarray:
    """[lane, bin]: the share of each bin (between consecutive `edges`) that the lane's intervals cover, 0..1.
    Any unit, as long as intervals and edges share it (the what-if's predicted timeline bins with it too)."""
    width = np.diff(edges).astype(np.float64)
    busy = np.zeros((n_lanes, len(edges) - 1))
    order = np.argsort(lane, kind="stable")
    bounds = np.searchsorted(lane[order], np.arange(n_lanes + 1))
    for i in range(n_lanes):
        r = order[bounds[i]:bounds[i + 1]]
        s, e = iv.union(start[r], end[r])
        busy[i] = iv.covered(s, e, edges[:-1], edges[1:]) / width
    return busy


def build(a: Analysis, window_us: tuple[float, float] | None = None, max_bars: int = 20000) -> Timeline:
    """The bars overlapping window_us (µs from the origin); the longest max_bars if there are more."""
    tr = a.trace
    ev = tr.ev
    origin = origin_ns(tr)
    rows = _drawn_rows(tr)
    s = (ev.start[rows] - origin) / 1e3
    e = (ev.end[rows] - origin) / 1e3
    keep = np.ones(len(rows), dtype=bool)
    if window_us is not None:
        keep = (e > window_us[0]) & (s < window_us[1])
    rows, s, e = rows[keep], s[keep], e[keep]
    if len(rows) > max_bars:
        top = np.argsort(-(e - s), kind="stable")[:max_bars]
        top.sort()
        rows, s, e = rows[top], s[top], e[top]
    lanes, lane = _lane_index(tr, rows)
    gs, ge, gc, gd, gh, gn = [], [], [], [], [], []
    for d in a.devices:
        g = d.gaps
        s_g, e_g = (g.start - origin) / 1e3, (g.end - origin) / 1e3
        m = np.ones(len(g), dtype=bool) if window_us is None else (e_g > window_us[0]) & (s_g < window_us[1])
        gs.append(s_g[m])
        ge.append(e_g[m])
        gd.append(g.device[m])
        gc += [CAUSES[c] for c in g.cause[m]]
        gh.append(g.host_row[m])
        gn.append(g.next_row[m])
    cat = np.concatenate
    host = cat(gh) if gh else np.zeros(0, np.int64)
    nxt = cat(gn) if gn else np.zeros(0, np.int64)
    tid, a0, a1 = _anchors(tr, rows, origin)
    return Timeline(origin_ns=origin, lanes=lanes, lane=lane.astype(np.int32),
                    start_us=s, end_us=e, kind=_kinds(tr, rows),
                    name=[tr.names[i] for i in ev.name[rows]],
                    gap_device=cat(gd) if gd else np.zeros(0, np.int32), gap_start_us=cat(gs) if gs else np.zeros(0),
                    gap_end_us=cat(ge) if ge else np.zeros(0), gap_cause=gc, row=rows,
                    shapes=_shapes_of(tr, rows), gap_host_call=[_name(tr, r) for r in host],
                    gap_called_from=[_name(tr, tr.op_of[r]) if r != NONE else "" for r in host],
                    gap_next=[_name(tr, r) for r in nxt],
                    depth=_depth(lane, ev.start[rows], ev.end[rows], np.isin(ev.cat[rows], GPU_CATS)),
                    anchor_tid=tid, anchor_start_us=a0, anchor_end_us=a1)


def _kinds(trace: Trace, rows: np.ndarray) -> list[str]:
    """Each bar's kind; a host runtime call is a launch call (a launch or a copy), a sync call or another call."""
    ev = trace.ev
    kinds = np.array([KINDS[int(c)] for c in ev.cat[rows]], dtype=object)
    calls = np.flatnonzero(np.isin(ev.cat[rows], (RUNTIME, DRIVER)))
    sync, issues = name_tests(trace, rows[calls], is_sync, lambda n: is_launch(n) or is_copy(n))
    kinds[calls[sync]] = SYNC_CALL           # cudaMemcpy is both a copy and a sync: the wait is what shows
    kinds[calls[~sync & ~issues]] = OTHER_CALL
    return kinds.tolist()


def _depth(lane: np.ndarray, start: np.ndarray, end: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """Nesting depth of each host bar among the bars of its lane, as Perfetto stacks slices: a bar that
    starts inside an open one goes a row below it. Rows come sorted by (start, -end), so a parent precedes
    its children. GPU bars (`flat`) stay on their stream's one row: kernels of a stream may overlap by a
    hair (programmatic dependent launch), which is no nesting. A loop, but over one window's bars only
    (a view asks for a few thousand at most)."""
    depth = np.zeros(len(lane), np.int32)
    open_ends: dict[int, list[int]] = {}
    for i, (ln, s, e) in enumerate(zip(lane.tolist(), start.tolist(), end.tolist())):
        if flat[i]:
            continue
        stack = open_ends.setdefault(ln, [])
        while stack and stack[-1] <= s:
            stack.pop()
        depth[i] = len(stack)
        stack.append(e)
    return depth


def _anchors(trace: Trace, rows: np.ndarray, origin: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each bar sits on the host: its own thread and span, or for GPU work its launch call's.
    An op's flow is then every bar anchored on its thread inside its span (its calls, their kernels)."""
    ev = trace.ev
    gpu = np.isin(ev.cat[rows], GPU_CATS)
    call = np.where(gpu, trace.launch_of[rows], rows)
    has = call != NONE
    at = np.maximum(call, 0)
    tid = np.where(has, ev.tid[at], NONE).astype(np.int64)
    a0 = np.where(has, (ev.start[at] - origin) / 1e3, np.nan)
    a1 = np.where(has, (ev.end[at] - origin) / 1e3, np.nan)
    return tid, a0, a1


@dataclass(frozen=True)
class Matches:
    """Drawable events whose name holds a search text, in time order (µs from the origin)."""
    text: str
    row: np.ndarray         # int64 rows in trace.ev
    start_us: np.ndarray
    end_us: np.ndarray
    names: tuple[str, ...]  # the distinct names matched, most frequent first

    def __len__(self) -> int:
        return len(self.row)


def matches(a: Analysis, text: str) -> Matches:
    """Every drawable event whose name contains `text` (case-insensitive). The test runs once per distinct
    name, so a million events cost one np.isin."""
    tr = a.trace
    ev = tr.ev
    o = origin_ns(tr)
    needle = text.strip().lower()
    rows = _drawn_rows(tr)
    if not needle:
        rows = rows[:0]
    else:
        ids = np.array([i for i, n in enumerate(tr.names) if needle in n.lower()], dtype=np.int64)
        rows = rows[np.isin(ev.name[rows], ids)]
    ids, counts = np.unique(ev.name[rows], return_counts=True)
    names = tuple(tr.names[int(i)] for i in ids[np.argsort(-counts, kind="stable")])
    return Matches(text=text, row=rows.astype(np.int64), start_us=(ev.start[rows] - o) / 1e3,
                   end_us=(ev.end[rows] - o) / 1e3, names=names)


@dataclass(frozen=True)
class FlowStep:
    row: int
    kind: str
    name: str
    start_us: float         # from the origin
    dur_us: float
    lane: str
    queued_us: float | None = None   # GPU work: from its launch call's start to its own (None on the host)


@dataclass(frozen=True)
class Flow:
    """One event and what it is linked to: the op that issued it, the launch calls, the GPU work they queued."""
    event: FlowStep
    op: FlowStep | None             # the op that made the event's launch call (for a call or GPU work)
    calls: tuple[FlowStep, ...]     # launch calls made inside the event (an op) or the one that queued it
    gpu: tuple[FlowStep, ...]       # GPU activities those calls queued


def flow(a: Analysis, row: int) -> Flow:
    """The flow of one drawable event, as Perfetto's flow arrows show it: an op -> every launch call
    inside it on its thread -> their kernels; a launch call -> its op and its kernels; GPU work -> its
    launch call and op."""
    tr = a.trace
    ev = tr.ev
    o = origin_ns(tr)
    cat = int(ev.cat[row])
    if cat in GPU_CATS:
        c = int(tr.launch_of[row])
        calls = np.array([c] if c != NONE else [], np.int64)
    elif cat in HOST_CALL_CATS:
        calls = np.array([row], np.int64)
    else:
        inside = np.flatnonzero(np.isin(ev.cat, HOST_CALL_CATS) & (ev.tid == ev.tid[row]) & (ev.start >= ev.start[row])
                                & (ev.end <= ev.end[row]))
        calls = inside
    gpu_rows = np.flatnonzero(np.isin(tr.launch_of, calls) & np.isin(ev.cat, GPU_CATS)) if len(calls) else calls
    if cat in (CPU_OP, USER_ANNOTATION):
        calls = calls[np.isin(calls, tr.launch_of[gpu_rows])]   # the calls that queued GPU work
    op = None
    if cat in GPU_CATS or cat in HOST_CALL_CATS:
        c = calls[0] if len(calls) else NONE
        if c != NONE and tr.op_of[c] != NONE:
            op = _step(tr, int(tr.op_of[c]), o)
    return Flow(event=_step(tr, row, o), op=op, calls=tuple(_step(tr, int(r), o) for r in calls),
                gpu=tuple(_step(tr, int(r), o) for r in gpu_rows))


def _step(trace: Trace, row: int, origin: int) -> FlowStep:
    ev = trace.ev
    r = np.array([row])
    lanes, _ = _lane_index(trace, r)
    call = int(trace.launch_of[row]) if int(ev.cat[row]) in GPU_CATS else NONE
    queued = (int(ev.start[row]) - int(ev.start[call])) / 1e3 if call != NONE else None
    return FlowStep(row=row, kind=_kinds(trace, r)[0], name=trace.name_of(row),
                    start_us=(int(ev.start[row]) - origin) / 1e3, dur_us=int(ev.end[row] - ev.start[row]) / 1e3,
                    lane=lanes[0], queued_us=queued)


def _name(trace: Trace, row) -> str:
    return trace.names[trace.ev.name[row]] if row != NONE else ""


def _shapes_of(trace: Trace, rows: np.ndarray) -> list[str]:
    """Input shapes and dtypes of each bar: a cpu_op's own, a GPU activity's from the op that launched it."""
    ev = trace.ev
    op = rows.copy()
    gpu = np.isin(ev.cat[rows], GPU_CATS)
    call = trace.launch_of[rows[gpu]]
    op[gpu] = np.where(call != NONE, trace.op_of[np.maximum(call, 0)], NONE)
    op[~gpu & (ev.cat[rows] != CPU_OP)] = NONE
    sid = np.where(op != NONE, ev.shape[np.maximum(op, 0)], NONE)
    text: dict[int, str] = {}
    out = []
    for r, k in zip(op.tolist(), sid.tolist()):
        if k == NONE:
            out.append("")
            continue
        if k not in text:
            text[k] = shape_text(*trace.shapes(r)[:2])
        out.append(text[k])
    return out


def shape_text(dims, types) -> str:
    """"[8, 1024] bf16, [1024, 1024] bf16" from Kineto's Input Dims and Input type (tensors only)."""
    if not isinstance(dims, list):
        return ""
    types = types if isinstance(types, list) else []
    parts = []
    for i, d in enumerate(dims):
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            t = normalise_dtype(types[i]) or types[i] if i < len(types) and isinstance(types[i], str) else ""
            parts.append(f"[{', '.join(map(str, d))}]" + (f" {t}" if t else ""))
    return ", ".join(parts)


@dataclass(frozen=True)
class GapTable:
    """Every idle gap of every device, in absolute trace time, with what explains it."""
    device: np.ndarray          # int32
    start_ns: np.ndarray        # int64, the trace's own clock
    end_ns: np.ndarray
    cause: tuple[str, ...]
    host_call: tuple[str, ...]    # the host call that explains the gap ("" when none)
    called_from: tuple[str, ...]  # the op that made that call ("" when none)
    next_name: tuple[str, ...]    # the GPU activity that ended the gap ("" when none)
    evidence: dict[int, dict]     # device -> the analysis's evidence per cause

    def __len__(self) -> int:
        return len(self.start_ns)


def gaps(a: Analysis) -> GapTable:
    tr = a.trace
    dev, s, e, c, host, nxt = [], [], [], [], [], []
    for d in a.devices:
        g = d.gaps
        dev.append(g.device)
        s.append(g.start)
        e.append(g.end)
        c += [CAUSES[x] for x in g.cause]
        host.append(g.host_row)
        nxt.append(g.next_row)
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dt))
    h, n = cat(host, np.int64), cat(nxt, np.int64)
    return GapTable(device=cat(dev, np.int32), start_ns=cat(s, np.int64), end_ns=cat(e, np.int64), cause=tuple(c),
                    host_call=tuple(_name(tr, r) for r in h),
                    called_from=tuple(_name(tr, tr.op_of[r]) if r != NONE else "" for r in h),
                    next_name=tuple(_name(tr, r) for r in n),
                    evidence={int(d.device): d.evidence for d in a.devices})


@dataclass(frozen=True)
class ConstructSpans:
    """Where one framework construct ran (the DataLoader's __next__, the optimizer step, backward, compile ...):
    the union of its marking events on every host thread (tracetriage.analyzers.analyses.framework), µs from
    the origin."""
    construct: Construct
    start_us: np.ndarray
    end_us: np.ndarray


def construct_spans(a: Analysis) -> tuple[ConstructSpans, ...]:
    """The framework constructs the trace marks, in CONSTRUCTS order; none when the framework was not analysed.
    Set-up and the user's own code are no marked spans (set-up is the idle lane's; the rest is the user's)."""
    if a.framework is None:
        return ()
    tr = a.trace
    rows, codes = marking_rows(tr)
    o = origin_ns(tr)
    out = []
    for code, c in enumerate(CONSTRUCTS):
        m = codes == code
        if c in (Construct.SETUP, Construct.USER) or not m.any():
            continue
        s, e = iv.union(tr.ev.start[rows[m]], tr.ev.end[rows[m]])
        out.append(ConstructSpans(c, (s - o) / 1e3, (e - o) / 1e3))
    return tuple(out)
