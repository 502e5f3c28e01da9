"""cuda_graphs: dispatch and launches collapse to one graph launch per sync-free stretch.

The fix: capture the step once with torch.cuda.graph (or torch.compile(mode="reduce-overhead")) and
replay it. In the graph every non-blocking call but the stretch's first costs nothing, that first
call becomes the graph launch (a fixed part and a part per kernel, fitted on the trace's own graph launches, else
the reference line: whatif.graph_launch), and the kernels run back to back at the device's minimum gap. A graph is
captured per step (the outermost repeated range; each compiled region on its own, as reduce-overhead does). Host
work that is not dispatch stays, unless it is the Python of an nn.Module forward the graph captures, and so does a
pageable copy with its op (CUDA refuses to capture one), and so does a call made while a graph is being captured (it
is in a graph already).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.loading.graphs import in_capture
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.constructs import construct_of
from tracetriage.analyzers.model.cupti_rows import profiler_own_rows
from tracetriage.analyzers.model.driver_launches import unrecorded
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.runtime_calls import is_graph_launch
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, MEMCPY, NONE, USER_ANNOTATION, thread_keys
from tracetriage.analyzers.model.units import count, duration_ns, integer
from tracetriage.analyzers.model.verdicts import Cause, Construct
from tracetriage.analyzers.whatif import graph_launch
from tracetriage.analyzers.whatif.depgraph import SYNC_CALL
from tracetriage.analyzers.whatif.levers.growing_cache import find as growing_cache
from tracetriage.analyzers.whatif.levers.spec import (
    SOURCE_WORDS,
    Assumption,
    Context,
    LeverSpec,
    Measured,
    Options,
    Recognise,
)

# Between two graph replays the host runs its loop around them (the call to replay, the step's own Python):
# the median stretch between consecutive cudaGraphLaunch calls in the CUDA-graph fix traces of traces/fixes
# and traces/realworld (H200 under torch.profiler, 35-90 µs; tests/test_whatif.py re-derives it). Used when
# the trace replays no graph of its own.
REPLAY_GAP_NS = 40_000
# A stretch of fewer kernels than this between two syncs stays eager: nobody captures a graph around a
# matmul and its activation to replay it between two synchronizes (the fix there is the sync), and the
# graph launch would save a launch or two at the price of a capture per stretch.
MIN_GRAPH_KERNELS = 4


@dataclass(frozen=True)
class Graphed(Assumption):
    fixed_ns: int = 0                # a graph launch's cost: this ...
    per_kernel_ns: int = 0           # ... and this per kernel in the graph
    source: str = ""                 # where that cost was measured (SOURCE_WORDS)
    min_gap_ns: int = 0              # kernels back to back this far apart
    gap_measured: bool = False
    replays: int = 0                 # graph replays taken into a stretch's graph with the launches around them
    # a decode whose KV cache grows a token each step (levers.growing_cache): its keys' first and last lengths; no
    # graph captures that loop until its cache is static (0, 0: none found)
    cache_from: int = 0
    cache_to: int = 0


def graph_cost(c: Context) -> graph_launch.LaunchCost:
    """A graph launch's cost, fixed and per kernel: fitted on the trace's own graph launches, else the reference."""
    g = c.g
    gl = np.flatnonzero(c.calls_named(is_graph_launch))   # cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch
    n = np.bincount(g.g_call[g.g_linked], minlength=g.n_calls)[gl]
    return graph_launch.fit(g.c_dur[gl], n)


def apply(c: Context, p, o: Options) -> tuple[Graphed, dict]:
    g = c.g
    cost = graph_cost(c)
    # host work inside what a graph captures ran once, at capture: a replay runs only the kernels, so the host gaps
    # it holds between the launches go (heldout-user h100_transformer kept the forward's Python and split each step's
    # graph in pieces: −37% predicted where the replayed step is ~5× shorter; heldout-user19 h100_mlp_train kept
    # Adam's and the backward's Python: −37% where the replayed step is 70-80% shorter; heldout-user18
    # swin_a4000_warm, a runtime-only capture, kept its dispatch). What a replay still runs stays and starts a
    # stretch: the loop's own Python and CPU computation (_host_a_replay_runs)
    replay_runs = _host_a_replay_runs(c)
    keep_host = replay_runs > 0
    # a pageable copy cannot be captured in a graph (CUDA refuses it): its call, staging and all, stays
    pageable = (g.g_cat == MEMCPY) & c.gpu_named(lambda n: "Pageable" in n) & (g.g_call >= 0)
    staged = np.zeros(g.n_calls, bool)
    staged[g.g_call[pageable]] = True
    op = c.trace.op_of[g.c_row]               # ... and so do the other calls of its op (the staging around it)
    staged |= np.isin(op, distinct(op[staged])) & (op != NONE)
    staged |= in_capture(c.trace, g.c_row)    # a graph being captured is a graph already: its calls stay
    # a graph replayed is one launch of the stretch it lies in: where that stretch launches kernels outside any graph
    # too, the step's graph takes the replay in with them (the graphs make_graphed_callables replays for the model,
    # between the eager loss, zero_grad and optimizer step), else it stays as it is (nothing outside it to capture)
    replayed = c.calls_named(is_graph_launch) & ~staged
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
    # each activity's launch position: its launch call, or for work launched through an API the capture does not
    # record (Triton's cuLaunchKernel), the call whose stretch it was issued in (_issued_in)
    issuer, driver = _issued_in(c, p, order)
    at = np.maximum(issuer, 0)
    movable = (g.g_linked | driver) & ~p.c_blocked[at] & ~staged[at]
    grp = gid[at]
    gl_call = first[grp]
    movable &= gl_call >= 0
    n_in = np.bincount(grp[movable], minlength=n_groups)
    outside = np.bincount(grp[movable & ~replayed[at]], minlength=n_groups)
    # stretches too short to be worth a graph stay as they were, and so do those of graph replays alone
    eager = (n_in < MIN_GRAPH_KERNELS) | (outside == 0)
    movable &= ~eager[grp]
    first[eager] = NONE
    stays = staged | eager[gid] if g.n_calls else staged
    # host: dispatch vanishes, host work that is not dispatch stays (and so do one-time set-up and
    # compilation, which a graph does not replay: they hold launches, but they are no dispatch); every
    # non-blocking call but the graph launch costs nothing
    kept_gap, kept_call = _not_dispatch(c)
    # ... and before a stretch's first call (after a sync, at a step's top: the loop around the graphs) it stays
    # whole, but for the Python of the forward the graph captures
    opens = np.zeros(g.n_calls, bool)
    opens[order] = new
    head_host = np.where(opens & ~_inside_the_captured_forward(c), g.c_host, 0)
    p.c_gap[:] = np.maximum(np.maximum(head_host, replay_runs), kept_gap)
    p.c_gap[stays] = g.c_gap[stays]
    p.c_dur[~p.c_blocked & ~stays] = kept_call[~p.c_blocked & ~stays]
    has = first >= 0
    p.c_dur[first[has]] = cost.of(n_in[has])     # 240 kernels: 5.2 µs + 240 x 1.49 µs = 363 µs (reference)
    # the Python that calls each graph runs every time around the loop: what lies outside any op before
    # a stretch's first call stays, up to what a loop around graph replays costs (inside the stretch, and
    # at its top inside the captured function, the graph replays no Python)
    heads = first[has]
    p.c_gap[heads] = np.maximum(p.c_gap[heads], np.minimum(_python_before(c, heads), replay_gap(c)[0]))
    # device: each kernel issued by its stretch's graph launch, back to back
    mv = np.flatnonzero(movable)
    p.g_call[mv] = gl_call[mv]
    p.g_lat[mv] = p.c_dur[gl_call[mv]] + post_lat
    p.g_gap[mv] = np.minimum(p.g_gap[mv], g.min_gap_ns)
    # count: the kernels the graphs take over (0: nothing in the trace for graphs to change)
    # count: the kernels launched outside any graph that the graphs take over (0: nothing in the trace for graphs to
    # change); the replays taken into a stretch's graph with them are counted apart
    from_replays = movable & replayed[at]
    eager_in = int((movable & ~from_replays).sum())
    taken = np.zeros(g.n_calls, bool)
    taken[g.g_call[from_replays]] = True
    grows = growing_cache(c.trace) if eager_in else None
    return (Graphed("cuda_graphs", eager_in, fixed_ns=cost.fixed_ns, per_kernel_ns=cost.per_node_ns,
                    source=cost.source,
                    min_gap_ns=g.min_gap_ns, gap_measured=g.min_gap_measured, replays=int(taken.sum()),
                    cache_from=grows.first if grows else 0, cache_to=grows.last if grows else 0),
            {"graphs": int(has.sum()), "kernels": eager_in, "replays": int(taken.sum())})


def _issued_in(c: Context, p, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per GPU activity, the call whose stretch issued it (its launch call where it has one; NONE where none is
    known), and whether it was launched through an API the capture does not record (model.driver_launches: Triton's
    and Inductor's cuLaunchKernel). Such work has no call of its own: the dependency graph anchors it to the last call
    before it started, and it was issued in the gap after that call, before the next call on its thread. That gap
    belongs to the anchor's stretch, unless the anchor was a sync or blocked: it returned, then the next stretch's
    work was issued, whether or not it waited for any (heldout-user19 gp_fusion's 16 Triton kernels after a
    torch.cuda.synchronize(), in the compiled call's gap before its first cudaLaunchKernel), so the gap belongs to
    the next call's. Without a position the replay left them at their traced offset from the sync, ~1 ms of the
    compiled call's Python with them."""
    g = c.g
    issuer = np.where(g.g_linked, g.g_call, NONE)
    driver = unrecorded(c.trace)[g.g_row] & ~g.g_linked & (g.g_call >= 0)
    if not driver.any():
        return issuer, driver
    # each call's next call on its thread (`order`: by thread, then start)
    nxt = np.full(g.n_calls, NONE, np.int64)
    same = g.c_thread[order][1:] == g.c_thread[order][:-1]
    nxt[order[:-1][same]] = order[1:][same]
    anchor = g.g_call[driver]
    after_sync = (p.c_blocked[anchor] | (g.c_kind[anchor] == SYNC_CALL)) & (nxt[anchor] != NONE)
    issuer[driver] = np.where(after_sync, nxt[anchor], anchor)
    return issuer, driver


