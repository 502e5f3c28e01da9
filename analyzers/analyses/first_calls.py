"""One-time set-up caught in a profile: the first call of an op, or an API call, that held the host.

The first call of an op that held the host through a host-work gap much longer than its later calls
take (cuBLAS handles, lazy module loading, allocator growth), and the set-up API calls outside the ops
(a first launch loading its module, cudaFree/cudaMalloc, stream creation). The fix is a warm-up before
profiling, not a code change. Called by analyses.idle on the gaps it classified as host work.

A first call whose cost a later profiled step pays again (ProfilerStep#N: a call of the same op FIRST_FACTOR times
its warm cost in another step) is no one-time set-up: each step brings a new input shape and the op pays its
per-shape cost again (cuDNN's benchmark timing every convolution anew, a plan or a compile per shape). It is kept
apart (SetUp.recurring), out of the set-up's share and windows: warming up does not remove it (fresh9
wav2letter_benchmark_dynamic_lengths: ConvolutionBackward0 457.2 ms in the first step and 519.1 ms in the second,
padded lengths 1280 and 1294, read as "one-time set-up ... warm up before profiling").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.inductor import is_inductor_kernel
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.constructs import MARKING_CATS, construct_of
from tracetriage.analyzers.model.evidence import FirstCall, RecurringCost
from tracetriage.analyzers.model.groups import any_of, distinct, stable_order
from tracetriage.analyzers.model.trace import CPU_OP, DRIVER, KERNEL, NONE, RUNTIME, USER_ANNOTATION, Trace
from tracetriage.analyzers.model.verdicts import Construct

FIRST_FACTOR = 10      # a first call this many times its later calls' typical cost held the host in set-up


@dataclass(frozen=True)
class SetUp:
    """One-time set-up caught in the profile: the first calls that held the host (FirstCall, the five
    that cost the device most) and every such stretch on the host, as windows (ns) with their thread."""
    calls: tuple[FirstCall, ...]
    start: np.ndarray
    end: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    recurring: tuple[RecurringCost, ...] = ()   # first calls whose cost later steps pay again: no set-up


def no_setup() -> SetUp:
    z = np.empty(0, np.int64)
    return SetUp((), z, z, z, z)


def first_calls(trace: Trace, s: np.ndarray, e: np.ndarray, ctx, host_long: int) -> SetUp:
    """One-time set-up caught in the profile: the first call of an op that held the host through
    a host-work gap for much longer than its later calls take (cuBLAS handles, lazy module
    loading, allocator growth). The fix is a warm-up before profiling, not a code change.

    Linear in the trace: each thread's outermost ops are grouped by name once (a sort), so a
    candidate's first-call test and its later calls are a lookup, not a pass over the thread."""
    ev = trace.ev
    if len(s) == 0:
        return no_setup()
    steps = profiler_steps(trace)
    cs, ce = compiling_windows(trace)
    found = _Found(trace, steps)
    for tid, (ts, te, rows) in ctx.top_by_tid.items():
        if len(rows) == 0:
            continue
        # over every host-work gap it spans (a set-up splits into several); an op covers at most its own length of
        # the gaps, so only the ops host_long or longer are measured (x5: a few hundred of its top-level ops)
        long_ = np.flatnonzero(np.maximum(te - ts, 0) >= host_long)
        ls, le = ts[long_], te[long_]
        overlap = np.zeros(len(rows), np.int64)
        overlap[long_] = iv.covered(s, e, ls, le)
        # an op torch.compile runs while it compiles is its tracing (fake tensors: no kernel), the compile's time,
        # never a first call of its own (heldout-user17 compilecold: 'aten::batch_norm 13.3 ms (later 612.6 µs)',
        # all 20 calls inside Dynamo's bytecode_tracing, beside 'torch.compile compiling 2 functions 1.53 s')
        overlap[long_[iv.covered(cs, ce, ls, le) >= le - ls]] = 0
        cand = np.flatnonzero(overlap >= host_long)
        if len(cand) == 0:
            continue
        # the thread's ops by name, each name's in time order: a candidate is its name's first op, and the
        # ops after it in its group are its later calls (rows are in time order: sorted by start)
        by_name = stable_order(ev.name[rows])
        group_start, group_end = _groups(ev.name[rows][by_name])
        position = np.empty(len(rows), np.int64)
        position[by_name] = np.arange(len(rows))
        group = np.searchsorted(group_start, position[cand], side="right") - 1
        first = (by_name[group_start[group]] == cand) & (group_end[group] - group_start[group] > 1)
        held = np.zeros(len(rows), bool)   # top-level ops that held a gap: a first call may sit inside one
        held[cand] = True
        for i, gi in zip(cand[first].tolist(), group[first].tolist()):
            later = rows[by_name[group_start[gi] + 1:group_end[gi]]]
            held[i] = not found.add(rows[i], int(overlap[i]), later)
        tops = rows[held]
        if len(tops):
            _first_calls_inside(trace, tid, tops, s, e, host_long, found)
    out, again = found.out, found.again
    spans, win = found.spans, found.win
    out += _setup_calls(trace, s, e, ctx.setup_rows, host_long, spans, win, steps, again)
    w = np.array(win, np.int64).reshape(-1, 4)
    return SetUp(tuple(sorted(out, key=lambda x: -x.idle_us)[:5]), w[:, 0], w[:, 1], w[:, 2], w[:, 3],
                 tuple(sorted(again, key=lambda x: -x.first_call_us)[:5]))


