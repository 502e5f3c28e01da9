"""One-time set-up as host windows: the part of each early call that its later calls do not pay.

A cold process pays set-up inside its first calls: cuBLAS/cuDNN handles and heuristics
(cudaFuncGetAttributes, cudaFuncSetAttribute inside the first conv2d), lazy module loading in the
first launch of each kernel, the allocator's first cudaMalloc, an optimizer's state in its first
step. For every top-level host op (grouped by its name and recorded shapes: cuDNN and cuBLAS pay their
set-up per shape) and runtime call (a launch grouped by the kernel it launched) that recurs, an early
occurrence (one of the first EARLY) is set-up where it runs at least SETUP_FACTOR times its name's
steady median (the median of the later occurrences) and at least SETUP_FLOOR_NS longer: its window is
the time past that median. Where the trace repeats a step (ProfilerStep#N, or Optimizer.step), an early
step longer than the steady steps by more than its calls' windows explain paid set-up outside any op
too (Python's own first-time paths, the autograd graph built the first time): its longest untraced host
stretches are set-up windows until they explain it. The warm_up lever takes these windows out
(tracetriage.analyzers.whatif.levers.warm_up); the idle evidence's first calls
(tracetriage.analyzers.analyses.idle) are the largest of them, named in the report's caveat.

A cold single pass (a trace whose repeated units are layers of one pass: steps.NoSteps.ONE_PASS) runs most ops
and kernels once or twice, so the first-EARLY rule finds little: each new convolution shape pays cuDNN's
heuristics, each kernel's first launch loads its module, and none of them has a later call of its own. There,
an op is grouped by its name alone and a runtime call by its call name alone, the group's lower quartile is its
warm cost (a warm ResNet conv2d takes 70-250 µs of host time where its first calls per shape took 2-14 ms:
rtx3090_py4ai.json, a cold RTX 3090 inference), and every occurrence SETUP_FACTOR times that and SETUP_FLOOR_NS
longer is set-up past the quartile. Syncs, blocking copies and the ops that hold them wait for the device, which
is no set-up, and are left out.

A trace with runtime calls but no op recorded (a script profiled whole, ops off) holds no step and no op to group,
yet a cold start shows in its calls (and, in a cold pass, in the untraced stretches between them past the pass's
warm stretch, as for an op name): the host stretch before the first GPU work (the process's imports, the
model's build, torch.compile's tracing), the stretch between the GPU work before it and the first launch of a
compiled (Triton) kernel (Inductor compiling on the first call), and the first launch of each kernel past the warm
launch's cost (its module loaded lazily) are set-up (heldout-user3 cs521_induction_a10g: 11.3 s of lead and 2.7 s
of compilation around 62 µs of GPU work were priced as host work to take off the critical path, −48%).

torch.compile's first compilations (every compile id the trace names is N/0) are set-up too, each compile span
whole (tracetriage.analyzers.analyses.first_compiles).
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.analyses.first_calls import profiler_steps, script_compile_hole
from tracetriage.analyzers.analyses.first_ops_before import first_ops_before
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model import module_loading
from tracetriage.analyzers.model import runtime_calls as rc
from tracetriage.analyzers.model.cupti_rows import profiler_own_rows
from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.last_trace import last_trace
from tracetriage.analyzers.model.module_loading import SETUP_FLOOR_NS
from tracetriage.analyzers.model.trace import (
    CPU_OP,
    DRIVER,
    GPU_CATS,
    KERNEL,
    NONE,
    RUNTIME,
    USER_ANNOTATION,
    Trace,
    thread_key,
    thread_keys,
)

EARLY = 2                  # the first occurrences of a name that may pay set-up
SETUP_FACTOR = 3.0         # ... when they run this many times the name's steady median
MIN_STEPS = 4              # a trace repeats a step this often before its early steps are told from the rest
COLD_MIN_GROUP = 3         # a cold pass's group needs this many occurrences for its lower quartile to be a warm one


def _top_level(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The rows not nested in another row of the same thread (rows sort by (start, -end))."""
    ev = trace.ev
    keep = np.zeros(len(rows), bool)
    key = thread_keys(ev, rows)
    for k in distinct(key).tolist():
        m = np.flatnonzero(key == k)
        ends = ev.end[rows[m]]
        prev = np.r_[np.iinfo(np.int64).min, np.maximum.accumulate(ends)[:-1]]
        keep[m] = ev.start[rows[m]] >= prev
    return rows[keep]


