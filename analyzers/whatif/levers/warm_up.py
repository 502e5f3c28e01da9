"""warm_up: the one-time set-up in the profile does not recur in the steady state.

The fix: run a few steps before the profiler starts (`torch.profiler.schedule(wait=1, warmup=2,
active=3)`), or load every kernel module up front (`CUDA_MODULE_LOADING=EAGER`), then profile. In the
graph the set-up stretches that held the host (first calls of ops far longer than their later calls,
cuBLAS/cuDNN handle creation, lazy module loading in a first launch, a first cudaMalloc/cudaFree:
analyzers.analyses.idle) vanish; every call keeps at least a launch's cost.
"""
from __future__ import annotations

from dataclasses import dataclass

from analyzers.model.units import duration_ns
from analyzers.model.verdicts import Construct, Experiment
from analyzers.whatif.levers.host_windows import remove_host_windows
from analyzers.whatif.levers.spec import Assumption, Context, LeverSpec, Measured, Options, Recognise, went


@dataclass(frozen=True)
class SetUpGone(Assumption):
    removed_ns: int = 0              # host time of set-up taken out


def apply(c: Context, p, o: Options) -> tuple[SetUpGone, dict]:
    s, e, k = c.setup_windows
    n, removed = remove_host_windows(c, p, s, e, k)
    return SetUpGone("warm_up", len(s), removed_ns=removed), {"windows": int(len(s)), "calls": n,
                                                              "host_ns": removed}


def says(a: SetUpGone) -> str:
    if a.count == 0:
        return "no one-time set-up in this trace: nothing to warm up"
    return (f"the {a.count} set-up stretches (first calls, handle creation, lazy module loading: "
            f"{duration_ns(a.removed_ns)} of host time) do not recur; every later call stays as traced")


def setup_stretches(m: Measured) -> int:
    return m.whatif.lever("warm_up").assumption.count


SPEC = LeverSpec(
    name="warm_up", cause=None, apply=apply, says=says, words="warming up before profiling",
    fix="the profile starts after warm-up steps run outside it (cold process vs the same after a warm-up)",
    recognise=Recognise(order=2, evidence="setup", because="its one-time set-up went", amount=setup_stretches,
                        acted=lambda m: m.idle_in(Construct.SETUP),
                        applied=went),
    experiment=Experiment.WARM_UP, applied_words="a warm-up")
