"""fused_optimizer: the optimizer step's per-parameter kernels become multi-tensor ones.

The fix: `torch.optim.AdamW(params, fused=True)` (or `foreach=True`, the default on CUDA where the
parameters allow it): one kernel walks every parameter of a group instead of ~10 kernels per
parameter. In the graph, inside each Optimizer.step range, the dispatch and launch calls of the
per-parameter ops vanish but the first (the fused op's), the host work that is not dispatch stays
(the step's own Python), and the step's kernels become one kernel that moves the same bytes at the
rate the device's memory-bound kernels reach in this trace (without bytes: the same work without
each kernel's fixed launch-to-finish cost).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, NONE, thread_keys
from tracetriage.analyzers.model.units import count
from tracetriage.analyzers.model.verdicts import Cause, Construct, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.cuda_graphs import graph_launches
from tracetriage.analyzers.whatif.levers.foreach_fused import ForeachSteps, apply_foreach, step_classes
from tracetriage.analyzers.whatif.levers.spec import Assumption, Context, LeverSpec, Measured, Options, Recognise, went

MULTI_TENSOR = ("aten::_foreach_", "aten::_fused_")   # ops that already walk many tensors per launch
# ops that create a tensor (and fill it): inside an optimizer step, its state made (_creating_state)
STATE_CREATION = frozenset({"aten::zeros_like", "aten::zeros", "aten::ones_like", "aten::full_like", "aten::full"})
# torch.optim's classes that take foreach=True, and those that take fused=True too (their constructors' signatures,
# torch 2.4 to 2.13; Adafactor from 2.5). Another class (Shampoo, a user's own) has neither flag: naming one would
# invent its API (hta-sampled-rank0's Shampoo step was told "torch.optim's fused=True", a one-line knob in hand).
TORCH_FOREACH_OPTIMIZERS = frozenset({"Adadelta", "Adafactor", "Adagrad", "Adam", "Adamax", "AdamW", "ASGD", "NAdam",
                                      "RAdam", "RMSprop", "Rprop", "SGD"})
TORCH_FUSED_OPTIMIZERS = frozenset({"Adagrad", "Adam", "AdamW", "SGD"})


@dataclass(frozen=True)
class StepFused(Assumption):
    steps: int = 0                   # Optimizer.step ranges with per-parameter kernels
    kernels_per_step: int = 0        # the per-parameter kernels one step launches, median
    rate_source: str = ""            # "bytes" (costed ops) or "latency" (each kernel's fixed cost removed)
    foreach: ForeachSteps = ForeachSteps()   # steps already foreach, priced as one fused pass each
    optimizers: tuple[str, ...] = ()  # the classes whose Optimizer.step ranges the trace records (a wrapper's too)

    @property
    def optimizer(self) -> str:
        """The one class the steps are of ("": none recorded, or several)."""
        return self.optimizers[0] if len(self.optimizers) == 1 else ""

    @property
    def foreach_already(self) -> bool:
        """Every priced step runs foreach passes already: the change is fused=True, one pass in place of them."""
        return bool(self.foreach.steps) and self.foreach.steps == self.steps

    @property
    def api_in_hand(self) -> bool:
        """The flag the change needs is the class's own: fused=True where every step runs foreach passes already,
        foreach=True (or fused=True) for per-parameter kernels; a class torch.optim does not have takes neither."""
        # (no class recorded: the words name torch.optim's flags as a choice, not a class; several, each must take it)
        flagged = TORCH_FUSED_OPTIMIZERS if self.foreach_already else TORCH_FOREACH_OPTIMIZERS
        return all(o in flagged for o in self.optimizers)


def multi_tensor_flags(optimizer: str | None) -> str:
    """The flags that make a per-parameter step multi-tensor, as the class takes them (None: any of torch.optim's)."""
    return "fused=True (or foreach=True)" if optimizer is None or optimizer in TORCH_FUSED_OPTIMIZERS \
        else "foreach=True"


def per_param_calls(c: Context) -> tuple[np.ndarray, np.ndarray]:
    """Launch calls made inside Optimizer.step/zero_grad ranges by per-parameter ops (not _foreach_/_fused_),
    and the window each belongs to."""
    g, ev, tr = c.g, c.trace.ev, c.trace
    s, e, k, _ = c.construct_windows(Construct.OPTIMIZER)
    win = np.full(g.n_calls, NONE, np.int64)
    if not len(s) or not g.n_calls:
        return np.zeros(0, np.int64), win
    c_key = c.call_keys
    for key in distinct(k).tolist():
        idx = np.flatnonzero(k == key)
        m = np.flatnonzero(c_key == key)
        j = np.searchsorted(s[idx], g.c_start[m], side="right") - 1
        inside = (j >= 0) & (g.c_start[m] < e[idx][np.maximum(j, 0)])
        win[m[inside]] = idx[j[inside]]
    op = tr.op_of[g.c_row]
    is_op = np.flatnonzero(op != NONE)
    is_op = is_op[ev.cat[op[is_op]] == CPU_OP]
    multi = np.zeros(g.n_calls, bool)      # the call's op walks many tensors per launch (asked once per op name)
    multi[is_op] = name_flags(tr, op[is_op], lambda n: n.startswith(MULTI_TENSOR))
    calls = np.flatnonzero((win != NONE) & g.c_issues & (g.c_kind == dg.LAUNCH_CALL) & ~multi)
    return calls[~_creating_state(c, calls)], win


def _creating_state(c: Context, calls: np.ndarray) -> np.ndarray:
    """Per call: launched inside an op that creates a tensor (zeros_like's fill): an optimizer's state made on its
    first step, per parameter whatever its flags (fused=True initialises state per parameter too), so no fused step
    removes it. A step that makes it every step is an optimizer built anew each step (fresh12 distilbert: 208
    zeros_like fills per AdamW step beside its foreach passes were priced as 'per-parameter kernels' fused=True
    would fuse, −17%)."""
    tr, g = c.trace, c.g
    made = np.zeros(len(calls), bool)
    ops = tr.idx(CPU_OP)
    ops = ops[name_flags(tr, ops, lambda n: n in STATE_CREATION)]
    if not len(ops) or not len(calls):
        return made
    o_key, c_key, start = thread_keys(tr.ev, ops), c.call_keys[calls], g.c_start[calls]
    for key in distinct(o_key).tolist():
        mine = ops[o_key == key]            # (sorted by start; creators do not nest in one another)
        at = np.flatnonzero(c_key == key)
        j = np.searchsorted(tr.ev.start[mine], start[at], side="right") - 1
        made[at] = (j >= 0) & (start[at] < tr.ev.end[mine][np.maximum(j, 0)])
    return made


def apply(c: Context, p, o: Options) -> tuple[StepFused, dict]:
    g = c.g
    calls, win = per_param_calls(c)
    windows, per_step = np.unique(win[calls], return_counts=True)
    # a step that launches a handful of kernels is multi-tensor already: nothing to fuse
    windows = windows[per_step >= 4]
    # a step already foreach: its passes become one fused pass (foreach_fused)
    fe = apply_foreach(c, p, win, windows)
    if not len(windows):
        return (StepFused("fused_optimizer", fe.launches, steps=fe.steps, kernels_per_step=fe.passes, foreach=fe,
                          optimizers=step_classes(c)),
                {"steps": fe.steps, "per_param_launches": 0, "fused_kernels": fe.steps,
                 "foreach_launches": fe.launches})
    kb = c.kernel_bytes
    bw = c.memory_rate
    source = "bytes" if kb is not None and bw else "latency"
    # each window's calls (in call order) and kernels (in graph order), as slices of arrays sorted by window
    kept = np.zeros(int(win.max()) + 1, bool)
    kept[windows] = True
    cw_all = calls[kept[win[calls]]]
    cw_all = cw_all[np.argsort(win[cw_all], kind="stable")]
    win_of_call = np.full(g.n_calls, NONE, np.int64)
    win_of_call[cw_all] = win[cw_all]
    act_win = np.where(g.g_call >= 0, win_of_call[np.maximum(g.g_call, 0)], NONE)
    acts_all = np.flatnonzero((act_win != NONE) & g.g_linked & (g.g_cat == KERNEL))
    acts_all = acts_all[np.argsort(act_win[acts_all], kind="stable")]
    call_at = np.searchsorted(win[cw_all], windows, side="left"), np.searchsorted(win[cw_all], windows, side="right")
    act_at = (np.searchsorted(act_win[acts_all], windows, side="left"),
              np.searchsorted(act_win[acts_all], windows, side="right"))
    fused_kernels = 0
    for i in range(len(windows)):
        cw = cw_all[call_at[0][i]:call_at[1][i]]
        first, rest = cw[0], cw[1:]
        # host: the per-parameter ops' dispatch and launches go; the step's own Python stays
        p.c_dur[rest] = 0
        p.c_gap[rest] = g.c_host[rest]
        acts = acts_all[act_at[0][i]:act_at[1][i]]
        if not len(acts):
            continue
        dur = g.g_dur[acts]
        floor = int(dur.min())
        nbytes = float(kb[g.g_row[acts]].sum()) if source == "bytes" else 0.0
        fused = max(floor, int(nbytes / bw)) if nbytes > 0 else floor + int(np.sum(dur - floor))
        head = acts[np.argmin(g.g_start[acts])]
        p.g_dur[acts] = 0
        p.g_gap[acts] = 0
        p.g_dur[head] = fused
        p.g_call[head] = first
        fused_kernels += 1
    return (StepFused("fused_optimizer", len(calls) + fe.launches, steps=len(windows) + fe.steps,
                      kernels_per_step=int(np.median(per_step.tolist())), rate_source=source, foreach=fe,
                      optimizers=step_classes(c)),
            {"steps": len(windows) + fe.steps, "per_param_launches": len(calls),
             "fused_kernels": fused_kernels + fe.steps, "foreach_launches": fe.launches})


def says(a: StepFused) -> str:
    if a.count == 0:
        return "no optimizer step with per-parameter kernels or foreach passes in this trace (none, or fused already)"
    fe = a.foreach
    if fe.steps and fe.steps == a.steps:
        passes = count(fe.passes, 'foreach pass', 'foreach passes')
        return (f"the {passes} of each {fe.optimizer} step ({count(fe.steps, 'step')}, "
                f"{units.duration_ns(fe.kernel_ns)} of kernels) become one fused pass: {fe.fused_accesses} tensor "
                f"reads and writes per parameter element in place of {fe.accesses}, at the rate its passes reach here "
                f"({units.duration_ns(fe.fused_ns)}); their launches and dispatch vanish but the first")
    rate = ("the same bytes at the rate this trace's memory-bound kernels reach" if a.rate_source == "bytes" else
            "the same work without each kernel's fixed cost")
    return (f"the ~{a.kernels_per_step:,} per-parameter kernels of each optimizer step ({count(a.steps, 'step')}) "
            f"become one multi-tensor kernel ({rate}); their dispatch and launch calls vanish, "
            f"the step's own Python stays")


def per_param_launches(m: Measured) -> int:
    return m.whatif.lever("fused_optimizer").assumption.count


def not_into_a_graph(before: Measured, after: Measured) -> bool:
    """The per-parameter launches went without the step moving into a CUDA graph (a graphed step launches
    its per-parameter kernels from one graph launch: cuda_graphs' change, not this one)."""
    return graph_launches(after) <= graph_launches(before)


SPEC = LeverSpec(
    name="fused_optimizer", effort=1, cause=Cause.LAUNCH_OVERHEAD, apply=apply, says=says,
    words="a fused optimizer (foreach/fused)",
    fix="torch.optim's fused=True in place of its foreach passes or foreach=False's per-parameter kernels",
    recognise=Recognise(order=3, evidence="optimizer_launches", because="its per-parameter optimizer kernels went",
                        amount=per_param_launches, acted=lambda m: m.idle_in(Construct.OPTIMIZER),
                        applied=went, also=not_into_a_graph),
    experiment=Experiment.FUSE_OPTIMIZER, applied_words="a fused optimizer",
    # fused=True is an argument of the optimizer's constructor (fresh4 gpt2_adamw_foreach_off: beside CUDA graphs
    # the report named zero_grad(set_to_none=True), −4%, and not fused=True, −32% predicted, −21% measured)
    in_hand=True)
