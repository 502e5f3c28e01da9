"""The regime withheld: no compute, memory or latency verdict where the health check says the trace cannot draw the
roofline (no shapes recorded). Moved out of triage.report, whose Analysis it feeds."""
from __future__ import annotations

import dataclasses

from tracetriage.analyzers.analyses.roofline import RegimeVerdict
from tracetriage.analyzers.model.health import Health, Verdict
from tracetriage.analyzers.model.verdicts import Regime


def withhold_regime(v: RegimeVerdict, health: Health, guessed: dict[str, float] | None = None) -> RegimeVerdict:
    """No compute, memory or latency verdict on a roofline the trace cannot draw (no shapes recorded): unknown.
    (The overhead and communication verdicts rest on the timeline, not on shapes.) `guessed`: the name-bounded
    kernel time by why no op costs it (roofline.guessed_why_us); it keeps its why (a graph replay stays one)."""
    if not health.withheld(Verdict.REGIME):
        return v
    # the roofline's split rests on the shapes the trace lacks: none of it is said (issue 33: a Health line that
    # withholds the regime beside a Regime line giving "77% compute-bound"); its kernel time has no bound
    costed = v.compute_us + v.memory_us + v.latency_us
    why = dict(v.uncosted_why_us)
    for k, t in (guessed or {}).items():
        why[k] = round(why.get(k, 0.0) + t, 3)
    # what no why names (costed by shapes some op did record) is the time the missing shapes leave unbounded
    rest = max(costed - sum((guessed or {}).values()), 0.0)
    why["no_shapes"] = round(why.get("no_shapes", 0.0) + rest, 3)
    why = {k: t for k, t in why.items() if t > 0}
    voting = costed + v.unknown_us
    regime = Regime.UNKNOWN if v.regime in (Regime.COMPUTE, Regime.MEMORY, Regime.LATENCY) else v.regime
    return dataclasses.replace(
        v, regime=regime, compute_us=0.0, memory_us=0.0, latency_us=0.0, unknown_us=voting,
        uncosted_share=1.0 if voting > 0 else v.uncosted_share, latency_peak_share=None,
        uncosted_why_us=dict(sorted(why.items(), key=lambda x: -x[1])), achieved_tflops=None, achieved_gbps=None,
        intensity=None, ridge=None)
