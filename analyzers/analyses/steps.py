"""Iterations found without named ranges: what one step of the user's loop costs, step by step.

Where the trace has the profiler's own `ProfilerStep#N` ranges, those are the steps. Otherwise the steps are found from
the repeated structure of the trace: the sequence of top-level ops (the outermost cpu_op of each host thread, plus
torch's own `Optimizer.step#...` and `enumerate(DataLoader)#...` ranges; the kernels when the trace has no CPU ops). An
op that occurs once per iteration cuts that sequence into units; the units of a loop are alike (the same ops in the same
order, give or take a logging `.item()`), and they cover most of the traced time:

    for each op name that occurs STEP_MIN_REPEATS times or more:
        cut the sequence at its occurrences; the units alike the most common one are "regular"
        cover = host time of the regular units / host time of the whole sequence
    the loop is the cut with the largest cover; within COVER_TIE of it, the one with the most units
    (a training loop that logs every 5th step still has 20 steps, not 4)

A repeated unit that holds none of the marks of a whole step (a forward's embedding lookup, a compiled region or
CUDA-graph replay, an optimizer step, a DataLoader fetch, a collective, a host sync) while the trace has such a mark
outside the units is a layer of one pass, not a step: a single forward of a 24-layer model has 24 alike units and one
step. Then no step is invented. Unless a loop runs around those units (a named range of the user's repeating
STEP_MIN_REPEATS times, or a larger unit holding a forward and a backward): then they are no layers of one pass either,
and no step is claimed.

Where each step ends: after the host sync that ends it when every unit holds one (`loss.item()`, a stopping check), else
at the op that starts each unit.

Each step's window runs from its host start (or the end of the step before, when the host ran ahead) to its next step's
host start (or its own last GPU activity, when that is later), so the windows partition the timeline and a step's wall
is what it added to it. Per step: wall, kernel busy time, and the idle gaps (tracetriage.analyzers.analyses.idle) by
cause inside the window.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from tracetriage.analyzers.analyses import element_loops, model_build, tile_loops
from tracetriage.analyzers.analyses.idle import DeviceIdle, dominant_cause
from tracetriage.analyzers.analyses.layers import alike_inside
from tracetriage.analyzers.analyses.loop_start import from_the_loops_start
from tracetriage.analyzers.analyses.passes import Passes, whole_passes
from tracetriage.analyzers.analyses.profiler_steps import working_profiler_steps
from tracetriage.analyzers.analyses.queued import drained_before_own, queued_before_window
from tracetriage.analyzers.analyses.sparse_syncs import OWN_SYNC_OPS, inside_ops
from tracetriage.analyzers.analyses.step_runs import marked_share, one_per_run
from tracetriage.analyzers.analyses.step_setup import kernels_made_it, pays_setup
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model import runtime_calls as rc
from tracetriage.analyzers.model.groups import any_of, distinct, stable_order
from tracetriage.analyzers.model.last_trace import last_trace
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import (
    CLOCK_TOL_NS,
    CPU_OP,
    DRIVER,
    GPU_CATS,
    KERNEL,
    MEMCPY,
    NONE,
    RUNTIME,
    USER_ANNOTATION,
    Trace,
)
from tracetriage.analyzers.model.verdicts import CAUSES, CONSTRUCTS, Cause, Construct

STEP_MIN_REPEATS = 3        # a unit seen fewer times is no loop
ALIKE_LENGTH = 0.2          # a unit this much longer than the common one is two steps when it begins with it
COVER_TIE = 0.05            # cuts this close in cover: the one with more units is the step
OP_TIE_TIME = 0.5           # ... or this close in ops while holding half the time the best cut holds
LOOP_COVER = 0.3            # regular units hold a third of host time, ops or kernel time (a first prefill: half)
OUTLIER_RATIO = 1.5         # a step this many times the median step is the outlier worth naming
SETUP_RATIO = 1.5           # the first step this many times the median, with set-up inside it, is kept apart
SETUP_MIN_STEADY = 1        # ... where at least this many steps remain to be the steady ones
OUTLIER_SHARE = 0.02        # ... and its extra time is 2% of the steps' summed walls (not noise on 1,000 tiny steps)
OUTLIER_CAUSE_SHARE = 0.5   # the cause named holds at least half of the outlier's extra wall time

# Calls in SYNC_CALLS that end no step: the allocator's implicit syncs, and polls that return at once.
NOT_A_STEP_END = frozenset({"cudaFree", "cudaFreeHost", "hipFree", "hipHostFree", "hipFreeHost", "cudaStreamQuery",
                            "hipStreamQuery"})
# Names that mark a whole step (see the module's docstring); a layer of one pass holds none of them.
FORWARD_START_OPS = frozenset({"aten::embedding", "aten::embedding_bag"})   # (no backward: each layer has its own)
STEP_MARK_PREFIXES = ("Torch-Compiled Region", "CompiledFunction", "Optimizer.step#", "Optimizer.zero_grad#",
                      "enumerate(DataLoader)#", "c10d::", "nccl:", "record_param_comms")
MARKED_UNITS = 0.9          # a cut is a loop's only if this share of its units holds a mark (where the trace has any)
DATALOADER_PREFIX = "enumerate(DataLoader)#"
OPTIMIZER_STEP_PREFIX = "Optimizer.step#"
TORCH_RANGE_PREFIXES = ("Optimizer.", DATALOADER_PREFIX)   # torch's own ranges, recorded by default
BACKWARD_NODE_PREFIX = "autograd::engine::evaluate_function: "   # the autograd engine running one backward node


class StepsFrom(str, Enum):
    PROFILER_STEP = "profiler_step"        # the profiler's ProfilerStep#N ranges
    REPEATED_OPS = "repeated_ops"          # the repeated sequence of top-level ops
    REPEATED_KERNELS = "repeated_kernels"  # the repeated sequence of kernels (a trace without CPU ops)

    def __str__(self) -> str:
        return self.value


class Boundary(str, Enum):
    """Where one step ends and the next begins."""
    PROFILER_STEP = "profiler_step"   # ProfilerStep#N
    AT_DATALOADER = "at_dataloader"   # at the DataLoader fetch each step starts with
    AFTER_SYNC = "after_sync"         # right after the host sync each step ends with
    AFTER_OPTIMIZER = "after_optimizer"   # right after the optimizer step each step ends with
    AT_FORWARD = "at_forward"         # at the embedding lookup each forward starts with
    AT_OP = "at_op"                   # at the op that starts each step (`anchor`)

    def __str__(self) -> str:
        return self.value


class NoSteps(str, Enum):
    """Why no steps were found."""
    NO_OPS = "no_ops"                 # nothing to find them in
    NO_REPETITION = "no_repetition"   # no unit of ops repeats STEP_MIN_REPEATS times over most of the trace
    ONE_PASS = "one_pass"             # the units that repeat are layers of one pass, not steps
    UNMARKED_LOOP = "unmarked_loop"   # the units that repeat hold no mark of a step, and a loop runs around them

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Step:
    index: int
    start_ns: int              # the step's window (the windows partition the timeline)
    end_ns: int
    host_start_ns: int         # where the host began issuing it
    gpu_end_ns: int            # its last GPU activity's end (NONE: it ran none)
    kernels: int
    kernel_busy_ns: int
    idle_by_cause_ns: dict[Cause, int]
    regular: bool              # it has the repeated structure (False: the prologue, or a step that differs)
    setup: bool = False        # the first step, kept apart: it pays set-up (first calls, compilation)
    name: str = ""             # the trace's own name for it (ProfilerStep#4), where the profiler named it
    queued_kernels: int = 0    # of its kernels, those queued before the trace began (no launch call in it, run
    queued_busy_ns: int = 0    # ahead of every launched one on their stream), and their busy time in its window
    launch_calls: int = 0      # the calls that launched its kernels (graph launches among them)
    graph_launches: int = 0

    @property
    def own_kernels(self) -> int:
        """The kernels it launched itself: not the work queued before the profiled window that it drained."""
        return self.kernels - self.queued_kernels

    @property
    def own_busy_ns(self) -> int:
        return self.kernel_busy_ns - self.queued_busy_ns

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def idle_ns(self) -> int:
        return sum(self.idle_by_cause_ns.values())

    @property
    def idle_dominant(self) -> Cause | None:
        return dominant_cause(self.idle_by_cause_ns, self.idle_ns)


class OutlierWhy(str, Enum):
    QUEUED = "queued"      # it ran kernels queued before the profiled window (the profiler's warm-up steps ran
                           # ahead of the GPU): they hold most of its extra time
    IDLE = "idle"          # an idle cause holds most of its extra time (`cause`)
    KERNELS = "kernels"    # its own kernels were busy longer than the median step's
    HOST = "host"          # its host took the time outside any idle gap: before the GPU had work, or no GPU timeline

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Outlier:
    """The slowest step, when it is far from the median: what made it slow."""
    step: int                  # its index
    ratio: float               # its wall over the median step's
    wall_ns: int
    extra_ns: int              # its wall minus the median's
    cause: Cause | None        # the idle cause that holds most of the extra time (None: its kernels took longer)
    gap_ns: int                # the longest idle stretch of that cause inside the step
    host_op: str | None        # the outermost op the host was in during that stretch, where the trace has one
    why: OutlierWhy = OutlierWhy.IDLE
    construct: Construct | None = None   # the framework construct around that stretch
                                         # (tracetriage.analyzers.analyses.framework);
                                         # None: the user's own code, or no framework analysis
    name: str = ""             # the trace's own name for the step (ProfilerStep#4): what a user looks for
    own_busy_ns: int = 0       # its own kernels' busy time (queued work left out) ...
    median_own_busy_ns: int = 0   # ... and the median step's
    own_kernels: int = 0
    queued_kernels: int = 0    # why QUEUED: the kernels queued before the window it ran, their busy time,
    queued_busy_ns: int = 0
    waited_in: str | None = None   # ... and the host sync that waited for them, where one did
    waited_ns: int = 0
    unrecorded_before: int = 0     # the steps the profiler ran unrecorded before it (its schedule's wait and
                                   # warm-up: ProfilerStep#3 first recorded), where it is the first step


@dataclass(frozen=True)
class StepSummary:
    """Median, p90 and max of a set of steps' walls, and the outlier among them."""
    steps: int
    median_ns: int
    p90_ns: int
    max_ns: int
    max_step: int
    median_busy_ns: int
    median_idle_ns: int
    outlier: Outlier | None
    drained_ns: int = 0        # work queued before the profiled window that a step drained before its own, left out
    drained_step: str = ""     # of its wall above (where no outlier says it): how long, and which step (its name)


