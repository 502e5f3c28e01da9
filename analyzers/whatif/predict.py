"""What-if: what each fix would buy, predicted from the trace alone.

A lever edits the dependency graph (tracetriage.analyzers.whatif.depgraph) the way the fix would change the
program, and the replay (tracetriage.analyzers.whatif.replay) says how long the traced work would then take.
The levers are specs in one registry (tracetriage.analyzers.whatif.levers, NAMES in the JSON's order:
remove_syncs, no_host_work, cuda_graphs, async_copies, kernels_2x, fused_optimizer, fuse, no_recompiles,
warm_up, overlap_comm, allow_tf32, autocast_bf16, channels_last, grads_to_none, tensors_on_device, sdpa,
cudnn_benchmark, inference_mode, dataloader_workers, keep_allocator_cache, kv_cache, batch_items, pinned_batches,
value_checks, reduce_on_gpu, batch_passes, drop_float64, convert_on_gpu, no_checkpointing, autocast_fp16, sdpa_math,
broadcast_matmul, layer_norm, validate_args, cross_entropy, embedding_max_norm, module_round_trip, freeze_unoptimized,
activations_on_gpu, logits_to_keep, compute_once, sparse_embedding, weight_only_int8, op_on_gpu, inductor_backend, topk,
cudnn_enabled, kv_on_device, one_backward, dequantize_once: the last forty are knobs, one line of the user's code each,
the five before the last eight, topk, kv_on_device and one_backward removing work the program does not use), each with
its edit, its typed assumption and its words.

Every figure a lever uses is measured in the trace where the trace has it (launch call cost,
launch-to-start latency, kernel-to-kernel gap, pinned copy bandwidth, graph launch cost), and the
lever's assumption says which figure came from where.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from tracetriage.analyzers.model.trace import KERNEL, MEMCPY, MEMSET, Trace
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif import replay as rp
from tracetriage.analyzers.whatif.levers import NAMES, REMOVE_SYNCS, spec_of
from tracetriage.analyzers.whatif.levers.remove_syncs import focus_op
from tracetriage.analyzers.whatif.levers.spec import MOVES_HOST, Assumption, Context, Options, WhatIfError
from tracetriage.analyzers.whatif.unprofiled import ProfilerCost, UnprofiledRun, clamp, unprofile, unprofiled_run

if TYPE_CHECKING:   # (an annotation only: the roofline's module stays unimported here)
    from tracetriage.analyzers.analyses.roofline import Roofline

__all__ = ["LeverPrediction", "Levers", "PredictedTimeline", "WhatIf", "WhatIfError", "predict", "predict_file",
           "predict_levers", "predicted_timeline"]


@dataclass(frozen=True)
class LeverPrediction:
    lever: str
    predicted_ns: int
    predicted_ratio: float
    saving_ns: int
    assumption: Assumption
    detail: dict = field(default_factory=dict, compare=False)
    # the ratio the user will see without the profiler: the lever's replay on the unprofiled graph over the
    # unprofiled replay (tracetriage.analyzers.whatif.unprofiled); None where it was not asked for
    unprofiled_ratio: float | None = None


@dataclass(frozen=True)
class WhatIf:
    path: str
    baseline_ns: int
    replay_ns: int                          # the unchanged graph, replayed: how far to trust the model
    levers: tuple[LeverPrediction, ...]     # sorted by predicted_ns, best first
    unprofiled_ns: int | None = None        # the traced work without the profiler's own cost, predicted
    profiler: ProfilerCost | None = None    # what the profiler's recording cost, by per-event constants
    unprofiled_run: UnprofiledRun | None = field(default=None, compare=False, repr=False)   # its replay

    @property
    def best(self) -> LeverPrediction | None:
        return self.levers[0] if self.levers else None

    @property
    def worst(self) -> LeverPrediction | None:
        return self.levers[-1] if self.levers else None

    def lever(self, name: str) -> LeverPrediction:
        return next(p for p in self.levers if p.lever == name)


# --- the entry point ----------------------------------------------------------------------------

def predict(trace: Trace, levers: list[str] | tuple[str, ...] | None = None, only: str | None = None,
            graph: dg.Graph | None = None, kernel_scale: float = 0.5, unprofiled: bool = False,
            unprofiled_best: int = 0, context: Context | None = None) -> WhatIf:
    """Predict the span of the traced work under each lever (all of them by default).

    `only` limits remove_syncs to the syncs called from inside that op (e.g. "aten::item").
    `graph` is the trace's dependency graph when the caller has built it already. `kernel_scale` is
    the share of its time each kernel keeps under kernels_2x (a half; diff asks for a measured one).
    `unprofiled`: also replay the graph without the profiler's own cost, and each lever's fix on it (the ratio
    the user will see without the profiler: a second replay per lever); `unprofiled_best`: that only for the
    best N levers (the report's Next is among them; the others' plans are not kept). `context`: the levers' view of
    this graph when the caller has one (what its levers found of the trace, the set-up windows, is found once).
    Raises WhatIfError for a question the trace cannot answer (no GPU activity, unknown lever or op).
    """
    specs = [spec_of(lv) for lv in (levers or NAMES)]
    g = graph if graph is not None else dg.build(trace)
    if len(g.g_row) == 0:
        raise WhatIfError(f"{trace.path}: no GPU activity in the trace, so there is no GPU timeline to replay; "
                          "capture with ProfilerActivity.CUDA on a GPU machine")
    ctx = context if context is not None and context.g is g else Context(trace, g)
    opts = Options(only=only, kernel_scale=kernel_scale)
    base = rp.Plan.of(g)
    unchanged_replay = rp.replay(g, base)
    replay_ns = unchanged_replay.span_ns
    baseline = g.span_ns
    run = unprofiled_run(trace, g, base, unchanged_replay) if unprofiled or unprofiled_best else None
    out, best = [], []     # best: the predicted spans of the best unprofiled_best so far, ascending
    # the unprofiled ratio of a plan that is its base's, by whether its lever moves host work: the same for every such
    # plan, so replayed once (on a 300 MB trace three more of the report's best found nothing to change: 6 ms each)
    bare_of_base: dict[bool, float] = {}
    for spec in specs:
        p = base.copy()
        assume, detail = spec.apply(ctx, p, opts)
        # a lever that found nothing to act on left the graph as it was: its replay is the unchanged one
        unchanged = spec.weighed_only_if_found and assume.count == 0
        # ... and so did one whose plan is its base's, edit for edit (on a 300 MB trace, four levers of the report's
        # find nothing to change there: a 5 ms replay each, spared)
        as_base = unchanged or p.same_as_source()
        span = replay_ns if as_base else rp.replay(g, p).span_ns
        # the replay of the unchanged graph may miss the trace by a little; a lever moves it by its ratio
        pred = int(round(span * baseline / replay_ns)) if replay_ns else span
        # without the profiler too: every lever, or one among the best unprofiled_best so far, replayed now while its
        # plan is here (a plan is arrays as long as the graph: none kept for later; a lever pushed out of the best by
        # a later one keeps a ratio no one asks for)
        among_best = unprofiled_best and (len(best) < unprofiled_best or pred < best[-1])
        if among_best:
            best = sorted(best + [pred])[:unprofiled_best]
        bare = None
        if unprofiled or among_best:
            moves = bool(detail and detail.get(MOVES_HOST))
            if as_base and not unchanged and moves in bare_of_base:
                bare = bare_of_base[moves]
            else:
                bare = _bare_ratio(trace, g, p, run, unchanged, detail, replay_ns - span)
                if as_base and not unchanged:
                    bare_of_base[moves] = bare
        out.append(LeverPrediction(lever=spec.name, predicted_ns=pred,
                                   predicted_ratio=pred / baseline if baseline else 1.0,
                                   saving_ns=baseline - pred, assumption=assume, detail=detail,
                                   unprofiled_ratio=bare))
    out.sort(key=lambda x: (x.predicted_ns, NAMES.index(x.lever)))
    return WhatIf(path=trace.path, baseline_ns=baseline, replay_ns=replay_ns, levers=tuple(out),
                  unprofiled_ns=int(round(run.unprofiled_ns * baseline / replay_ns)) if run and replay_ns else None,
                  profiler=run.cost if run else None, unprofiled_run=run)


def _bare_ratio(trace: Trace, g: dg.Graph, p: rp.Plan, run: UnprofiledRun, unchanged: bool,
                detail: dict | None = None, traced_saving_ns: int | None = None) -> float:
    """A lever's fix (its plan `p`, edited here), then the profiler's cost taken out of what is left: its replay
    over the replay of the unchanged graph without the profiler's cost. A fix that takes host work away (MOVES_HOST)
    saves no more without the profiler than under it: the profiler only adds host time, so the host work such a fix
    takes away is no longer without it (cifar_mi300_r3: host work priced -11% traced and
    -32% without the profiler, 40 ms of a span whose host-work gaps hold 15 ms; the per-op costs of the ops in the
    stretches it removed were taken again out of the dispatch left)."""
    if unchanged or not run.unprofiled_ns:
        return 1.0
    unprofile(trace, g, p, run.counts or None)
    clamp(p)
    span = rp.replay(g, p).span_ns
    if detail and detail.get(MOVES_HOST) and traced_saving_ns is not None:
        span = max(span, run.unprofiled_ns - max(traced_saving_ns, 0))
    return span / run.unprofiled_ns


# The report replays its best levers without the profiler too, in the levers' child while each plan is in hand: its
# Next is one of them but for a close call or a fix it calls for further down (Levers.unprofiled_ratio replays another
# on demand), and where the profiler slows the trace the Next is chosen among these by their savings without it
# (triage.unprofiled_choice: a replay each there would rebuild the graph and apply each lever again in the parent,
# after the child: 0.5 s on the 293 MB benchmark trace).
UNPROFILED_BEST = 12


@dataclass(frozen=True)
class Levers:
    """Every lever's prediction, and remove_syncs limited to the op whose syncs cost the most wait."""
    all: WhatIf
    sync_op: str | None                    # the outermost op that waited longest in syncs (None: straight from Python)
    sync_op_prediction: LeverPrediction | None
    graph: dg.Graph | None = field(default=None, compare=False, repr=False)   # for a lever's unprofiled ratio
    context: Context | None = field(default=None, compare=False, repr=False)  # ... and the levers' view of it
    # replayed in another process (tracetriage.analyzers.whatif.aside), which kept its graph: built again here,
    # once, should a lever's unprofiled ratio need it
    graph_elsewhere: bool = field(default=False, compare=False, repr=False)
    _answers: dict = field(default_factory=dict, compare=False, repr=False)   # (lever, only): unprofiled ratio
    _rebuilt: list = field(default_factory=list, compare=False, repr=False)

    def without_graph(self, trace: Trace) -> "Levers":
        """These predictions without the graph and its context (they hold the trace), to send to another process,
        with the one unprofiled ratio the report may ask for that was not replayed yet (the top sync op's own
        remove_syncs: a Next that names it) answered first, while the graph is here."""
        if self.sync_op is not None and self.graph is not None:
            self.unprofiled_ratio(trace, REMOVE_SYNCS, self.sync_op)
        return dataclasses.replace(self, graph=None, context=None, graph_elsewhere=True, _rebuilt=[])

    @property
    def unprofiled(self) -> UnprofiledRun | None:
        """The traced work replayed without the profiler's own cost."""
        return self.all.unprofiled_run if self.all is not None else None

    def unprofiled_ratio(self, trace: Trace, lever: str, only: str | None = None) -> float | None:
        """One lever's ratio without the profiler: replayed already for the best levers, else now (one more
        application of the lever and a replay)."""
        if self.unprofiled is None:
            return None
        if only is None or only == self.sync_op:
            p = self.sync_op_prediction if lever == REMOVE_SYNCS and only is not None else self.all.lever(lever)
            if p is not None and p.unprofiled_ratio is not None:
                return p.unprofiled_ratio
        if (lever, only) in self._answers:
            return self._answers[lever, only]
        g = self.graph
        if g is None and self.graph_elsewhere:
            if not self._rebuilt:
                self._rebuilt.append(dg.build(trace))
            g = self._rebuilt[0]
        if g is None:
            return None
        plan = rp.Plan.of(g)
        ctx = self.context if self.context is not None and self.context.g is g else Context(trace, g)
        _, detail = spec_of(lever).apply(ctx, plan, Options(only=only))
        saving = None
        if detail.get(MOVES_HOST):     # (the traced saving bounds the one without the profiler: _bare_ratio)
            saving = rp.replay(g, rp.Plan.of(g)).span_ns - rp.replay(g, plan.copy()).span_ns
        ratio = self._answers[lever, only] = _bare_ratio(trace, g, plan, self.unprofiled, False, detail, saving)
        return ratio