def _inside_the_captured_forward(c: Context) -> np.ndarray:
    """Per call: the host work of its preceding stretch (its end, just before the call: depgraph) lies inside an
    nn.Module's forward, the callable a graph captures: its Python ran once, at capture, and a replay runs only the
    kernels. Host work outside any forward (the loop, the data) stays. Traces without module ranges: none."""
    g = c.g
    out = np.zeros(g.n_calls, bool)
    s, e, k, _ = c.construct_windows(Construct.MODULE)
    if not len(s) or not g.n_calls:
        return out
    c_key = c.call_keys
    for key in distinct(k).tolist():
        ws, we = iv.union(s[k == key], e[k == key])
        m = np.flatnonzero((c_key == key) & (g.c_host > 0))
        out[m] = iv.covered(ws, we, g.c_start[m] - g.c_host[m], g.c_start[m]) >= g.c_host[m]
    return out


# The constructs whose host work a graph's capture runs once and its replays skip: the model's forward, the autograd
# engine's backward, the optimizer's step, compiled code's Python around its kernels.
CAPTURED = (Construct.MODULE, Construct.BACKWARD, Construct.OPTIMIZER, Construct.COMPILED)


def _host_a_replay_runs(c: Context) -> np.ndarray:
    """Per call, the host work of its preceding stretch that a graph replay still runs: all of it but what lies in
    the constructs a graph captures (the forward, the autograd engine's backward, the optimizer's step, compiled
    code) or between the phases of one step (_phased_steps: the graph captures the step whole), on a thread whose
    ops the trace records: the loop's own Python and CPU computation outside them run
    every time around it (heldout-user19 h100_mlp_train: Adam's step and the backward's AccumulateGrad go with the
    replay). A thread that records no op (a runtime-only capture) runs the per-op dispatch between its launches,
    which the report reads it as: none of it stays."""
    g, ev = c.g, c.trace.ev
    out = np.zeros(g.n_calls, np.int64)
    if not g.n_calls:
        return out
    c_key = c.call_keys
    with_ops = np.isin(c_key, distinct(thread_keys(ev, np.flatnonzero(ev.cat == CPU_OP))))
    captured = [c.construct_windows(k)[:3] for k in CAPTURED] + [_phased_steps(c)]
    cap_s = np.concatenate([w[0] for w in captured])
    cap_e = np.concatenate([w[1] for w in captured])
    cap_k = np.concatenate([w[2] for w in captured])
    out[with_ops] = g.c_host[with_ops]
    for key in distinct(cap_k).tolist():
        m = np.flatnonzero((c_key == key) & with_ops & (g.c_host > 0))
        ws, we = iv.union(cap_s[cap_k == key], cap_e[cap_k == key])
        out[m] = np.maximum(g.c_host[m] - iv.covered(ws, we, g.c_start[m] - g.c_gap[m], g.c_start[m]), 0)
    return out