@dataclass(frozen=True)
class Steps:
    found_from: StepsFrom | None       # None: no steps found (why_none says why)
    steps: tuple[Step, ...] = ()
    boundary: Boundary | None = None
    anchor: str | None = None          # the op that starts (or, after_sync, ends) each step
    unit_ops: int = 0                  # top-level ops (or kernels) per regular step
    summary: StepSummary | None = None   # over the steps that are not set-up
    setup_ns: int = 0                  # what the set-up steps took beyond the median step
    why_none: NoSteps | None = None
    repeats: int = 0                   # why_none ONE_PASS (or UNMARKED_LOOP): how often the layer-like unit repeats
    repeat_op: str | None = None       # ... and the op that starts it
    passes: Passes | None = None       # ... and the whole copies of one op sequence, if so (analyses.passes)
    per_element: bool = False          # ONE_PASS: its units each work on one-element tensors (analyses.element_loops)
    tiles: bool = False                # ONE_PASS: its units are tiles of one matrix product (analyses.tile_loops)
    model_build_ns: int = 0            # a single step: its time building the model (analyses.model_build)
    cut_off: tuple[tuple[str, int], ...] = ()   # ProfilerStep ranges left out as the profiler's stub or a fragment
                                                # its start or stop cut (analyses.profiler_steps): name, wall

    @property
    def found(self) -> bool:
        return bool(self.steps)

    @property
    def setup_steps(self) -> tuple[Step, ...]:
        """The first steps, kept apart: they pay set-up."""
        return tuple(s for s in self.steps if s.setup)


# --- the tokens: top-level ops in time order -------------------------------------------------------

