"""The dashboard's one door into the analysis: every field a page or a chart reads is read through here.

Pages and charts receive plain pandas frames and small frozen views of the typed analysis
(tracetriage.analyzers.triage), and their words from tracetriage.dashboard.words; they import nothing else of
the analyzers (tests/test_imports.py pins it). Nothing behind the door computes a number the analyzers
already computed: it selects, renames and converts units (ns -> µs, ms) only. What each page reads is
built in its own module (tracetriage.dashboard.frames: report, roofline, timeline and its lanes, diff,
what-if, ranks, practice); this module only opens the door to them, and a page imports this one alone.
"""
from __future__ import annotations

from tracetriage.analyzers.model.trace import TraceError
from tracetriage.analyzers.model.verdicts import CAUSES
from tracetriage.analyzers.triage.report import Analysis
from tracetriage.analyzers.whatif.predict import WhatIfError
from tracetriage.dashboard.frames.diff import DiffView, PairedTimelines, diff, paired_timelines
from tracetriage.dashboard.frames.lanes import (
    LANE_SOURCES,
    OUTLIER_STEP,
    SETUP_STEP,
    STEP,
    LaneSpans,
    construct_doings,
    extra_lanes,
    framework_lanes,
    prefill_decode_lane,
    steps_lane,
)
from tracetriage.dashboard.frames.practice import (
    DrillErrors,
    DrillTables,
    DrillView,
    GradeView,
    LogView,
    drill_answers,
    drill_tables,
    drill_traces,
    drills,
    grade_drill,
    prediction_log,
)
from tracetriage.dashboard.frames.ranks import RanksView, ranks
from tracetriage.dashboard.frames.report import (
    FRAMEWORK_COLUMNS,
    PHASE_COLUMNS,
    STEP_COLUMNS,
    USER_CODE,
    Phase,
    Phases,
    PhaseTable,
    annotated_name,
    annotated_trace,
    caveats,
    device_name,
    dominant_cause,
    evidence_names,
    five_lines,
    framework,
    gap_count,
    hotspots,
    idle_by_cause,
    open_analysis,
    phase_table,
    phases,
    ranges,
    steps,
    trace_events,
)
from tracetriage.dashboard.frames.roofline import Ceilings, RooflineView, roofline
from tracetriage.dashboard.frames.timeline import (
    RAW_LIMIT,
    BarFrames,
    FlowView,
    OverviewFrames,
    Picked,
    Row,
    SearchView,
    events_in,
    flow,
    idle_lane,
    picked,
    search,
    timeline_bars,
    timeline_extent,
    timeline_overview,
    without_causes,
)
from tracetriage.dashboard.frames.trytable import TryTableError, TryView, try_table
from tracetriage.dashboard.frames.whatif import LeversView, WhatIfTimelines, levers, whatif_timelines

__all__ = [
    "Analysis", "TraceError", "CAUSES", "WhatIfError",
    # try
    "TryTableError", "TryView", "try_table",
    # report
    "open_analysis", "annotated_trace", "annotated_name", "five_lines", "caveats", "device_name", "trace_events",
    "idle_by_cause", "gap_count", "dominant_cause", "evidence_names", "hotspots", "ranges", "Phase", "Phases",
    "phases", "USER_CODE", "FRAMEWORK_COLUMNS", "framework", "PHASE_COLUMNS", "PhaseTable", "phase_table",
    "STEP_COLUMNS", "steps",
    # roofline
    "Ceilings", "RooflineView", "roofline",
    # lanes
    "LaneSpans", "STEP", "SETUP_STEP", "OUTLIER_STEP", "steps_lane", "prefill_decode_lane", "construct_doings",
    "framework_lanes", "LANE_SOURCES", "extra_lanes",
    # timeline
    "RAW_LIMIT", "timeline_extent", "events_in", "Row", "idle_lane", "OverviewFrames", "timeline_overview",
    "BarFrames", "timeline_bars", "without_causes", "SearchView", "search", "Picked", "picked", "FlowView", "flow",
    # diff
    "DiffView", "diff", "PairedTimelines", "paired_timelines",
    # whatif
    "LeversView", "levers", "WhatIfTimelines", "whatif_timelines",
    # ranks
    "RanksView", "ranks",
    # practice
    "DrillView", "drills", "drill_traces", "drill_answers", "GradeView", "grade_drill", "LogView", "prediction_log",
    "DrillErrors", "DrillTables", "drill_tables",
]
