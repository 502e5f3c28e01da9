"""An idle cause only the cold start pays: the first of a loop's steps holds (nearly) all of that cause's idle.

Input: the steps (tracetriage.analyzers.analyses.steps) with each step's idle by cause. Output: the causes whose
idle over the steps sits COLD_FIRST_STEP or more in the first step, each with that first step's idle.

What it looks like in any trace: a loop of MIN_STEPS steps or more (ProfilerStep#N, or steps found from the
repeated ops) whose first step holds a wait the later ones do not: a first batch copied from pageable memory while
the allocator grows, a first blocking read of a value, lazy module loading behind a first launch, a graph captured
on the first call. The later steps show the steady state, so a fix for that cause (pin the memory, remove the sync,
take the host work off the critical path) changes nothing once the program runs warm: the gaps do not recur, and a
warm-up is what removes them from the profile. Seen on a public SGLang decode on an MI300X: one 463 ms
hipMemcpyWithStream wait in the first of four decode steps, 98% of the span, was told to pin memory and copy on a
side stream while every later step copies in microseconds.

What would make it fire falsely, and why it does not:
- a loop of two steps: the first may be one of two alike steps, not a cold start (MIN_STEPS);
- layers of one pass read as steps: steps.find finds none there (steps.NoSteps.ONE_PASS), so nothing is cold;
- a slow step in the middle (a checkpoint, a straggler): only the first step counts;
- a cause spread over the steps but heavier in the first: the first must hold COLD_FIRST_STEP of it, not most.
"""
from __future__ import annotations

from dataclasses import dataclass

from tracetriage.analyzers.analyses.steps import STEP_MIN_REPEATS, Steps
from tracetriage.analyzers.model.verdicts import CAUSES, Cause

MIN_STEPS = STEP_MIN_REPEATS   # the later steps are a steady state only where there are two of them or more
COLD_FIRST_STEP = 0.9          # this share of a cause's idle over the steps in the first one: it is the cold start's
                               # (output.claims holds every idle Next to the same share)


@dataclass(frozen=True)
class ColdCause:
    cause: Cause
    first_ns: int        # its idle in the first step
    steps_ns: int        # its idle over all the steps
    steps: int           # how many steps

    @property
    def first_share(self) -> float:
        return self.first_ns / self.steps_ns if self.steps_ns else 0.0


def cold_causes(steps: Steps | None) -> dict[Cause, ColdCause]:
    """The idle causes the first step holds COLD_FIRST_STEP of (over MIN_STEPS steps or more)."""
    rows = steps.steps if steps is not None else ()
    if len(rows) < MIN_STEPS:
        return {}
    out = {}
    for c in CAUSES:
        total = sum(s.idle_by_cause_ns.get(c, 0) for s in rows)
        first = rows[0].idle_by_cause_ns.get(c, 0)
        if total > 0 and first >= COLD_FIRST_STEP * total:
            out[c] = ColdCause(c, first, total, len(rows))
    return out