class _Found:
    """The first calls found so far (FirstCall), the recurring costs set apart, and their windows."""

    def __init__(self, trace: Trace, steps: np.ndarray):
        self.trace, self.steps = trace, steps
        self.out: list = []
        self.again: list = []
        self.spans: list = []
        self.win: list = []

    def add(self, row: int, held_ns: int, later: np.ndarray) -> bool:
        """Judge the first call `row` (it held the host held_ns in host-work gaps) against its `later` calls: True
        where it is set-up (or a cost later steps pay again, set apart), False where it is no first-call cost."""
        ev, trace, steps = self.trace.ev, self.trace, self.steps
        typical = float(np.median(ev.end[later] - ev.start[later]))
        if held_ns < FIRST_FACTOR * max(typical, 1.0):
            return False
        start, end = int(ev.start[row]), int(ev.end[row])
        warm = _warm(ev, row, later, typical)
        paid = _paid_again(ev, steps, row, later, FIRST_FACTOR * max(typical, 1.0))
        if paid is not None:
            same = _has_dims(trace, row) and bool((ev.shape[paid] == ev.shape[row]).all())
            self.again.append(RecurringCost(trace.names[ev.name[row]], round(float(end - start) / 1e3, 1),
                                            round(float(np.max(ev.end[paid] - ev.start[paid])) / 1e3, 1),
                                            round(warm / 1e3, 1), _steps_of(steps, ev.start, row, paid),
                                            len(steps) - 1, same_shapes=same))
            return True
        self.out.append(FirstCall(trace.names[ev.name[row]], round(float(end - start) / 1e3, 1),
                                  round(warm / 1e3, 1), round(float(held_ns) / 1e3, 1)))
        self.spans.append((start, end))
        self.win.append((start, end, int(ev.pid[row]), int(ev.tid[row])))
        return True


def _first_calls_inside(trace: Trace, tid: int, tops: np.ndarray, s: np.ndarray, e: np.ndarray, host_long: int,
                        found: _Found) -> None:
    """The outermost ops inside the top-level ops `tops` that are first calls (found.add), where each of `tops` held
    a gap but is none itself: a compiled region, called once a step, whose first run held the host 9.8 ms in its first
    aten::convolution (cuDNN's set-up; later convolutions 20-40 µs) was named nowhere (heldout-user17 r18compile).
    One pass over the thread's ops: those inside `tops` that held a gap host_long or more are the candidates."""
    ev = trace.ev
    mine = np.flatnonzero((ev.cat == CPU_OP) & (ev.tid == tid))
    k = np.searchsorted(ev.start[tops], ev.start[mine], side="right") - 1
    inside = (k >= 0) & (ev.end[mine] <= ev.end[tops[np.maximum(k, 0)]]) & ~np.isin(mine, tops)
    cand = mine[inside]
    # (an op covers at most its own length of the gaps: only those host_long or longer can qualify)
    cand = cand[np.maximum(ev.end[cand] - ev.start[cand], 0) >= host_long]
    if not len(cand):
        return
    held = iv.covered(s, e, ev.start[cand], ev.end[cand])
    cand, held = cand[held >= host_long], held[held >= host_long]
    if not len(cand):
        return
    same = _calls_by_name(ev.name, mine, ev.name[cand])   # each candidate name's calls on the thread, in time order
    taken_end = -1
    for r, h in zip(cand.tolist(), held.tolist()):     # (in time order: outermost first at each start)
        if ev.start[r] < taken_end:
            continue                                     # inside a first call taken already
        calls = same[int(ev.name[r])]
        if calls[0] != r or len(calls) < 2:
            continue
        if found.add(r, int(h), calls[1:]):
            taken_end = int(ev.end[r])


