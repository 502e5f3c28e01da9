"""batch_passes: the same model run k times on the same shapes inside one step, run once on the k inputs stacked.

Classifier-free guidance calls the denoiser twice an iteration (`eps_c = model(x, t, y); eps_u = model(x, t,
y_null)`); an ensemble or a test-time augmentation calls one model on k views. Each pass walks the model's host work
(dispatch, launches, its Python) again on kernels a stacked batch would make k times larger; where the kernels are
small (the GPU idles between them), one pass on torch.cat of the inputs costs one host walk. The fix:
`model(torch.cat([x, x]), torch.cat([t, t]), torch.cat([y, y_null])).chunk(2)`.

What any trace of the construct shows (found by `find`): on one thread, the outermost ops' sequence (each op's name
and input shapes) holds a block of MIN_PASS_OPS ops or more that repeats k >= 2 times back to back, then something
else (the passes' outputs combined, the sampler's update), each pass reading the model's raw input (an embedding of
ids, a convolution of an image or latent of four channels or fewer, as batch_items reads a call's start), and that
group of k passes recurs MIN_GROUPS times or more inside one profiler step (or in the trace, without steps): k
identical passes an iteration, several iterations a step. Not this construct: a stack of identical layers inside one
forward (a transformer's blocks: each reads the block before's output, none the raw input), a loop of identical
calls with nothing between them (items: batch_items' model loop; every pass would be one group), the user's own
steps or training iterations (a profiler step boundary inside a group, a backward in it), a generation's decode
steps (their shapes grow, or kv_cache's chains), a group that recurs once a step (a sampler without guidance: pass,
update, pass, update, whose blocks of pass-and-update repeat as identically but each reads the one before), a group
that recurs once (a trace of one iteration: too little to tell passes from a model that runs a block twice). What
would make it fire falsely: two passes whose second input depends on the first's output (a refinement pass, a two-
stage model sharing shapes): they cannot be stacked; the words say "the passes' inputs at hand before the first" for
that reason.

The price: the passes after the first in each group lose their host work (dispatch, launch calls, the Python between
their ops); their kernels stay as they ran, issued with the first pass's (a kernel k times larger at sizes where the
GPU idles between kernels takes at most k times as long; how much less is not in the trace).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct, pair_codes
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import USER_ANNOTATION, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif.levers.batch_items import CONVOLUTION, EMBEDDING, IMAGE_CHANNELS
from tracetriage.analyzers.whatif.levers.knob import ops_named, outermost_ops
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

MIN_PASS_OPS = 20      # a model's forward: tens of ops or more (a block of two or three ops repeated is a loop body)
MIN_GROUPS = 2         # the group of k passes recurs: k passes a step, in two steps (or iterations) or more
RAREST = 8             # the rarest ops whose spacing gives the pass lengths tried
RARE_COUNTS = 3        # ... of this many of the smallest counts
_BACKWARD = re.compile(r"^autograd::engine::evaluate_function|Backward\d*$")


def _reads_the_input(c: Context, op: int) -> bool:
    """The op takes a model's raw input: an embedding of ids, or a convolution of an image or latent (IMAGE_CHANNELS
    channels or fewer)."""
    name = c.trace.name_of(op)
    if name == EMBEDDING:
        return True
    if name not in CONVOLUTION:
        return False
    dims = (c.trace.shapes(op)[0] or [[]])[0] or []
    return isinstance(dims, list) and len(dims) >= 3 and isinstance(dims[1], int) and dims[1] <= IMAGE_CHANNELS


def _reads_the_input_each(c: Context, ops: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """_reads_the_input of each op, asked once per distinct (name, shape record) (`codes`: _codes(c, ops)): at 942k
    events a thread's 158k outermost ops hold 114."""
    at = np.zeros(int(codes.max(initial=-1)) + 1, np.intp)
    at[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)    # (the last write of a repeated code wins: its first op)
    return np.array([_reads_the_input(c, r) for r in ops[at].tolist()], bool)[codes]


@dataclass(frozen=True)
class PassGroup:
    """k identical passes back to back on one thread: where the passes after the first run."""
    thread: int
    passes: int                      # k
    ops: int                         # outermost ops a pass
    start: int                       # the second pass's first op (ns)
    end: int                         # the last pass's last op (ns)


def _codes(c: Context, ops: np.ndarray) -> np.ndarray:
    """Each op as a small integer: the same name on the same input shapes, the same code (codes ascend with
    (name id, shape id), as np.unique's inverse of the pair would number them, through tables over the two narrow
    columns where np.unique sorted a thread's 158k ops: ~22 ms of the 942k-event trace's levers)."""
    ev = c.trace.ev
    return pair_codes(ev.name[ops], ev.shape[ops])[2].reshape(-1)


