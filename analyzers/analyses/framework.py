"""Framework phases: whose code made each idle gap and each launch.

The cause says what kind of wait a gap is; the construct says where in the user's program it came
from: the DataLoader's __next__, Optimizer.step, the autograd engine, torch.compile compiling, the
caching allocator, a collective, a module's forward, one-time set-up, or the user's own code. The
lever is chosen in the user's terms from both ("82% of idle is inside Optimizer.step: 12,800
launches" asks for a fused optimizer, not for DataLoader workers).

How: every host event that marks a construct (tracetriage.analyzers.model.constructs: user_annotation ranges
such as `Optimizer.step#AdamW.step`, cpu_ops such as `autograd::engine::evaluate_function: ...`,
runtime calls such as cudaFree) paints its thread's timeline with its construct; where constructs
nest, the one earlier in CONSTRUCTS wins (compile inside a forward is compile). Set-up windows (the
first calls that held the host, tracetriage.analyzers.analyses.idle) paint SETUP over all. An idle gap is charged
to the constructs that cover it on the thread that explains it (the sync or copy call it waited in,
or the launch call of the work that ended it), by the time each covers; what no construct covers is
the user's. A launch belongs to the construct around its call.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.first_compiles import first_compile_rows
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.constructs import MARKING_CATS, construct_of, optimizer_class
from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.last_trace import last_trace
from tracetriage.analyzers.model.names import distinct_names, name_flags, name_tests, per_name
from tracetriage.analyzers.model.runtime_calls import is_launch
from tracetriage.analyzers.model.trace import DRIVER, NONE, RUNTIME, Trace, thread_keys
from tracetriage.analyzers.model.verdicts import CAUSES, CONSTRUCTS, Cause, Construct

USER = CONSTRUCTS.index(Construct.USER)
OPTIMIZER_STEP = "Optimizer.step#"   # the optimizer's step range (its zero_grad range marks the construct too)
COMPILED_REGION = "Torch-Compiled Region"   # a compiled call (its backward, CompiledFunctionBackward, marks it too)


@dataclass(frozen=True)
class ConstructShare:
    """One construct's part of a trace: the idle it made, by cause, and the launches made inside it."""
    construct: Construct
    idle_ns: int
    by_cause_ns: dict[Cause, int]
    launches: int
    ranges: int                  # how many times the construct ran (its marking events, outermost; the optimizer:
                                 # its Optimizer.step ranges, not its zero_grad ones)
    host_ns: int                 # host time inside it, on every thread
    names: tuple[str, ...] = ()  # its marking events' names, most time first ("Optimizer.step#AdamW.step")

    @property
    def dominant(self) -> Cause | None:
        return max(self.by_cause_ns, key=self.by_cause_ns.get) if self.idle_ns > 0 else None


@dataclass(frozen=True)
class Framework:
    """Every construct found in the trace, most idle first (the user's own code among them)."""
    constructs: tuple[ConstructShare, ...]
    idle_ns: int                                # all idle that was charged (every device)
    gap_construct: tuple[np.ndarray, ...]       # per device, per gap: the construct code that covers most of it
    optimizer: str | None = None                # the optimizer class (AdamW) when Optimizer.step ran
    first_compilations: bool = False            # every compilation the trace names is a function's first (compile
                                                # ids N/0 only): the compile construct is one-time set-up

    def share_of(self, c: Construct) -> ConstructShare | None:
        return next((x for x in self.constructs if x.construct is c), None)

    def idle_share(self, c: Construct) -> float:
        x = self.share_of(c)
        return x.idle_ns / self.idle_ns if x is not None and self.idle_ns else 0.0

    @property
    def top(self) -> ConstructShare | None:
        """The framework construct (not the user's own code) that made the most idle."""
        return next((x for x in self.constructs if x.construct is not Construct.USER and x.idle_ns > 0), None)


# --- painting each thread's timeline ---------------------------------------------------------------

@dataclass(frozen=True)
class _Painted:
    """Per thread key: for each construct code, its disjoint intervals not covered by an earlier code."""
    by_thread: dict[int, list[tuple[np.ndarray, np.ndarray]]]
    runs: np.ndarray             # per construct code: how many separate times it ran (its outermost ranges)


@last_trace
def marking_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Rows of host events that mark a construct, and each one's construct code. Found once per trace (the report
    asks it for the framework's painting and the levers for four constructs' windows, ~8 ms each at 942k events);
    callers only read it."""
    ev = trace.ev
    rows = np.flatnonzero(any_of(ev.cat, MARKING_CATS))
    if not len(rows):
        return rows, np.zeros(0, np.int8)
    ids = distinct_names(trace, rows)
    code_of = np.array([CONSTRUCTS.index(c) if (c := construct_of(trace.names[i])) is not None else -1
                        for i in ids.tolist()], np.int8)
    codes = per_name(trace, rows, ids, code_of)
    keep = codes >= 0
    return rows[keep], codes[keep]


def construct_windows(trace: Trace, construct: Construct) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Where one construct ran on the host, its marking events merged per thread: (starts, ends, thread keys,
    runs); the what-if levers take these windows out (compile spans) or act inside them (Optimizer.step)."""
    ev = trace.ev
    rows, codes = marking_rows(trace)
    rows = rows[codes == CONSTRUCTS.index(construct)]
    keys = thread_keys(ev, rows)
    out_s, out_e, out_k = [], [], []
    for k in distinct(keys).tolist():
        us, ue = iv.union(ev.start[rows[keys == k]], ev.end[rows[keys == k]])
        out_s.append(us)
        out_e.append(ue)
        out_k.append(np.full(len(us), k, np.int64))
    if not out_s:
        z = np.empty(0, np.int64)
        return z, z, z, 0
    s, e, k = np.concatenate(out_s), np.concatenate(out_e), np.concatenate(out_k)
    return s, e, k, int(len(s))


