"""Graph breaks: how many compiled regions one steady step enters.

Input: a trace and its steps (tracetriage.analyzers.analyses.steps). Output: GraphBreaks, where each steady step
enters torch.compile's code more than once: the compiled frames the trace names (`Torch-Compiled Region: N/M`, one
frame per N) and the regions a steady step enters (their median).

A graph break (torch._dynamo.graph_break(), a print, a data-dependent branch, an unsupported call) ends one compiled
graph and resumes in a new frame: the step runs its compiled code in pieces, with eager Python, guards and a separate
autograd function between them, and no single CUDA graph can hold it (heldout-user6 rtx4090d_graphbreaks: a 128x128
MLP in 4 compiled regions per step, 0/0 to 3/0, its steady steps idle 90%, while the report never named the breaks).
Several functions compiled apart look the same in a trace: the words say both.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.steps import Steps, steady
from tracetriage.analyzers.model.constructs import compiled_region_frame
from tracetriage.analyzers.model.trace import Trace


@dataclass(frozen=True)
class GraphBreaks:
    frames: int          # compiled frames the trace names (distinct N of Torch-Compiled Region: N/M)
    per_step: int        # compiled regions a steady step enters (median over the steady steps)
    steps: int           # the steady steps counted

    @property
    def breaks(self) -> int:
        """The breaks between one step's regions, were they one function's."""
        return self.per_step - 1


def find(trace: Trace, steps: Steps | None) -> GraphBreaks | None:
    """None unless each steady step enters two compiled regions or more."""
    if steps is None or not steps.steps:
        return None
    ids = {i: f for i, n in enumerate(trace.names) if (f := compiled_region_frame(n)) is not None}
    if len(set(ids.values())) < 2:
        return None
    ev = trace.ev
    rows = np.flatnonzero(np.isin(ev.name, list(ids)))
    starts = np.sort(ev.start[rows])
    loop = steady(steps.steps)
    per = [int(np.searchsorted(starts, s.end_ns, side="left") - np.searchsorted(starts, s.start_ns, side="left"))
           for s in loop]
    if not per:
        return None
    n = int(np.median(per))
    return GraphBreaks(len(set(ids.values())), n, len(loop)) if n >= 2 else None