def replay_gap(c: Context) -> tuple[int, str]:
    """The host's stretch between two graph replays: measured on the trace's own, else the reference."""
    g = c.g
    gl = np.flatnonzero(c.calls_named(is_graph_launch))
    if len(gl) >= 3:
        # consecutive replays on one thread with no other launch between them: the wall from one's end to
        # the next's start (the loop's Python, the call to replay, an event or a sync it makes)
        gl = gl[np.lexsort((g.c_start[gl], g.c_thread[gl]))]
        a, b = gl[:-1], gl[1:]
        same = g.c_thread[a] == g.c_thread[b]
        a, b = a[same], b[same]
        lo, hi = g.c_start[a] + g.c_dur[a], g.c_start[b]
        # other launches on the pair's thread strictly between the two: counted by a search among them, sorted
        # by (thread, start), not a pass over every call per pair
        other = np.flatnonzero(g.c_issues & ~c.calls_named(is_graph_launch))
        other = other[np.lexsort((g.c_start[other], g.c_thread[other]))]
        o_thr, o_start = g.c_thread[other], g.c_start[other]
        thr = g.c_thread[a]
        n_between = np.zeros(len(a), np.int64)
        for t in distinct(thr).tolist():      # per thread: a search among its own launches
            m = thr == t
            mine = o_start[np.searchsorted(o_thr, t, side="left"):np.searchsorted(o_thr, t, side="right")]
            n_between[m] = np.searchsorted(mine, hi[m], side="left") - np.searchsorted(mine, lo[m], side="right")
        gaps = (hi - lo)[n_between <= 0]      # (<= 0: a pair that overlaps has none between)
        if len(gaps) >= 2:
            return int(np.median(gaps.tolist())), "trace"
    return REPLAY_GAP_NS, "reference"