def paint(trace: Trace, setup_s: np.ndarray, setup_e: np.ndarray, setup_key: np.ndarray) -> _Painted:
    ev = trace.ev
    rows, codes = marking_rows(trace)
    keys = thread_keys(ev, rows)
    starts, ends = ev.start[rows], ev.end[rows]
    setup = CONSTRUCTS.index(Construct.SETUP)
    if len(setup_s):
        keys = np.concatenate([keys, setup_key])
        starts = np.concatenate([starts, setup_s])
        ends = np.concatenate([ends, setup_e])
        codes = np.concatenate([codes, np.full(len(setup_s), setup, np.int8)])
    out: dict[int, list] = {}
    runs = np.zeros(len(CONSTRUCTS), np.int64)
    for k in distinct(keys).tolist():
        m = keys == k
        taken_s, taken_e = np.empty(0, np.int64), np.empty(0, np.int64)
        layers = []
        for code in range(len(CONSTRUCTS)):
            sel = m & (codes == code)
            if not sel.any():
                layers.append((np.empty(0, np.int64), np.empty(0, np.int64)))
                continue
            us, ue = iv.union(starts[sel], ends[sel])
            runs[code] += len(us)
            # what an earlier construct does not already cover
            if len(taken_s):
                lo, hi = int(min(us.min(), taken_s.min())), int(max(ue.max(), taken_e.max()))
                free_s, free_e = iv.complement(taken_s, taken_e, lo, hi)
                us, ue = iv.intersect(us, ue, free_s, free_e)
            layers.append((us, ue))
            taken_s, taken_e = iv.union(np.concatenate([taken_s, us]), np.concatenate([taken_e, ue]))
        out[k] = layers
    return _Painted(out, runs)


# --- charging the gaps ---------------------------------------------------------------------------

def _gap_threads(trace: Trace, gaps) -> np.ndarray:
    """The host thread that explains each gap: its sync/copy/launch call's, else the call that launched
    the work ending it; -1 when neither is in the trace."""
    ev = trace.ev
    row = np.where(gaps.host_row != NONE, gaps.host_row, NONE)
    nxt = gaps.next_row
    launch = np.where(nxt != NONE, trace.launch_of[np.maximum(nxt, 0)], NONE)
    row = np.where(row == NONE, launch, row)
    key = np.where(row != NONE, thread_keys(ev, np.maximum(row, 0)), -1)
    return key


def charge(trace: Trace, painted: _Painted, gaps) -> np.ndarray:
    """ns of each gap covered by each construct code: shape (gaps, constructs); USER takes the rest."""
    n = len(gaps)
    out = np.zeros((n, len(CONSTRUCTS)), np.int64)
    if not n:
        return out
    keys = _gap_threads(trace, gaps)
    dur = (gaps.end - gaps.start).astype(np.int64)
    for k in distinct(keys).tolist():
        m = np.flatnonzero(keys == k)
        layers = painted.by_thread.get(k)
        if layers is not None:
            for code, (s, e) in enumerate(layers):
                if len(s):
                    out[m, code] = iv.covered(s, e, gaps.start[m], gaps.end[m])
    out[:, USER] += np.maximum(dur - out.sum(axis=1), 0)
    return out


def _launch_codes(trace: Trace, painted: _Painted) -> tuple[np.ndarray, np.ndarray]:
    """Every launch call, and the construct code at its start on its thread."""
    ev = trace.ev
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    if len(calls):
        calls = calls[name_tests(trace, calls, is_launch)[0]]
    codes = np.full(len(calls), USER, np.int8)
    if not len(calls):
        return calls, codes
    keys = thread_keys(ev, calls)
    t = ev.start[calls]
    for k in distinct(keys).tolist():
        m = np.flatnonzero(keys == k)
        for code, (s, e) in enumerate(painted.by_thread.get(k, ())):
            if not len(s):
                continue
            i = np.searchsorted(s, t[m], side="right") - 1
            inside = (i >= 0) & (t[m] < e[np.maximum(i, 0)])
            hit = m[inside & (codes[m] == USER)]
            codes[hit] = code
    return calls, codes


