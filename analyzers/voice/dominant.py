"""The Next line's word on the lever of the idle's dominant cause, where the Next chose another.

Where the Next's lever is a step's CUDA graphs and the dominant cause is host work, the two are no competing
levers: a replay runs no host code between the kernels it captures, so the graphs' saving holds the host work's
(heldout-user19 h100_mlp_train read "host work holds more of the idle, but taking host work off the critical path
predicts only −24%" beside a graph priced as if that host work survived the replay).
"""
from __future__ import annotations

from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.voice.claims import only_predicts, saving
from tracetriage.analyzers.voice.common import CAUSE_WORDS
from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, LEVERS


def dominant_clause(nx) -> str:
    """'; host work holds more of the idle, but X predicts only −4%', or, beside a step's graphs that take the host
    work out with the launches, what the host-work lever alone would save."""
    d = nx.dominant
    cause = LEVERS[d.lever].cause
    if (nx.lever is not None and nx.lever.lever == CUDA_GRAPHS and cause is Cause.HOST_WORK
            and nx.lever.saving_ns >= d.saving_ns):
        return (f"; {CAUSE_WORDS[cause]} holds more of the idle, and the graphs take it out with the launches: "
                f"a replay runs no host code between the kernels it captures ({LEVERS[d.lever].words} alone: "
                f"{saving('next.dominant.saving', d.saving_ns, d.baseline_ns)})")
    timers = getattr(d.assumption, "timers", 0) if d.assumption is not None and d.assumption.count == 0 else 0
    if timers:   # (the bench's own timer syncs: no fix of the code it times, heldout-user20 qlora_bnb)
        return (f"; {CAUSE_WORDS[cause]} holds more of the idle, all of it after the benchmark's own timer syncs "
                f"({timers} closing its timed regions): the measurement's, not the workload's")
    return f"; {CAUSE_WORDS[cause]} holds more of the idle, but {LEVERS[d.lever].words} " + \
        only_predicts(d.saving_ns, d.baseline_ns)
