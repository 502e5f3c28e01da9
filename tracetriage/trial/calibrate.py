"""Each measured run of a priced knob as a row of the prediction log: Input the try rows; Output the rows' ids.

The quantity is the lever's own (`<lever>_ratio`: the traced span with the fix over without it), predicted by
the replay of the first capture and measured on each profiled run under the knob against the median of the
profiled runs without it; `tracetriage predictions` then shows the what-if's calibration per lever.
"""
from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from tracetriage.drills.predictions import Log

if TYPE_CHECKING:
    from tracetriage.trial.results import Row


def record(rows: list[Row], before_spans: list[int], before_trace: str, script: str, db: str | None) -> list[int]:
    if not before_spans:
        return []
    base = statistics.median(before_spans)
    ids: list[int] = []
    log = Log(db)
    try:
        for r in rows:
            p = r.proposal
            quantity = p.quantity
            if quantity is None or p.predicted is None:
                continue
            for trace, span in zip(r.after_traces, r.after_spans):
                pid = log.predict(quantity, 1 - p.predicted, f"tracetriage try {script}: {p.key} ({p.outside.how})",
                                  trace=trace, baseline=before_trace)
                log.set_measured(pid, span / base, f"tracetriage try: {trace} over the median of "
                                                   f"{len(before_spans)} runs without it")
                ids.append(pid)
    finally:
        log.close()
    return ids