def _host_time_and_names(trace: Trace, painted: _Painted) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    host = np.zeros(len(CONSTRUCTS), np.int64)
    for layers in painted.by_thread.values():
        for code, (s, e) in enumerate(layers):
            host[code] += iv.total(s, e)
    ev = trace.ev
    rows, codes = marking_rows(trace)
    ranges = painted.runs.copy()
    # the optimizer ran as often as it stepped: its zero_grad ranges (one per iteration too) are no calls of the
    # step, or a loop of 10 steps reads "82 launches in 20 calls" beside "Adam's step"
    # compiled code ran as often as its regions were entered: the autograd thread's CompiledFunctionBackward of each
    # call is no call of its own (heldout-user17 r18compile: "(Torch-Compiled Region: 0/0): 465 launches in 6 calls"
    # where the trace has 3 regions, one per iteration)
    for construct, first in ((Construct.OPTIMIZER, OPTIMIZER_STEP), (Construct.COMPILED, COMPILED_REGION)):
        code = CONSTRUCTS.index(construct)
        r = rows[codes == code]
        marked = r[name_flags(trace, r, lambda n, first=first: n.startswith(first))] if len(r) else r
        if len(marked):
            keys = thread_keys(ev, marked)
            ranges[code] = sum(len(iv.union(ev.start[marked[keys == k]], ev.end[marked[keys == k]])[0])
                               for k in distinct(keys).tolist())
    names: list[list[str]] = [[] for _ in CONSTRUCTS]
    for code in range(len(CONSTRUCTS)):
        r = rows[codes == code]
        if not len(r):
            continue
        dur = (ev.end[r] - ev.start[r]).astype(np.int64)
        # each name's total, the names in the order first met, the three longest (ties: the first met)
        ids, first, inv = np.unique(ev.name[r], return_index=True, return_inverse=True)
        total = np.zeros(len(ids), np.int64)
        np.add.at(total, inv.ravel(), dur)
        met = np.argsort(first, kind="stable")
        top = met[np.argsort(-total[met], kind="stable")[:3]]
        names[code] = [trace.names[i] for i in ids[top].tolist()]
    return host, ranges, names


def construct_to_name(fw: Framework | None, named: float, covers_all: float) -> ConstructShare | None:
    """The framework construct (not set-up, not the user's own code) that made `named` of the idle or more, unless it
    made `covers_all` of the launches outside the set-up or more: a construct around (nearly) every launch singles
    out no part of the step ('inside nn.Module forwards: 48 launches in 3 calls' of a model's whole forward,
    heldout-user15 gh200_encoder, 48 of 48; switch_moe: 482 of 482). The optimizer's step is named even so: its
    name chooses the fix (a fused step)."""
    top = next((x for x in fw.constructs if x.construct not in (Construct.USER, Construct.SETUP) and x.idle_ns > 0),
               None) if fw else None
    if top is None or top.idle_ns < named * fw.idle_ns:
        return None
    outside = sum(x.launches for x in fw.constructs if x.construct is not Construct.SETUP)
    if top.construct is not Construct.OPTIMIZER and outside and top.launches >= covers_all * outside:
        return None
    return top


def analyze(trace: Trace, devices, setup_windows=None) -> Framework:
    """Charge every device's idle gaps and every launch to the constructs around them.

    `setup_windows`: (starts, ends, thread keys) of one-time set-up on the host (tracetriage.analyzers.analyses.idle).
    """
    empty = np.empty(0, np.int64)
    s_s, s_e, s_k = setup_windows if setup_windows is not None else (empty, empty, empty)
    painted = paint(trace, s_s, s_e, s_k)
    by = np.zeros((len(CONSTRUCTS), len(CAUSES)), np.int64)
    per_gap = []
    for d in devices:
        g = d.gaps
        ch = charge(trace, painted, g)
        for cause in range(len(CAUSES)):
            m = g.cause == cause
            if m.any():
                by[:, cause] += ch[m].sum(axis=0)
        per_gap.append(np.argmax(ch, axis=1).astype(np.int8) if len(g) else np.zeros(0, np.int8))
    calls, codes = _launch_codes(trace, painted)
    launches = np.bincount(codes, minlength=len(CONSTRUCTS)) if len(codes) else np.zeros(len(CONSTRUCTS), np.int64)
    host, ranges, names = _host_time_and_names(trace, painted)
    shares = []
    for code, c in enumerate(CONSTRUCTS):
        idle = int(by[code].sum())
        if idle == 0 and launches[code] == 0 and ranges[code] == 0 and c is not Construct.USER:
            continue
        shares.append(ConstructShare(c, idle, {CAUSES[i]: int(by[code, i]) for i in range(len(CAUSES))},
                                     int(launches[code]), int(ranges[code]), int(host[code]), tuple(names[code])))
    shares.sort(key=lambda x: (-x.idle_ns, CONSTRUCTS.index(x.construct)))
    opt = next((optimizer_class(n) for x in shares if x.construct is Construct.OPTIMIZER for n in x.names
                if optimizer_class(n)), None)
    return Framework(tuple(shares), int(by.sum()), tuple(per_gap), opt,
                     first_compilations=bool(len(first_compile_rows(trace))))
