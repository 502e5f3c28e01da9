"""cudnn_benchmark: torch.backends.cudnn.benchmark = True where shapes repeat (left unpriced), = False where cuDNN's
benchmark trials run again in every step (priced: the trials go).

With benchmark off (PyTorch's default) cuDNN's heuristics pick each convolution's algorithm; with it on, the first
call of each new shape times the candidates and keeps the fastest. The trace shows where the knob applies:
convolutions run by cuDNN (aten::cudnn_convolution, aten::cudnn_convolution_transpose, and their backward in
aten::convolution_backward), whose kernels are cuDNN's. It does not show what the knob would buy: a trace records
the algorithm cuDNN picked, never the ones it did not try, nor the flag (with it on, the trials ran in the first
calls, outside a warmed-up window). So there the replay changes nothing (a prediction of 1.00, never a made-up
saving) and says so; `tracetriage try SCRIPT` measures it (levers/outside.py: cudnn_benchmark).

Where the trace shows the trials themselves (analyses.trial_kernels: inside a cuDNN convolution call, kernels timed
between event records and waited for, then the chosen one) in two or more profiled steps, the input shapes change
from step to step and every step pays them: the fix is the other way round, benchmark off (or shapes that repeat),
and the trace does show what it buys. Each trial-running call's stretch up to its last wait goes: the candidates'
kernels and memsets, their launches, event records and waits, and the host's time between them (building the
candidates' plans: 30-460 ms a call on fresh9 wav2letter_benchmark_dynamic_lengths, untraced); what the call runs
after its last wait, the chosen algorithm's kernel, stays. Not in the trace, so estimated: the one plan cuDNN's
heuristics build per new shape with benchmark off (1-4 ms a call in that pair's after trace), as the host's time
before the call's first event record (every candidate's plan) over its candidates (fresh9 wav2letter: predicted
0.032 of the span, measured 0.035). Trials in one step only (the first, or the one cold step of a trace) are set-up
with shapes that repeat: warm_up's, not priced here.

diff recognises it from what changed: the same convolutions (as many convolution ops, with the same input shapes and
dtypes) ran other cuDNN kernels. A model or batch change changes the shapes, autocast the dtypes; channels_last and
TF32 keep both, but their own recognisers (the layout transposes went, the fp32 kernels became TF32 ones) come first
(Recognise.order). Kernel names alone cannot tell the precision apart: cuDNN names some of its kernels only by a
mangled CUTLASS template (deeplabv3's before trace), so the names' precision words are not compared.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

from tracetriage.analyzers.analyses.trial_kernels import Trials, trial_kernels
from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.knob import calls_inside, gpu_of_calls, ops_named
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
)

CUDNN_CONV = ("aten::cudnn_convolution", "aten::cudnn_convolution_transpose", "aten::convolution_backward",
              "aten::cudnn_convolution_relu", "aten::cudnn_convolution_add_relu")
NOT_CUDNN = ("elementwise", "reduce_kernel", "at::native")       # ATen's own kernels inside those ops (bias grads)


TRIAL_STEPS_AT_LEAST = 2     # trials in this many profiled steps: the shapes change, every step pays them


@dataclass(frozen=True)
class CudnnBenchmark(Assumption):
    kernel_ns: int = 0               # the cuDNN convolution kernels' time
    ops: int = 0
    trial_calls: int = 0             # priced (benchmark off): the convolution calls that ran trials in the steps
    trial_kernels: int = 0           # ... the candidates' kernels and their time on the device
    trial_ns: int = 0
    trial_host_ns: int = 0           # ... the host's time in the calls' trial stretches (plans, launches, waits)
    trial_steps: int = 0

    @property
    def off(self) -> bool:
        """Priced the other way round: the trials run in every step, benchmark off takes them out."""
        return self.trial_calls > 0


def conv_kernels(c: Context) -> tuple[np.ndarray, int]:
    """The kernels cuDNN ran for the trace's convolutions, and how many convolution ops launched them."""
    ops = ops_named(c, lambda n: n in CUDNN_CONV)
    rows = gpu_of_calls(c, calls_inside(c, ops)) if len(ops) else np.zeros(0, np.int64)
    if len(rows):
        rows = rows[~c.gpu_named(lambda n: any(k in n for k in NOT_CUDNN), rows)]
    return rows, len(ops)


