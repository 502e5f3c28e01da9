"""The dashboard's one door into the analysis: every field it reads is read here.

Pages and charts receive plain pandas frames and small frozen views of the typed analysis
(analyzers.triage), and their words from analyzers.voice.dashboard; they import nothing else of
the analyzers (tests/test_imports.py pins it). Nothing here computes a number the analyzers
already computed: it selects, renames and converts units (ns -> µs) only.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analyzers.model.trace import TraceError
from analyzers.model.units import saving_pct
from analyzers.model.verdicts import CAUSES
from analyzers.output import serialize
from analyzers.triage import timeline
from analyzers.triage.diff import diff_files
from analyzers.triage.report import Analysis, analyze_file
from analyzers.voice import common as common_words
from analyzers.voice import dashboard as dashboard_words
from analyzers.voice import drills as drill_words
from analyzers.voice import report as report_words
from analyzers.voice import whatif as whatif_words
from analyzers.whatif import predict as whatif
from analyzers.whatif.predict import WhatIfError

__all__ = ["Analysis", "TraceError", "CAUSES", "open_analysis", "five_lines", "caveats", "device_name", "trace_events",
           "idle_by_cause", "gap_count", "dominant_cause", "evidence_names", "hotspots", "ranges", "phases", "steps",
           "roofline", "timeline_extent", "events_in", "timeline_overview", "timeline_bars", "without_causes", "diff", "RAW_LIMIT",
           "levers", "whatif_timelines", "WhatIfError",
           "drills", "drill_traces", "drill_answers", "grade_drill", "prediction_log", "drill_tables"]

RAW_LIMIT = 5_000  # a window with more drawable events is shown binned


def open_analysis(path: str | Path) -> Analysis:
    """Load and analyse one trace; raises TraceError with the analyzers' one-line message."""
    return analyze_file(Path(path))


# --- report -------------------------------------------------------------------------------

def annotated_trace(path: str | Path, a: Analysis) -> bytes:
    """The trace with its idle gaps as a track named by cause, gzipped, for Perfetto (analyzers.output.annotate)."""
    from analyzers.output.annotate import annotated_bytes

    return annotated_bytes(path, a)


def five_lines(a: Analysis) -> list[str]:
    return report_words.five_lines(a)


def caveats(a: Analysis) -> list[str]:
    return report_words.analysis_caveats(a)


def device_name(a: Analysis) -> str:
    return a.trace.device_name() or "no GPU"


def trace_events(a: Analysis) -> int:
    return int(a.trace.events_in_file)


def idle_by_cause(a: Analysis) -> pd.DataFrame:
    """One row per cause: idle µs, share of the span, and the evidence the analysis gathered."""
    ev = a.evidence
    rows = []
    for c in CAUSES:
        e = ev.get(c)
        rows.append({"cause": c.value, "idle_us": a.by_cause_ns.get(c, 0) / 1e3,
                     "share_of_span": a.by_cause_ns.get(c, 0) / a.span_ns if a.span_ns else 0.0,
                     "gaps": e.gaps if e else 0, "median_gap_us": e.median_gap_us if e else 0.0,
                     "max_gap_us": e.max_gap_us if e else 0.0,
                     "first_experiment": common_words.advice(c, e)})
    return pd.DataFrame(rows)


def gap_count(a: Analysis) -> int:
    """Idle gaps on every device (what the Perfetto track holds)."""
    return int(sum(len(d.gaps) for d in a.devices))


def dominant_cause(a: Analysis) -> str | None:
    return a.dominant.value if a.dominant else None


def evidence_names(a: Analysis, cause: str) -> list[str]:
    """The named things the evidence of a cause points at (sync calls, launching ops, host events, copies)."""
    e = a.evidence.get(cause)
    for key in ("called_from", "sync_calls", "launching_ops", "host_events", "copies", "blocking_calls"):
        if getattr(e, key, None):
            return [x.name for x in getattr(e, key)[:3]]
    return []


def hotspots(a: Analysis) -> pd.DataFrame:
    return pd.DataFrame([{"name": h.name, "device_us": h.device_us, "share": h.share, "calls": h.calls}
                         for h in a.hotspots], columns=["name", "device_us", "share", "calls"])


