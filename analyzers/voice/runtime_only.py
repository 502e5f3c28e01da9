"""A runtime-only capture's host-work Next: the untraced host time between launches is the ops' own eager dispatch.

A trace recorded with CUDA activity alone (no CPU op: ProfilerActivity.CPU off) shows launch calls and kernels and
nothing of what the host did between them, so PyTorch's per-op dispatch (argument checks, the dispatcher, the
allocator, the launch's preparation) reads as untraced host work. heldout-user18 swin_a4000_warm: 464 launches, the
GPU idle 46% in 28 gaps each holding only a launch, read "take the host work off the critical path: issue the GPU
work before the Python that does not need its result, move the rest out of the loop or precompute it; profile the
host (py-spy)" beside a saving that was every idle gap gone (−49%, the GPU's busy time left), where the fitting knob is
torch.compile (fewer ops to dispatch, launched from generated code) or CUDA graphs (no dispatch at all on replay).
The Next names that knob, says the capture lacks CPU ops, and says the saving is a bound.

What would make it fire falsely: user Python between launches that is not dispatch (a data pipeline on the main
thread); such gaps run long (milliseconds), so the words fire only where the untraced host time is most of the host
work and its gaps are short (median under DISPATCH_GAP_US), and they still ask for a capture with CPU activity.
"""
from __future__ import annotations

from tracetriage.analyzers.model.health import Problem
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.voice.claims import saving
from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS

UNTRACED_MOSTLY = 0.9    # this share of the host-work gaps with nothing traced in them
DISPATCH_GAP_US = 500.0  # a median host-work gap under this: an op's dispatch, not a pipeline stage


def dispatch_between_launches(a) -> bool:
    """A runtime-only capture whose host work is short untraced stretches between launches."""
    ev = a.evidence.get(Cause.HOST_WORK)
    health = getattr(a, "health", None)
    return (health is not None and health.has(Problem.OPS_NOT_RECORDED) and ev is not None
            and getattr(ev, "untraced_share", 0.0) >= UNTRACED_MOSTLY and ev.median_gap_us < DISPATCH_GAP_US)


def host_work_advice() -> str:
    """The Next's fix for that dispatch."""
    return ("cut the ops' eager dispatch between launches: torch.compile the model (fewer ops, launched from generated "
            "code), then CUDA graphs (mode='reduce-overhead') to replay the step without dispatch; the capture "
            "recorded no CPU op (a runtime-only capture), so the untraced host time between launches is most likely "
            "PyTorch's own per-op dispatch, not your code: profile with activities=[ProfilerActivity.CPU, "
            "ProfilerActivity.CUDA] to see it")


def prediction_note(a) -> str:
    """After the host-work lever's prediction: it is every such gap gone, a bound; CUDA graphs' own replay beside."""
    if not dispatch_between_launches(a) or a.next_experiment.cause is not Cause.HOST_WORK:
        return ""
    graphs = next((c for c in getattr(a, "lever_choices", ()) or () if c.lever == CUDA_GRAPHS), None)
    beside = (f"; CUDA graphs alone {saving('next.runtime_only.graphs_saving', graphs.saving_ns, graphs.baseline_ns)}"
              if graphs is not None and graphs.saving_ns > 0 else "")
    return f": every untraced host gap gone, a bound on what cutting the dispatch saves{beside}"


WASTE = "rewriting your Python by this profile: it does not show whose host time the gaps are"
