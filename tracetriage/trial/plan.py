"""Which knobs `try` turns: Input an Analysis of the first capture; Output one Proposal per knob.

A knob is proposed when the catalogue says how to turn it from outside (levers/outside.py) and either
1. its lever predicts a saving of at least the report's LEVER_FLOOR of the traced span (the report's own bar
   for an experiment worth naming), or
2. no lever can price it (a CPU trace has no GPU timeline to replay; cuDNN's benchmark mode has no lever) and the
   trace holds what it acts on (the spec's probe): measured only, predicted nothing. A lever that replayed this
   trace and found nothing to act on proposes nothing.
A knob named by --knob is run whether or not the report proposes it (its row says which), with whatever its
lever predicts, a slowdown included: the experiment then checks the prediction not to turn it.
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
    proposed: bool = True              # the report proposes it (False: run only because --knob named it)

    @property
    def key(self) -> str:
        return self.outside.key

    @property
    def quantity(self) -> str | None:
        """What the prediction log calls its ratio: the lever's (None: nothing predicted)."""
        if self.predicted is None or self.lever is None:
            return None
        return LEVERS[self.lever].quantity


def names_in(a: Analysis) -> set[str]:
    return set(a.trace.names)


def probe_hits(o: Outside, names: set[str]) -> bool:
    return any(p.lower() in n.lower() for p in o.probe for n in names)


def propose(a: Analysis, has_gpu: bool, force: tuple[str, ...] = ()) -> tuple[list[Proposal], list[Outside]]:
    """The knobs to run (those proposed, and those `force` names), and those that only mean something on a GPU
    (none of them run on a machine without one)."""
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
        forced = o.key in force
        priced = _priced(a, e, choices)
        if priced is not None and (priced[0] >= LEVER_FLOOR or forced):
            saving, unprof, lever_name = priced
            proposed = saving >= LEVER_FLOOR and (not o.probe or probe_hits(o, names))
            if not proposed and not forced:
                continue
            out.append(Proposal(o, lever_name, _change(e, choices.get(e.lever)), _source(a, e.lever), saving, unprof,
                                proposed=proposed))
        elif (a.levers is None or not e.lever or not o.priced) and o.probe and (probe_hits(o, names) or forced):
            why = "no GPU timeline to replay" if a.levers is None else "no lever prices it"
            out.append(Proposal(o, None, _change(e, None), None, None, None, why_unpriced=why,
                                proposed=probe_hits(o, names)))
        elif forced:
            out.append(Proposal(o, e.lever, _change(e, None), None, None, None, proposed=False,
                                why_unpriced="its lever found nothing to act on in this trace"))
    # the budget goes first to the knobs with a prediction to check, the largest saving first
    out.sort(key=lambda p: (p.predicted is None, -(p.predicted or 0.0)))
    return out, gpu_only


def _priced(a: Analysis, e: Entry, choices: dict) -> tuple[float, float | None, str] | None:
    """The knob's predicted saving (profiled, unprofiled) and the lever that predicted it: its lever's choice in
    the report; None where nothing prices it on this trace."""
    o = e.outside
    assert o is not None
    if not o.priced or a.levers is None:
        return None
    c = choices.get(e.lever)
    if c is None:
        return None
    unprof = a.levers.unprofiled_ratio(a.trace, c.lever, c.only)
    return 1 - c.predicted_ratio, (1 - unprof if unprof is not None else None), c.lever


def _change(e: Entry, choice) -> str:
    assumption = choice.assumption if choice is not None else None
    spec = LEVERS.get(e.lever) if e.lever else None
    if spec is not None and spec.knob is not None and assumption is not None:
        return spec.knob.change_for(assumption)
    return e.change


def _source(a: Analysis, lever: str) -> str | None:
    spec = LEVERS[lever]
    cause = spec.knob.where if spec.knob is not None else spec.cause
    line = sources.next_line(Experiment.TURN_KNOB, cause, a.source_lines, a.hotspots)
    return source_words(line) if line is not None else None
