"""The What-if page's frames: each lever's predicted span, and the GPU activities as traced and as the
replay places them under one lever."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tracetriage.analyzers.model.trace import CLOCK_TOL_NS
from tracetriage.analyzers.model.units import duration_ns, saving_pct
from tracetriage.analyzers.model.verdicts import CAUSES
from tracetriage.analyzers.triage import timeline
from tracetriage.analyzers.triage.report import Analysis
from tracetriage.analyzers.voice import whatif as whatif_words
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.dashboard import words as dashboard_words
from tracetriage.dashboard.frames.lanes import no_spans
from tracetriage.dashboard.frames.timeline import RAW_LIMIT, BarFrames, OverviewFrames, Row, no_gaps


@dataclass(frozen=True)
class LeversView:
    baseline_us: float          # the replay's traced span: first traced event to last
                                # (tracetriage.analyzers.model.span)
    replay_us: float
    report_span_us: float       # the report's GPU span (first to last GPU activity, per device)
    spans_agree: bool           # the two spans are one within the clock's tolerance
    host_outside_us: float      # how much longer the traced span is: host work before the first GPU activity or
                                # after the last
    levers: pd.DataFrame        # lever, predicted_us, predicted_ms, predicted_ratio, saving_us, saving, assumption,
                                # label


def levers(a: Analysis) -> LeversView | None:
    """Every lever's predicted span (the report's what-if); None when the trace has no GPU timeline."""
    if a.levers is None:
        return None
    w = a.levers.all
    rows = [{"lever": p.lever, "predicted_us": p.predicted_ns / 1e3, "predicted_ms": p.predicted_ns / 1e6,
             "predicted_ratio": p.predicted_ratio, "saving_us": p.saving_ns / 1e3,
             "saving": saving_pct(p.saving_ns, w.baseline_ns), "assumption": whatif_words.assumption(p.assumption),
             "label": dashboard_words.lever_bar_label(p.predicted_ns, p.saving_ns, w.baseline_ns)} for p in w.levers]
    return LeversView(baseline_us=w.baseline_ns / 1e3, replay_us=w.replay_ns / 1e3, report_span_us=a.span_ns / 1e3,
                      spans_agree=abs(w.baseline_ns - a.span_ns) <= CLOCK_TOL_NS,
                      host_outside_us=(w.baseline_ns - a.span_ns) / 1e3, levers=pd.DataFrame(
        rows, columns=["lever", "predicted_us", "predicted_ms", "predicted_ratio", "saving_us", "saving", "assumption",
                       "label"]))


@dataclass(frozen=True)
class WhatIfTimelines:
    lever: str
    measured: OverviewFrames | BarFrames
    predicted: OverviewFrames | BarFrames
    binned: bool            # more than RAW_LIMIT activities: both drawn as busy shares in bins
    activities: int
    hi_ms: float            # the later of the two ends: both charts share 0..hi_ms


def whatif_timelines(a: Analysis, lever: str, bins: int = 400) -> WhatIfTimelines:
    """The GPU activities as traced and as the replay places them under `lever` (whatif.predicted_timeline)."""
    t = whatif.predicted_timeline(a.trace, lever)
    n = len(t.name)
    hi_ns = int(max(t.measured_end_ns.max(initial=0), t.predicted_end_ns.max(initial=0), 1))
    binned = n > RAW_LIMIT

    def frames(lane, start, end):
        used = sorted(set(lane.tolist()))
        rows = tuple(Row(t.lanes[i], t.lanes[i], "gpu") for i in used)
        at = np.full(len(t.lanes), -1, np.int64)
        at[used] = np.arange(len(used))
        if binned:
            edges = np.linspace(0, hi_ns, bins + 1).round().astype(np.int64)
            busy = timeline.lane_busy(lane, start, end, len(t.lanes), edges)[used]
            s, e = edges[:-1] / 1e6, edges[1:] / 1e6
            df = pd.DataFrame({"row": np.repeat(np.arange(len(used)), bins),
                               "lane": np.repeat(np.array([t.lanes[i] for i in used], dtype=object), bins),
                               "start_ms": np.tile(s, len(used)), "end_ms": np.tile(e, len(used)),
                               "busy": busy.reshape(-1)})
            idle = pd.DataFrame(columns=["row", "lane", "start_ms", "end_ms", "idle", "cause", *CAUSES])
            return OverviewFrames(rows=rows, busy=df[df["busy"] > 0].reset_index(drop=True), idle=idle,
                                  spans=no_spans(), hits=pd.DataFrame(columns=["start_ms", "end_ms"]), events=n,
                                  bins=bins)
        bars = pd.DataFrame({"row": at[lane], "lane": [t.lanes[i] for i in lane], "depth": 0,
                             "start_ms": start / 1e6, "end_ms": end / 1e6,
                             "dur": [duration_ns(x) for x in (end - start)], "kind": list(t.kind),
                             "name": list(t.name), "shapes": "", "id": np.arange(n), "tid": np.nan, "a0": np.nan,
                             "a1": np.nan, "hit": False})
        flows = pd.DataFrame(columns=["id", "tid", "a0", "a1", "call_ms", "call_row", "gpu_ms", "gpu_row"])
        return BarFrames(rows=rows, bars=bars, gaps=no_gaps(), flows=flows, spans=no_spans())

    return WhatIfTimelines(lever=lever, measured=frames(t.measured_lane, t.measured_start_ns, t.measured_end_ns),
                           predicted=frames(t.predicted_lane, t.predicted_start_ns, t.predicted_end_ns),
                           binned=binned, activities=n, hi_ms=hi_ns / 1e6)