def _outermost(ev, rows: np.ndarray) -> np.ndarray:
    """The rows not nested inside an earlier row of the same thread (rows sorted by start)."""
    out = []
    tids = ev.tid[rows]
    for tid in distinct(tids):
        r = rows[tids == tid]
        ends = np.maximum.accumulate(ev.end[r])
        top = np.ones(len(r), dtype=bool)
        top[1:] = ev.start[r][1:] >= ends[:-1]
        out.append(r[top])
    t = np.concatenate(out) if out else rows[:0]
    return t[np.argsort(ev.start[t], kind="stable")]


def tokens(trace: Trace) -> tuple[np.ndarray, StepsFrom]:
    """The rows whose names make the sequence the loop is found in."""
    ev = trace.ev
    ops = ev.cat == CPU_OP
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    if len(ann):
        ops[ann[name_flags(trace, ann, lambda n: n.startswith(TORCH_RANGE_PREFIXES))]] = True
    rows = np.flatnonzero(ops)
    if len(rows):
        # a call made outside any op is a token of its own when it says something of the loop: a sync
        # (torch.cuda.synchronize(), Event.synchronize()) ends a step as `.item()` does, and a CUDA-graph replay
        # (graph.replay()) is a step's whole forward
        calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
        loose = calls[name_flags(trace, calls, lambda n: (rc.is_sync(n) and n not in NOT_A_STEP_END)
                                 or rc.is_graph_launch(n))]
        ops[loose] = True
        return _outermost(ev, np.flatnonzero(ops)), StepsFrom.REPEATED_OPS
    return np.flatnonzero(ev.cat == KERNEL), StepsFrom.REPEATED_KERNELS


# --- the cut: which op starts each unit ------------------------------------------------------------

@dataclass(frozen=True)
class _Cut:
    name: int
    positions: np.ndarray      # token positions where units start
    regular: np.ndarray        # bool per unit
    cover: float               # share of the traced host time in regular units
    unit_ops: int
    op_cover: float            # share of the ops in regular units (a first step that pays seconds of set-up
                               # holds most of the time, not most of the ops)
    gpu_cover: float = 0.0     # share of the kernel time launched from regular units (CUDA-graph replays: the
                               # host does little in them, and they hold all the GPU work)

    @property
    def best_cover(self) -> float:
        return max(self.cover, self.op_cover, self.gpu_cover)


