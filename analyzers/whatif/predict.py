"""What-if: what each fix would buy, predicted from the trace alone.

A lever edits the dependency graph (analyzers.whatif.depgraph) the way the fix would change the
program, and the replay (analyzers.whatif.replay) says how long the traced work would then take:

    remove_syncs   the host no longer waits in syncs (`only`: the syncs called from one op)
    no_host_work   host stretches that issue no GPU work vanish
    cuda_graphs    dispatch and launches collapse to one graph launch per sync-free stretch;
                   kernels run back to back at the device's minimum gap
    async_copies   pageable copies become pinned, at the link's measured bandwidth, on a side
                   stream, overlapped; each consumer waits for its copy
    kernels_2x     every kernel takes half as long (the Amdahl check)

Every figure a lever uses is measured in the trace where the trace has it (launch call cost,
launch-to-start latency, kernel-to-kernel gap, pinned copy bandwidth, graph launch cost), and the
lever's `assumptions` line says which figure came from where.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analyzers.whatif import depgraph as dg
from analyzers.whatif import replay as rp
from analyzers.model.runtime_calls import is_graph_launch
from analyzers.model.trace import CPU_OP, KERNEL, MEMCPY, MEMSET, NONE, USER_ANNOTATION, Trace

LEVERS = ("remove_syncs", "no_host_work", "cuda_graphs", "async_copies", "kernels_2x")
BIG_COPY_BYTES = 1 << 20       # pinned copies this large measure the link, not the call overhead

# A graph launch under torch.profiler costs about this much per kernel in the graph: the median
# cudaGraphLaunch duration per kernel in traces/gpt-graphs.json.gz (H200, torch 2.11 profiler,
# 95 kernels a launch; tests/test_whatif.py re-derives it). Used when the trace has no graph launch.
GRAPH_NS_PER_KERNEL = 2_300
# Host<->device link bandwidth by datasheet, GB/s per direction (PCIe x16: Gen5 64, Gen4 32, Gen3 16).
LINK_GBPS = {"H200": 64.0, "H100": 64.0, "GH200": 64.0, "B200": 64.0, "L40": 32.0, "A100": 32.0, "A10": 32.0,
             "L4": 32.0, "RTX 40": 32.0, "RTX 30": 32.0, "V100": 16.0, "T4": 16.0}


class WhatIfError(ValueError):
    """The question cannot be asked of this trace; the message is one line for the user."""


@dataclass(frozen=True)
class Assumption:
    """What a lever's prediction takes as given, as figures with their sources (analyzers.voice says it).

    count: the syncs, host stretches or pageable copies the lever acts on; a source is one of
    "trace", "ceilings", "datasheet", "guess", "reference" (where the figure was measured).
    """
    lever: str
    count: int = 0
    only: str | None = None          # remove_syncs: the op whose syncs go
    call_ns: int = 0                 # remove_syncs: what a copy to the host still costs (a launch call)
    long_ns: int = 0                 # no_host_work: the shortest stretch that counts
    per_kernel_ns: int = 0           # cuda_graphs: graph launch cost per kernel
    source: str = ""
    min_gap_ns: int = 0              # cuda_graphs: kernels back to back this far apart
    gap_measured: bool = False
    h2d_gbps: float = 0.0            # async_copies: the pinned link, each way
    h2d_source: str = ""
    d2h_gbps: float = 0.0
    d2h_source: str = ""
    kernel_scale: float = 0.5        # kernels_2x: the share of its time each kernel keeps


@dataclass(frozen=True)
class LeverPrediction:
    lever: str
    predicted_ns: int
    predicted_ratio: float
    saving_ns: int
    assumption: Assumption
    detail: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class WhatIf:
    path: str
    baseline_ns: int
    replay_ns: int                          # the unchanged graph, replayed: how far to trust the model
    levers: tuple[LeverPrediction, ...]     # sorted by predicted_ns, best first

    @property
    def best(self) -> LeverPrediction | None:
        return self.levers[0] if self.levers else None

    @property
    def worst(self) -> LeverPrediction | None:
        return self.levers[-1] if self.levers else None

    def lever(self, name: str) -> LeverPrediction:
        return next(p for p in self.levers if p.lever == name)


# --- the levers ----------------------------------------------------------------------------

@dataclass
class _Ctx:
    trace: Trace
    g: dg.Graph

    def calls_named(self, test) -> np.ndarray:
        return self._named(self.g.c_row, test)

    def gpu_named(self, test, rows=None) -> np.ndarray:
        return self._named(self.g.g_row if rows is None else self.g.g_row[rows], test)

    def _named(self, rows, test) -> np.ndarray:
        """test(name) per row, evaluated once per distinct name."""
        if not len(rows):
            return np.zeros(0, bool)
        ids, inv = np.unique(self.trace.ev.name[rows], return_inverse=True)
        return np.array([bool(test(self.trace.names[i])) for i in ids], bool)[inv.ravel()]


def _remove_syncs(c: _Ctx, p: rp.Plan, only: str | None) -> tuple[Assumption, dict]:
    g = c.g
    # a sync call, or a copy to the host that blocks (.item(), .cpu(), .tolist() of a result)
    aw = np.maximum(p.c_awaited, 0)
    to_host = c.gpu_named(lambda n: "DtoH" in n, aw) if g.n_calls and len(g.g_row) else np.zeros(g.n_calls, bool)
    sync = g.c_kind == dg.SYNC_CALL
    copy = (g.c_kind == dg.COPY_CALL) & to_host & p.c_blocked
    if only:
        inside = _inside_op(c, only)
        sync &= inside
        copy &= inside
    gone = np.flatnonzero(sync | copy)
    by_op = _waits_by_op(c, gone, np.where(p.c_blocked[gone], g.c_dur[gone] - p.c_min[gone], 0))
    waited = sum(by_op.values())
    n_blocking = int((sync & p.c_blocked).sum() + copy.sum())
    # the sync call goes, and so does the Python that led to it when it was called straight from Python
    # (torch.cuda.synchronize()); the copy stays, returning at once
    p.c_blocked[sync | copy] = False
    p.c_dur[sync] = 0
    p.c_gap[sync & ~g.c_in_op] = 0
    p.c_dur[copy] = p.c_min[copy]
    return (Assumption("remove_syncs", n_blocking, only=only, call_ns=g.launch_cost_ns),
            {"syncs": int(sync.sum()), "blocking_copies": int(copy.sum()), "waited_ns": waited,
             "waited_ns_by_op": by_op})


def _inside_op(c: _Ctx, op: str) -> np.ndarray:
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


def _waits_by_op(c: _Ctx, calls: np.ndarray, waited: np.ndarray) -> dict[str, int]:
    """Host time spent waiting, by the outermost op that made the call (aten::item, aten::nonzero ...),
    most first; a sync made straight from Python counts under its call's name."""
    g, ev = c.g, c.trace.ev
    outer = g.c_outer_op[calls]
    name_rows = np.where(outer >= 0, outer, g.c_row[calls])
    out: dict[str, int] = {}
    for nid, w in zip(ev.name[name_rows].tolist(), waited.tolist()):
        out[c.trace.names[nid]] = out.get(c.trace.names[nid], 0) + int(w)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _sync_ops(c: _Ctx) -> list[str]:
    g = c.g
    calls = np.flatnonzero((g.c_kind == dg.SYNC_CALL) & g.c_blocked & (g.c_outer_op >= 0))
    return list(_waits_by_op(c, calls, g.c_dur[calls]))[:5]


