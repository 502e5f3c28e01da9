"""The claim checker's relation for a healthy step's Next (triage.healthy, voice.healthy): "no one-line lever" is
said only where the fix it names saves less than the floor it states without the profiler, more than that floor on
the traced span (else it would never have been the Next), and what it names as left saves less than HEAVY_AT_MOST."""
from __future__ import annotations

from tracetriage.analyzers.triage.healthy import HEAVY_AT_MOST

_TOLERANCE = 0.005     # a share said in whole percents


def no_lever_only_where_the_profiler_holds_the_saving(said) -> list[str]:
    bare, floor = said.value("next.healthy.unprofiled_saving"), said.value("next.healthy.floor")
    if bare is None or floor is None:
        return []
    bad = []
    if bare >= floor + _TOLERANCE:
        bad.append(f"no one-line lever is said beside a fix that saves {100 * bare:.1f}% without the profiler, "
                   f"above the {100 * floor:.0f}% floor it states")
    traced = said.value("next.healthy.traced_saving")
    if traced is not None and traced < floor - _TOLERANCE:
        bad.append("the fix a healthy Next names saved under the floor on the traced span too: it was no Next")
    heavy = said.value("next.healthy.heavy_saving")
    if heavy is not None and (heavy >= HEAVY_AT_MOST or heavy < floor - _TOLERANCE):
        bad.append(f"what a healthy Next names as left saves {100 * heavy:.1f}% without the profiler: not 'a little'")
    return bad
