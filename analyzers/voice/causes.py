"""One record per idle cause: everything a reader is told or shown of a cause, in one place.

    CAUSE_SPECS[Cause.SYNCHRONIZATION].words      # "synchronization"

The record (one frozen spec per cause, as the what-if levers have theirs: tracetriage.analyzers.whatif.levers):

    cause    the Cause (tracetriage.analyzers.model.verdicts) it speaks of
    words    its name in a sentence: "mostly launch overhead"
    stretch  one stretch of it, as the outlier step's words name it: "a 41.0 ms host stretch"
    advice   its one advice text: the evidence's first experiment and the Next line's fix (voice.common.advice
             says it in the user's terms where the evidence names whose code it is)
    waste    what would waste the week while this cause holds the idle
    colour   its colour wherever it is drawn: the dashboard's idle lane, bars and legends (and its sync calls),
             the notebook's idle bar
    mark     its letter in the terminal timeline's idle row (tracetriage.drills.render), and mark_style the
             terminal colour the letter is printed in

Every audience reads these: voice.common's CAUSE_WORDS, ADVICE and WASTE are views of them, the dashboard's
and the notebook's palettes and the drills' marks too. Adding a cause is its member in the model's enum and
its record here; tests/test_causes.py checks that every cause has exactly one.
"""
from __future__ import annotations

from dataclasses import dataclass

from tracetriage.analyzers.model.verdicts import CAUSES, Cause


@dataclass(frozen=True)
class CauseSpec:
    cause: Cause
    words: str
    stretch: str
    advice: str
    waste: str
    colour: str         # "#rrggbb"
    mark: str           # one capital letter (lower case where the cause holds under a third of a slice)
    mark_style: str     # a rich colour name


SPECS: tuple[CauseSpec, ...] = (
    CauseSpec(
        Cause.LAUNCH_OVERHEAD, words="launch overhead", stretch="run of launch gaps",
        advice="cut launches: torch.compile to fuse, then CUDA graphs (mode='reduce-overhead'), or more work per "
               "launch (bigger batch)",
        waste="tuning kernels: they already finish before the next launch arrives",
        colour="#e45756", mark="L", mark_style="yellow"),
    CauseSpec(
        Cause.HOST_WORK, words="host work", stretch="host stretch",
        advice="take the host work off the critical path: issue the GPU work before the Python that does not need "
               "its result, move the rest out of the loop or precompute it; profile the host (py-spy) to see what "
               "it is",
        waste="torch.compile, CUDA graphs or faster kernels: the device is waiting for the host, not on launches",
        colour="#f58518", mark="H", mark_style="magenta"),
    CauseSpec(
        Cause.SYNCHRONIZATION, words="synchronization", stretch="wait in a sync",
        advice="remove or defer the syncs: keep values and decisions on the device, read them once every N steps",
        waste="faster kernels: they make the drain come sooner, not the host's next launch",
        colour="#b279a2", mark="S", mark_style="red"),
    CauseSpec(
        Cause.DATA_TRANSFER, words="data transfer", stretch="copy",
        advice="pin host memory, copy with non_blocking=True on a side stream so copies overlap compute, or keep "
               "the data resident on the device",
        waste="faster kernels or torch.compile: compute is not what the device waits on",
        colour="#4c78a8", mark="T", mark_style="cyan"),
    CauseSpec(
        Cause.OTHER, words="other", stretch="gap the trace does not explain",
        advice="capture again with both CPU and CUDA activity recorded (ProfilerActivity.CPU and "
               "ProfilerActivity.CUDA) so that every kernel links to the call that launched it",
        waste="acting on this trace's idle time: what caused it was not recorded",
        colour="#9d9d9d", mark="O", mark_style="grey50"),
)

# cause -> its record, in the enum's order (the order of every legend, table and stacked bar)
CAUSE_SPECS: dict[Cause, CauseSpec] = {c: next(s for s in SPECS if s.cause is c) for c in CAUSES}
