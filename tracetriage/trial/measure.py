"""Predicted against measured: Input the before and after runs of one knob; Output its Measured saving and Verdict.

1. A profiled run is measured as the what-if measures the trace it predicts from: the traced span (host and
   GPU) of its dependency graph, so the predicted and the measured ratio are one quantity.
2. An unprofiled run is measured by the script's wall time (the device drained at its end).
3. The saving is 1 - median(after) / median(before); its spread is what the runs allow: from the slowest after
   over the fastest before to the fastest after over the slowest before.
4. The verdict: the prediction inside the spread (widened by NOISE_FLOOR) is "as predicted"; else no saving
   distinguishable from zero is "no change within the noise"; else the measured saving is more or less than
   predicted (or, below zero, a slowdown).
"""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

# Run-to-run jitter of a whole script's span on one machine: the repository's ground-truth captures (5 profiled,
# 5 unprofiled runs each, traces/fixes/*/measured.json) spread by up to about 2% of the span between runs.
NOISE_FLOOR = 0.02


class Verdict(Enum):
    AS_PREDICTED = "as_predicted"
    LESS = "less_than_predicted"
    MORE = "more_than_predicted"
    NO_CHANGE = "no_change_within_noise"
    SLOWER = "slower"
    MEASURED_ONLY = "measured_only"       # saved beyond the noise, with nothing predicted
    FAILED = "failed"
    NOT_RUN = "not_run"


@dataclass(frozen=True)
class Saving:
    median: float          # share of the before median saved
    low: float             # the spread the runs allow
    high: float
    runs: int

    def contains(self, x: float) -> bool:
        return self.low - NOISE_FLOOR <= x <= self.high + NOISE_FLOOR


def traced_span_ns(path: str) -> int:
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.whatif import depgraph as dg

    return int(dg.build(load(path)).span_ns)


def saving(before: Sequence[float], after: Sequence[float]) -> Saving | None:
    if not before or not after:
        return None
    b, a = statistics.median(before), statistics.median(after)
    return Saving(1 - a / b, 1 - max(after) / min(before), 1 - min(after) / max(before), len(after))


def verdict(predicted: float | None, measured: Saving | None) -> Verdict:
    if measured is None:
        return Verdict.NOT_RUN
    if predicted is not None and measured.contains(predicted):
        return Verdict.AS_PREDICTED
    if measured.contains(0.0):
        return Verdict.NO_CHANGE
    if measured.median < 0:
        return Verdict.SLOWER
    if predicted is None:
        return Verdict.MEASURED_ONLY
    return Verdict.LESS if measured.median < predicted else Verdict.MORE
