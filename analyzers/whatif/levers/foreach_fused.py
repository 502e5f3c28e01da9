"""A foreach optimizer step priced as one fused pass (fused_optimizer's second case: foreach=True -> fused=True).

torch.optim's foreach step (the default on CUDA) runs each line of the update as one aten::_foreach_<op> over the
parameter list: Adam's is seven passes (lerp_, mul_, addcmul_, sqrt, div_, add_, addcdiv_), each reading its lists and
writing one, about 19 tensor reads and writes per parameter element; fused=True does the update in one pass that reads
param, grad, exp_avg and exp_avg_sq and writes three of them back: 7. Over large parameter lists (embedding tables)
these passes are memory-bound and can hold most of a step's GPU time.

Any trace shows it as: inside an Optimizer.step#<Class>.step range, launch calls made by aten::_foreach_* ops (not
_foreach_zero_, which is zero_grad's), and no aten::_fused_* op. Each op's accesses per element are its TensorList
inputs plus the one list it writes (from "Input type"; without it 3, a binary in-place update). One pass's time is the
median, over the ops that walk the whole list (their time per access at least half the largest), of an op's kernel
time over its accesses; the fused step takes FUSED_ACCESSES of its class times that. Lists' shapes are not needed: the
passes' own time says how long a pass over this step's parameters takes at this device's rate.

What would make it fire falsely: a foreach step over tiny lists (launch-bound, not memory-bound: the price is then a
small time either way), a class without fused=True (priced only for FUSED_ACCESSES' classes), or a user's own
optimizer calling torch._foreach_* inside an Optimizer.step range named after a torch.optim class.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, NONE
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.knob import setup_kept
from tracetriage.analyzers.whatif.levers.spec import Context

FOREACH = "aten::_foreach_"
NOT_THE_UPDATE = ("aten::_foreach_zero_",)        # zero_grad(set_to_none=False): stays with fused=True
FUSED = "aten::_fused_"
OPTIMIZER_RANGE = re.compile(r"^Optimizer\.(?:step|zero_grad)#(\w+)\.")
# tensor reads + writes per parameter element of torch.optim's fused step (its CUDA kernel): Adam/AdamW read param,
# grad, exp_avg, exp_avg_sq and write param, exp_avg, exp_avg_sq; SGD with momentum and Adagrad read param, grad and
# one state and write two of them
FUSED_ACCESSES = {"Adam": 7, "AdamW": 7, "SGD": 5, "Adagrad": 5}
DEFAULT_ACCESSES = 3           # an op whose argument types are not recorded: a binary in-place update
MIN_RUN = 3                    # a run of fewer foreach launches is no optimizer's update (a user's own foreach call)
WHOLE_LIST = 0.5               # an op walks the whole list where its time per access is this share of the largest


@dataclass(frozen=True)
class ForeachSteps:
    optimizer: str = ""            # the class ("Adam")
    steps: int = 0                 # Optimizer.step windows priced
    passes: int = 0                # foreach ops per step (median)
    accesses: int = 0              # tensor reads + writes per element over a step's passes (median)
    fused_accesses: int = 0
    launches: int = 0              # the foreach ops' launch calls in those steps
    kernel_ns: int = 0             # the foreach kernels' time, all steps
    fused_ns: int = 0              # the fused passes' predicted time, all steps


def _accesses(c: Context, op: int) -> int:
    types = c.trace.shapes(op)[1] or []
    lists = sum(1 for t in types if t == "TensorList")
    return lists + 1 if lists else DEFAULT_ACCESSES


def step_classes(c: Context) -> tuple[str, ...]:
    """The optimizer classes whose steps the trace records, sorted (a wrapper's and the one it wraps: EMAOptimizer's
    step around Shampoo's)."""
    # (a user_annotation in torch 2.x, a cpu_op in 1.x: the names any event carries; a compiled step may keep only
    # its zero_grad range)
    # the names that are optimizer steps first (a few of the trace's names, most often none), then whether an event
    # carries each: no pass over all of the events' names for a trace that records no optimizer step
    named = [(i, m.group(1)) for i, n in enumerate(c.trace.names) for m in [OPTIMIZER_RANGE.match(n)] if m]
    name = c.trace.ev.name
    return tuple(sorted({cls for i, cls in named if (name == i).any()}))


def step_class(c: Context) -> str | None:
    """The one optimizer class whose steps the trace records (None: none, or several)."""
    classes = step_classes(c)
    return classes[0] if len(classes) == 1 else None


def apply_foreach(c: Context, p, win: np.ndarray, skip: np.ndarray) -> ForeachSteps:
    """Price each optimizer window (win: each call's window, NONE outside) whose update runs as foreach ops as one
    fused pass, in the graph p; windows in `skip` (per-parameter steps, priced by fused_optimizer) are left."""
    cls = step_class(c)
    if cls not in FUSED_ACCESSES:
        return ForeachSteps()
    g, tr = c.g, c.trace
    op = tr.op_of[g.c_row]
    win = win.copy()
    has = np.flatnonzero((op != NONE) & (win != NONE))
    has = has[tr.ev.cat[op[has]] == CPU_OP]
    fused_windows = distinct(win[has[name_flags(tr, op[has], lambda n: n.startswith(FUSED))]])
    foreach = has[name_flags(tr, op[has], lambda n: n.startswith(FOREACH) and not n.startswith(NOT_THE_UPDATE))]
    foreach = foreach[(g.c_kind[foreach] == dg.LAUNCH_CALL) & g.c_issues[foreach]
                      & ~np.isin(win[foreach], fused_windows) & ~np.isin(win[foreach], skip)]
    foreach = np.concatenate([foreach, _runs_outside(c, op, win)])
    if not len(foreach):
        return ForeachSteps()
    linked = np.flatnonzero((g.g_call >= 0) & g.g_linked & (g.g_cat == KERNEL))
    mark = np.full(g.n_calls, False)
    mark[foreach] = True
    acts = linked[mark[g.g_call[linked]]]
    kernel_ns = fused_ns = launches = 0
    steps, passes, accesses = [], [], []
    for w in distinct(win[foreach]).tolist():
        calls = foreach[win[foreach] == w]
        mine = acts[np.isin(g.g_call[acts], calls)]
        if not len(mine):
            continue
        ops_of = op[g.g_call[mine]]
        rows, inv = np.unique(ops_of, return_inverse=True)
        t_op = np.bincount(inv.ravel(), weights=g.g_dur[mine].astype(np.float64))
        acc = np.array([_accesses(c, int(r)) for r in rows.tolist()], np.float64)
        per_access = t_op / acc
        whole = per_access >= WHOLE_LIST * per_access.max()
        fused = FUSED_ACCESSES[cls] * float(np.median(per_access[whole]))
        before = float(t_op.sum())
        if fused >= before:
            continue
        head = mine[np.argmin(g.g_start[mine])]
        p.g_dur[mine] = 0
        p.g_gap[mine] = 0
        p.g_dur[head] = int(fused)
        rest = calls[calls != g.g_call[head]]
        # the other passes' launches go (and the waits of a full queue in them), but the one-time set-up inside a first
        # launch (its module loading), which a warm run never pays either
        p.c_dur[rest] = setup_kept(c, rest)
        p.c_gap[rest] = g.c_host[rest]       # with their dispatch; the step's own Python stays
        steps.append(w)
        passes.append(len(rows))
        accesses.append(int(acc.sum()))
        launches += len(calls)
        kernel_ns += int(before)
        fused_ns += int(fused)
    if not steps:
        return ForeachSteps(optimizer=cls)
    return ForeachSteps(optimizer=cls, steps=len(steps), passes=int(np.median(passes)),
                        accesses=int(np.median(accesses)), fused_accesses=FUSED_ACCESSES[cls],
                        launches=launches, kernel_ns=kernel_ns, fused_ns=fused_ns)


def _runs_outside(c: Context, op: np.ndarray, win: np.ndarray) -> np.ndarray:
    """Foreach launch calls outside every optimizer range (a step torch.compile traced keeps no Optimizer.step range),
    each run of them given a window of its own in `win`: consecutive launches of foreach ops on one thread, no other
    op's launch between them."""
    g, tr = c.g, c.trace
    launch = np.flatnonzero((g.c_kind == dg.LAUNCH_CALL) & g.c_issues & (op != NONE))
    launch = launch[tr.ev.cat[op[launch]] == CPU_OP]
    if not len(launch):
        return np.zeros(0, np.int64)
    is_fe = name_flags(tr, op[launch], lambda n: n.startswith(FOREACH) and not n.startswith(NOT_THE_UPDATE))
    out = []
    next_id = int(win.max()) + 1 if (win != NONE).any() else 0
    keys = c.call_keys[launch]
    for key in distinct(keys).tolist():
        mine = launch[keys == key]                   # in call order (the graph's calls are in order of start)
        fe = is_fe[keys == key] & (win[mine] == NONE)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], fe.astype(np.int8), [0]])))
        for a, b in zip(edges[::2].tolist(), edges[1::2].tolist()):
            if b - a < MIN_RUN:
                continue
            win[mine[a:b]] = next_id
            next_id += 1
            out.append(mine[a:b])
    return np.concatenate(out) if out else np.zeros(0, np.int64)