@last_trace
def top_level_ops(trace: Trace) -> np.ndarray:
    """Every cpu_op not nested in another on its thread, in the trace's row order: found once for the set-up windows
    and the levers that read the ops as a sequence (whatif.levers.knob.outermost_ops). Callers only read it."""
    return _top_level(trace, np.flatnonzero(trace.ev.cat == CPU_OP))


def windows(trace: Trace, cold_pass: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Set-up windows on the host: (starts, ends, thread keys: model.trace.thread_key), merged per thread.
    `cold_pass`: one_pass(trace) where the caller found it already (it searches the trace for its steps)."""
    ev = trace.ev
    ops = top_level_ops(trace)
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    # a launch is named by the kernel it launched: lazy loading is paid per kernel, not per call name
    call_name = ev.name[calls].astype(np.int64)
    kern = np.flatnonzero(ev.cat == KERNEL)
    # each call's kernel name (NONE: it launched none), found among the calls (a column over every event, 7.5 MB at
    # 942k, written and read once, cost more): a call launching several keeps its last kernel's, as a column would
    lk = trace.launch_of[kern]
    ok = lk != NONE
    lk, k_name = lk[ok], ev.name[kern[ok]]
    at = np.minimum(np.searchsorted(calls, lk), max(len(calls) - 1, 0))
    is_call = calls[at] == lk if len(calls) else np.zeros(len(lk), bool)
    launched = np.full(len(calls), NONE, np.int64)
    launched[at[is_call]] = k_name[is_call]
    call_name = np.where(launched != NONE, (launched + 1) << 20 | call_name, call_name)
    out = []
    steps = profiler_steps(trace)
    op_name = (ev.name[ops].astype(np.int64) << 24) | (ev.shape[ops].astype(np.int64) + 1)
    for rows, names in ((ops, op_name), (calls, call_name)):
        if not len(rows):
            continue
        order = np.argsort(names, kind="stable")   # by name, then start (rows ascend, and the events sort by start)
        # (the durations gathered in row order, then sorted with the rows: two gathers by name order over the whole
        # columns, where the rows' cache lines lie apart, cost 3-4 ms at 942k events)
        dur = (ev.end[rows] - ev.start[rows])[order]
        rows, names = rows[order], names[order]
        cut = np.flatnonzero(np.r_[True, names[1:] != names[:-1], True])
        # an early occurrence shorter than SETUP_FLOOR_NS cannot be that much longer than any median: only the
        # names with a longer one among their first EARLY (few: a loop repeats its calls at their steady cost) need
        # their median
        a_s, b_s = cut[:-1], cut[1:]
        longest_early = np.zeros(len(a_s), np.int64)
        for k in range(EARLY):
            at = np.minimum(a_s + k, b_s - 1)
            longest_early = np.maximum(longest_early, dur[at])
        may = (b_s - a_s > EARLY) & (longest_early >= SETUP_FLOOR_NS)
        for a, b in zip(a_s[may].tolist(), b_s[may].tolist()):
            steady = float(np.median(dur[a + EARLY:b]))
            if _paid_every_step(ev, steps, rows[a:b], dur[a:b], steady):
                continue   # a per-shape cost each step pays again: no set-up a warm-up removes (first_calls)
            for i in range(a, a + EARLY):
                if dur[i] >= SETUP_FACTOR * steady and dur[i] - steady >= SETUP_FLOOR_NS:
                    r = rows[i]
                    out.append((int(ev.start[r] + steady), int(ev.end[r]), int(ev.pid[r]), int(ev.tid[r])))
    cold = one_pass(trace) if cold_pass is None else cold_pass
    if cold or _cold_unrepeated(trace):
        out += _cold_pass(trace, ops, calls)
    out += _context_creation(trace, calls)
    if not len(ops):
        out += _cold_start_without_ops(trace, calls, kern)
        if cold and _first_launches_load_modules(trace, kern):   # (a warm pass's pauses are the user's, no set-up)
            out += _cold_pass_untraced(trace, calls)
    out += _untraced_step_setup(trace, out)
    out += _first_compilations(trace)
    hole = script_compile_hole(trace)       # TorchScript compiling on first use, no event recorded
    if hole is not None:
        out.append(hole[:4])
    out = _without_profiler_overhead(trace, out)
    if not out:
        z = np.empty(0, np.int64)
        return z, z, z
    w = np.array(out, np.int64)
    key = thread_key(w[:, 2], w[:, 3])
    s_out, e_out, k_out = [], [], []
    for k in distinct(key).tolist():
        us, ue = iv.union(w[key == k, 0], w[key == k, 1])
        s_out.append(us)
        e_out.append(ue)
        k_out.append(np.full(len(us), k, np.int64))
    return np.concatenate(s_out), np.concatenate(e_out), np.concatenate(k_out)


def _paid_every_step(ev, steps: np.ndarray, rows: np.ndarray, dur: np.ndarray, steady: float) -> bool:
    """A name's set-up-long occurrences (SETUP_FACTOR its steady median and SETUP_FLOOR_NS longer) fall in more than
    one profiled step: each step pays it again (a new input shape each step), which a warm-up does not remove
    (fresh9 wav2letter_benchmark_dynamic_lengths: ConvolutionBackward0 457 ms in the first step, 519 ms in the
    second)."""
    if len(steps) < 3:
        return False
    long_ = (dur >= SETUP_FACTOR * steady) & (dur - steady >= SETUP_FLOOR_NS)
    k = np.searchsorted(steps, ev.start[rows[long_]], side="right") - 1
    k = k[(k >= 0) & (k < len(steps) - 1)]
    return len(set(k.tolist())) >= 2


def _first_compilations(trace: Trace) -> list:
    """torch.compile's first compilations, each compile span on its thread (analyses.first_compiles): a warm-up
    runs them before the profiler starts."""
    from tracetriage.analyzers.analyses.first_compiles import first_compile_rows

    ev = trace.ev
    rows = first_compile_rows(trace).tolist()
    return [(int(ev.start[r]), int(ev.end[r]), int(ev.pid[r]), int(ev.tid[r])) for r in rows]


@last_trace
def setup_excess(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """windows(trace) of a trace's cold pass as one_pass finds it: the levers' set-up windows (whatif's
    Context.setup_excess), found once per trace. The report finds them beside the roofline and hands them to the
    levers' child with it (triage.report.analyze_trace), where the child's first lever to ask found them itself
    (~0.035 s at 942k events, while the report's own analyses waited for the child). Callers only read it."""
    return windows(trace, cold_pass=one_pass(trace))


def one_pass(trace: Trace) -> bool:
    """The trace is one pass whose repeated units are layers, not steps (a cold single inference)."""
    from tracetriage.analyzers.analyses import steps

    # a user's range that repeats is a loop around the trace's work, never one pass (steps._loop_around): answered
    # without the search for steps (on a 300 MB trace, half the cuda_graphs lever's edit in the report's child)
    return not steps.user_range_repeats(trace) and steps.why_none(trace) is steps.NoSteps.ONE_PASS


def _cold_unrepeated(trace: Trace) -> bool:
    """A cold process whose ops do not repeat (a script that runs each op once or twice: heldout-user12
    mm_a100_setup, randn, one mm, .cpu(), where the first aten::mm's 76 ms is cuBLAS's handle and workspace): no
    first-EARLY rule applies, so its ops are held to the pass's warm op as a cold pass's are. Cold: the context is
    created inside the window or a launch loads its module (model.module_loading); a warm script's long op runs its
    own host work, which stays."""
    from tracetriage.analyzers.analyses import steps

    # (the runtime calls first: a pass over them, where the step search is a pass over every op)
    if not (module_loading.context_created_inside(trace) or module_loading.lazy_module_loads(trace)):
        return False
    return not steps.user_range_repeats(trace) and steps.why_none(trace) is steps.NoSteps.NO_REPETITION


def _context_creation(trace: Trace, calls: np.ndarray) -> list:
    """The trace's first runtime call where it creates the CUDA context (cudaFree(0), cudaGetDeviceCount,
    cudaDeviceGetStreamPriorityRange ...: model.module_loading), whole: a process whose context is up before the
    profiler starts never pays it (mm_a100_setup: 168.5 ms of a 266 ms window, outside the GPU span)."""
    if not len(calls) or not module_loading.context_created_inside(trace):
        return []
    ev = trace.ev
    r = int(calls[np.argmin(ev.start[calls])])
    return [(int(ev.start[r]), int(ev.end[r]), int(ev.pid[r]), int(ev.tid[r]))]


def _cold_pass(trace: Trace, ops: np.ndarray, calls: np.ndarray) -> list:
    """A cold pass's set-up (the module docstring): every op and call past its name's warm (lower-quartile) cost
    by SETUP_FACTOR and SETUP_FLOOR_NS; syncs, blocking copies and the ops around them are waits, not set-up."""
    ev = trace.ev
    waits = calls[np.array([rc.is_sync(trace.names[int(n)]) or (rc.is_copy(trace.names[int(n)])
                                                                 and "Async" not in trace.names[int(n)])
                            for n in ev.name[calls].tolist()], bool)] if len(calls) else calls
    # a sync while the device runs nothing waits for nothing: the allocator's cudaFree inside a cold first conv2d,
    # before any kernel ran, is context and workspace set-up (heldout-user11 rn18_h200_cold: that 10 µs cudaFree
    # kept the 144 ms first conv2d out of the set-up, a warm-up priced at 316 -> 117 ms)
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS))
    gs, ge = iv.union(ev.start[gpu], ev.end[gpu])
    waits = waits[iv.covered(gs, ge, ev.start[waits], ev.end[waits]) > 0] if len(waits) else waits
    if len(waits) and len(ops):
        key_o, key_w = thread_keys(ev, ops), thread_keys(ev, waits)
        holds = np.zeros(len(ops), bool)
        for k in distinct(key_w).tolist():
            mo, t = np.flatnonzero(key_o == k), np.sort(ev.start[waits[key_w == k]])
            if len(mo):
                holds[mo] = np.searchsorted(t, ev.start[ops[mo]], side="left") < np.searchsorted(
                    t, ev.end[ops[mo]], side="left")
        ops = ops[~holds]
    calls = np.setdiff1d(calls, waits)
    out = []
    for rows in (ops, calls):
        if not len(rows):
            continue
        names = ev.name[rows]
        dur = ev.end[rows] - ev.start[rows]
        # an op run too few times for a warm cost of its own (the one aten::linear of a cold ResNet forward: 56.7
        # ms of cuBLAS handle creation around one GEMM launch) is held to the pass's warm op, the lower quartile of
        # every op's; only where it launches GPU work, so its host time is dispatch, not the user's CPU compute
        pass_warm = float(np.percentile(dur, 25)) if rows is ops and len(rows) >= COLD_MIN_GROUP else None
        launching = _launches_inside(trace, rows) if pass_warm is not None else None
        for n in distinct(names).tolist():
            m = np.flatnonzero(names == n)
            if len(m) < COLD_MIN_GROUP:
                if pass_warm is not None:
                    m = m[launching[m]]
                    paid = m[(dur[m] >= SETUP_FACTOR * pass_warm) & (dur[m] - pass_warm >= SETUP_FLOOR_NS)]
                    out += [(int(ev.start[rows[i]] + pass_warm), int(ev.end[rows[i]]), int(ev.pid[rows[i]]),
                             int(ev.tid[rows[i]])) for i in paid.tolist()]
                continue
            warm = float(np.percentile(dur[m], 25))
            paid = m[(dur[m] >= SETUP_FACTOR * warm) & (dur[m] - warm >= SETUP_FLOOR_NS)]
            out += [(int(ev.start[rows[i]] + warm), int(ev.end[rows[i]]), int(ev.pid[rows[i]]), int(ev.tid[rows[i]]))
                    for i in paid.tolist()]
    return out


