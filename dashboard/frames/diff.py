"""The Diff page's frames: the diff's lines, its measures and idle by cause, the per-op table, and the two
timelines on one time axis."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tracetriage.analyzers.model.verdicts import CAUSES
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.diff import diff_analyses
from tracetriage.analyzers.triage.report import Analysis
from tracetriage.dashboard import words as dashboard_words
from tracetriage.dashboard.frames.timeline import (
    RAW_LIMIT,
    BarFrames,
    OverviewFrames,
    events_in,
    timeline_bars,
    timeline_extent,
    timeline_overview,
)


@dataclass(frozen=True)
class DiffView:
    lines: list[str]
    before_name: str
    after_name: str
    speedup: float | None
    explained_by: str
    per_step: bool
    measures: pd.DataFrame      # measure, before, after, change: each cell in its unit, as text
    idle: pd.DataFrame          # cause, before_us, after_us, change_us
    ops: pd.DataFrame           # op, before_ms, after_ms, change_ms, calls/kernels/bytes before and after, largest
                                # change first


def diff(before: Analysis, after: Analysis) -> DiffView:
    """The diff of two analysed traces (tracetriage.analyzers.triage.diff), with the per-op table
    (tracetriage.analyzers.triage.opdiff)."""
    from tracetriage.analyzers.triage.opdiff import op_diff

    d = diff_analyses(before, after)
    j = serialize.diff(d)   # the `diff --json` object: what the CLI prints, so the page says the same
    b, f = j["before"], j["after"]
    # what the diff compares: the mean steps where both traces have steps, else the whole traces
    cb, cf = j["compared_before"], j["compared_after"]
    same = {k: j.get(k) is not None and d.about_same(j[k]) for k in ("launch_ratio", "kernel_ratio", "byte_ratio")}

    def m(label, unit, key, **change):
        return dashboard_words.diff_measure(label, unit, cb[key], cf[key], **change)

    measures = pd.DataFrame([
        m(dashboard_words.diff_span_label(d.per_step), "us", "span_us", speedup=j.get("speedup")),
        m("kernels busy", "us", "kernel_busy_us", change_us=j["busy_change_us"]),
        m("idle", "us", "idle_us", change_us=sum(j["idle_change_us"].values())),
        m("launch calls", "count", "launch_calls", ratio_value=j.get("launch_ratio"), same=same["launch_ratio"]),
        m("kernels", "count", "kernels", ratio_value=j.get("kernel_ratio"), same=same["kernel_ratio"]),
        m("bytes", "bytes", "bytes", ratio_value=j.get("byte_ratio"), same=same["byte_ratio"]),
    ], columns=["measure", "before", "after", "change"])
    idle = pd.DataFrame([{"cause": c.value, "before_us": cb["idle_by_cause_us"].get(c.value, 0.0),
                          "after_us": cf["idle_by_cause_us"].get(c.value, 0.0),
                          "change_us": j["idle_change_us"].get(c.value, 0.0)} for c in CAUSES])
    idle = idle.assign(before_ms=idle["before_us"] / 1e3, after_ms=idle["after_us"] / 1e3,
                       change_ms=idle["change_us"] / 1e3)
    ops = pd.DataFrame([{"op": r.name,
                         "before_ms": r.before.device_us / 1e3 if r.before else 0.0,
                         "after_ms": r.after.device_us / 1e3 if r.after else 0.0,
                         "change_ms": r.change_us / 1e3,
                         "calls": dashboard_words.before_after_count(r.before and r.before.calls,
                                                                     r.after and r.after.calls),
                         "kernels": dashboard_words.before_after_count(r.before and r.before.kernels,
                                                                       r.after and r.after.kernels),
                         "bytes": dashboard_words.before_after_bytes(r.before and r.before.bytes,
                                                                     r.after and r.after.bytes)}
                        for r in op_diff(before, after, d.divisors)],
                       columns=["op", "before_ms", "after_ms", "change_ms", "calls", "kernels", "bytes"])
    return DiffView(lines=list(j["lines"]), before_name=b["name"], after_name=f["name"], speedup=j.get("speedup"),
                    explained_by=j.get("explained_by", ""), per_step=d.per_step, measures=measures, idle=idle, ops=ops)


@dataclass(frozen=True)
class PairedTimelines:
    """Two traces' timelines on one time axis (the diff's before and after): each binned past RAW_LIMIT."""
    before: OverviewFrames | BarFrames
    after: OverviewFrames | BarFrames
    window_ms: tuple[float, float]


def paired_timelines(before: Analysis, after: Analysis, bins: int = 400) -> PairedTimelines:
    lo_b, hi_b = timeline_extent(before)
    lo_a, hi_a = timeline_extent(after)
    window = (min(lo_b, lo_a), max(hi_b, hi_a, min(lo_b, lo_a) + 1e-3))

    def frames(a):
        if events_in(a, window) > RAW_LIMIT:
            return timeline_overview(a, window, bins=bins)
        return timeline_bars(a, window)

    return PairedTimelines(frames(before), frames(after), window)
