"""freeze_unoptimized: parameters the optimizer never updates frozen (module.requires_grad_(False), or that part of the
model run under torch.no_grad()), so the backward stops where the optimizer's own parameters get their gradients.

What any trace of it shows: the optimizer's step (`Optimizer.step#<Class>.step`) names the tensors it updates, in the
first argument of its update ops (a foreach or fused op's TensorList: `aten::_foreach_lerp_ [[200, 768], [200]]`; a
per-parameter step's in-place op once per parameter). Autograd's backward writes each parameter's gradient in a
`torch::autograd::AccumulateGrad` node whose Input Dims is that gradient's shape. Where the backward accumulates the
optimizer's shapes early (a linear probe's head is the last layer, so its gradient comes first) and then runs on,
node after node, accumulating gradients of other parameters, everything after the optimizer's last parameter got its
gradient is work nobody reads: a frozen backbone would not run it. (fresh9 swin_linear_probe_unfrozen: AdamW holds
2 tensors, 173 AccumulateGrad nodes a step; the backward ran 74 ms past the head's 48 µs.)

Price (in the graph): the backward's stretch from the first node (autograd's `evaluate_function` windows) that
starts after the optimizer's last gradient to the last before its step loses its host time, the engine's own time
between those nodes included, and the GPU work launched inside it goes with its launch calls (host_windows, as
no_checkpointing removes a recomputed forward): a frozen backbone's nodes are never scheduled, so none of their calls
is made. traces/pending2 bert_linear_probe_unfrozen: pricing the nodes' own windows alone, each launch kept at a
launch's cost, predicted 0.675 where the fix measured 0.466; 0.501 so. The forward stays as it ran (under no_grad it
saves no activations, which the trace does not price).

What would make it fire falsely: an optimizer that holds every parameter with a gradient (the greedy match then ends
at the last AccumulateGrad: nothing after it, nothing to price); several backward passes before one step (a multitask
model's loss.backward() per task): the later passes accumulate into the optimizer's own parameters again, so a gradient
counts as unread only where no tensor the step updates has its shape (a parameter outside the optimizer that shares
a shape with one inside goes uncounted: the trace cannot tell them apart); an input that requires grad on purpose
(adversarial examples, saliency maps) with the optimizer's parameters all early: the nodes after them are then the
input's gradient, which the user wants; the lever asks for at least UNREAD_AT_LEAST gradients accumulated after the
cut that the optimizer does not read, so an input's gradient alone (no AccumulateGrad) is not it. Distributed
wrappers that flatten parameters (FSDP) do not show per-parameter shapes in the step: no match, nothing counted.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.host_windows import calls_inside, remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import mirror_queued, ops_named, outermost, ranges_named
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    went,
)

STEP_RANGE = "Optimizer.step#"
ACCUMULATE = "torch::autograd::AccumulateGrad"
BACKWARD_NODE = "autograd::engine::evaluate_function: "
UNREAD_AT_LEAST = 2      # gradients accumulated after the cut that no step reads: a backbone, not one input


@dataclass(frozen=True)
class Frozen(Assumption):
    updated: int = 0           # tensors the optimizer updates (a step)
    updated_elems: int = 0     # their elements
    unread: int = 0            # gradients accumulated that no optimizer step reads (a step)
    unread_elems: int = 0
    host_ns: int = 0           # the backward's host time after the optimizer's last gradient, before (all steps)
    gpu_ns: int = 0            # the kernels it launched
    kernels: int = 0


def _elems(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _first_arg_shapes(c: Context, op: int) -> list[tuple]:
    """The tensor shapes of an op's first argument (each tensor of a TensorList), scalars ([]) left out (the steps'
    counters)."""
    dims = c.trace.shapes(op)[0]
    if not dims:
        return []
    first = dims[0]
    if isinstance(first, list) and first and isinstance(first[0], list):
        return [tuple(s) for s in first if isinstance(s, list) and s]
    if isinstance(first, list) and first and all(isinstance(d, int) for d in first):
        return [tuple(first)]
    return []


def updated_shapes(c: Context, win: int) -> Counter:
    """The shapes of the tensors one optimizer step updates: the first argument of its update ops. Of the ops in the
    window, the per-name count of shapes that recurs most (a foreach step's lists, one per pass; a per-parameter
    step's in-place ops, one per parameter; mul_ twice a parameter is the exception, not the mode)."""
    ev = c.trace.ev
    key = thread_keys(ev, win)
    ops = ops_named(c, lambda n: True)
    ops = ops[(ev.start[ops] >= ev.start[win]) & (ev.end[ops] <= ev.end[win])
              & (thread_keys(ev, ops) == key)]
    by_name: dict[int, Counter] = {}
    for op in ops.tolist():
        shapes = _first_arg_shapes(c, op)
        if shapes:
            by_name.setdefault(int(ev.name[op]), Counter()).update(shapes)
    if not by_name:
        return Counter()
    sizes = Counter(sum(s.values()) for s in by_name.values())
    size = max(sizes, key=lambda n: (sizes[n], -n))
    return next(s for s in by_name.values() if sum(s.values()) == size)


def unread_backward(c: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """The backward's stretches after the optimizer's last gradient: (starts, ends, thread keys, figures)."""
    ev = c.trace.ev
    z = np.zeros(0, np.int64)
    steps = ranges_named(c, lambda n: n.startswith(STEP_RANGE))
    acc = ops_named(c, lambda n: n == ACCUMULATE)
    if not len(steps) or not len(acc):
        return z, z, z, {}
    steps = steps[np.argsort(ev.start[steps])]
    nodes = outermost(c, ops_named(c, lambda n: n.startswith(BACKWARD_NODE)))
    acc = acc[np.argsort(ev.start[acc], kind="stable")]
    starts, ends, keys = [], [], []
    figures = {"updated": 0, "updated_elems": 0, "unread": 0, "unread_elems": 0, "nodes": 0}
    prev_end = np.iinfo(np.int64).min
    for win in steps.tolist():
        want = updated_shapes(c, win)
        mine = acc[(ev.start[acc] > prev_end) & (ev.end[acc] <= ev.start[win])]
        prev_end = int(ev.end[win])
        if not want or not len(mine):
            continue
        left, cut = Counter(want), None
        for a in mine.tolist():
            s = _first_arg_shapes(c, a)
            if s and left[s[0]] > 0:
                left[s[0]] -= 1
                if not +left:
                    cut = a
                    break
        if cut is None:
            continue
        after = mine[ev.start[mine] > ev.end[cut]]
        # a gradient of a shape the step updates is no proof of a parameter outside the optimizer: a second
        # loss.backward() before the step (one per task of a multitask model) accumulates into the same parameters
        # again (fresh12 multitask_ranker: 3 passes, every parameter in Adam's foreach lists, 18 repeats read as
        # unread and the Next said to freeze them). Only a shape the optimizer updates nowhere is unread.
        unread = [sh for a in after.tolist() for sh in _first_arg_shapes(c, a)[:1] if sh not in want]
        if len(unread) < UNREAD_AT_LEAST:
            continue
        # the nodes from the cut to the step, on the backward's thread(s)
        k_cut = thread_keys(ev, cut)
        late = nodes[(ev.start[nodes] > ev.end[cut]) & (ev.start[nodes] < ev.start[win])
                     & (thread_keys(ev, nodes) == k_cut)]
        if not len(late):
            continue
        # one stretch from the first late node to the last: the engine's own time between nodes (its ready queue,
        # the Python hooks) goes with them, nothing else runs on the backward's thread there
        starts.append(int(ev.start[late].min()))
        ends.append(int(ev.end[late].max()))
        keys.append(int(k_cut))
        figures["nodes"] = figures.get("nodes", 0) + len(late)
        if not figures["updated"]:
            figures.update(updated=sum(want.values()), updated_elems=sum(_elems(s) * n for s, n in want.items()),
                           unread=len(unread), unread_elems=sum(_elems(s) for s in unread))
    if not starts:
        return z, z, z, {}
    return np.array(starts, np.int64), np.array(ends, np.int64), np.array(keys, np.int64), figures


def apply(c: Context, p, o: Options) -> tuple[Frozen, dict]:
    g = c.g
    s, e, k, fig = unread_backward(c)
    if not len(s):
        return Frozen("freeze_unoptimized", 0), {"unread_nodes": 0}
    inside = calls_inside(c, s, e, k)
    gone = np.flatnonzero(g.g_linked & (g.g_call >= 0) & inside[np.maximum(g.g_call, 0)])
    gpu_ns = int(g.g_dur[gone].sum())
    # the launch calls and syncs inside go whole with the kernels (drop_gpu): a frozen backbone's backward makes none
    # of them (kept at a launch's cost each, bert_linear_probe_unfrozen's 338 launches a step held 0.75 ms of it)
    remove_host_windows(c, p, s, e, k, drop_gpu=True)
    mirror_queued(c, p)
    nodes = fig.pop("nodes")
    return (Frozen("freeze_unoptimized", nodes, host_ns=int((e - s).sum()), gpu_ns=gpu_ns, kernels=len(gone),
                   **fig), {"unread_nodes": nodes})


def says(a: Frozen) -> str:
    if a.count == 0:
        return "no backward past the optimizer's own parameters (every gradient accumulated is one a step reads)"
    return (f"the optimizer updates {units.integer(a.updated)} tensors ({units.integer(a.updated_elems)} elements), "
            f"yet the backward goes on to accumulate {units.integer(a.unread)} gradients no step reads "
            f"({units.integer(a.unread_elems)} elements): its {units.integer(a.count)} nodes after the optimizer's "
            f"last gradient ({units.integer(a.kernels)} kernels, {units.duration_ns(a.gpu_ns)}) go with those "
            "parameters frozen")


def unread_nodes(m: Measured) -> int:
    return m.whatif.lever("freeze_unoptimized").detail.get("unread_nodes", 0)


def most_saved(a: Frozen) -> int:
    return a.host_ns + a.gpu_ns if a.count else 0


def _line(a: Assumption) -> str:
    n = a.updated if isinstance(a, Frozen) else 0
    held = f" (the optimizer holds {units.integer(n)} tensors)" if n else ""
    return ("freeze the parameters the optimizer does not update: module.requires_grad_(False) on the part of the "
            f"model outside the optimizer{held}, or run that part under torch.no_grad(), so the backward stops "
            "where the optimizer's own gradients are made")


SPEC = LeverSpec(
    name="freeze_unoptimized", effort=1, cause=None, apply=apply, says=says,
    words="freezing the parameters the optimizer does not update",
    fix="module.requires_grad_(False) on the parameters outside the optimizer",
    recognise=Recognise(order=2, evidence="unread_backward_nodes", because="its backward stopped at the optimizer's "
                        "own parameters", amount=unread_nodes, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="the parameters outside the optimizer frozen", weighed_only_if_found=True, removes_work=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change="freeze the parameters the optimizer does not update: module.requires_grad_(False) (or "
                     "torch.no_grad() around that part of the model)",
              evidence="Optimizer.step's update ops name N tensors by shape; autograd's AccumulateGrad nodes match "
                       "them early in the backward, which then runs on accumulating gradients of other parameters",
              applies="every device: a linear probe, an adapter or a head trained on a model whose other parameters "
                      "still require grad",
              model="the backward's stretch after the optimizer's last gradient goes: its nodes' host time, the "
                    "engine's time between them, and the kernels launched inside them with their launch calls",
              guide="Autograd mechanics: excluding subgraphs from backward (requires_grad); fine-tuning tutorials",
              line=_line))
