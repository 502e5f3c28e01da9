"""Steps the loop's median leaves out and that outlast its max: neither the repeated structure nor set-up (a serving
engine's prefill steps before its decode loop, a first pass of another shape). The Measured line's median, p90 and
max are over the loop's steps; these are said beside them, with the named range each ran, so that "max 12.8 ms" does
not hide a 46.4 ms step (heldout-user17 gptoss3090a: two prefill steps, 46.4 and 17.5 ms, beside '17 steps ...
max 12.8 ms').

Input: the trace, its steps. Output: `StepApart` per such step that ran at least the loop's median GPU work, in
order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.steps import Steps, steady
from tracetriage.analyzers.model.span import PROFILER_STEP
from tracetriage.analyzers.model.trace import USER_ANNOTATION, Trace


@dataclass(frozen=True)
class StepApart:
    index: int
    wall_ns: int
    busy_share: float     # its kernels' busy share of its wall
    range_name: str       # the named range mostly inside it that covers most of it ("" where none)


def apart(trace: Trace, steps: Steps | None) -> tuple[StepApart, ...]:
    s = steps.summary if steps is not None else None
    if s is None or steps is None:
        return ()
    loop = {st.index for st in steady(steps.steps)}
    ev = trace.ev
    ranges = np.flatnonzero(ev.cat == USER_ANNOTATION)
    out = []
    for st in steps.steps:
        # (a step that ran less GPU work than the loop's median step is a prologue, the model's build, not a pass)
        if st.setup or st.index in loop or st.wall_ns <= s.max_ns or st.kernel_busy_ns < s.median_busy_ns:
            continue
        lo = min(st.host_start_ns, st.start_ns)
        overlap = np.minimum(ev.end[ranges], st.end_ns) - np.maximum(ev.start[ranges], lo)
        # a range mostly inside the step names it; one around many steps (the whole script's) does not
        own = ev.end[ranges] - ev.start[ranges]
        names = [(int(o), trace.names[int(ev.name[r])])
                 for r, o, w in zip(ranges.tolist(), overlap.tolist(), own.tolist()) if o > 0 and 2 * o >= w]
        names = [x for x in names if not x[1].startswith((PROFILER_STEP, "## "))]
        out.append(StepApart(st.index, st.wall_ns, st.kernel_busy_ns / st.wall_ns if st.wall_ns else 0.0,
                             max(names)[1] if names else ""))
    return tuple(out)