def _no_host_work(c: _Ctx, p: rp.Plan) -> tuple[Assumption, dict]:
    g = c.g
    m = g.c_host > 0
    p.c_gap[m] -= g.c_host[m]
    detail = {"stretches": int(m.sum()), "host_ns": int(g.c_host[m].sum())}
    return Assumption("no_host_work", int(m.sum()), long_ns=g.host_long_ns), detail


def _graph_cost(c: _Ctx) -> tuple[int, str]:
    """Per-kernel cost of a graph launch: measured on the trace's own graph launches, else the reference."""
    g = c.g
    gl = np.flatnonzero(c.calls_named(is_graph_launch))   # cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch
    if len(gl):
        n = np.bincount(g.g_call[g.g_linked], minlength=g.n_calls)[gl]
        ok = n > 0
        if ok.any():
            return int(np.median(g.c_dur[gl][ok] / n[ok])), "trace"
    return GRAPH_NS_PER_KERNEL, "reference"


def _cuda_graphs(c: _Ctx, p: rp.Plan) -> tuple[Assumption, dict]:
    g = c.g
    per_kernel, source = _graph_cost(c)
    keep_host = g.c_host > 0
    # a pageable copy cannot be captured in a graph (CUDA refuses it): its call, staging and all, stays
    pageable = (g.g_cat == MEMCPY) & c.gpu_named(lambda n: "Pageable" in n) & (g.g_call >= 0)
    staged = np.zeros(g.n_calls, bool)
    staged[g.g_call[pageable]] = True
    op = c.trace.op_of[g.c_row]               # ... and so do the other calls of its op (the staging around it)
    staged |= np.isin(op, np.unique(op[staged])) & (op != NONE)
    # stretches: a blocked call ends one, host work that stays starts one
    order = np.lexsort((np.arange(g.n_calls), g.c_thread))
    thr = g.c_thread[order]
    new = np.r_[True, thr[1:] != thr[:-1]] if g.n_calls else np.zeros(0, bool)
    after_block = np.r_[False, p.c_blocked[order][:-1]] if g.n_calls else new
    new = new | after_block | keep_host[order] | p.c_blocked[order] | staged[order] | _step_starts(c)[order]
    gid_sorted = np.cumsum(new) - 1
    gid = np.empty(g.n_calls, np.int64)
    gid[order] = gid_sorted
    launching = g.c_issues & ~p.c_blocked & ~staged
    n_groups = int(gid.max()) + 1 if g.n_calls else 0
    first = np.full(n_groups, NONE, np.int64)
    li = np.flatnonzero(launching)
    # the first launching call of each stretch becomes its graph launch (calls are in start order)
    first_rev = li[::-1]
    first[gid[first_rev]] = first_rev
    post_lat = max(g.lat_typ_ns - g.launch_cost_ns, 0)
    movable = g.g_linked & ~p.c_blocked[np.maximum(g.g_call, 0)] & ~staged[np.maximum(g.g_call, 0)]
    grp = gid[np.maximum(g.g_call, 0)]
    gl_call = first[grp]
    movable &= gl_call >= 0
    n_in = np.bincount(grp[movable], minlength=n_groups)
    # host: dispatch vanishes, host work that is not dispatch stays; every non-blocking call but
    # the graph launch costs nothing
    p.c_gap[:] = np.where(keep_host, g.c_host, 0)
    p.c_gap[staged] = g.c_gap[staged]
    p.c_dur[~p.c_blocked & ~staged] = 0
    has = first >= 0
    p.c_dur[first[has]] = per_kernel * n_in[has]
    # device: each kernel issued by its stretch's graph launch, back to back
    mv = np.flatnonzero(movable)
    p.g_call[mv] = gl_call[mv]
    p.g_lat[mv] = p.c_dur[gl_call[mv]] + post_lat
    p.g_gap[mv] = np.minimum(p.g_gap[mv], g.min_gap_ns)
    return (Assumption("cuda_graphs", per_kernel_ns=per_kernel, source=source, min_gap_ns=g.min_gap_ns,
                       gap_measured=g.min_gap_measured),
            {"graphs": int(has.sum()), "kernels": int(movable.sum())})