def _python_before(c: Context, calls: np.ndarray) -> np.ndarray:
    """The part of each call's preceding stretch that lies before its outermost op began: untraced Python
    between ops (all of the stretch for a call made straight from Python)."""
    g, ev = c.g, c.trace.ev
    prev_end = g.c_start[calls] - g.c_gap[calls]
    outer = g.c_outer_op[calls]
    op_start = np.where(outer >= 0, ev.start[np.maximum(outer, 0)], g.c_start[calls])
    return np.clip(op_start - prev_end, 0, g.c_gap[calls])


def _not_dispatch(c: Context) -> tuple[np.ndarray, np.ndarray]:
    """Per call, the host time of its stretch and of the call itself that lies in one-time set-up or in
    torch.compile compiling, or in the profiler's own work: it stays under a graph."""
    g, ev = c.g, c.trace.ev
    gap_kept = np.zeros(g.n_calls, np.int64)
    call_kept = np.zeros(g.n_calls, np.int64)
    if not g.n_calls:
        return gap_kept, call_kept
    # the profiler's own work (CUPTI's Activity Buffer Request, on a row of its own) holds whichever call
    # it lands in: no graph replays it away
    own = profiler_own_rows(c.trace)
    if len(own):
        os_, oe = iv.union(ev.start[own], ev.end[own])
        gap_kept = iv.covered(os_, oe, g.c_start - g.c_gap, g.c_start)
        call_kept = iv.covered(os_, oe, g.c_start, g.c_start + g.c_dur)
    s1, e1, k1 = c.setup_excess
    s2, e2, k2, _ = c.construct_windows(Construct.COMPILE)
    starts, ends, keys = np.concatenate([s1, s2]), np.concatenate([e1, e2]), np.concatenate([k1, k2])
    if not len(starts):
        return gap_kept, call_kept
    c_key = c.call_keys
    for k in distinct(keys).tolist():
        ws, we = iv.union(starts[keys == k], ends[keys == k])
        m = np.flatnonzero(c_key == k)
        gap_kept[m] = np.maximum(gap_kept[m], iv.covered(ws, we, g.c_start[m] - g.c_gap[m], g.c_start[m]))
        call_kept[m] = np.maximum(call_kept[m], iv.covered(ws, we, g.c_start[m], g.c_start[m] + g.c_dur[m]))
    return gap_kept, call_kept