def ranges(a: Analysis) -> pd.DataFrame:
    rows = [{"name": r.name, "count": r.count, "wall_us": r.wall_us, "median_wall_us": r.median_wall_us,
             "kernel_busy_us": r.kernel_busy_us, "idle_us": r.idle_us,
             "regime": a.range_verdicts[r.name].regime.value if r.name in a.range_verdicts else None,
             "idle_dominant": r.idle_dominant.value if r.idle_dominant else None} for r in a.ranges]
    return pd.DataFrame(rows, columns=["name", "count", "wall_us", "median_wall_us", "kernel_busy_us", "idle_us",
                                       "regime", "idle_dominant"])


@dataclass(frozen=True)
class Phase:
    label: str          # "prefill" | "decode"
    range_name: str
    count: int
    median_wall_us: float
    kernel_busy_us: float
    idle_share: float
    idle_dominant: str | None
    regime: str


@dataclass(frozen=True)
class Phases:
    prefill: Phase
    decode: Phase
    ttft_us: float
    per_token_us: float
    tokens_per_prefill: int


def phases(a: Analysis) -> Phases | None:
    """Prefill against decode, when the trace has both ranges."""
    p = a.phases
    if not p:
        return None

    def one(label, x):
        return Phase(label, x.range, x.count, x.median_wall_us, x.kernel_busy_us, x.idle_share,
                     x.idle_dominant.value if x.idle_dominant else None, x.regime.value)

    return Phases(one("prefill", p.prefill), one("decode", p.decode), p.ttft_us, p.per_token_us, p.tokens_per_prefill)


STEP_COLUMNS = ["step", "start_us", "end_us", "wall_us", "kernel_busy_us", "idle_us", "idle_dominant", "regular",
                "setup", "outlier", "kind"]


def steps(a: Analysis) -> pd.DataFrame:
    """One row per step (analyzers.analyses.steps), in the timeline's µs from its origin, for a steps lane above
    the timeline and a per-step chart: its window, wall, kernel busy and idle time, the cause holding most of
    its idle, whether it is the loop's structure, set-up kept apart, the outlier, and its kind (prefill, decode,
    mixed, other) where prefill and decode were found from shapes. Empty when no steps were found."""
    st = a.steps
    if st is None or not st.found:
        return pd.DataFrame(columns=STEP_COLUMNS)
    o = timeline.origin_ns(a.trace)
    out = [s.outlier.step for s in (st.summary, a.inference.decode_summary if a.inference else None)
           if s is not None and s.outlier is not None]
    kinds = {k.step: k.kind.value for k in a.inference.steps} if a.inference else {}
    return pd.DataFrame([{"step": s.index, "start_us": (s.start_ns - o) / 1e3, "end_us": (s.end_ns - o) / 1e3,
                          "wall_us": s.wall_ns / 1e3, "kernel_busy_us": s.kernel_busy_ns / 1e3,
                          "idle_us": s.idle_ns / 1e3,
                          "idle_dominant": s.idle_dominant.value if s.idle_dominant else None,
                          "regular": s.regular, "setup": s.setup, "outlier": s.index in out,
                          "kind": kinds.get(s.index)} for s in st.steps], columns=STEP_COLUMNS)


# --- roofline -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Ceilings:
    device: str
    source: str                 # datasheet | measured | measured+datasheet
    bytes_per_s: float
    flops_per_s: float          # for the dtype asked
    ridge: float                # FLOP/byte
    dtype: str


@dataclass(frozen=True)
class RooflineView:
    points: pd.DataFrame        # name, shapes, dtype, kind, calls, device_us, intensity, tflops, gbps, bound
    ceilings: Ceilings | None
    dtypes: tuple[str, ...]     # dtypes of the points, most device time first
    default_dtype: str | None   # the dtype the regime verdict speaks of


