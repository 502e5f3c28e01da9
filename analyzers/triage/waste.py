"""The week's waste: the lever a report says would waste the week, beside its Next.

It is one that acts on something in this trace and predicts least; never a warm-up (no change to the program) nor a
knob (a one-line change costs a run, not a week). Where no lever is the Next, the cause's fixed words name the waste
unless the what-if prices a lever those words name as a fix.
"""
from __future__ import annotations

from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.triage.lever_choice import LeverChoice
from tracetriage.analyzers.whatif.levers import HEADROOM, LEVERS, NAMES


def weeks_waste(choices: tuple[LeverChoice, ...], best: LeverChoice | None,
                graphed: bool = False, launch_bound: bool = False) -> LeverChoice | None:
    """The lever that acts on something in this trace and predicts the least (a tempting week's work);
    when no other acts on anything, the one that predicts least. A trace that replays CUDA graphs already is
    not told that CUDA graphs would waste the week (a graph-replayed range was told so
    at "+12%"). A launch-bound span (`launch_bound`: launch overhead the idle's largest cause) is not told that
    fusing would: the fuse lever prices each chain as one compiled call that costs the host about what its eager
    launches did, but a whole step compiled cuts the launches and their dispatch, the very idle the report names
    (fresh10 conformer and convnext_accum, heldout-user16 cifar_mi300_r3: "fusing the elementwise chains,
    predicted 0%" beside launch overhead holding 38-79% of the span, thousands of µs kernels)."""
    # (warming up is no change to the program: never the week's waste)
    # (nor is a knob, a one-line change: trying it costs a run, not a week)
    rest = [c for c in choices if (best is None or c.lever != best.lever and c.saving_ns < best.saving_ns)
            and LEVERS[c.lever].experiment is not Experiment.WARM_UP and LEVERS[c.lever].knob is None
            and not (graphed and LEVERS[c.lever].done_where_graphs_replay)
            and not (launch_bound and LEVERS[c.lever].experiment is Experiment.FUSE)]
    acting = [c for c in rest if c.assumption is None or c.assumption.count > 0]
    pool = acting or rest
    return min(pool, key=lambda c: (c.saving_ns, -NAMES.index(c.lever))) if pool else None


# The levers each cause's fixed "would waste the week" words name (voice/causes.py: CauseSpec.waste).
WASTE_WORDS_NAME: dict[Cause, tuple[str, ...]] = {
    Cause.LAUNCH_OVERHEAD: (HEADROOM,),                       # "tuning kernels"
    Cause.HOST_WORK: ("fuse", "cuda_graphs", HEADROOM),       # "torch.compile, CUDA graphs or faster kernels"
    Cause.SYNCHRONIZATION: (HEADROOM,),                       # "faster kernels"
    Cause.DATA_TRANSFER: (HEADROOM, "fuse"),                  # "faster kernels or torch.compile"
}


def waste_beside_words(cause: Cause, choices: tuple[LeverChoice, ...], graphed: bool,
                       floor: float, launch_bound: bool = False) -> LeverChoice | None:
    """Where no lever is the Next, the cause's fixed words say what would waste the week, unless the what-if
    prices a lever they name as a fix (saving `floor` of the span or more: the report's LEVER_FLOOR): then the
    lever that saves least is said instead. t4_amp_train.json (a T4) was told "torch.compile, CUDA graphs or faster
    kernels" would waste the week while whatif ranked cuda_graphs first at −13% (a "would waste" lever saves least)."""
    named = [c for c in choices if c.lever in WASTE_WORDS_NAME.get(cause, ())]
    if not any(c.saving_ns >= floor * c.baseline_ns for c in named):
        return None
    # (never the cause's own lever: "overlap the copies" beside "would waste the week: pinned memory and async copies")
    return weeks_waste(tuple(c for c in choices if LEVERS[c.lever].cause is not cause), None, graphed, launch_bound)