def _calls_by_name(name: np.ndarray, rows: np.ndarray, wanted: np.ndarray) -> dict[int, np.ndarray]:
    """Each wanted name's rows among `rows` (sorted), in row order: one stable sort of the rows that bear a wanted
    name, where a mask over all rows per name cost a pass each (x5: ~1,000 names over 100k+ ops)."""
    rows = rows[np.isin(name[rows], wanted)]
    order = np.argsort(name[rows], kind="stable")
    rows, codes = rows[order], name[rows][order]
    cuts = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    return {int(c): part for c, part in zip(codes[np.r_[0, cuts]].tolist(), np.split(rows, cuts))} if len(rows) else {}


def compiling_windows(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Where torch.compile compiled on the host (its marking events: Dynamo's and Inductor's dynamo_timed ranges),
    merged; the ops inside are its tracing."""
    ids = [i for i, n in enumerate(trace.names) if construct_of(n) is Construct.COMPILE]
    rows = np.flatnonzero(np.isin(trace.ev.name, ids) & any_of(trace.ev.cat, MARKING_CATS)) if ids else ids
    if not len(rows):
        z = np.empty(0, np.int64)
        return z, z
    # a range around a compiled function's run is no compiling, whatever its name: the user's own range named
    # like Inductor's ("inductor_conv" around torch.compile(model)(x), compile and first run: CS521-mp2)
    ran = np.flatnonzero(np.isin(trace.ev.name, [i for i, n in enumerate(trace.names)
                                                 if construct_of(n) is Construct.COMPILED]))
    if len(ran):
        rs = np.sort(trace.ev.start[ran])
        k = np.searchsorted(rs, trace.ev.start[rows], side="left")
        rows = rows[~((k < len(rs)) & (rs[np.minimum(k, len(rs) - 1)] < trace.ev.end[rows]))]
    if not len(rows):
        z = np.empty(0, np.int64)
        return z, z
    return iv.union(trace.ev.start[rows], trace.ev.end[rows])


def _has_dims(trace: Trace, row: int) -> bool:
    """The op recorded an input with dimensions: its shapes say what it worked on (an autograd node's
    evaluate_function records none: every call's record is the same empty one, whatever shapes its backward met)."""
    if trace.ev.shape[row] == NONE:
        return False
    return any(isinstance(d, list) and len(d) > 0 for d in trace.shapes(row)[0] or [])


def profiler_steps(trace: Trace) -> np.ndarray:
    """The profiled steps' bounds (ns): each ProfilerStep#N's start, then the last one's end; empty under two steps."""
    ev = trace.ev
    ids = [i for i, n in enumerate(trace.names) if n.startswith("ProfilerStep#")]
    rows = np.flatnonzero(np.isin(ev.name, ids) & (ev.cat == USER_ANNOTATION)) if ids else np.zeros(0, np.int64)
    if not len(rows):
        return np.zeros(0, np.int64)
    starts = {}
    for r in rows.tolist():     # (a step may be recorded on several threads: its earliest start)
        n = int(ev.name[r])
        starts[n] = min(starts.get(n, int(ev.start[r])), int(ev.start[r]))
    if len(starts) < 2:
        return np.zeros(0, np.int64)
    return np.r_[np.sort(np.array(list(starts.values()), np.int64)), int(ev.end[rows].max())]


def _paid_again(ev, steps: np.ndarray, first: int, later: np.ndarray, costly_ns: float) -> np.ndarray | None:
    """The later calls, in another profiled step than the first, that pay the first call's cost again (costly_ns or
    longer); None where no later step pays it (or the trace marks under two steps)."""
    if len(steps) < 3 or not len(later):
        return None
    step = np.searchsorted(steps, ev.start[later], side="right") - 1
    k0 = int(np.searchsorted(steps, ev.start[first], side="right") - 1)
    inside = (step >= 0) & (step < len(steps) - 1)
    paid = later[inside & (step != k0) & ((ev.end[later] - ev.start[later]) >= costly_ns)]
    return paid if k0 >= 0 and len(paid) else None


def _steps_of(steps: np.ndarray, start: np.ndarray, first: int, paid: np.ndarray) -> int:
    """How many profiled steps pay the cost: the first call's, and those of its later costly calls."""
    return len(set((np.searchsorted(steps, start[np.r_[first, paid]], side="right") - 1).tolist()))


def _warm(ev, first: int, later: np.ndarray, typical: float) -> float:
    """What the op takes warm, said beside its first call: the median of its later calls on a shape it ran before
    (cuDNN and cuBLAS pay their set-up per shape: in a cold ResNet forward each later conv2d is the first at its
    shape, 1.45 ms against 40-190 µs on a shape seen before), else of all its later calls."""
    seen = {int(ev.shape[first])}
    again = []
    for r in later.tolist():   # (later is in time order)
        shape = int(ev.shape[r])
        if shape in seen:
            again.append(r)
        seen.add(shape)
    if not again or len(again) == len(later):
        return typical
    rows = np.array(again, np.int64)
    return min(typical, float(np.median(ev.end[rows] - ev.start[rows])))


def compiling(trace: Trace, s: np.ndarray, e: np.ndarray, next_row: np.ndarray, setup_long: int) -> SetUp:
    """torch.compile compiling before a generated kernel first runs: a host stretch of set-up length that ends at the
    first launch of an Inductor kernel (triton_poi_..., triton_red_...) the trace has not run before is Dynamo and
    Inductor tracing, lowering and compiling (or loading) that graph, which the steady state never pays. The gaps
    s..e (host work) with the activity that ended each. (heldout-user3 cs521_induction_a10g, a runtime-only trace
    with no ops: 2.65 s of 'host work, 99% untraced' before triton_poi_fused_copy_zeros_0's first and only launch,
    read as host work to take off the critical path.)"""
    ev = trace.ev
    ok = (next_row >= 0) & ((e - s) >= setup_long)
    if not ok.any():
        return no_setup()
    rows = next_row[ok]
    names = ev.name[rows]
    uniq = distinct(names)
    generated = {int(n) for n in uniq.tolist() if is_inductor_kernel(trace.names[n])}
    if not generated:
        return no_setup()
    # each generated kernel name's first run in the trace
    kern = np.flatnonzero(np.isin(ev.name, list(generated)) & any_of(ev.cat, (KERNEL,)))
    first_start = {}
    for r in kern[np.argsort(ev.start[kern], kind="stable")].tolist():
        first_start.setdefault(int(ev.name[r]), int(ev.start[r]))
    out, win = [], []
    for i, r in zip(np.flatnonzero(ok).tolist(), rows.tolist()):
        n = int(ev.name[r])
        if n in generated and first_start.get(n) == int(ev.start[r]):
            held = int(e[i] - s[i])
            out.append(FirstCall(f"torch.compile before {trace.names[n]}'s first launch", round(held / 1e3, 1),
                                 None, round(held / 1e3, 1)))
            win.append((int(s[i]), int(e[i]), -1, -1))
    w = np.array(win, np.int64).reshape(-1, 4)
    return SetUp(tuple(out), w[:, 0], w[:, 1], w[:, 2], w[:, 3])


# TorchScript's profiling executor: the graph it runs while it profiles a scripted function's first calls, and the
# fused groups it compiles; their first appearance ends the compile before it
SCRIPT_MARKERS = ("fallback_function", "prim::DifferentiableGraph", "prim::FusionGroup", "prim::TensorExprGroup",
                  "prim::CudaFusionGroup")
SCRIPT_HOLE_NS = 5_000_000     # an event-less host stretch this long before the first scripted call is its compile
SCRIPT_NEAR_NS = 1_000_000     # ... when the first marker starts within this of the stretch's end (inside its op)


def script_compile_hole(trace: Trace) -> tuple[int, int, int, int, str] | None:
    """TorchScript compiling on first use, which the profiler does not record: the host stretch with no event on any
    thread (no op, no runtime call) that ends at the op whose first call runs TorchScript's profiling executor
    (fallback_function, a fusion group). (start, end, pid, tid, the op's name), or None. (heldout-user15 partt_b512: a
    292 ms hole with no events at all before the first delta_r2 / fallback_function, left in the steady state.)"""
    ev = trace.ev
    ids = [i for i, n in enumerate(trace.names) if n in SCRIPT_MARKERS]
    marks = np.flatnonzero(np.isin(ev.name, ids) & (ev.cat == CPU_OP)) if ids else np.zeros(0, np.int64)
    if not len(marks):
        return None
    first = int(marks[np.argmin(ev.start[marks])])
    host = np.flatnonzero(any_of(ev.cat, (CPU_OP, RUNTIME, DRIVER)))
    before = host[ev.start[host] < ev.start[first] - SCRIPT_NEAR_NS]
    after = host[ev.start[host] >= ev.start[first] - SCRIPT_NEAR_NS]
    if not len(before) or not len(after):
        return None
    reach = int(ev.end[before].max())
    nxt = int(after[np.argmin(ev.start[after])])
    if ev.start[nxt] - reach < SCRIPT_HOLE_NS:
        return None
    return reach, int(ev.start[nxt]), int(ev.pid[nxt]), int(ev.tid[nxt]), trace.names[ev.name[nxt]]


def scripting(trace: Trace, s: np.ndarray, e: np.ndarray) -> SetUp:
    """The TorchScript compile hole (script_compile_hole) as set-up, where it lies in the host-work gaps s..e."""
    hole = script_compile_hole(trace)
    if hole is None:
        return no_setup()
    hs, he, pid, tid, name = hole
    held = int(iv.total(*iv.intersect(*iv.union(s, e), np.array([hs]), np.array([he])))) if len(s) else 0
    if held <= 0:
        return no_setup()
    call = FirstCall(f"TorchScript compiling before {name}'s first call (no event recorded)",
                     round((he - hs) / 1e3, 1), None, round(held / 1e3, 1))
    z = np.array
    return SetUp((call,), z([hs], np.int64), z([he], np.int64), z([pid], np.int64), z([tid], np.int64))


def merged(a: SetUp, b: SetUp) -> SetUp:
    """Two findings of set-up as one: the five calls that cost the device most, every window."""
    if not len(b.start):
        return a
    return SetUp(tuple(sorted(a.calls + b.calls, key=lambda x: -x.idle_us)[:5]), np.r_[a.start, b.start],
                 np.r_[a.end, b.end], np.r_[a.pid, b.pid], np.r_[a.tid, b.tid], a.recurring + b.recurring)


def _groups(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal values of a sorted array starts and ends (end exclusive)."""
    if len(sorted_keys) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    return starts, np.r_[starts[1:], len(sorted_keys)]


def _inside_any(spans: list[tuple[int, int]], s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """For each [s, e], whether some span (a, b) holds it: a <= s and e <= b."""
    if not spans or len(s) == 0:
        return np.zeros(len(s), bool)
    sp = np.array(spans, np.int64).reshape(-1, 2)
    sp = sp[np.argsort(sp[:, 0], kind="stable")]
    reach = np.maximum.accumulate(sp[:, 1])           # the furthest end among spans starting at or before
    k = np.searchsorted(sp[:, 0], s, side="right") - 1
    return (k >= 0) & (e <= reach[np.maximum(k, 0)])


def _setup_calls(trace: Trace, s: np.ndarray, e: np.ndarray, rows: np.ndarray, host_long: int,
                 spans: list[tuple[int, int]], win: list, steps: np.ndarray | None = None,
                 again: list | None = None) -> list[FirstCall]:
    """Set-up held in an API call outside the ops first_calls found (a first launch loading its module with
    no op recorded around it, cudaFree/cudaMalloc, stream creation): whatever the call, it is set-up.
    One entry per call name (a cudaMalloc storm is one finding), its set-up calls summed; their windows
    are appended to `win`. A name whose set-up-long calls fall in several profiled steps (`steps`) pays them every
    step (cuDNN's benchmark freeing its trial workspaces): appended to `again`, not set-up."""
    ev = trace.ev
    if len(rows) == 0:
        return []
    over = iv.covered(s, e, ev.start[rows], ev.end[rows])
    keep = (over >= host_long) & ~_inside_any(spans, ev.start[rows], ev.end[rows])
    rows, over = rows[keep], over[keep]
    if len(rows) == 0:
        return []
    # every API call of each set-up call's name, once: the calls sorted by name, each name a slice
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    calls = calls[np.argsort(ev.name[calls], kind="stable")]
    call_names = ev.name[calls]
    names = ev.name[rows]
    out = []
    for name in dict.fromkeys(names.tolist()):        # in the order of their first set-up call
        mine = names == name
        hits, hit_over = rows[mine], over[mine]
        lo, hi = np.searchsorted(call_names, [name, name + 1])
        others = calls[lo:hi]
        others = others[~np.isin(others, hits)]
        typical = float(np.median(ev.end[others] - ev.start[others])) if len(others) else None
        first = int(np.sum(ev.end[hits] - ev.start[hits]))
        if steps is not None and again is not None and len(steps) >= 3:
            k = np.searchsorted(steps, ev.start[hits], side="right") - 1
            k = k[(k >= 0) & (k < len(steps) - 1)]
            if len(set(k.tolist())) >= 2:
                order = hits[np.argsort(ev.start[hits], kind="stable")]
                op = _innermost_op(trace, int(order[0]))
                again.append(RecurringCost(trace.names[name] + (f" (in {op})" if op else ""),
                                           round(float(ev.end[order[0]] - ev.start[order[0]]) / 1e3, 1),
                                           round(float(np.max(ev.end[order[1:]] - ev.start[order[1:]])) / 1e3, 1),
                                           None if typical is None else round(typical / 1e3, 1),
                                           len(set(k.tolist())), len(steps) - 1))
                continue
        win += [(int(ev.start[r]), int(ev.end[r]), int(ev.pid[r]), int(ev.tid[r])) for r in hits.tolist()]
        # the op of the longest call, as the words say (resnet18_cold named the op of the call with the most idle
        # under it, a 8.7 ms launch in aten::mean, beside a 14.4 ms one in aten::clamp_min_)
        op = _innermost_op(trace, int(hits[np.argmax(ev.end[hits] - ev.start[hits])]))
        # several calls: their count beside the op, so the summed figure after the name is not read as one call's
        # (resnet18_cold: 'cudaLaunchKernel (the longest in aten::mean) 29.1 ms' was five launches, 8.7 ms the longest)
        of = f", of {len(hits)} calls" if len(hits) > 1 else ""
        out.append(FirstCall(trace.names[name] + (f" (the longest in {op}{of})" if op else ""), round(first / 1e3, 1),
                             None if typical is None else round(typical / 1e3, 1),
                             round(int(hit_over.sum()) / 1e3, 1)))
    return out


def _innermost_op(trace: Trace, row: int) -> str | None:
    """The innermost op around a runtime call on its thread: where the user's code paid that call's set-up (a first
    launch loading its module holds the host inside the op that launched it: heldout-user7 tp2x4090's 372 ms first
    launch inside aten::embedding > index_put_ > masked_fill_, named only "cudaLaunchKernel" beside a 25 ms
    aten::rsqrt). None where no op encloses it (a runtime-only capture)."""
    ev = trace.ev
    ops = np.flatnonzero((ev.cat == CPU_OP) & (ev.pid == ev.pid[row]) & (ev.tid == ev.tid[row])
                         & (ev.start <= ev.start[row]) & (ev.end >= ev.end[row]))
    if not len(ops):
        return None
    return trace.names[ev.name[ops[np.argmax(ev.start[ops])]]]