def roofline(a: Analysis, dtype: str | None = None) -> RooflineView:
    pts = pd.DataFrame([{"name": p.name, "shapes": p.shapes, "dtype": p.dtype, "kind": p.kind, "calls": p.calls,
                         "device_us": p.device_us, "intensity": p.intensity, "tflops": p.achieved_tflops,
                         "gbps": p.achieved_gbps, "bound": p.bound.value, "frac_of_peak": p.frac_of_peak}
                        for p in a.roof.points],
                       columns=["name", "shapes", "dtype", "kind", "calls", "device_us", "intensity", "tflops", "gbps",
                                "bound", "frac_of_peak"])
    by_time = pts.groupby("dtype")["device_us"].sum().sort_values(ascending=False) if len(pts) else pd.Series(dtype=float)
    dtypes = tuple(str(d) for d in by_time.index)
    default = a.verdict.dtype if a.verdict.dtype in dtypes else (dtypes[0] if dtypes else None)
    dtype = dtype or default
    pk = a.roof.peaks
    ceil = None
    if pk is not None and dtype:
        ceil = Ceilings(device=pk.name, source=pk.source, bytes_per_s=pk.bytes_per_s, flops_per_s=pk.flops(dtype),
                        ridge=pk.ridge(dtype), dtype=dtype)
    return RooflineView(points=pts, ceilings=ceil, dtypes=dtypes, default_dtype=default)


# --- timeline -----------------------------------------------------------------------------

def timeline_extent(a: Analysis) -> tuple[float, float]:
    return timeline.extent_us(a)


def events_in(a: Analysis, window_us: tuple[float, float]) -> int:
    return timeline.count(a, window_us)


@dataclass(frozen=True)
class OverviewFrames:
    lanes: tuple[str, ...]          # in drawing order, idle lanes last
    busy: pd.DataFrame              # lane, start_us, end_us, busy (0..1)
    idle: pd.DataFrame              # lane, start_us, end_us, cause (the bin's largest), idle (0..1), by-cause columns
    events: int
    bins: int


def idle_lane(device: int) -> str:
    return f"gpu{device} idle"


def timeline_overview(a: Analysis, window_us: tuple[float, float] | None = None, bins: int = 400) -> OverviewFrames:
    ov = timeline.overview(a, bins=bins, window_us=window_us)
    s, e = ov.edges_us[:-1], ov.edges_us[1:]
    nl = len(ov.lanes)
    busy = pd.DataFrame({"lane": np.repeat(np.array(ov.lanes, dtype=object), ov.bins),
                         "start_us": np.tile(s, nl), "end_us": np.tile(e, nl), "busy": ov.busy.reshape(-1)})
    busy = busy[busy["busy"] > 0]
    frames = []
    for j, d in enumerate(ov.idle_devices):
        share = ov.idle[j]                                  # [cause, bin]
        total = share.sum(axis=0)
        f = pd.DataFrame({"lane": idle_lane(d), "start_us": s, "end_us": e, "idle": total,
                          "cause": np.array(CAUSES, dtype=object)[share.argmax(axis=0)]})
        for c, row in zip(CAUSES, share):
            f[c] = row
        frames.append(f[f["idle"] > 0])
    idle = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["lane", "start_us", "end_us", "idle", "cause", *CAUSES])
    lanes = tuple(ov.lanes) + tuple(idle_lane(d) for d in ov.idle_devices)
    return OverviewFrames(lanes=lanes, busy=busy.reset_index(drop=True), idle=idle, events=ov.events, bins=ov.bins)


@dataclass(frozen=True)
class BarFrames:
    lanes: tuple[str, ...]
    bars: pd.DataFrame      # lane, start_us, end_us, dur_us, kind, name, shapes
    gaps: pd.DataFrame      # lane, start_us, end_us, dur_us, cause, host_call, called_from, next, device