def _groups(codes: np.ndarray) -> tuple[int, list[tuple[int, int]]]:
    """(pass length P, [(first index, passes)]) for the P whose groups of k >= 2 passes recur most; (0, [])."""
    counts = np.bincount(codes)
    often = counts >= 2 * MIN_GROUPS
    if not often.any():
        return 0, []
    tried: set[int] = set()
    # a pass runs its rarest ops once; the step around the passes may run others rarer still (once an iteration),
    # so the spacings of the few rarest counts are tried, not only the rarest's
    for n in distinct(counts[often])[:RARE_COUNTS].tolist():
        for k in np.flatnonzero(counts == n)[:RAREST].tolist():
            tried |= set(np.diff(np.flatnonzero(codes == k)).tolist())
    best: tuple[int, list[tuple[int, int]]] = (0, [])
    for p in sorted(x for x in tried if MIN_PASS_OPS <= x <= len(codes) // 2):
        same = codes[p:] == codes[:-p]
        edges = np.flatnonzero(np.diff(np.r_[0, same.astype(np.int8), 0]))
        groups = [(s, (e - s) // p + 1) for s, e in zip(edges[::2].tolist(), edges[1::2].tolist()) if e - s >= p]
        if len(groups) >= MIN_GROUPS and len(groups) * p > len(best[1]) * best[0]:
            best = (p, groups)
    return best


def find(c: Context) -> list[PassGroup]:
    """The groups of identical passes in the trace (the module docstring's rule)."""
    ev = c.trace.ev
    ops = outermost_ops(c)
    if len(ops) < 2 * MIN_PASS_OPS * MIN_GROUPS:
        return []
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    is_step = np.array([n.startswith(PROFILER_STEP) for n in c.trace.names], bool)   # (a test per name, not per row)
    steps = np.sort(ev.start[ann[is_step[ev.name[ann]]]])
    backward = ops_named(c, lambda n: _BACKWARD.search(n) is not None)
    key = thread_keys(ev, ops)
    out = []
    for k in distinct(key).tolist():
        mine = ops[key == k]
        codes = _codes(c, mine)
        p, groups = _groups(codes)
        reads = _reads_the_input_each(c, mine, codes) if groups else None
        for first, passes in groups:
            if not reads[first:first + p].any():
                continue        # a block of layers, each reading the one before's output: not a model's pass
            start, end = int(ev.start[mine[first + p]]), int(ev.end[mine[first + passes * p - 1]])
            lo = int(ev.start[mine[first]])
            if ((steps > lo) & (steps < end)).any() or ((ev.start[backward] >= lo) & (ev.start[backward] < end)).any():
                continue        # the user's steps or training iterations, not passes of one step
            out.append(PassGroup(int(k), passes, p, start, end))
    # the groups recur inside one profiler step: k passes an iteration, several iterations a step. A group a step is a
    # loop of iterations (a sampler without guidance: pass, update, pass, update ... each pass reading the update
    # before it), whose blocks repeat as identically but cannot be stacked
    step_of = np.searchsorted(steps, [x.start for x in out], side="right")
    counts = np.bincount(step_of, minlength=len(steps) + 1) if out else np.zeros(0, np.int64)
    return [x for x, s in zip(out, step_of.tolist()) if counts[s] >= MIN_GROUPS]


@dataclass(frozen=True)
class Stacked(Assumption):
    passes: int = 0                  # passes a group (k)
    ops: int = 0                     # outermost ops a pass
    groups: int = 0


def apply(c: Context, p, o: Options) -> tuple[Stacked, dict]:
    groups = find(c)
    g = c.g
    if not groups or not g.n_calls:
        return Stacked("batch_passes", 0), {"extra_passes": 0}
    c_key = c.call_keys
    gone = np.zeros(g.n_calls, bool)
    for x in groups:
        gone |= (c_key == x.thread) & (g.c_start >= x.start) & (g.c_start < x.end)
    gone &= ~p.c_blocked        # a sync inside a pass still waits (once the stacked pass reaches it)
    # the later passes' host work goes; their kernels stay, issued as the first pass's are
    p.c_gap[gone] = 0
    p.c_dur[gone] = 0
    top = max(groups, key=lambda x: x.passes)
    extra = sum(x.passes - 1 for x in groups)
    return Stacked("batch_passes", extra, passes=top.passes, ops=top.ops, groups=len(groups)), {"extra_passes": extra}


def says(a: Stacked) -> str:
    if a.count == 0:
        return ("no model run twice or more back to back on the same shapes (a block of twenty ops or more, "
                "repeated, in groups that recur)")
    return (f"each of {units.integer(a.groups)} iterations runs the same {units.integer(a.ops)}-op pass "
            f"{units.integer(a.passes)} times back to back on the same shapes; priced as the later passes' host "
            "work gone (dispatch, launches, their Python), their kernels kept as they ran")


def extra_passes(m: Measured) -> int:
    return m.whatif.lever("batch_passes").detail.get("extra_passes", 0)


def _launches(m: Measured) -> float:
    return float(m.by_cause_ns.get(Cause.LAUNCH_OVERHEAD, 0) + m.by_cause_ns.get(Cause.HOST_WORK, 0))


CHANGE = ("run the passes as one batch: one forward on the inputs stacked, model(torch.cat([x, x]), torch.cat([t, "
          "t]), torch.cat([y, y_null])).chunk(2), in place of one forward per pass (classifier-free guidance's "
          "conditional and unconditional passes; any k passes whose inputs are at hand before the first)")

SPEC = LeverSpec(
    name="batch_passes", effort=1, cause=None, apply=apply, says=says, words="one forward on the passes stacked",
    fix="the passes of one step run as one forward on their inputs stacked",
    recognise=Recognise(order=1, evidence="extra_passes", because="its step stopped running the same pass twice",
                        amount=extra_passes, acted=_launches, applied=went),
    applied_words="one forward on the passes stacked (batch_passes)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE,
              evidence="a block of twenty outermost ops or more (names and input shapes), starting from the raw "
                       "input (an embedding, a convolution of four channels or fewer), repeated two or more times "
                       "back to back on one thread, the group recurring twice or more inside one profiler step, "
                       "with no backward",
              applies="every device and dtype: inference whose passes' inputs are at hand before the first",
              model="the later passes' host work removed in the replay, their kernels kept as they ran (kernels k "
                    "times larger are not priced)",
              guide="past the guides: classifier-free guidance batched (diffusers' pipelines stack cond and uncond)"))