def _step_starts(c: _Ctx) -> np.ndarray:
    """Calls that open a repeated user range (a step, an iteration): graphs are captured per step."""
    ev, g = c.trace.ev, c.g
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    out = np.zeros(g.n_calls, bool)
    if not len(ann) or not g.n_calls:
        return out
    ids, n = np.unique(ev.name[ann], return_counts=True)
    repeated = set(ids[n >= 2].tolist()) | {i for i in ids.tolist() if c.trace.names[i].startswith(dg.PROFILER_STEP)}
    ann = ann[np.isin(ev.name[ann], list(repeated))]
    c_pid, c_tid = ev.pid[g.c_row], ev.tid[g.c_row]
    for pid, tid in set(zip(ev.pid[ann].tolist(), ev.tid[ann].tolist())):
        m = np.flatnonzero((c_pid == pid) & (c_tid == tid))
        a = ann[(ev.pid[ann] == pid) & (ev.tid[ann] == tid)]
        k = np.searchsorted(g.c_start[m], ev.start[a], side="left")
        out[m[k[k < len(m)]]] = True
    return out


def _link_gbps(c: _Ctx, h2d: bool) -> tuple[float, str]:
    """Pinned copy bandwidth: measured in the trace, else measured ceilings, else the datasheet link."""
    g = c.g
    want = "HtoD" if h2d else "DtoH"
    pinned = c.gpu_named(lambda n: "Pinned" in n and want in n)
    big = pinned & (g.g_cat == MEMCPY) & (g.g_nbytes >= BIG_COPY_BYTES) & (g.g_dur > 0)
    if big.any():
        return float(np.median(g.g_nbytes[big] / g.g_dur[big])), "trace"
    device = c.trace.device_name()
    from analyzers.analyses.roofline import find_ceilings

    ceil = find_ceilings(c.trace.path, device) if device else None
    key = "h2d_pinned" if h2d else "d2h_pinned"
    if ceil and ceil.get("copy_gbps", {}).get(key):
        return float(ceil["copy_gbps"][key]), "ceilings"
    for fam, gbps in LINK_GBPS.items():
        if device and fam.lower() in device.lower():
            return gbps, "datasheet"
    return 16.0, "guess"


