"""value_checks: a check of a tensor's values read on the host inside the step (`if torch.isnan(h).any(): raise`), off.

A NaN/Inf guard after each layer computes a predicate on the device (aten::isnan, aten::isinf, aten::isfinite),
reduces it (aten::any, aten::all) and branches on it in Python: the branch reads the one-element result
(aten::is_nonzero -> aten::item -> aten::_local_scalar_dense: a device-to-host copy and a stream synchronize), so the
host waits for every kernel queued before it, the GPU drains and idles while the host resumes Python and launches
the next layer. Under torch.compile the data-dependent branch is also a graph break: each layer between two checks
is its own compiled region (Torch-Compiled Region ops, one per layer), and no CUDA graph can replay a step that a
blocking read splits (reduce-overhead captures each region apart, the syncs stay).

What any trace of the construct shows (found by `find`): on one thread, an outermost op that reads a scalar to the
host (READS) whose MAX_LOOKBACK outermost ops before it hold a reduction to one truth value (REDUCES) and, before
it, a value predicate (PREDICATES), MIN_CHECKS times or more. Autograd's anomaly mode (torch.autograd.
set_detect_anomaly(True), `with detect_anomaly():`) makes the same check after every backward node, inside the
engine's `autograd::engine::evaluate_function: <Node>` op, beside the node's own op (aten::isnan ->
aten::_is_any_true -> aten::item): the wrapper is looked through, so those checks are outermost among its children,
and where most checks lie inside such wrappers the change named is anomaly mode's switch (a gradient hook that checks
each gradient looks the same, and the words say so). Not this construct: a loss read with .item() (no
predicate before it: remove_syncs' and the user's logging), a data-dependent shape (nonzero, masked_select: their
sync is inside the op, not a read of a predicate), a check made once at the end (fewer than MIN_CHECKS). What would
make it fire falsely: a predicate whose result the program needs to decide its work (early exit when every value
is finite, an adaptive solver); the words say "off the hot path" (check once a step, or torch._assert_async) rather
than "delete it" for that reason.

The price: the replay removes the checks' syncs (the host no longer waits for the drain) and their kernels and
dispatch; what joining the compiled regions buys (one graph for the step: fewer launches, fusion across the break,
and CUDA graphs possible after) is not in the trace, so it is said, not priced.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif.levers import drop_ops
from tracetriage.analyzers.whatif.levers.knob import ops_named, outermost
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

PREDICATES = frozenset(("aten::isnan", "aten::isinf", "aten::isfinite", "aten::isposinf", "aten::isneginf"))
REDUCES = frozenset(("aten::any", "aten::all", "aten::_is_any_true", "aten::_is_all_true"))
READS = frozenset(("aten::is_nonzero", "aten::item", "aten::_local_scalar_dense"))
MAX_LOOKBACK = 3       # outermost ops between the predicate and the read: isnan, any, (a view), then the read
MIN_CHECKS = 2         # one check at the end of a step is a guard; two or more a step are a check per layer
COMPILED_REGION = "Torch-Compiled Region"
# The autograd engine's wrapper around each backward node: the checks anomaly mode makes run inside it, beside the
# node's own op, so they are outermost among its children, not on the thread
BACKWARD_NODE = "autograd::engine::evaluate_function"
ANOMALY_MODE = "anomaly mode"
HAND_WRITTEN = "hand-written"


@dataclass(frozen=True)
class Check:
    """One check: the predicate's first op to the read's end, on one thread."""
    thread: int
    start: int
    end: int
    predicate: str                   # aten::isnan ...
    in_backward_node: bool = False   # inside an autograd node's evaluation: anomaly mode's check of its gradients


def find(c: Context) -> list[Check]:
    """The value checks read on the host (the module docstring's rule); none where fewer than MIN_CHECKS. An
    autograd node's wrapper (BACKWARD_NODE) is looked through: what anomaly mode checks after a node runs is a
    sibling of the node's own op inside it."""
    ev = c.trace.ev
    names = c.trace.names
    if READS.isdisjoint(names) or PREDICATES.isdisjoint(names) or REDUCES.isdisjoint(names):
        return []       # a check needs all three (what follows finds none): a trace of none of them is told by its
                        # names, before the outermost ops are sorted out (~16 ms at 942k events, which hold none)
    nodes = outermost(c, ops_named(c, lambda n: n.startswith(BACKWARD_NODE)))   # in start order
    ops = outermost(c, ops_named(c, lambda n: not n.startswith(BACKWARD_NODE)))
    key = thread_keys(ev, ops)
    n_key = thread_keys(ev, nodes)
    # the reads are a few of the outermost ops (158k at 942k events): found by name id, and only the ops just before
    # each read are named (naming every op took ~0.09 s there)
    is_read = np.zeros(len(c.trace.names), bool)
    is_read[[i for i, n in enumerate(c.trace.names) if n in READS]] = True
    out = []
    for k in distinct(key).tolist():
        mine = ops[key == k]
        ids = ev.name[mine]
        mine_nodes = nodes[n_key == k]
        for i in np.flatnonzero(is_read[ids]).tolist():
            before = [c.trace.names[int(n)] for n in ids[max(i - MAX_LOOKBACK - 1, 0):i].tolist()]
            red = [j for j, b in enumerate(before) if b in REDUCES]
            pred = [j for j, b in enumerate(before) if b in PREDICATES and red and j < red[-1]]
            if not pred:
                continue
            first = int(mine[max(i - MAX_LOOKBACK - 1, 0) + pred[-1]])
            j = int(np.searchsorted(ev.start[mine_nodes], ev.start[first], side="right")) - 1
            in_node = j >= 0 and int(ev.end[mine_nodes[j]]) >= int(ev.end[mine[i]])
            out.append(Check(int(k), int(ev.start[first]), int(ev.end[mine[i]]), before[pred[-1]], in_node))
    return out if len(out) >= MIN_CHECKS else []


def _compiled_regions(c: Context) -> int:
    return len(outermost(c, ops_named(c, lambda n: n.startswith(COMPILED_REGION))))


@dataclass(frozen=True)
class ChecksOff(Assumption):
    per_step: int = 0                # checks a profiled step
    regions_per_step: int = 0        # torch.compile regions a step (0: the model is not compiled)
    predicate: str = ""
    waited_ns: int = 0               # the checks' syncs' wait, as traced
    anomaly_mode: bool = False       # most checks run inside autograd nodes: anomaly mode's check of each gradient


def apply(c: Context, p, o: Options) -> tuple[ChecksOff, dict]:
    checks = find(c)
    if not checks or not c.g.n_calls:
        return ChecksOff("value_checks", 0), {"checks": 0}
    # the check's kernels go with their dispatch, and its reads no longer block (the copy and the sync go with it)
    waited, _, _ = drop_ops.drop(c, p, [(ch.thread, ch.start, ch.end) for ch in checks])
    steps = drop_ops.profiled_steps(c)
    return (ChecksOff("value_checks", len(checks), per_step=len(checks) // steps,
                      regions_per_step=_compiled_regions(c) // steps, predicate=checks[0].predicate,
                      waited_ns=waited, anomaly_mode=2 * sum(ch.in_backward_node for ch in checks) > len(checks)),
            {"checks": len(checks)})


def says(a: ChecksOff) -> str:
    if a.count == 0:
        return ("no value check read on the host (a predicate such as aten::isnan, reduced by aten::any, then read "
                "by aten::item) twice or more")
    split = (f", and under torch.compile each is a graph break: {units.integer(a.regions_per_step)} compiled regions "
             "a step, which no CUDA graph replays as one" if a.regions_per_step > 1 else "")
    where = (" inside the autograd nodes' evaluation in backward, where anomaly mode checks each node's gradients"
             if a.anomaly_mode else "")
    return (f"{units.integer(a.per_step)} checks a step read a value predicate on the host ({a.predicate}, then "
            f"aten::any, then a blocking read that drains the GPU){where}{split}; priced as the checks' syncs, "
            "kernels and dispatch gone" + ("" if a.anomaly_mode else ", not the compiled regions joined"))


def _sync_idle(m: Measured) -> float:
    """What taking the checks off acts on: the idle the syncs leave and the launch overhead between the regions."""
    return float(m.by_cause_ns.get(Cause.SYNCHRONIZATION, 0) + m.by_cause_ns.get(Cause.LAUNCH_OVERHEAD, 0))


def checks_found(m: Measured) -> int:
    return m.whatif.lever("value_checks").detail.get("checks", 0)


def blocks_graphs(assumption: Assumption | None) -> bool:
    """Where a check per layer blocks the step, no CUDA graph replays the step as one: the report does not advise
    them until the checks are off."""
    return isinstance(assumption, ChecksOff) and assumption.per_step >= MIN_CHECKS


CHANGE = ("take the per-layer check off the hot path: drop `if torch.isnan(h).any(): raise ...` inside the step "
          "(check once on the step's output, or torch._assert_async(~torch.isnan(h).any()), which does not block)")


ANOMALY_CHANGE = ("turn autograd's anomaly mode off: torch.autograd.set_detect_anomaly(False), or drop the `with "
                  "torch.autograd.detect_anomaly():` around the step (it checks every backward node's gradients "
                  "with a blocking read; a gradient hook that checks each gradient reads the same)")


def change_for(a: Assumption) -> str:
    """The change with the predicate the trace shows (isnan, isinf, isfinite); anomaly mode's own switch where the
    checks run inside the autograd nodes."""
    if getattr(a, "anomaly_mode", False):
        return ANOMALY_CHANGE
    pred = getattr(a, "predicate", "").removeprefix("aten::") or "isnan"
    return CHANGE.replace("isnan", pred)

SPEC = LeverSpec(
    name="value_checks", effort=1, cause=None, apply=apply, says=says, words="the value checks off the hot path",
    fix="the per-layer NaN/Inf check taken off the hot path",
    recognise=Recognise(order=1, evidence="checks", because="its per-layer value checks stopped reading to the host",
                        amount=checks_found, acted=_sync_idle, applied=went),
    applied_words="the value checks off (value_checks)", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE, line=change_for,
              evidence="an outermost read of a scalar (aten::is_nonzero, aten::item, aten::_local_scalar_dense) within "
                       "three ops after aten::any/aten::all of aten::isnan/isinf/isfinite, twice or more",
              applies="every device and dtype",
              model="the checks' syncs, kernels and dispatch removed in the replay; the compiled regions joined "
                    "(fewer launches, fusion across the break) not priced",
              guide="past the guides: torch.compile's graph breaks (a data-dependent branch), torch._assert_async"))
