"""Which knobs `try` turns: Input an Analysis of the first capture; Output one Proposal per knob.

A knob is proposed when the catalogue says how to turn it from outside (levers/outside.py) and either
1. its lever predicts a saving of at least the report's LEVER_FLOOR of the traced span (the report's own bar
   for an experiment worth naming), or
2. no lever can price it (a CPU trace has no GPU timeline to replay; cuDNN's benchmark mode has no lever) and the
   trace holds what it acts on (the spec's probe): measured only, predicted nothing. A lever that replayed this
   trace and found nothing to act on proposes nothing.
A knob that only means something on a GPU is not run on a machine without one; it is listed apart.
"""
from __future__ import annotations

from dataclasses import dataclass

from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.triage import sources
from tracetriage.analyzers.triage.report import LEVER_FLOOR, Analysis
from tracetriage.analyzers.voice.sources import source_words
from tracetriage.analyzers.whatif.levers import LEVERS
from tracetriage.analyzers.whatif.levers.catalogue import Entry, from_outside
from tracetriage.analyzers.whatif.levers.outside import Outside


@dataclass(frozen=True)
class Proposal:
    outside: Outside
    lever: str | None                  # the lever that predicts it (None: measured only)
    change: str                        # the one line to make in the user's code
    source: str | None                 # where, when stacks are recorded
    predicted: float | None            # share of the traced span saved, profiled (None: not predicted)
    predicted_unprofiled: float | None  # ... without the profiler
    why_unpriced: str = ""             # why there is no prediction

    @property
    def key(self) -> str:
        return self.outside.key


def names_in(a: Analysis) -> set[str]:
    return set(a.trace.names)


def probe_hits(o: Outside, names: set[str]) -> bool:
    return any(p.lower() in n.lower() for p in o.probe for n in names)


def propose(a: Analysis, has_gpu: bool) -> tuple[list[Proposal], list[Outside]]:
    """The knobs to run, and those that only mean something on a GPU (none of them run on a machine without)."""
    choices = {c.lever: c for c in a.lever_choices}
    names = names_in(a)
    out: list[Proposal] = []
    gpu_only: list[Outside] = []
    for e in from_outside():
        o = e.outside
        assert o is not None
        if o.gpu_only and not has_gpu:
            gpu_only.append(o)
            continue
        c = choices.get(e.lever) if o.priced else None
        saving = 1 - c.predicted_ratio if c is not None else 0.0
        if c is not None and saving >= LEVER_FLOOR:
            if o.probe and not probe_hits(o, names):
                continue
            unprof = a.levers.unprofiled_ratio(a.trace, c.lever, c.only) if a.levers is not None else None
            out.append(Proposal(o, c.lever, _change(e, c.assumption), _source(a, e.lever), saving,
                                1 - unprof if unprof is not None else None))
        elif (a.levers is None or not e.lever or not o.priced) and o.probe and probe_hits(o, names):
            why = "no GPU timeline to replay" if a.levers is None else "no lever prices it"
            out.append(Proposal(o, None, _change(e, None), None, None, None, why_unpriced=why))
    # the budget goes first to the knobs with a prediction to check, the largest saving first
    out.sort(key=lambda p: (p.predicted is None, -(p.predicted or 0.0)))
    return out, gpu_only


def _change(e: Entry, assumption) -> str:
    spec = LEVERS.get(e.lever) if e.lever else None
    if spec is not None and spec.knob is not None and assumption is not None:
        return spec.knob.change_for(assumption)
    return e.change


def _source(a: Analysis, lever: str) -> str | None:
    spec = LEVERS[lever]
    cause = spec.knob.where if spec.knob is not None else spec.cause
    line = sources.next_line(Experiment.TURN_KNOB, cause, a.source_lines, a.hotspots)
    return source_words(line) if line is not None else None