def _step_starts(c: Context) -> np.ndarray:
    """Calls that open a repeated user range (a step, an iteration): graphs are captured per step. Only the
    outermost: a range repeated inside a step (a layer's "MLP", "Self-Attention") is captured with its step, and
    opening a stretch at each cut heldout-user h100_transformer's steps into pieces under MIN_GRAPH_KERNELS that
    stayed eager (−37% predicted where the replayed step is ~5× shorter)."""
    ev, g = c.trace.ev, c.g
    out = np.zeros(g.n_calls, bool)
    if not g.n_calls:
        return out
    c_pid, c_tid = ev.pid[g.c_row], ev.tid[g.c_row]
    for pid, tid, a, outermost in _repeated_ranges(c):
        m = np.flatnonzero((c_pid == pid) & (c_tid == tid))
        # ... but a compiled region always opens one: reduce-overhead graphs each compiled call on its own
        compiled = np.array([construct_of(c.trace.names[i]) is Construct.COMPILED for i in ev.name[a].tolist()], bool)
        a = a[(outermost & ~_later_phase(c, a)) | compiled]
        k = np.searchsorted(g.c_start[m], ev.start[a], side="left")
        out[m[k[k < len(m)]]] = True
    return out


def _repeated_ranges(c: Context):
    """Per host thread with repeated user ranges (a step, an iteration, a layer): (pid, tid, its repeated ranges'
    rows in start order, outermost first, and which of them are outermost)."""
    ev = c.trace.ev
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    if not len(ann):
        return
    ids, n = np.unique(ev.name[ann], return_counts=True)
    steps = [i for i in ids.tolist() if c.trace.names[i].startswith(PROFILER_STEP)]
    # ProfilerStep#1, #2 ... repeat as one range; a lone ProfilerStep around a loop is no step (the loop's
    # iterations are: traces/fixes/small_mlp profiles 8 "iteration" ranges inside ProfilerStep#1)
    repeated = set(ids[n >= 2].tolist()) | (set(steps) if len(steps) >= 2 else set())
    ann = ann[np.isin(ev.name[ann], list(repeated))]
    for pid, tid in sorted(set(zip(ev.pid[ann].tolist(), ev.tid[ann].tolist()))):
        a = ann[(ev.pid[ann] == pid) & (ev.tid[ann] == tid)]
        a = a[np.lexsort((-ev.end[a], ev.start[a]))]
        reach = np.maximum.accumulate(ev.end[a]) if len(a) else ev.end[a]
        outermost = np.r_[True, reach[:-1] < ev.end[a][1:]] if len(a) else np.zeros(0, bool)
        yield pid, tid, a, outermost