def timeline_bars(a: Analysis, window_us: tuple[float, float]) -> BarFrames:
    t = timeline.build(a, window_us=window_us, max_bars=RAW_LIMIT)
    bars = pd.DataFrame({"lane": [t.lanes[i] for i in t.lane], "start_us": t.start_us, "end_us": t.end_us,
                         "dur_us": t.end_us - t.start_us, "kind": t.kind, "name": t.name, "shapes": t.shapes})
    gaps = pd.DataFrame({"lane": [idle_lane(int(d)) for d in t.gap_device], "start_us": t.gap_start_us,
                         "end_us": t.gap_end_us, "dur_us": t.gap_end_us - t.gap_start_us, "cause": t.gap_cause,
                         "host_call": t.gap_host_call, "called_from": t.gap_called_from, "next": t.gap_next,
                         "device": t.gap_device.astype(int)})
    devices = sorted({int(d.device) for d in a.devices})
    return BarFrames(lanes=tuple(t.lanes) + tuple(idle_lane(d) for d in devices), bars=bars, gaps=gaps)


def without_causes(frames: OverviewFrames | BarFrames) -> OverviewFrames | BarFrames:
    """The same timeline with its idle lanes and gaps left out: a drill's timeline before it is graded."""
    from dataclasses import replace

    lanes = tuple(l for l in frames.lanes if not l.endswith(" idle"))
    if isinstance(frames, OverviewFrames):
        return replace(frames, lanes=lanes, idle=frames.idle.iloc[0:0])
    return replace(frames, lanes=lanes, gaps=frames.gaps.iloc[0:0])


# --- diff ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class DiffView:
    lines: list[str]
    before_name: str
    after_name: str
    speedup: float | None
    explained_by: str
    measures: pd.DataFrame      # measure, before, after, after/before (the diff's own ratios only)
    idle: pd.DataFrame          # cause, before_us, after_us, change_us


def diff(before: str | Path, after: str | Path) -> DiffView:
    d = serialize.diff(diff_files(before, after))   # the `diff --json` object
    b, f = d["before"], d["after"]
    measures = [("GPU span (µs)", b["span_us"], f["span_us"]), ("kernel busy (µs)", b["kernel_busy_us"], f["kernel_busy_us"]),
                ("idle (µs)", b["idle_us"], f["idle_us"]), ("launch calls", b["launch_calls"], f["launch_calls"]),
                ("kernels", b["kernels"], f["kernels"]), ("bytes", b["bytes"], f["bytes"])]
    ratios = {"launch calls": d.get("launch_ratio"), "kernels": d.get("kernel_ratio"), "bytes": d.get("byte_ratio")}
    m = pd.DataFrame([{"measure": k, "before": x, "after": y, "after/before": ratios.get(k)} for k, x, y in measures])
    idle = pd.DataFrame([{"cause": c.value, "before_us": b["idle_by_cause_us"].get(c.value, 0.0),
                          "after_us": f["idle_by_cause_us"].get(c.value, 0.0),
                          "change_us": d["idle_change_us"].get(c.value, 0.0)} for c in CAUSES])
    return DiffView(lines=list(d["lines"]), before_name=b["name"], after_name=f["name"], speedup=d.get("speedup"),
                    explained_by=d.get("explained_by", ""), measures=m, idle=idle)


# --- what-if ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LeversView:
    baseline_us: float
    replay_us: float
    levers: pd.DataFrame      # lever, predicted_us, predicted_ratio, saving_us, saving, assumption (best first)


def levers(a: Analysis) -> LeversView | None:
    """Every lever's predicted span (the report's what-if); None when the trace has no GPU timeline."""
    if a.levers is None:
        return None
    w = a.levers.all
    rows = [{"lever": p.lever, "predicted_us": p.predicted_ns / 1e3, "predicted_ratio": p.predicted_ratio,
             "saving_us": p.saving_ns / 1e3, "saving": saving_pct(p.saving_ns, w.baseline_ns),
             "assumption": whatif_words.assumption(p.assumption)} for p in w.levers]
    return LeversView(baseline_us=w.baseline_ns / 1e3, replay_us=w.replay_ns / 1e3, levers=pd.DataFrame(
        rows, columns=["lever", "predicted_us", "predicted_ratio", "saving_us", "saving", "assumption"]))


@dataclass(frozen=True)
class WhatIfTimelines:
    lever: str
    measured: OverviewFrames | BarFrames
    predicted: OverviewFrames | BarFrames
    binned: bool            # more than RAW_LIMIT activities: both drawn as busy shares in bins
    activities: int
    hi_us: float            # the later of the two ends: both charts share 0..hi_us