def apply(c: Context, p, o: Options) -> tuple[CudnnBenchmark, dict]:
    rows, ops = conv_kernels(c)
    names = sorted({c.trace.name_of(int(r)) for r in c.g.g_row[rows].tolist()})
    detail = {"conv_ops": ops, "conv_kernel_names": names, "conv_inputs": _inputs_digest(c)}
    if not len(rows):
        return CudnnBenchmark("cudnn_benchmark", 0), detail
    a = CudnnBenchmark("cudnn_benchmark", len(rows), kernel_ns=int(c.g.g_dur[rows].sum()), ops=ops)
    t = c.once("trial_kernels", lambda: trial_kernels(c.trace))
    if t is None or t.steps < TRIAL_STEPS_AT_LEAST or not len(t.windows):
        return a, detail
    calls, gpu, host_ns = _trials_go(c, p, t)
    detail.update(trial_calls=len(t.windows), trial_kernels=len(gpu), trial_host_ns=host_ns)
    return replace(a, trial_calls=len(t.windows), trial_kernels=len(gpu), trial_ns=int(c.g.g_dur[gpu].sum()),
                   trial_host_ns=host_ns, trial_steps=t.steps), detail


def _trials_go(c: Context, p, t: Trials) -> tuple[np.ndarray, np.ndarray, int]:
    """Each trial stretch (a call's start to its last wait's end, on its thread) goes from the plan: the host calls
    starting in it (launches, event records, waits, allocations: no longer blocked, no time) with the host's time
    before each inside the stretch, and the GPU work they launched. Returns (those calls, that GPU work, the host
    time taken out)."""
    g, ev = c.g, c.trace.ev
    op, start, end, first_record, records = t.windows.T
    # one plan stays: with benchmark off the heuristics build the first plan that works where the trials built every
    # candidate's before timing them (the host's time up to the first event record), so a call keeps that time over
    # its candidates, one per pair of event records (fresh9 wav2letter: 47 ms of plans for 10 candidates before,
    # 1-4 ms a call with benchmark off)
    plan_ns = (np.maximum(first_record - start, 0) // np.maximum(records // 2, 1)).astype(np.int64)
    keys = thread_keys(ev, op)
    inside = np.zeros(g.n_calls, bool)
    cut = np.zeros(g.n_calls, np.int64)        # the part of a call's gap that lies inside its stretch
    for key in distinct(keys).tolist():
        k = np.flatnonzero(keys == key)
        k = k[np.argsort(start[k], kind="stable")]
        s, e = start[k], np.maximum.accumulate(end[k])
        m = np.flatnonzero(c.call_keys == key)
        j = np.searchsorted(s, g.c_start[m], side="right") - 1
        hit = (j >= 0) & (g.c_start[m] < e[np.maximum(j, 0)])
        m, j = m[hit], j[hit]
        inside[m] = True
        cut[m] = np.minimum(np.maximum(g.c_gap[m], 0), g.c_start[m] - s[j])
        # the stretch's one plan, kept in its longest host gap (where the candidates' plans were built)
        for jj in distinct(j).tolist():
            mine = m[j == jj]
            longest = mine[int(np.argmax(cut[mine]))]
            cut[longest] -= min(int(plan_ns[k[jj]]), int(cut[longest]))
    calls = np.flatnonzero(inside)
    gpu = gpu_of_calls(c, calls)
    p.g_dur[gpu] = 0
    p.g_gap[gpu] = 0
    host_ns = int(g.c_dur[calls].sum() + cut[calls].sum())
    p.c_dur[calls] = 0
    p.c_gap[calls] = g.c_gap[calls] - cut[calls]
    p.c_blocked[calls] = False
    return calls, gpu, host_ns


def _inputs_digest(c: Context) -> str:
    """What the convolutions were asked to compute, as one short digest: their input shapes and dtypes, in time order
    (two traces of the same model at the same sizes and precision give the same digest whatever kernels ran)."""
    ops = ops_named(c, lambda n: n in CUDNN_CONV)
    h = hashlib.sha256()
    for o in ops[np.argsort(c.trace.ev.start[ops], kind="stable")].tolist():
        dims, types, _ = c.trace.shapes(o)
        h.update(f"{c.trace.name_of(o)}{dims}{types};".encode())
    return h.hexdigest()[:16]


def says(a: CudnnBenchmark) -> str:
    if a.count == 0:
        return "no cuDNN convolution in this trace"
    if a.off:
        return (f"{units.integer(a.trial_calls)} cuDNN convolution calls in {units.integer(a.trial_steps)} profiled "
                f"steps time candidate algorithms for a new input shape ({units.integer(a.trial_kernels)} trial "
                f"kernels and memsets, {units.duration_ns(a.trial_ns)} on the device, "
                f"{units.duration_ns(a.trial_host_ns)} of the host's plans, launches and waits): with benchmark off "
                "(or shapes that repeat) they go, the chosen kernels stay, and one plan a call (its candidates' "
                "plan-building time over their number)")
    return (f"{units.integer(a.ops)} cuDNN convolutions ({units.integer(a.count)} kernels, "
            f"{units.duration_ns(a.kernel_ns)}) take the algorithm cuDNN's heuristics or its auto-tuner picked; "
            "the trace does not say which, nor what the others would take: not priced (measure it: tracetriage try "
            "SCRIPT)")


def _names(m: Measured) -> set:
    return set(m.whatif.lever("cudnn_benchmark").detail.get("conv_kernel_names", []))


def _conv_ops(m: Measured) -> int:
    return m.whatif.lever("cudnn_benchmark").detail.get("conv_ops", 0)


def other_algorithms(before: Measured, after: Measured) -> bool:
    """The same convolutions (as many ops, the same input shapes and dtypes) ran other cuDNN kernels."""
    b, a = _names(before), _names(after)
    if not b or not a or b == a or _conv_ops(before) != _conv_ops(after):
        return False
    digest = [m.whatif.lever("cudnn_benchmark").detail.get("conv_inputs") for m in (before, after)]
    return digest[0] == digest[1]


def changed_kernels(m: Measured) -> float:
    return float(len(_names(m)))


ON = "torch.backends.cudnn.benchmark = True (before the first convolution; fixed input shapes)"
OFF = ("torch.backends.cudnn.benchmark = False while the input shapes keep changing, or give the convolutions shapes "
       "that repeat (pad or bucket the lengths to a few sizes) so that the trials run once per shape")


def _change(a: Assumption) -> str:
    return OFF if isinstance(a, CudnnBenchmark) and a.off else ON


SPEC = LeverSpec(
    name="cudnn_benchmark", effort=1, cause=None, apply=apply, says=says, words="cuDNN's auto-tuner",
    fix="torch.backends.cudnn.benchmark = True (each variant in its own process: cuDNN's plan cache does not key "
        "on the flag)",
    recognise=Recognise(order=9, evidence="conv_kernel_names", because="its convolutions ran other cuDNN kernels, "
                        "other algorithms for the same shapes and dtypes", amount=changed_kernels,
                        acted=lambda m: m.kernel_busy_ns, applied=lambda before, after: True,
                        also=other_algorithms),
    applied_words="cudnn.benchmark (cuDNN's auto-tuner)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change=ON, line=_change,
              evidence="convolutions run by cuDNN: aten::cudnn_convolution / cudnn_convolution_transpose and "
                       "aten::convolution_backward launching cuDNN's kernels",
              applies="NVIDIA GPUs with cuDNN (MIOpen's find mode on ROCm), convolution models whose input "
                      "shapes repeat",
              model="not priced where shapes repeat: the algorithms cuDNN would try are not in a trace made "
                    "without them; the replay predicts no change (1.00), the knob is named where it applies. Where "
                    "cuDNN's benchmark trials run in two or more profiled steps (the shapes change), benchmark off "
                    "is priced: each call's trial stretch goes (candidates' kernels, launches, event records, waits, "
                    "plans) but one plan, and the chosen kernel stays",
              guide="Performance Tuning Guide: enable cuDNN auto-tuner", ops=("aten::cudnn_convolution",),
              priced=False))