def _phased_steps(c: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where a step made of phases ran on the host: (starts, ends, thread keys), from each step's opening range to
    the end of the later phases that follow it (_later_phase: a range per line of the loop, or forward / backward /
    step ranges). The step's graph captures the code between its phases with them: the Python between the lines of
    one iteration (heldout-user19 h100_mlp_train: the instrumenter's range exit and the optimizer's wrapper between
    the backward's line and Adam.step's range, ~110 µs an iteration that cut each step's graph in two)."""
    ev = c.trace.ev
    starts, ends, keys = [], [], []
    for _, _, a, outermost in _repeated_ranges(c):
        later = _later_phase(c, a) & outermost
        if not later.any():
            continue
        o = a[outermost]
        later_o = later[outermost]
        run = np.cumsum(~later_o) - 1            # each outermost range that is no later phase opens a run
        ok = run >= 0
        n_runs = int(run.max()) + 1 if len(run) else 0
        end = np.full(n_runs, np.iinfo(np.int64).min, np.int64)
        np.maximum.at(end, run[ok], ev.end[o[ok]])
        phased = np.bincount(run[ok & later_o], minlength=n_runs) > 0
        openers = o[~later_o]
        starts.append(ev.start[openers][phased])
        ends.append(end[phased])
        keys.append(thread_keys(ev, openers[phased]))
    if not starts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(starts), np.concatenate(ends), np.concatenate(keys)


def _later_phase(c: Context, a: np.ndarray) -> np.ndarray:
    """Of a thread's outermost repeated ranges (start order), those that are a later phase of the step another opens:
    ranges of several names that repeat as often as each other (forward, backward, step; a range per source line)
    take turns inside one step, which the earliest of them opens, and one graph captures it whole (heldout-user19
    h100_mlp_train: a range per line of the loop cut each step into five graphs, the loss's backward seed alone
    and eager). A range repeated a different number of times (an evaluation every few steps) still opens its own."""
    ev = c.trace.ev
    names = ev.name[a]
    ids, first, n = np.unique(names, return_index=True, return_counts=True)
    steps = [i for i in ids.tolist() if c.trace.names[i].startswith(PROFILER_STEP)]
    if steps:
        return ~np.isin(names, steps) & np.isin(names, ids[n == n[np.isin(ids, steps)].sum()])
    most = n == n.max()
    opener = ids[most][np.argmin(first[most])]
    return np.isin(names, ids[most]) & (names != opener)


def says(a: Graphed) -> str:
    if a.count == 0:
        return "no kernel launched outside a CUDA graph in enough of a stretch to capture: nothing to graph"
    gap = "the minimum gap between queued kernels in this trace" if a.gap_measured else \
        "assumed; no queued kernels here"
    replays = (f"; the {count(a.replays, 'graph replay', 'graph replays')} among those launches go into their "
               "stretch's graph" if a.replays else "")
    if a.cache_to:
        replays += (f"; a bound: the decode's KV cache grows a token each step (keys {integer(a.cache_from)} to "
                    f"{integer(a.cache_to)} tokens long), so no graph captures the loop until the cache is static")
    return (f"one graph launch per sync-free stretch at {duration_ns(a.fixed_ns)} and {duration_ns(a.per_kernel_ns)} "
            f"per kernel "
            f"({SOURCE_WORDS[a.source]}); dispatch and launch calls vanish; kernels run back to back "
            f"{duration_ns(a.min_gap_ns)} apart ({gap}){replays}")


def graph_launches(m: Measured) -> int:
    """Launch calls that issued kernels and are graph launches."""
    ev = m.trace.ev
    calls = distinct(m.trace.launch_of[ev.cat == KERNEL])
    calls = calls[calls != NONE]
    return sum(1 for c in calls.tolist() if is_graph_launch(m.trace.names[ev.name[c]]))


SPEC = LeverSpec(
    name="cuda_graphs", effort=3, cause=Cause.LAUNCH_OVERHEAD, apply=apply, says=says,
    words="CUDA graphs to cut launches",
    fix="the iteration's GPU work is captured once with torch.cuda.graph and replayed",
    recognise=Recognise(order=1, evidence="graph_launches", because="CUDA-graph launches appeared",
                        amount=graph_launches, acted=lambda m: m.by_cause_ns.get(Cause.LAUNCH_OVERHEAD, 0),
                        applied=lambda before, after: after > before),
    idle_floor=0.10,    # a tenth of the idle: no "cut launches" for a sliver of launch overhead
    done_where_graphs_replay=True)