def _no_gaps() -> pd.DataFrame:
    return pd.DataFrame(columns=["lane", "start_us", "end_us", "dur_us", "cause", "host_call", "called_from", "next",
                                 "device"])


def whatif_timelines(a: Analysis, lever: str, bins: int = 400) -> WhatIfTimelines:
    """The GPU activities as traced and as the replay places them under `lever` (whatif.predicted_timeline)."""
    t = whatif.predicted_timeline(a.trace, lever)
    n = len(t.name)
    hi_ns = int(max(t.measured_end_ns.max(initial=0), t.predicted_end_ns.max(initial=0), 1))
    lanes = np.array(t.lanes, dtype=object)
    binned = n > RAW_LIMIT

    def frames(lane, start, end):
        used = tuple(t.lanes[i] for i in sorted(set(lane.tolist())))
        if binned:
            edges = np.linspace(0, hi_ns, bins + 1).round().astype(np.int64)
            busy = timeline.lane_busy(lane, start, end, len(t.lanes), edges)
            s, e = edges[:-1] / 1e3, edges[1:] / 1e3
            df = pd.DataFrame({"lane": np.repeat(lanes, bins), "start_us": np.tile(s, len(t.lanes)),
                               "end_us": np.tile(e, len(t.lanes)), "busy": busy.reshape(-1)})
            idle = pd.DataFrame(columns=["lane", "start_us", "end_us", "idle", "cause", *CAUSES])
            return OverviewFrames(lanes=used, busy=df[df["busy"] > 0].reset_index(drop=True), idle=idle, events=n,
                                  bins=bins)
        bars = pd.DataFrame({"lane": lanes[lane], "start_us": start / 1e3, "end_us": end / 1e3,
                             "dur_us": (end - start) / 1e3, "kind": list(t.kind), "name": list(t.name),
                             "shapes": [""] * n})
        return BarFrames(lanes=used, bars=bars, gaps=_no_gaps())

    return WhatIfTimelines(lever=lever, measured=frames(t.measured_lane, t.measured_start_ns, t.measured_end_ns),
                           predicted=frames(t.predicted_lane, t.predicted_start_ns, t.predicted_end_ns),
                           binned=binned, activities=n, hi_us=hi_ns / 1e3)


# --- drills and predictions ---------------------------------------------------------------

@dataclass(frozen=True)
class DrillView:
    id: str
    title: str
    lesson: str
    kind: str
    source: str
    questions: tuple[str, ...]
    parts: tuple[tuple[str, str, str], ...]     # (part, answer type, what the answer holds)
    rubric: str                                 # the rubric line drill show prints


def drills() -> list[DrillView]:
    from drills import bank

    return [DrillView(d.id, d.title, d.lesson, d.kind, d.source(), d.questions,
                      tuple((k, t, doc) for k, (t, doc) in d.parts.items()),
                      drill_words.rubric_line(d.rubric, d.decisive, d.cap_if_wrong)) for d in bank.all_drills()]


def drill_traces(drill_id: str) -> list[Path]:
    """The trace a drill shows (a toy timeline is written from its seed), and its `after` trace if it has one."""
    from drills import bank

    d = bank.get(drill_id)
    return [d.trace_path()] + ([d.after_path()] if d.after else [])


def drill_answers(drill_id: str, raw: dict[str, str]) -> dict:
    """The form's text fields as the answer file's types: numbers parsed, a list of names split at commas.
    Raises AnswerError (one line) for a number that is not one; a blank field is a blank answer."""
    from drills import bank
    from drills.answers import AnswerError

    d = bank.get(drill_id)
    out = {}
    for part, (kind, _doc) in d.parts.items():
        text = (raw.get(part) or "").strip()
        if not text:
            continue
        if kind == bank.NUMBER:
            try:
                v = float(text)
            except ValueError:
                raise AnswerError(dashboard_words.answer_not_a_number(part, text)) from None
            if not np.isfinite(v):
                raise AnswerError(dashboard_words.answer_not_a_number(part, text))
            out[part] = v
        elif kind == bank.NAMES and "," in text:
            out[part] = [x.strip() for x in text.split(",") if x.strip()]
        else:
            out[part] = text
    return out