def _async_copies(c: _Ctx, p: rp.Plan) -> tuple[Assumption, dict]:
    g = c.g
    pageable = (g.g_cat == MEMCPY) & c.gpu_named(lambda n: "Pageable" in n)
    h2d = pageable & c.gpu_named(lambda n: "HtoD" in n)
    d2h = pageable & ~h2d
    bw_h2d, src_h2d = _link_gbps(c, True)
    bw_d2h, src_d2h = _link_gbps(c, False)
    sized = g.g_nbytes > 0
    for m, bw in ((h2d, bw_h2d), (d2h, bw_d2h)):
        k = m & sized
        p.g_dur[k] = np.ceil(g.g_nbytes[k] / bw).astype(np.int64)   # GB/s == bytes/ns
    hi = np.flatnonzero(h2d)
    if len(hi):
        # the copy call returns at once (and the stream sync `.to()` adds after a pageable copy goes)
        calls = g.g_call[hi]
        p.c_blocked[calls] = False
        p.c_dur[calls] = p.c_min[calls]
        ext = c.trace.ev.ext[g.c_row]
        copy_ext = set(ext[calls].tolist()) - {NONE}
        if copy_ext:
            s = (g.c_kind == dg.SYNC_CALL) & np.isin(ext, list(copy_ext))
            p.c_blocked[s] = False
            p.c_dur[s] = p.c_min[s]
        # each copy moves to a side stream of its device; the next activity on its old stream waits for it
        side = len(g.queue_keys) + g.g_device[hi].astype(np.int64) - int(g.g_device.min())
        nc = np.flatnonzero(~h2d)
        k = np.searchsorted(nc, hi)
        ok = k < len(nc)
        consumer = nc[np.minimum(k, len(nc) - 1)] if len(nc) else hi
        ok &= g.g_queue[consumer] == g.g_queue[hi]
        last_copy = np.full(len(g.g_row), NONE, np.int64)
        np.maximum.at(last_copy, consumer[ok], hi[ok])   # a run of copies: the consumer waits for the last
        p.g_queue[hi] = side
        p.g_gap[hi] = 0
        cons = np.flatnonzero(last_copy >= 0)
        p.g_dep[cons] = last_copy[cons]
        p.g_delay[cons] = g.min_gap_ns
        p.g_lat[hi] = np.minimum(p.g_lat[hi], g.lat_typ_ns)
    return (Assumption("async_copies", int(pageable.sum()), h2d_gbps=bw_h2d, h2d_source=src_h2d, d2h_gbps=bw_d2h,
                       d2h_source=src_d2h),
            {"h2d_copies": int(h2d.sum()), "d2h_copies": int(d2h.sum())})