@dataclass(frozen=True)
class _Prefix:
    """Prefix sums over the token sequence, built once: any unit's hashes are then two lookups (int64 wraps on
    purpose)."""
    tok: np.ndarray
    w: np.ndarray
    a: np.ndarray     # sum of w0 (order-free: the bag of ops)
    b: np.ndarray     # sum of w1 * position
    c: np.ndarray     # sum of w1
    one_op: np.ndarray   # the w0 of each name in the sequence: what one op more or less adds to a bag

    @classmethod
    def of(cls, tok: np.ndarray, w: np.ndarray) -> "_Prefix":
        k = np.arange(len(tok), dtype=np.int64)
        w0, w1 = w[0][tok], w[1][tok]
        with np.errstate(over="ignore"):
            return cls(tok, w, np.concatenate(([0], np.cumsum(w0))), np.concatenate(([0], np.cumsum(w1 * k))),
                       np.concatenate(([0], np.cumsum(w1))), np.sort(w[0][distinct(tok)]))

    def order_hash(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """An order-sensitive hash of each unit tok[start:stop]."""
        with np.errstate(over="ignore"):
            return (stops - starts) * 1_000_003 + (self.a[stops] - self.a[starts]) * 31 + (
                self.b[stops] - self.b[starts]) - starts * (self.c[stops] - self.c[starts])

    def bag(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self.a[stops] - self.a[starts]


def _regular(px: _Prefix, pos: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Which units tok[pos[i]:pos[i+1]] are alike the most common one (the same ops, in any order, or give or
    take one: a logging `.item()` every few steps), that one's op count, and one unit that is it."""
    stops = np.append(pos[1:], len(px.tok))
    h = px.order_hash(pos, stops)
    hv, hc = np.unique(h, return_counts=True)
    common = int(np.argmax(h == hv[np.argmax(hc)]))
    lengths = stops - pos
    unit = int(lengths[common])
    with np.errstate(over="ignore"):
        diff = px.bag(pos, stops) - px.bag(pos[common:common + 1], stops[common:common + 1])[0]
    one = np.abs(lengths - unit) == 1
    one_op = np.zeros(len(pos), dtype=bool)
    if one.any():
        one_op[one] = np.isin(np.abs(diff[one]), px.one_op)
    # the same ops in another order: threads interleave (the autograd thread's backward beside the main thread)
    same_bag = (diff == 0) & (lengths == unit)
    return (h == h[common]) | same_bag | one_op, unit, common


def _split_differing(px: _Prefix, pos: np.ndarray) -> np.ndarray:
    """A unit that differs from the common one but begins (or ends) with it is two steps: the common unit and
    the rest (the last decode step of a request, then the next request's prefill)."""
    stops = np.append(pos[1:], len(px.tok))
    h = px.order_hash(pos, stops)
    hv, hc = np.unique(h, return_counts=True)
    common = hv[np.argmax(hc)]
    unit = int((stops - pos)[np.argmax(h == common)])
    longer = np.flatnonzero((stops - pos) > unit + max(1, ALIKE_LENGTH * unit))
    if not len(longer):
        return pos
    p, q = pos[longer], stops[longer]
    head = px.order_hash(p, p + unit) == common
    tail = ~head & (px.order_hash(q - unit, q) == common)
    extra = np.concatenate((p[head] + unit, q[tail] - unit))
    return distinct(np.concatenate((pos, extra)))


def _weights(n_names: int) -> np.ndarray:
    return np.random.default_rng(0).integers(1, 2 ** 31, size=(2, n_names), dtype=np.int64)


def _cuts(px: _Prefix, t_start: np.ndarray, t_end: np.ndarray, gpu_ns: np.ndarray) -> list[_Cut]:
    """Every cut's units and covers; gpu_ns: the kernel time each token launched."""
    tok = px.tok
    n = len(tok)
    gpu_prefix = np.concatenate(([0], np.cumsum(gpu_ns)))
    gpu_total = float(gpu_prefix[-1])
    total = float(t_end.max() - t_start[0]) if n else 0.0
    order = stable_order(tok)        # the positions of each name, grouped: one sort, not one scan a name
    # each name's stretch of `order` (np.unique(tok[order], return_index=True, return_counts=True), read off the
    # sorted names where they change)
    by_name = tok[order]
    first = np.flatnonzero(np.r_[True, by_name[1:] != by_name[:-1]]) if n else np.zeros(0, np.int64)
    names, counts = by_name[first], np.diff(np.r_[first, n])
    last_end_from = np.maximum.accumulate(t_end[::-1])[::-1] if n else t_end   # max(t_end[i:]), for every i
    silent = gpu_ns == 0
    out = []
    for name, f, c in zip(names, first, counts):
        if c < STEP_MIN_REPEATS or c > n // 2:
            continue
        pos = one_per_run(order[f:f + c], False, silent)   # a silent unit of the name alone: no step
        if len(pos) < STEP_MIN_REPEATS:
            continue
        regular, unit, _ = _regular(px, pos)
        # each unit's host time: from its first op to the next unit's (the last: to its last op's end)
        t_next = np.append(t_start[pos[1:]], last_end_from[pos[-1]])
        cover = float((t_next - t_start[pos])[regular].sum()) / total if total else 0.0
        stops = np.append(pos[1:], n)
        held = (gpu_prefix[stops] - gpu_prefix[pos])[regular].sum()
        out.append(_Cut(int(name), pos, regular, cover, unit, float((stops - pos)[regular].sum()) / n,
                        float(held) / gpu_total if gpu_total else 0.0))
    return sorted(out, key=lambda c: (-c.cover, -len(c.positions)))


def _choose(cuts: list[_Cut]) -> list[_Cut]:
    """Cuts in the order they are tried: the largest cover first, and, among the cuts within COVER_TIE of it in
    time or in ops, the one with more regular units first (an outer loop around the steps, such as one request's prefill
    and its decode steps repeated, holds the steps: the steps are the loop)."""
    out, rest = [], list(cuts)
    while rest:
        best = rest[0]
        tie = [c for c in rest if c.cover >= best.cover - COVER_TIE
               or (c.op_cover >= best.op_cover - COVER_TIE and c.cover >= OP_TIE_TIME * best.cover)]
        # more regular units first; then the fewer cuts (an op that also occurs a few times inside a prefill
        # cuts it into pieces that are no steps); then the larger cover
        out += sorted(tie, key=lambda c: (-int(c.regular.sum()), len(c.positions), -c.cover))
        rest = [c for c in rest if c not in tie]
    return out


def _marks(trace: Trace, rows: np.ndarray, sync_tok: np.ndarray) -> np.ndarray:
    """Whether each token is a mark of a whole step (module docstring)."""
    def is_mark(n: str) -> bool:
        return n in FORWARD_START_OPS or n.startswith(STEP_MARK_PREFIXES) or rc.is_graph_launch(n)
    return name_flags(trace, rows, is_mark) | sync_tok


def _kernel_time_of(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per token, the kernel time launched by the calls inside it."""
    ev = trace.ev
    kr = np.flatnonzero((ev.cat == KERNEL) & (trace.launch_of != NONE))
    out = np.zeros(len(rows), np.int64)
    if not len(kr):
        return out
    calls = trace.launch_of[kr]
    k = _containing(trace, rows, calls)
    ok = k >= 0
    # (a sum per token of int64 durations, exact in float64 below 2**53 ns: np.bincount, not np.add.at's slower loop)
    return np.bincount(k[ok], weights=(ev.end[kr] - ev.start[kr])[ok], minlength=len(rows)).astype(np.int64)


def _containing(trace: Trace, rows: np.ndarray, calls: np.ndarray) -> np.ndarray:
    """Positions (into rows) of the tokens that hold each call, on the call's thread; -1 where none does."""
    ev = trace.ev
    out = np.full(len(calls), -1, np.int64)
    row_tids, call_tids = ev.tid[rows], ev.tid[calls]
    for tid in distinct(call_tids):
        mine = np.flatnonzero(row_tids == tid)
        c = np.flatnonzero(call_tids == tid)
        if not len(mine):
            continue
        ts, te = ev.start[rows[mine]], ev.end[rows[mine]]
        s = ev.start[calls[c]]
        k = np.searchsorted(ts, s, side="right") - 1
        ok = (k >= 0) & (s < te[np.maximum(k, 0)])
        out[c[ok]] = mine[k[ok]]
    return out


def _sync_tokens(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Whether each token holds a host sync (a call that returns when the device drained). A sync in an op
    that uploads (`.to("cuda")` from pageable memory waits for its own copy) starts a step's work: not its end."""
    ev = trace.ev
    out = np.zeros(len(rows), dtype=bool)
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    if not len(calls) or not len(rows):
        return out
    sync = calls[name_flags(trace, calls, lambda n: rc.is_sync(n) and n not in NOT_A_STEP_END)]
    sync = sync[~inside_ops(trace, sync, OWN_SYNC_OPS)]   # an op's own sync ends no step (sparse_syncs)
    k = _containing(trace, rows, sync)
    out[k[k >= 0]] = True
    copies = np.flatnonzero(ev.cat == MEMCPY)
    up = copies[name_flags(trace, copies, lambda n: "HtoD" in n)] if len(copies) else copies
    up_calls = trace.launch_of[up]
    up_calls = up_calls[up_calls != NONE]
    if len(up_calls):
        k = _containing(trace, rows, up_calls)
        out[k[k >= 0]] = False
    return out


# --- the steps -------------------------------------------------------------------------------------

def find(trace: Trace, devices: tuple[DeviceIdle, ...] | list[DeviceIdle] = (), framework=None) -> Steps:
    """The steps of a trace.

    `framework` (tracetriage.analyzers.analyses.framework) names the construct behind an outlier.
    """
    found = search(trace)
    if isinstance(found, Steps):
        return found
    args, kwargs = found
    return _build(trace, devices, *args, framework=framework, **kwargs)


def why_none(trace: Trace) -> NoSteps | None:
    """find(trace).why_none, without building the steps found (their GPU work, idle and summary): setup.one_pass."""
    found = search(trace)
    return found.why_none if isinstance(found, Steps) else None


@last_trace
def search(trace: Trace) -> Steps | tuple[tuple, dict]:
    """Where the steps are: Steps(None, why_none=...) when there are none, else the arguments of _build that make
    them (after trace, devices). Searched once per trace (the report searches before its levers' fork)."""
    ev = trace.ev
    ann = np.flatnonzero(any_of(ev.cat, (USER_ANNOTATION, CPU_OP)))   # torch 1.x records ProfilerStep as an op
    if len(ann):
        prof = ann[name_flags(trace, ann, lambda n: n.startswith(PROFILER_STEP))]
        if len(prof):
            prof = prof[np.argsort(ev.start[prof], kind="stable")]
            kept = working_profiler_steps(trace, prof)
            left = [(trace.name_of(int(r)), int(ev.end[r] - ev.start[r])) for r in prof[~np.isin(prof, kept)]]
            return ((StepsFrom.PROFILER_STEP, Boundary.PROFILER_STEP, None, ev.start[kept], int(ev.end[kept].max()),
                     np.ones(len(kept), bool), 0), {"names": [trace.name_of(int(r)) for r in kept.tolist()],
                                                    "cut_off": tuple(left)})
    rows, found_from = tokens(trace)
    if len(rows) < 2 * STEP_MIN_REPEATS:
        return Steps(None, why_none=NoSteps.NO_OPS if not len(rows) else NoSteps.NO_REPETITION)
    tok = ev.name[rows].astype(np.int64)
    t_start, t_end = ev.start[rows], ev.end[rows]
    px = _Prefix.of(tok, _weights(len(trace.names)))
    gpu_ns = _kernel_time_of(trace, rows)
    # units that launch none of the kernel time the trace's ops launch are no iterations of the workload: a script's
    # closing synchronizes (one 847 ms drain and two empty ones, read as 3 steps of 185 µs on a 1.19 s span whose
    # ten forward-backward iterations launch every kernel)
    cuts = [c for c in _cuts(px, t_start, t_end, gpu_ns)
            if c.best_cover >= LOOP_COVER and (c.gpu_cover > 0 or not gpu_ns.any())]
    if not cuts:
        return Steps(None, why_none=NoSteps.NO_REPETITION)
    sync_tok = _sync_tokens(trace, rows) if found_from is StepsFrom.REPEATED_OPS else np.zeros(len(rows), bool)
    forwards = int(name_flags(trace, rows, FORWARD_START_OPS.__contains__).sum())
    # a trace of one or two forwards (embedding lookups) holds one or two passes, whatever syncs cut them into:
    # those syncs mark pieces of a forward (a MoE router's `.item()` per layer), not steps (issue 33: one MoE
    # forward read as 20 steps, then as a prefill and 19 decode steps)
    step_syncs = sync_tok if not 0 < forwards < STEP_MIN_REPEATS else np.zeros(len(rows), bool)
    marks = _marks(trace, rows, step_syncs) if found_from is StepsFrom.REPEATED_OPS else np.zeros(len(rows), bool)
    cut = None
    for c in (c for c in _choose(cuts) if found_from is not StepsFrom.REPEATED_KERNELS or alike_inside(c.regular)):
        if not marks.any() or marked_share(c.positions, c.regular, marks) >= MARKED_UNITS:
            cut = c
            break
    if cut is None:
        c = _choose(cuts)[0]
        why = NoSteps.UNMARKED_LOOP if marks.any() and _loop_around(trace, rows, cuts, c) else NoSteps.ONE_PASS
        return Steps(None, why_none=why, repeats=len(c.positions), repeat_op=trace.names[c.name],
                     per_element=why is NoSteps.ONE_PASS
                     and element_loops.per_element(trace, rows, c.positions, c.regular, c.unit_ops),
                     tiles=why is NoSteps.ONE_PASS
                     and tile_loops.tiled(trace, rows, c.positions, c.regular, c.unit_ops),
                     passes=whole_passes(trace, rows, TORCH_RANGE_PREFIXES, STEP_MIN_REPEATS))
    silent = np.append(gpu_ns == 0, True)   # per token: it launched no kernel time (a sync, a poll)
    pos, boundary, anchor = _boundaries(trace, cut, rows, sync_tok, silent)
    pos = one_per_run(pos, boundary in (Boundary.AFTER_SYNC, Boundary.AFTER_OPTIMIZER), silent)
    if boundary is Boundary.AT_OP:
        pos = from_the_loops_start(tok, pos)
        anchor = trace.names[int(tok[pos[0]])]   # the op each step now starts at
    if pos[0] > 0 and _prologue_launches(trace, rows[: pos[0]]):
        pos = np.concatenate(([0], pos))   # work before the first unit (a first request's prefill, set-up): a step
    pos = _split_differing(px, pos)
    regular, unit, c = _regular(px, pos)
    # what follows the last step and launches nothing (a closing synchronize; the dry fetch ending a short loop; the
    # op after the last sync, alike or not, where the steps launch GPU work: smell-sync-explicit's 241st step)
    n_end = len(tok)
    while len(pos) > SETUP_MIN_STEADY + 1 and (not regular[-1] or gpu_ns.any()) \
            and not _prologue_launches(trace, rows[pos[-1]:n_end]):
        n_end, pos, regular = int(pos[-1]), pos[:-1], regular[:-1]
    # a leading step pays set-up only if it holds the loop's own ops: a prologue (the model's initialisation) or
    # a first prefill alone is no iteration of the loop
    common = tok[pos[c]: pos[c] + unit]
    stops = np.append(pos[1:], n_end)
    lead = int(np.argmax(regular))
    prologue = {i for i in range(lead) if not np.isin(common, tok[pos[i]:stops[i]]).all()}
    n_end = _without_the_tail(trace, rows, tok, common, int(pos[-1]), n_end)
    last = int(t_end[:n_end].max())
    return (found_from, boundary, anchor, t_start[pos], last, regular, unit, prologue), {}


def _without_the_tail(trace: Trace, rows: np.ndarray, tok: np.ndarray, common: np.ndarray, last_from: int,
                      n_end: int) -> int:
    """Where the last step's rows end: at its last op of the loop's own unit, when what follows launches no GPU
    work. What the script runs after the loop (a closing synchronize, the profiler's stop) is no part of its last
    iteration (heldout-user3 wenlu_train_opt: a cudaDeviceSynchronize 14.4 ms after the loop's last kernel made
    'step 19 took 9.9x the median')."""
    own = np.flatnonzero(np.isin(tok[last_from:n_end], common))
    if not len(own):
        return n_end
    cut = last_from + int(own[-1]) + 1
    return cut if cut < n_end and not _prologue_launches(trace, rows[cut:n_end]) else n_end


def _loop_around(trace: Trace, rows: np.ndarray, cuts: list[_Cut], layer: _Cut) -> bool:
    """Whether the trace runs a loop around the unmarked units, so that they are no layers of one pass (issue 33:
    ten iterations of a `compute` range, and ten forward+backward iterations of a 6-layer MLP, were each called
    one pass): a named range of the user's that repeats STEP_MIN_REPEATS times or more, or a larger unit that
    does and holds both a forward op and a backward node (a single pass runs its whole forward before its
    backward, so no unit of it that repeats holds both)."""
    if user_range_repeats(trace):
        return True
    backward = name_flags(trace, rows, lambda n: n.startswith(BACKWARD_NODE_PREFIX))
    for c in cuts:
        if c.unit_ops <= layer.unit_ops or int(c.regular.sum()) < STEP_MIN_REPEATS:
            continue
        first = int(c.positions[int(np.argmax(c.regular))])
        unit = backward[first:first + c.unit_ops]
        if unit.any() and not unit.all():
            return True
    return False


def user_range_repeats(trace: Trace) -> bool:
    """A user's range (not torch's own) repeats STEP_MIN_REPEATS times or more: a loop around it, no single pass."""
    ev = trace.ev
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    user = ann[~name_flags(trace, ann, lambda n: n.startswith(TORCH_RANGE_PREFIXES))] if len(ann) else ann
    return bool(len(user) and np.unique(ev.name[user], return_counts=True)[1].max() >= STEP_MIN_REPEATS)


def _boundaries(trace: Trace, cut: _Cut, rows: np.ndarray, sync_tok: np.ndarray, silent: np.ndarray):
    """Step starts: the first of these that every regular unit holds once: a DataLoader fetch (a step starts
    with its batch), a host sync (a step ends with it), an optimizer step (a training step ends with it), a
    forward's embedding lookup (an inference step starts with it); else the cut's own op."""
    tests = (
        (Boundary.AT_DATALOADER, False, name_flags(trace, rows, lambda n: n.startswith(DATALOADER_PREFIX))),
        (Boundary.AFTER_SYNC, True, sync_tok),
        (Boundary.AFTER_OPTIMIZER, True, name_flags(trace, rows, lambda n: n.startswith(OPTIMIZER_STEP_PREFIX))),
        (Boundary.AT_FORWARD, False, name_flags(trace, rows, lambda n: n in FORWARD_START_OPS)),
    )
    n = len(rows)
    stops = np.append(cut.positions[1:], n)
    for boundary, after, flags in tests:
        at = np.flatnonzero(flags)
        if len(at) < STEP_MIN_REPEATS:
            continue
        # how many marks (runs of back-to-back marks count once) each regular unit holds: exactly one each, or
        # this mark does not cut the loop
        heads = at[np.insert((np.diff(at) != 1) | ~silent[at[:-1]], 0, True)]
        per_unit = np.searchsorted(heads, stops) - np.searchsorted(heads, cut.positions)
        if not (per_unit[cut.regular] == 1).all():
            continue
        pos = at + 1 if after else at
        pos = pos[pos < n]
        if len(pos) >= STEP_MIN_REPEATS:
            names, counts = np.unique(trace.ev.name[rows[at]], return_counts=True)
            return pos, boundary, trace.names[int(names[np.argmax(counts)])]
    return cut.positions, Boundary.AT_OP, trace.names[cut.name]


def _draining_step(trace: Trace, gpu: np.ndarray, queued: np.ndarray, step_of: np.ndarray) -> np.ndarray:
    """For each queued activity among `gpu`: the step of the first launched activity on its stream (the step that
    drains it), 0 where that activity is in no step or the stream has none."""
    ev = trace.ev
    queue = ev.device[gpu].astype(np.int64) * (1 << 32) + ev.stream[gpu]   # a stream is its device's
    out = np.zeros(int(queued.sum()), np.int64)
    for q in distinct(queue[queued]):
        own = np.flatnonzero((queue == q) & ~queued)
        if len(own):
            out[queue[queued] == q] = max(int(step_of[own[np.argmin(ev.start[gpu[own]])]]), 0)
    return out


def _prologue_launches(trace: Trace, rows: np.ndarray) -> bool:
    if not len(rows):
        return False
    ev = trace.ev
    lo, hi = int(ev.start[rows[0]]), int(ev.end[rows].max())
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS) & (trace.launch_of != NONE))
    call_start = ev.start[trace.launch_of[gpu]]
    return bool(np.any((call_start >= lo) & (call_start < hi)))


def _build(trace: Trace, devices, found_from: StepsFrom, boundary: Boundary, anchor: str | None,
           host_start: np.ndarray, host_last: int, regular: np.ndarray, unit_ops: int,
           prologue: set[int] | frozenset = frozenset(), framework=None, names: list[str] | None = None,
           cut_off: tuple[tuple[str, int], ...] = ()) -> Steps:
    ev = trace.ev
    n = len(host_start)
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS))
    call = trace.launch_of[gpu]
    # a GPU activity belongs to the step whose host window holds its launch call (else its own start)
    issued = np.where(call != NONE, ev.start[np.maximum(call, 0)], ev.start[gpu])
    step_of = np.searchsorted(host_start, issued, side="right") - 1
    # work queued before the window runs ahead of every launch on its stream: it belongs to the step whose first
    # launch on that stream waits behind it (the first, where that launch is not in a step), wherever the host was
    # meanwhile (manual_capture's host ran all seven graph replays in 1.7 ms while the GPU drained 2.0 ms of queued
    # work: 26 of its 69 kernels read as ProfilerStep#3's, the rest charged to #4 and #5 by their start times)
    queued = queued_before_window(trace)[gpu]
    step_of[queued] = _draining_step(trace, gpu, queued, step_of)
    mine = step_of >= 0
    gpu, step_of, queued = gpu[mine], step_of[mine], queued[mine]
    gpu_end = np.full(n, NONE, np.int64)
    np.maximum.at(gpu_end, step_of, ev.end[gpu])
    is_kernel = ev.cat[gpu] == KERNEL
    kern_count = np.bincount(step_of[is_kernel], minlength=n)
    early = queued & is_kernel
    queued_count = np.bincount(step_of[early], minlength=n)
    # a launch call (a graph launch runs many activities) counts once, in the step its activities belong to
    own_call = (trace.launch_of[gpu] != NONE) & is_kernel   # (kernel launches: a memset's call is no launch)
    calls, first = np.unique(trace.launch_of[gpu][own_call], return_index=True)
    call_step = step_of[own_call][first]
    call_count = np.bincount(call_step, minlength=n)
    graph_count = np.bincount(call_step[name_flags(trace, calls, rc.is_graph_launch)], minlength=n) \
        if len(calls) else np.zeros(n, np.int64)
    host_next = np.append(host_start[1:], host_last)
    ends = np.maximum(host_next, gpu_end)
    starts = np.empty(n, np.int64)
    prev_end = np.iinfo(np.int64).min
    for i in range(n):   # n steps, not n events
        starts[i] = max(host_start[i], prev_end)
        ends[i] = max(ends[i], starts[i])
        prev_end = ends[i]
    kr = np.flatnonzero(ev.cat == KERNEL)
    ks, ke = iv.union(ev.start[kr], ev.end[kr])
    busy = iv.covered(ks, ke, starts, ends)
    qr = gpu[early]
    qs, qe = iv.union(ev.start[qr], ev.end[qr])
    queued_busy = iv.covered(qs, qe, starts, ends)
    idle = {c: np.zeros(n, np.int64) for c in CAUSES}
    for d in devices:
        g = d.gaps
        for ci, cause in enumerate(CAUSES):
            m = g.cause == ci
            if m.any():
                idle[cause] += iv.covered(g.start[m], g.end[m], starts, ends)
    steps = [Step(index=i, start_ns=int(starts[i]), end_ns=int(ends[i]), host_start_ns=int(host_start[i]),
                  gpu_end_ns=int(gpu_end[i]), kernels=int(kern_count[i]), kernel_busy_ns=int(busy[i]),
                  idle_by_cause_ns={c: int(idle[c][i]) for c in CAUSES}, regular=bool(regular[i]),
                  name=names[i] if names else "", queued_kernels=int(queued_count[i]),
                  queued_busy_ns=int(queued_busy[i]), launch_calls=int(call_count[i]),
                  graph_launches=int(graph_count[i]))
             for i in range(n)]
    steps = _mark_setup(trace, steps, prologue)
    summary = summarize(trace, devices, steady(steps), framework)
    setup_ns = sum(max(0, s.wall_ns - summary.median_ns) for s in steps if s.setup) if summary else 0
    return Steps(found_from, tuple(steps), boundary, anchor, unit_ops, summary, setup_ns,
                 model_build_ns=model_build.inside(trace, int(starts[0]), int(ends[0])) if n == 1 else 0,
                 cut_off=cut_off)


# --- the first step's set-up ----------------------------------------------------------------------

def steady(steps) -> list[Step]:
    """The steps a loop's median speaks of: those with its repeated structure, set-up kept apart."""
    out = [s for s in steps if s.regular and not s.setup]
    return out or [s for s in steps if not s.setup]


def _mark_setup(trace: Trace, steps: list[Step], prologue) -> list[Step]:
    """The first steps are kept apart while each is far slower than the loop's median and pays set-up inside it:
    a set-up API call (allocation, module loading, graph capture), or an op whose first call on its shapes lasts
    SETUP_FIRST_CALL times its later ones (lazy loading, cuBLAS handles, torch.compile's first call:
    analyses.step_setup)."""
    if len(steps) < SETUP_MIN_STEADY + 1:
        return steps
    out = list(steps)
    # a loop of STEP_MIN_REPEATS steps or more keeps that many steady, a shorter one its first (10.73 s, 0.32 s)
    for i, first in enumerate(steps[:-max(SETUP_MIN_STEADY, min(STEP_MIN_REPEATS, len(steps) - 1))]):
        if i in prologue:
            continue
        rest = steps[i + 1:]
        median = float(np.median([s.wall_ns for s in rest if s.regular] or [s.wall_ns for s in rest]))
        if first.wall_ns < SETUP_RATIO * median or kernels_made_it(first, rest, median) \
                or not pays_setup(trace, first.start_ns, first.end_ns, rest[0].start_ns):
            break
        out[i] = Step(**{**first.__dict__, "setup": True})
    return out


# --- median, p90, max and the outlier ---------------------------------------------------------------

def summarize(trace: Trace, devices, steps: list[Step], framework=None) -> StepSummary | None:
    """Median, p90 and max of the steps' walls, and the outlier. A step that first drained work queued before the
    window is long because of that work: where the outlier says so (QUEUED) its wall stands beside that clause;
    elsewhere (too few steps to name an outlier) it counts from the drain's end, the drain said apart (drained_ns)."""
    if not steps:
        return None
    walls = np.array([s.wall_ns for s in steps], np.int64)
    median = float(np.median(walls))
    k = int(np.argmax(walls))
    worst = steps[k]
    outlier = None
    if len(steps) >= STEP_MIN_REPEATS and median > 0 and walls[k] >= OUTLIER_RATIO * median \
            and walls[k] - median >= OUTLIER_SHARE * walls.sum():
        outlier = _outlier(trace, devices, worst, steps, median, framework)
    drained, drained_step = 0, ""
    if outlier is None or outlier.why is not OutlierWhy.QUEUED:
        cut = drained_before_own(trace, steps)
        if cut.any():
            walls = walls - cut
            j = int(np.argmax(cut))
            drained, drained_step = int(cut[j]), steps[j].name or f"step {steps[j].index}"
            median = float(np.median(walls))
            k = int(np.argmax(walls))
            worst = steps[k]
    return StepSummary(steps=len(steps), median_ns=int(round(median)), p90_ns=int(round(np.percentile(walls, 90))),
                       max_ns=int(walls[k]), max_step=worst.index,
                       median_busy_ns=int(round(np.median([s.kernel_busy_ns for s in steps]))),
                       median_idle_ns=int(round(np.median([s.idle_ns for s in steps]))), outlier=outlier,
                       drained_ns=drained, drained_step=drained_step)


def _outlier(trace: Trace, devices, worst: Step, steps: list[Step], median: float, framework) -> Outlier:
    """What made the slowest step slow, in the order the timeline settles it:

    1. queued    work queued before the profiled window (no launch call in the trace) holds at least
                 OUTLIER_CAUSE_SHARE of its extra time: the step drained what the steps before the window
                 launched, it did not run longer itself;
    2. idle      one idle cause grew by that share of the extra time over its median;
    3. kernels   its own kernels (queued work left out) were busy longer than the median step's by that share;
    4. host      none of these: its host took the time before the GPU had work.
    """
    extra = worst.wall_ns - median
    median_own = float(np.median([s.own_busy_ns for s in steps]))
    mine = dict(step=worst.index, ratio=round(worst.wall_ns / median, 2), wall_ns=worst.wall_ns,
                extra_ns=int(round(extra)), name=worst.name, own_busy_ns=worst.own_busy_ns,
                median_own_busy_ns=int(round(median_own)), own_kernels=worst.own_kernels,
                queued_kernels=worst.queued_kernels, queued_busy_ns=worst.queued_busy_ns)
    if worst.queued_busy_ns >= OUTLIER_CAUSE_SHARE * extra:
        later = [s.host_start_ns for s in steps if s.index > worst.index]
        call, waited = _waited_for_queued(trace, worst, min(later) if later else worst.end_ns)
        return Outlier(**mine, cause=None, gap_ns=0, host_op=None, why=OutlierWhy.QUEUED, waited_in=call,
                       waited_ns=waited, unrecorded_before=_unrecorded_before(worst, steps))
    typical = {c: float(np.median([s.idle_by_cause_ns[c] for s in steps])) for c in CAUSES}
    excess = {c: worst.idle_by_cause_ns[c] - typical[c] for c in CAUSES}
    cause = max(excess, key=lambda c: excess[c])
    if excess[cause] < OUTLIER_CAUSE_SHARE * extra:
        cause = None
    gap_ns, host_op, construct = 0, None, None
    if cause is not None:
        gap_ns, host_op, where = _longest_gap(trace, devices, cause, worst.start_ns, worst.end_ns)
        if framework is not None and where is not None:
            code = CONSTRUCTS[int(framework.gap_construct[where[0]][where[1]])]
            construct = None if code is Construct.USER else code
    busier = worst.own_busy_ns - median_own
    why = OutlierWhy.IDLE if cause is not None else (
        OutlierWhy.KERNELS if devices and busier >= OUTLIER_CAUSE_SHARE * extra else OutlierWhy.HOST)
    return Outlier(**mine, cause=cause, gap_ns=gap_ns, host_op=host_op, why=why, construct=construct)


def _unrecorded_before(step: Step, steps: list[Step]) -> int:
    """ProfilerStep#N recorded first: the N steps before it ran outside the profiler's window."""
    if step is not steps[0] or not step.name.startswith(PROFILER_STEP):
        return 0
    number = step.name.rsplit("#", 1)[-1]
    return int(number) if number.isdigit() else 0


def _waited_for_queued(trace: Trace, step: Step, host_end: int) -> tuple[str | None, int]:
    """The host sync in the step that was waiting when its queued work finished (`torch.cuda.synchronize()` at
    the top of the first profiled step), and how long it waited; (None, 0) where no sync waited for it. The sync is
    the step's own: called before the next step's host began (`host_end`), not the profiler's stop after the last
    step, which waits for every step's work (manual_capture: 'the host waiting 7.12 ms in cudaDeviceSynchronize'
    for ProfilerStep#3, a sync called after ProfilerStep#9)."""
    ev = trace.ev
    q = np.flatnonzero(queued_before_window(trace) & (ev.start >= step.start_ns) & (ev.start < step.end_ns))
    if not len(q):
        return None, 0
    done = int(ev.end[q].max())
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)) & (ev.start <= done) & (ev.end >= done)
                           & (ev.start >= step.start_ns - CLOCK_TOL_NS) & (ev.start < host_end))
    calls = calls[name_flags(trace, calls, rc.is_sync)] if len(calls) else calls
    if not len(calls):
        return None, 0
    c = int(calls[np.argmax(ev.end[calls] - ev.start[calls])])
    return trace.name_of(c), int(ev.end[c] - ev.start[c])