def joint_ratio(levers: Levers, trace: Trace, first: str, second: str) -> float | None:
    """Two levers' fixes made together (`first`'s edit, then `second`'s, on one plan): the replay over the unchanged
    one; None where the graph is not at hand. Each lever alone prices its fix from the trace; where both take the same
    time (a knob that pins the batches and the host work around their hand-over), their savings do not add."""
    g = levers.graph
    if g is None:
        return None
    ctx = levers.context if levers.context is not None and levers.context.g is g else Context(trace, g)
    plan = rp.Plan.of(g)
    for name in (first, second):
        spec_of(name).apply(ctx, plan, Options())
    clamp(plan)
    base = rp.replay(g, rp.Plan.of(g)).span_ns
    return rp.replay(g, plan).span_ns / base if base else None


def predict_levers(trace: Trace, roof: Roofline | None = None, graph: dg.Graph | None = None) -> Levers:
    """What the report's Next line and Idle line need: one graph, every lever, and the top sync op's own syncs.
    `roof`: the trace's roofline.analyze where the caller has it (the levers' knobs read its peaks and bytes);
    `graph`: the trace's dependency graph where the caller built it."""
    g = graph if graph is not None else dg.build(trace)
    # one for every replay of this graph: what its levers find of the trace, found once
    ctx = Context(trace, g, roofline=roof)
    w = predict(trace, graph=g, unprofiled_best=UNPROFILED_BEST, context=ctx)
    op = focus_op(w.lever(REMOVE_SYNCS).detail)
    focus = predict(trace, [REMOVE_SYNCS], only=op, graph=g, context=ctx).levers[0] if op else None
    return Levers(w, op, focus, g, ctx)


# --- the predicted timeline ----------------------------------------------------------------------

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
    spec = spec_of(lever)
    g = graph if graph is not None else dg.build(trace)
    if len(g.g_row) == 0:
        raise WhatIfError(f"{trace.path}: no GPU activity in the trace, so there is no GPU timeline to replay")
    base = rp.Plan.of(g)
    replay_ns = rp.replay(g, base).span_ns
    p = base.copy()
    spec.apply(Context(trace, g), p, Options(only=only))
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
    """`tracetriage whatif`: every lever, with its ratio without the profiler beside the profiled one."""
    from pathlib import Path

    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.loading.progress import bar

    with bar(Path(path)) as advance:   # a progress bar on a slow load, as `report` shows (--quiet turns it off)
        trace = load(path, progress=advance)
        advance("analyse")
        return predict(trace, levers=levers, only=only, unprofiled=True)