def _kernels_2x(c: _Ctx, p: rp.Plan, scale: float = 0.5) -> tuple[Assumption, dict]:
    """Every kernel takes `scale` of its time (half, by default: the Amdahl check)."""
    k = c.g.g_cat == KERNEL
    p.g_dur[k] = np.round(p.g_dur[k] * scale).astype(p.g_dur.dtype) if scale != 0.5 else p.g_dur[k] // 2
    return Assumption("kernels_2x", int(k.sum()), kernel_scale=scale), {"kernels": int(k.sum())}


# --- the entry point ----------------------------------------------------------------------------

def predict(trace: Trace, levers: list[str] | tuple[str, ...] | None = None, only: str | None = None,
            graph: dg.Graph | None = None, kernel_scale: float = 0.5) -> WhatIf:
    """Predict the span of the traced work under each lever (all of them by default).

    `only` limits remove_syncs to the syncs called from inside that op (e.g. "aten::item").
    `graph` is the trace's dependency graph when the caller has built it already. `kernel_scale` is
    the share of its time each kernel keeps under kernels_2x (a half; diff asks for a measured one).
    Raises WhatIfError for a question the trace cannot answer (no GPU activity, unknown lever or op).
    """
    levers = list(levers or LEVERS)
    bad = [lv for lv in levers if lv not in LEVERS]
    if bad:
        raise WhatIfError(f"no lever named {bad[0]!r}; choose from: {', '.join(LEVERS)}")
    g = graph if graph is not None else dg.build(trace)
    if len(g.g_row) == 0:
        raise WhatIfError(f"{trace.path}: no GPU activity in the trace, so there is no GPU timeline to replay; "
                          "capture with ProfilerActivity.CUDA on a GPU machine")
    ctx = _Ctx(trace, g)
    base = rp.Plan.of(g)
    replay_ns = rp.replay(g, base).span_ns
    baseline = g.span_ns
    out = []
    for lv in levers:
        p = base.copy()
        if lv == "remove_syncs":
            assume, detail = _remove_syncs(ctx, p, only)
        elif lv == "no_host_work":
            assume, detail = _no_host_work(ctx, p)
        elif lv == "cuda_graphs":
            assume, detail = _cuda_graphs(ctx, p)
        elif lv == "async_copies":
            assume, detail = _async_copies(ctx, p)
        else:
            assume, detail = _kernels_2x(ctx, p, kernel_scale)
        r = rp.replay(g, p)
        # the replay of the unchanged graph may miss the trace by a little; a lever moves it by its ratio
        pred = int(round(r.span_ns * baseline / replay_ns)) if replay_ns else r.span_ns
        out.append(LeverPrediction(lever=lv, predicted_ns=pred, predicted_ratio=pred / baseline if baseline else 1.0,
                                   saving_ns=baseline - pred, assumption=assume, detail=detail))
    out.sort(key=lambda x: (x.predicted_ns, LEVERS.index(x.lever)))
    return WhatIf(path=trace.path, baseline_ns=baseline, replay_ns=replay_ns, levers=tuple(out))


@dataclass(frozen=True)
class Levers:
    """Every lever's prediction, and remove_syncs limited to the op whose syncs cost the most wait."""
    all: WhatIf
    sync_op: str | None                    # the outermost op that waited longest in syncs (None: straight from Python)
    sync_op_prediction: LeverPrediction | None


def predict_levers(trace: Trace) -> Levers:
    """What the report's Next line and Idle line need: one graph, every lever, and the top sync op's own syncs."""
    g = dg.build(trace)
    w = predict(trace, graph=g)
    by_op = w.lever("remove_syncs").detail.get("waited_ns_by_op") or {}
    op = next((name for name, ns in by_op.items() if ns > 0 and not name.startswith(_API_PREFIXES)), None)
    focus = predict(trace, ["remove_syncs"], only=op, graph=g).levers[0] if op else None
    return Levers(w, op, focus)