def _longest_gap(trace: Trace, devices, cause: Cause, lo: int, hi: int):
    """The longest idle stretch of a cause inside [lo, hi), and the outermost op of the step the host was in
    meanwhile (a range around the whole run is not the step's), and where the gap is: (device position, gap)."""
    best, best_mid, where = 0, None, None
    ci = CAUSES.index(cause)
    for di, d in enumerate(devices):
        g = d.gaps
        m = np.flatnonzero((g.cause == ci) & (g.end > lo) & (g.start < hi))
        if not len(m):
            continue
        dur = np.minimum(g.end[m], hi) - np.maximum(g.start[m], lo)
        j = int(np.argmax(dur))
        if dur[j] > best:
            best, where = int(dur[j]), (di, int(m[j]))
            best_mid = (max(int(g.start[m[j]]), lo) + min(int(g.end[m[j]]), hi)) // 2
    if best_mid is None:
        return 0, None, None
    ev = trace.ev
    ops = np.flatnonzero(any_of(ev.cat, (CPU_OP, USER_ANNOTATION)) & (ev.start <= best_mid) & (ev.end > best_mid)
                         & (ev.start >= lo - CLOCK_TOL_NS))
    ops = ops[~name_flags(trace, ops, lambda n: n.startswith(PROFILER_STEP))] if len(ops) else ops
    if not len(ops):
        return best, None, where
    outer = ops[np.argmin(ev.start[ops])]
    return best, trace.name_of(int(outer)), where