def _launches_inside(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """For each row, whether a launch call of some GPU activity starts inside it, on its thread: the launch calls'
    (thread, start) sorted once, each row two binary searches (not a pass over every launch a row)."""
    ev = trace.ev
    lk = trace.launch_of[trace.launch_of != NONE]
    order = np.lexsort((ev.start[lk], ev.tid[lk]))
    tid, start = ev.tid[lk][order], ev.start[lk][order]
    out = np.zeros(len(rows), bool)
    for t in distinct(ev.tid[rows]).tolist():
        mine = ev.tid[rows] == t
        lo, hi = np.searchsorted(tid, t, side="left"), np.searchsorted(tid, t, side="right")
        s = start[lo:hi]
        out[mine] = np.searchsorted(s, ev.end[rows[mine]], side="left") > np.searchsorted(s, ev.start[rows[mine]],
                                                                                          side="left")
    return out


def _first_launches_load_modules(trace: Trace, kern: np.ndarray) -> bool:
    """Some kernel's first launch held the host SETUP_FLOOR_NS past the median launch: the process is cold (modules
    loaded lazily), not a warm pass whose longer host pauses are the user's own work (heldout-user7 swin_warm: three
    pauses of 0.5-3.3 ms in a warm forward, no launch over 0.1 ms)."""
    ev = trace.ev
    lk = trace.launch_of[kern]
    kern, lk = kern[lk != NONE], lk[lk != NONE]
    if not len(lk):
        return False
    dur = ev.end[lk] - ev.start[lk]
    _, first = np.unique(ev.name[kern], return_index=True)    # each kernel name's first launch (rows sort by start)
    return bool((dur[first] - float(np.median(dur)) >= SETUP_FLOOR_NS).any())


def _cold_pass_untraced(trace: Trace, calls: np.ndarray) -> list:
    """A cold pass recorded without ops: the launching thread's host stretches between its calls (no op to group them
    by: each op's dispatch, and Python's first-time paths) past the pass's warm stretch, their lower quartile, by
    SETUP_FACTOR and SETUP_FLOOR_NS, as _cold_pass does for each op name. heldout-user7 swin_cold, one cold Swin
    forward on an A4000: after 10.1 s of first launches and context creation, 1.85 s of stretches of 79-347 ms
    between launches stayed as traced, a warm-up priced at 11.98 s -> 1.88 s where the warm twin's forward takes
    25 ms (its stretches: a 19 µs median)."""
    ev = trace.ev
    if len(calls) < COLD_MIN_GROUP:
        return []
    key = thread_keys(ev, calls)
    keys, counts = np.unique(key, return_counts=True)
    mine = calls[key == keys[np.argmax(counts)]]          # the thread that makes most calls: the launching one
    mine = mine[np.argsort(ev.start[mine], kind="stable")]
    reach = np.maximum.accumulate(ev.end[mine])
    gap_s, gap_e = reach[:-1], ev.start[mine[1:]]
    gaps = gap_e - gap_s
    open_ = gaps > 0
    if open_.sum() < COLD_MIN_GROUP:
        return []
    warm = float(np.percentile(gaps[open_], 25))
    paid = np.flatnonzero(open_ & (gaps >= SETUP_FACTOR * warm) & (gaps - warm >= SETUP_FLOOR_NS))
    pid, tid = int(ev.pid[mine[0]]), int(ev.tid[mine[0]])
    return [(int(gap_s[i] + warm), int(gap_e[i]), pid, tid) for i in paid.tolist()]


def _without_profiler_overhead(trace: Trace, found: list) -> list:
    """The windows less the time the profiler spent on its own work (CUPTI's Activity Buffer Request,
    recorded on a row of its own, pid -1): a first launch that waits 2 ms for a trace buffer paid the
    profiler, not set-up the program pays. A window left shorter than SETUP_FLOOR_NS goes."""
    ev = trace.ev
    own = profiler_own_rows(trace)
    if not len(own) or not found:
        return found
    os_, oe = iv.union(ev.start[own], ev.end[own])
    out = []
    for a, b, pid, tid in found:
        gs, ge = iv.complement(os_, oe, a, b)
        if int((ge - gs).sum()) >= SETUP_FLOOR_NS:
            out += [(int(x), int(y), pid, tid) for x, y in zip(gs.tolist(), ge.tolist()) if y > x]
    return out


FIRST_REGION = "Torch-Compiled Region: 0/0"   # the first compiled frame's entry: once per iteration of a compiled step
MIN_COMPILED_STEPS = 3     # ... seen this often (an early one and two steady ones to take the median of)


def step_bounds(trace: Trace) -> np.ndarray:
    """Step boundaries (ns): ProfilerStep#N starts, else Optimizer.step ends (empty under MIN_STEPS steps), else the
    starts of the first compiled frame's region where it is entered MIN_COMPILED_STEPS times or more: a compiled
    training step profiled without a schedule (prof.step() unmarked) is one entry of its first compiled frame
    (heldout-user6 rtx4090d_resnet_compiled: 3 entries of Torch-Compiled Region: 0/0, the first 43.5 ms and the
    others 5.2 and 4.9 ms, its untraced first-call host time never priced as set-up)."""
    ev, names = trace.ev, trace.names
    for prefix, edge, least in (("ProfilerStep#", "start", MIN_STEPS), ("Optimizer.step#", "end", MIN_STEPS),
                                (FIRST_REGION, "start", MIN_COMPILED_STEPS)):
        ids = [i for i, n in enumerate(names) if n.startswith(prefix)]
        # (torch records the compiled region as a cpu_op, a record_function range as user_annotation)
        cats = (USER_ANNOTATION, CPU_OP) if prefix == FIRST_REGION else (USER_ANNOTATION,)
        rows = np.flatnonzero(np.isin(ev.name, ids) & any_of(ev.cat, cats)) if ids else np.zeros(0, np.int64)
        if len(rows) >= least:
            t = np.sort(ev.start[rows] if edge == "start" else ev.end[rows])
            return np.r_[int(ev.start.min()), t] if edge == "end" else np.r_[t, int(ev.end.max())]
    return np.zeros(0, np.int64)


def setup_step_bounds(trace: Trace) -> tuple[np.ndarray, int]:
    """The steps found from the trace's repeated ops (analyses.steps) as boundaries (ns), and how many of the first
    were kept apart as paying set-up (0: none, and no boundaries worth scaling)."""
    from tracetriage.analyzers.analyses import steps

    found = steps.find(trace)
    kept = len(found.setup_steps)
    if not kept or kept >= len(found.steps):
        return np.zeros(0, np.int64), 0
    return np.array([s.start_ns for s in found.steps] + [found.steps[-1].end_ns], np.int64), kept


def early_steps(bounds: np.ndarray) -> int:
    """How many of the first steps may pay set-up: EARLY, leaving at least two steady steps after them."""
    return max(0, min(EARLY, len(bounds) - 1 - 2))


def _untraced_step_setup(trace: Trace, found: list) -> list:
    """Windows over the longest untraced host stretches of early steps, for the set-up their ops' windows
    leave unexplained."""
    bounds = step_bounds(trace)
    if not early_steps(bounds):
        return []
    ev = trace.ev
    walls = np.diff(bounds)
    early = early_steps(bounds)
    steady = float(np.median(walls[early:]))
    host = np.flatnonzero(any_of(ev.cat, (CPU_OP, RUNTIME, DRIVER)))
    if not len(host):
        return []
    key = thread_keys(ev, host)
    keys, counts = np.unique(key, return_counts=True)
    rows = host[key == keys[np.argmax(counts)]]           # the thread that makes most calls
    pid, tid = int(ev.pid[rows[0]]), int(ev.tid[rows[0]])
    busy_s, busy_e = iv.union(ev.start[rows], ev.end[rows])
    fw = np.array([(a, b) for a, b, p, t in found if p == pid and t == tid], np.int64).reshape(-1, 2)
    out = []
    for i in range(early):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        covered = int(iv.covered(*iv.union(fw[:, 0], fw[:, 1]), np.array([lo]), np.array([hi]))[0]) if len(fw) else 0
        residual = int(walls[i] - steady) - covered
        if residual < SETUP_FLOOR_NS:
            continue
        gs, ge = iv.complement(busy_s, busy_e, lo, hi)     # the main thread outside every op and call
        for j in np.argsort(-(ge - gs)).tolist():
            if residual <= 0 or ge[j] - gs[j] < SETUP_FLOOR_NS:
                break
            take = min(int(ge[j] - gs[j]), residual)
            out.append((int(ge[j]) - take, int(ge[j]), pid, tid))
            residual -= take
    return out


COMPILED_KERNEL = "triton_"   # Inductor's kernels: their first launch follows the compilation of their graph


def _cold_start_without_ops(trace: Trace, calls: np.ndarray, kern: np.ndarray) -> list:
    """A trace without ops: its lead before the first GPU work, the stretch before the first launch of compiled
    kernels, and each kernel's first launch past the warm launch's cost, on the launching thread (module docstring)."""
    ev = trace.ev
    lk = trace.launch_of[kern]
    kern, lk = kern[lk != NONE], lk[lk != NONE]
    copies = calls[np.array([rc.is_copy(trace.names[int(n)]) for n in ev.name[calls].tolist()], bool)] \
        if len(calls) else calls
    work = distinct(np.r_[lk, copies]).astype(np.int64)          # calls that put work on the GPU
    if not len(work):
        return []
    work = work[np.argsort(ev.start[work], kind="stable")]
    first = int(work[0])
    pid, tid = int(ev.pid[first]), int(ev.tid[first])
    mine = calls[(ev.pid[calls] == pid) & (ev.tid[calls] == tid)]
    out = []
    lead_from = int(ev.start[mine].min()) if len(mine) else int(ev.start[first])
    lead_from = min(lead_from, int(ev.start[ev.cat != KERNEL].min()))
    if ev.start[first] - lead_from >= SETUP_FLOOR_NS:
        out.append((lead_from, int(ev.start[first]), pid, tid))
    names = [trace.names[int(n)] for n in ev.name[kern].tolist()]
    compiled = [i for i, n in enumerate(names) if n.startswith(COMPILED_KERNEL)]
    if compiled:
        at = int(lk[min(compiled, key=lambda i: ev.start[lk[i]])])
        before = work[ev.start[work] < ev.start[at]]
        if len(before):
            lo = int(ev.end[before[-1]])
            if ev.start[at] - lo >= SETUP_FLOOR_NS:
                out.append((lo, int(ev.start[at]), int(ev.pid[at]), int(ev.tid[at])))
    launch_dur = ev.end[lk] - ev.start[lk]
    warm = float(np.median(launch_dur)) if len(lk) else 0.0
    seen: set[int] = set()
    for i in np.argsort(ev.start[lk], kind="stable").tolist():
        n = int(ev.name[kern[i]])
        if n in seen:
            continue
        seen.add(n)
        if launch_dur[i] - warm >= SETUP_FLOOR_NS:
            r = int(lk[i])
            out.append((int(ev.start[r] + warm), int(ev.end[r]), int(ev.pid[r]), int(ev.tid[r])))
    return out


def outside_span(trace: Trace, span_start: int, span_end: int, k: int = 3) -> tuple:
    """The k longest set-up windows outside the GPU span (before its first GPU work or after its last), as first calls
    named by the runtime call that holds each (a first launch loading its module) and the op around it: they count in
    the traced span's set-up share, though no idle gap of the span holds them (heldout-user15 switch_moe_8k: a
    419.6 ms first cudaLaunchKernel inside aten::embedding, 82% of the set-up, missing from the caveat's list)."""

    ops_first = first_ops_before(trace, span_start, k)   # (an op's own first call: cuDNN's set-up in a first conv)
    return _with_ops(_outside_calls(trace, span_start, span_end, k), ops_first, k)


def _with_ops(calls: tuple, ops: tuple, k: int) -> tuple:
    """The runtime calls' set-up windows and the first op calls before the span, the k longest, an op left out where
    a call inside it is listed already (a first launch named with its op: "cudaLaunchKernel (in aten::mm)")."""
    ops = tuple(o for o in ops if not any(o.name in c.name for c in calls))
    return tuple(sorted(calls + ops, key=lambda w: -w.first_call_us)[:k])


def _outside_calls(trace: Trace, span_start: int, span_end: int, k: int) -> tuple:
    """outside_span's runtime calls alone."""
    from tracetriage.analyzers.model.evidence import FirstCall

    s, e, _ = windows(trace)
    # (mostly outside: a first launch's window ends as its kernel starts the span, a few µs inside it)
    out = (np.maximum(np.minimum(e, span_start) - s, 0) + np.maximum(e - np.maximum(s, span_end), 0)) * 2 >= e - s
    s, e = s[out], e[out]
    if not len(s):
        return ()
    ev = trace.ev
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    calls = calls[np.argsort(ev.start[calls], kind="stable")]
    ctx = module_loading.context_call(trace)
    found = []
    for i in np.argsort(-(e - s))[:k].tolist():
        over = np.minimum(ev.end[calls], e[i]) - np.maximum(ev.start[calls], s[i])
        if not len(over) or over.max() <= 0:
            continue
        r = int(calls[np.argmax(over)])
        if ev.end[r] - ev.start[r] < SETUP_FLOOR_NS or (ctx is not None and r == int(calls[0])):
            continue    # (the context's creation is named on its own: module_loading.context_call)
        same = calls[ev.name[calls] == ev.name[r]]
        same = same[same != r]
        typical = float(np.median(ev.end[same] - ev.start[same])) if len(same) else None
        ops = np.flatnonzero((ev.cat == CPU_OP) & (ev.pid == ev.pid[r]) & (ev.tid == ev.tid[r])
                             & (ev.start <= ev.start[r]) & (ev.end >= ev.end[r]))
        # the user's call, and the op inside it that made the call where they differ: "aten::embedding >
        # aten::index_select"
        inner = trace.names[ev.name[ops[np.argmax(ev.start[ops])]]] if len(ops) else None
        outer = trace.names[ev.name[ops[np.argmin(ev.start[ops])]]] if len(ops) else None
        op = outer if outer == inner else f"{outer} > {inner}" if len(ops) else None
        found.append(FirstCall(trace.names[ev.name[r]] + (f" (in {op})" if op else ""),
                               round(float(ev.end[r] - ev.start[r]) / 1e3, 1),
                               None if typical is None else round(typical / 1e3, 1), 0.0))
    return tuple(found)
