"""no_recompiles: torch.compile compiles once; the compile stretches in the profile do not recur.

The fix: mark the dimensions that change as dynamic (`torch.compile(dynamic=True)`,
`torch._dynamo.mark_dynamic(x, 1)`), or bucket the shapes (pad sequence lengths to a few sizes), so
a new shape does not recompile. In the graph every stretch of host time inside dynamo/Inductor's
compile spans (tracetriage.analyzers.model.constructs: dynamo, `... (dynamo_timed)`, entire_frame_compile,
compile_fx, autotuning) vanishes, and so does the GPU work launched from inside them (autotuning's
benchmark runs) with the calls that launched it; the first call of code compiled in the profile runs as a warm
one (its host time between launches, its new kernels' module loading, goes); the compiled code's own launches
stay, at a launch's cost each.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.constructs import compile_ids
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.units import count, duration_ns
from tracetriage.analyzers.model.verdicts import Construct, Experiment
from tracetriage.analyzers.whatif.levers.host_windows import remove_host_windows
from tracetriage.analyzers.whatif.levers.spec import Assumption, Context, LeverSpec, Measured, Options, Recognise, went


@dataclass(frozen=True)
class CompilesGone(Assumption):
    removed_ns: int = 0              # host time inside compile spans taken out
    gpu_ops_gone: int = 0            # GPU work launched from inside them (autotuning's benchmark runs)
    recompiles: int | None = None    # compilations of a frame compiled before (compile id N/1, N/2 ...); 0: every
                                     # compilation is a function's first; None: the trace names no compile ids


def apply(c: Context, p, o: Options) -> tuple[CompilesGone, dict]:
    s, e, k, n_runs = c.construct_windows(Construct.COMPILE)
    live = int((p.g_dur > 0).sum())
    n, removed = remove_host_windows(c, p, s, e, k, drop_gpu=True)
    gone = live - int((p.g_dur > 0).sum())
    # the first call of code compiled in the profile (it autotuned inside: a compile window within it) loads its
    # new kernels and builds its launchers, untraced host time between and after its launches (compile_recompile-
    # before: 0.3-0.9 ms before each new Triton kernel's first launch, 5.2 ms after the last): its host time goes
    # too, its launches keep a launch's cost and their kernels stay (the compiled code runs every step)
    fs, fe, fk = _first_calls(c, s, e, k)
    first_call_ns = remove_host_windows(c, p, fs, fe, fk)[1]      # (not said as host time in dynamo and Inductor)
    ids = compile_ids(c.trace.names)
    again = sum(1 for _, attempt in ids if attempt > 0) if ids else None
    return (CompilesGone("no_recompiles", n_runs, removed_ns=removed, gpu_ops_gone=gone, recompiles=again),
            {"compiles": n_runs, "calls": n, "host_ns": removed, "gpu_ops_gone": gone,
             "first_call_host_ns": first_call_ns})


def _first_calls(c: Context, s, e, k):
    """The compiled regions (Torch-Compiled Region, a CompiledFxGraph call) that run code compiled in the profile:
    a compile window of their thread lies after the previous region ended and before this one ends (dynamo's
    compile before the call, or Inductor autotuning inside it)."""
    rs, re_, rk, _ = c.construct_windows(Construct.COMPILED)
    if not len(rs) or not len(s):
        return rs[:0], re_[:0], rk[:0]
    first = np.zeros(len(rs), bool)
    for key in distinct(rk).tolist():
        m = np.flatnonzero(rk == key)
        m = m[np.argsort(rs[m], kind="stable")]
        prev_end = np.r_[np.iinfo(np.int64).min, np.maximum.accumulate(re_[m])[:-1]]
        ws, we = iv.union(s[k == key], e[k == key])      # disjoint, in order
        j = np.searchsorted(ws, re_[m], side="left") - 1    # the last compile window starting before it ends
        first[m] = (j >= 0) & (we[np.maximum(j, 0)] > prev_end)
    return rs[first], re_[first], rk[first]


def says(a: CompilesGone) -> str:
    if a.count == 0:
        return "no torch.compile compilation in this trace: nothing recompiles"
    # GPU work launched inside a compile span: autotuning's benchmarks, a CUDA-graph tree's warm-up runs
    launched = f", and {count(a.gpu_ops_gone, 'GPU op')} launched while compiling" if a.gpu_ops_gone else ""
    if a.recompiles == 0:
        # a compile-warm-up trace: each function compiled once, for its first call (issue 33: "stop the recompiles"
        # where no compile id ever went past N/0)
        return (f"the {count(a.count, 'compilation')} in the profile ({duration_ns(a.removed_ns)} of host time in "
                f"dynamo and Inductor{launched}) are first compilations (no function compiles again): one-time "
                "set-up, which the steady state never pays; the compiled code's launches stay")
    # (the replay's assumption, said as one: "happen once, before it" read as a fact about a trace whose
    # compilations are inside it, realworld recompile_gpt2)
    return (f"the {count(a.count, 'compilation')} in the profile ({duration_ns(a.removed_ns)} of host time in "
            f"dynamo and Inductor{launched}) would run a single time, before the profiled steps, with "
            "shapes that no longer change; the compiled code's launches stay")


def compiles(m: Measured) -> int:
    return m.whatif.lever("no_recompiles").assumption.count


SPEC = LeverSpec(
    name="no_recompiles", effort=1, cause=None, apply=apply, says=says, words="compiling once (no recompiles)",
    fix="torch.compile(dynamic=True) compiled once in warm-up, fed the same new shapes",
    recognise=Recognise(order=1, evidence="compiles", because="its recompilations went", amount=compiles,
                        acted=lambda m: m.idle_in(Construct.COMPILE),
                        applied=went),
    experiment=Experiment.COMPILE_ONCE, applied_words="no_recompiles")
