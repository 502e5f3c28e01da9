"""warm_up: the one-time set-up in the profile does not recur in the steady state.

The fix: run a few steps before the profiler starts (`torch.profiler.schedule(wait=1, warmup=2,
active=3)`), or load every kernel module up front (`CUDA_MODULE_LOADING=EAGER`), then profile. In the
graph the set-up stretches that held the host (first calls of ops far longer than their later calls,
cuBLAS/cuDNN handle creation, lazy module loading in a first launch, a first cudaMalloc/cudaFree:
tracetriage.analyzers.analyses.setup) vanish; every call keeps at least a launch's cost. Where the trace repeats a
step (ProfilerStep#N, Optimizer.step), its later steps show the steady state: each thread's host time in
an early step (its stretches and calls, not its waits) is scaled down to what that thread takes in a
steady step, the median of the later ones. Where the profiler marked no step, the steps found from the trace's
repeated ops (tracetriage.analyzers.analyses.steps) whose first ones were kept apart as paying set-up are those
steps (heldout-user11 hateful_v100_infer: a cold first batch of 10.73 s, worker start-up and first cuDNN/cuBLAS
calls inside it, beside a steady one of 0.32 s, priced at -47% from its first calls alone).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.setup import early_steps, setup_step_bounds, step_bounds
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.units import duration_ns, integer
from tracetriage.analyzers.model.verdicts import Construct, Experiment
from tracetriage.analyzers.whatif.levers.host_windows import remove_host_windows
from tracetriage.analyzers.whatif.levers.spec import Assumption, Context, LeverSpec, Measured, Options, Recognise, went


@dataclass(frozen=True)
class SetUpGone(Assumption):
    removed_ns: int = 0              # host time of set-up taken out
    early_steps: int = 0             # early steps scaled to the steady step's host time (0: windows removed)
    cold_pass: bool = False          # one cold pass: every call past its name's warm cost (analyses.setup)
    idle_ns: int = 0                 # the Next's price where the replay finds less: the device's idle while the host
                                     # paid set-up (triage.report.priced_by_setup_idle)


def apply(c: Context, p, o: Options) -> tuple[SetUpGone, dict]:
    s, e, k = c.setup_excess
    if not len(s):
        return SetUpGone("warm_up", 0), {"windows": 0, "calls": 0, "host_ns": 0}
    bounds = step_bounds(c.trace)
    early = early_steps(bounds)
    if not early and not c.one_pass:
        bounds, early = setup_step_bounds(c.trace)
    if early:
        # the set-up windows go first, then what the early steps still hold above a steady step's host time: scaling
        # alone spreads the cut over every call of the early step, so a 21.5 ms lazy module load in a first launch
        # kept a quarter of itself on the critical path (heldout-user12 decode_5090_sync: -11% where its windows
        # alone take out 21.6 ms, -39%)
        _, removed = remove_host_windows(c, p, s, e, k)
        removed += _steady_early_steps(c, p, bounds, early)
        return SetUpGone("warm_up", len(s), removed_ns=removed, early_steps=early), {"windows": len(s),
                                                                                   "steps": len(bounds) - 1,
                                                                  "host_ns": removed}
    n, removed = remove_host_windows(c, p, s, e, k)
    return SetUpGone("warm_up", len(s), removed_ns=removed, cold_pass=c.one_pass), {"windows": len(s),
                                                                                          "calls": n,
                                                                                          "host_ns": removed}


def _steady_early_steps(c: Context, p, bounds: np.ndarray, early: int) -> int:
    """Scale each thread's host time in the early steps to its steady step's; returns the host ns taken out."""
    g = c.g
    step = np.searchsorted(bounds, g.c_start, side="right") - 1          # the step each call begins in
    inside = (step >= 0) & (step < len(bounds) - 1)
    own_gap = np.where(p.c_wake >= 0, 0, p.c_gap)                        # a thread's waits are no host work
    own_dur = np.where(p.c_blocked, 0, p.c_dur)
    removed = 0
    for th in distinct(g.c_thread).tolist():
        mine = inside & (g.c_thread == th)
        per_step = np.bincount(step[mine], weights=(own_gap + own_dur)[mine], minlength=len(bounds) - 1)
        later = per_step[early:]
        if not len(later) or not (later > 0).any():
            continue
        steady = float(np.median(later[later > 0]))
        for i in range(early):
            if per_step[i] <= steady:
                continue
            f = steady / per_step[i]
            m = np.flatnonzero(mine & (step == i))
            before = int((own_gap[m] + own_dur[m]).sum())
            scale = m[p.c_wake[m] < 0]
            p.c_gap[scale] = (p.c_gap[scale] * f).astype(p.c_gap.dtype)
            run = m[~p.c_blocked[m]]
            p.c_dur[run] = (p.c_dur[run] * f).astype(p.c_dur.dtype)
            after = int((np.where(p.c_wake[m] >= 0, 0, p.c_gap[m]) + np.where(p.c_blocked[m], 0, p.c_dur[m])).sum())
            removed += before - after
    return removed


def says(a: SetUpGone) -> str:
    if a.count == 0:
        return "no one-time set-up in this trace: nothing to warm up"
    if a.early_steps:
        first = "the first step's" if a.early_steps == 1 else f"the first {integer(a.early_steps)} steps'"
        return (f"{first} host time, {duration_ns(a.removed_ns)} more than "
                f"a steady step's (the median of the later ones), does not recur; every later step stays as traced")
    if a.cold_pass:
        return (f"one pass, no step repeated: the {integer(a.count)} set-up stretches (every op and call past its "
                "name's warm cost, the lower quartile of its calls, and with no op recorded every host stretch between "
                "calls past the lower quartile of those: first calls per shape, first launches loading their modules, "
                f"allocator growth: {duration_ns(a.removed_ns)} of host time) do not recur; the warm costs stay")
    return (f"the {integer(a.count)} set-up stretches (first calls, handle creation, lazy module loading: "
            f"{duration_ns(a.removed_ns)} of host time) do not recur; every later call stays as traced")


def setup_stretches(m: Measured) -> int:
    return m.whatif.lever("warm_up").assumption.count


SPEC = LeverSpec(
    name="warm_up", effort=1, cause=None, apply=apply, says=says, words="warming up before profiling",
    fix="the profile starts after warm-up steps run outside it (cold process vs the same after a warm-up)",
    recognise=Recognise(order=2, evidence="setup", because="its one-time set-up went", amount=setup_stretches,
                        acted=lambda m: m.idle_in(Construct.SETUP),
                        applied=went),
    experiment=Experiment.WARM_UP, applied_words="a warm-up")