_API_PREFIXES = ("cuda", "cu", "hip")   # a sync called straight from Python is its own outermost "op"


# --- the predicted timeline ----------------------------------------------------------------------

def _apply(c: _Ctx, p: rp.Plan, lever: str, only: str | None) -> tuple[Assumption, dict]:
    """Edit the plan the way the lever's fix would change the program (as predict's loop does)."""
    if lever == "remove_syncs":
        return _remove_syncs(c, p, only)
    if lever == "no_host_work":
        return _no_host_work(c, p)
    if lever == "cuda_graphs":
        return _cuda_graphs(c, p)
    if lever == "async_copies":
        return _async_copies(c, p)
    return _kernels_2x(c, p)


_GPU_KINDS = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset"}


@dataclass(frozen=True)
class PredictedTimeline:
    """Every GPU activity of the trace, where it ran and where the replay puts it under one lever.

    Times are ns from the first GPU activity of the trace (the timeline's origin). The predicted
    times are the replay's own (not rescaled by baseline/replay like a lever's span); `replay_ns`
    against `baseline_ns` says how far the unchanged replay is off.
    """
    lever: str
    lanes: tuple[str, ...]              # "gpu0 stream 7"; a lever's new stream: "gpu0 side stream"
    name: tuple[str, ...]               # per activity
    kind: tuple[str, ...]               # kernel | memcpy | memset
    measured_lane: np.ndarray           # int index into lanes
    measured_start_ns: np.ndarray       # int64
    measured_end_ns: np.ndarray
    predicted_lane: np.ndarray
    predicted_start_ns: np.ndarray
    predicted_end_ns: np.ndarray
    baseline_ns: int
    replay_ns: int


def predicted_timeline(trace: Trace, lever: str, only: str | None = None,
                       graph: dg.Graph | None = None) -> PredictedTimeline:
    """The measured GPU timeline and the one the replay predicts under `lever` (see predict for `only`).

    Raises WhatIfError like predict (unknown lever or op, no GPU activity).
    """
    if lever not in LEVERS:
        raise WhatIfError(f"no lever named {lever!r}; choose from: {', '.join(LEVERS)}")
    g = graph if graph is not None else dg.build(trace)
    if len(g.g_row) == 0:
        raise WhatIfError(f"{trace.path}: no GPU activity in the trace, so there is no GPU timeline to replay")
    base = rp.Plan.of(g)
    replay_ns = rp.replay(g, base).span_ns
    p = base.copy()
    _apply(_Ctx(trace, g), p, lever, only)
    r = rp.replay(g, p)
    n_q = len(g.queue_keys)
    dev_min = int(g.g_device.min())
    lanes = [f"gpu{d} stream {s}" for d, s in g.queue_keys]
    side = sorted(set(int(q) for q in p.g_queue.tolist() if q >= n_q))
    lanes += [f"gpu{q - n_q + dev_min} side stream" for q in side]
    pred_lane = p.g_queue.astype(np.int64).copy()
    for i, q in enumerate(side):
        pred_lane[p.g_queue == q] = n_q + i
    origin = int(g.g_start.min())
    ev = trace.ev
    return PredictedTimeline(
        lever=lever, lanes=tuple(lanes), name=tuple(trace.names[i] for i in ev.name[g.g_row].tolist()),
        kind=tuple(_GPU_KINDS.get(int(c), "kernel") for c in g.g_cat.tolist()),
        measured_lane=g.g_queue.astype(np.int64), measured_start_ns=g.g_start - origin,
        measured_end_ns=g.g_start + g.g_dur - origin, predicted_lane=pred_lane,
        predicted_start_ns=r.g_start - origin, predicted_end_ns=r.g_end - origin,
        baseline_ns=g.span_ns, replay_ns=replay_ns)


def predict_file(path, levers=None, only=None) -> WhatIf:
    from analyzers.loading.load import load

    return predict(load(path), levers=levers, only=only)