@dataclass(frozen=True)
class GradeView:
    drill: str
    score: float
    summary: str
    parts: pd.DataFrame         # part, score, weight, answer, expected, feedback
    notes: list[str]
    attempt: int
    db: str


def grade_drill(drill_id: str, answers: dict, db: str | None = None) -> GradeView:
    """Grade like `tracetriage drill grade`, and record the attempt in the prediction log."""
    from drills import bank, grader
    from drills.predictions import Log

    d = bank.get(drill_id)
    result = grader.grade(d, answers)
    out = result.to_dict()
    log = Log(db)
    try:
        attempt = log.record_attempt(d.id, result.score, answers, out["parts"])
        path = str(log.path)
    finally:
        log.close()
    parts = pd.DataFrame([{"part": p.part, "score": p.score, "weight": p.weight,
                           "answer": "" if p.answer is None else str(p.answer), "expected": str(p.expected),
                           "feedback": p.feedback} for p in result.parts],
                         columns=["part", "score", "weight", "answer", "expected", "feedback"])
    return GradeView(d.id, result.score, drill_words.summary(d.id, result.score), parts, list(result.notes), attempt, path)


@dataclass(frozen=True)
class LogView:
    db: str
    predictions: pd.DataFrame   # id, quantity, predicted, measured, unit, ratio, why, trace
    calibration: str            # the sentence `tracetriage predictions` prints
    attempts: pd.DataFrame      # id, created, drill, score
    attempts_line: str
    problems: list[str]


def prediction_log(db: str | None = None) -> LogView:
    """The prediction log as `tracetriage predictions` shows it (pending predictions measured first)."""
    from drills import predictions as pr

    log = pr.Log(db)
    try:
        problems = pr.measure_pending(log)
        rows = log.predictions()
        attempts = log.attempts()
        path = str(log.path)
    finally:
        log.close()
    cal = pr.calibration(rows)
    preds = pd.DataFrame([{"id": r["id"], "quantity": r["quantity"], "predicted": r["predicted"],
                           "measured": r["measured"], "unit": pr.QUANTITIES[r["quantity"]].unit if r["quantity"] in pr.QUANTITIES else "",
                           "ratio": pr.ratio(r), "why": r["why"], "trace": r["trace"] or ""} for r in rows],
                         columns=["id", "quantity", "predicted", "measured", "unit", "ratio", "why", "trace"])
    att = pd.DataFrame(attempts, columns=["id", "created", "drill", "score"])
    mean = float(att["score"].mean()) if len(att) else None
    return LogView(path, preds, drill_words.calibration(cal.measured, cal.median_ratio, cal.within_2x), att,
                   drill_words.attempts_line(len(att), mean), problems)


def _drill_errors() -> tuple[type[Exception], ...]:
    from drills.commands import USER_ERRORS

    return USER_ERRORS


DrillErrors = _drill_errors()   # what a drill, an answer or the log raises for the user: one line each


@dataclass(frozen=True)
class DrillTables:
    """What `tracetriage drill show` prints beside the timeline, and nothing more (no answer)."""
    span_line: str | None           # triage: the GPU span, busy and idle shares
    operators: pd.DataFrame | None  # triage: name, share, device_us, calls
    ranges: pd.DataFrame | None     # ranges: name, count, median_wall_us, wall_us, kernel_busy_us


def drill_tables(drill_id: str) -> DrillTables:
    from drills import bank, evidence

    d = bank.get(drill_id)
    if d.kind not in ("triage", "ranges"):
        return DrillTables(None, None, None)
    f = evidence.facts(d.trace_path())
    if d.kind == "triage":
        ops = pd.DataFrame(f.hotspots, columns=["name", "share", "device_us", "calls"])
        return DrillTables(drill_words.span_line(f.span_ms, f.kernel_busy_ms, f.idle_share), ops, None)
    cols = ["name", "count", "median_wall_us", "wall_us", "kernel_busy_us"]
    return DrillTables(None, None, pd.DataFrame([{k: r[k] for k in cols} for r in f.ranges], columns=cols))
