"""The dashboard's one door into the analysis: every field it reads is read here.

Pages and charts receive plain pandas frames and small frozen views of the typed analysis
(tracetriage.analyzers.triage), and their words from tracetriage.dashboard.words; they import nothing else of
the analyzers (tests/test_imports.py pins it). Nothing here computes a number the analyzers
already computed: it selects, renames and converts units (ns -> µs, ms) only.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tracetriage.analyzers.analyses.inference import PhasesFrom
from tracetriage.analyzers.loading.formats import trace_stem
from tracetriage.analyzers.model.span import PROFILER_STEP_RANGE
from tracetriage.analyzers.model.trace import CLOCK_TOL_NS, CPU_OP, NONE, TraceError
from tracetriage.analyzers.model.units import duration_ns, duration_us, saving_pct
from tracetriage.analyzers.model.verdicts import CAUSES, CONSTRUCTS, Construct
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage import idle_constructs, timeline
from tracetriage.analyzers.triage.diff import diff_analyses
from tracetriage.analyzers.triage.report import Analysis, analyze_file
from tracetriage.analyzers.voice import common as common_words
from tracetriage.analyzers.voice import report as report_words
from tracetriage.analyzers.voice import steps as step_words
from tracetriage.analyzers.voice import whatif as whatif_words
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.predict import WhatIfError
from tracetriage.dashboard import words as dashboard_words
from tracetriage.drills import words as drill_words

__all__ = ["Analysis", "TraceError", "CAUSES", "open_analysis", "five_lines", "caveats", "device_name", "trace_events",
           "idle_by_cause", "gap_count", "dominant_cause", "evidence_names", "hotspots", "ranges", "phases", "steps",
           "framework", "phase_table",
           "roofline", "timeline_extent", "events_in", "timeline_overview", "timeline_bars", "without_causes",
           "LANE_SOURCES", "search", "picked", "flow", "diff", "paired_timelines", "RAW_LIMIT",
           "levers", "whatif_timelines", "WhatIfError", "ranks",
           "drills", "drill_traces", "drill_answers", "grade_drill", "prediction_log", "drill_tables"]

RAW_LIMIT = 5_000  # a window with more drawable events is shown binned


def open_analysis(path: str | Path) -> Analysis:
    """Load and analyse one trace; raises TraceError with the analyzers' one-line message."""
    return analyze_file(Path(path))


# --- report -------------------------------------------------------------------------------

def annotated_trace(path: str | Path, a: Analysis) -> bytes:
    """The trace with its idle gaps as a track named by cause, gzipped, for Perfetto (tracetriage.analyzers.output.annotate)."""
    from tracetriage.analyzers.output.annotate import annotated_bytes

    return annotated_bytes(path, a)


def annotated_name(name: str) -> str:
    """The annotated trace's file name: 'run.idle.json.gz' for 'dir/run.json.gz' (a gzipped trace named only .gz
    loses that)."""
    base = name.split("/")[-1]
    return (trace_stem(base) or base.removesuffix(".gz")) + ".idle.json.gz"


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
        rows.append({"cause": c.value, "idle_us": a.by_cause_ns.get(c, 0) / 1e3, "idle_ms": a.by_cause_ns.get(c, 0) / 1e6,
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
    return pd.DataFrame([{"name": h.name, "device_us": h.device_us, "device_ms": h.device_us / 1e3, "share": h.share,
                          "calls": h.calls, "kernels": h.kernels} for h in a.hotspots],
                        columns=["name", "device_us", "device_ms", "share", "calls", "kernels"])


def ranges(a: Analysis) -> pd.DataFrame:
    rows = [{"name": r.name, "count": r.count, "wall_us": r.wall_us, "wall_ms": r.wall_us / 1e3,
             "median_wall_us": r.median_wall_us, "median_wall_ms": r.median_wall_us / 1e3,
             "kernel_busy_us": r.kernel_busy_us, "kernel_busy_ms": r.kernel_busy_us / 1e3, "idle_us": r.idle_us,
             "idle_ms": r.idle_us / 1e3, "idle_share": r.idle_share,
             "regime": a.range_verdicts[r.name].regime.value if r.name in a.range_verdicts else None,
             "idle_dominant": r.idle_dominant.value if r.idle_dominant else None} for r in a.ranges]
    return pd.DataFrame(rows, columns=["name", "count", "wall_us", "wall_ms", "median_wall_us", "median_wall_ms",
                                       "kernel_busy_us", "kernel_busy_ms", "idle_us", "idle_ms", "idle_share", "regime",
                                       "idle_dominant"])


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


USER_CODE = Construct.USER.value      # the framework table's row of what no construct covers
FRAMEWORK_COLUMNS = ["construct", "name", "idle_ms", "idle_share", "idle_dominant", "launches", "calls", "host_ms",
                     "marked_by"]


def framework(a: Analysis) -> pd.DataFrame:
    """One row per framework construct the trace ran (tracetriage.analyzers.analyses.framework), most idle first: the idle
    it made, its share of all idle and the cause holding most of it, the launches made inside it, how many
    times it ran, the host time inside it, and the events that mark it. Empty when there was no framework
    analysis (no GPU timeline)."""
    fw = a.framework
    if fw is None:
        return pd.DataFrame(columns=FRAMEWORK_COLUMNS)
    return pd.DataFrame([{"construct": x.construct.value, "name": dashboard_words.construct_name(x, fw.optimizer),
                          "idle_ms": x.idle_ns / 1e6, "idle_share": fw.idle_share(x.construct),
                          "idle_dominant": x.dominant.value if x.dominant else None, "launches": x.launches,
                          "calls": x.ranges, "marked_by": ", ".join(x.names),
                          # the framework paints the constructs' host time only: the rest of the host is not measured
                          "host_ms": x.host_ns / 1e6 if x.construct is not Construct.USER else np.nan}
                         for x in fw.constructs], columns=FRAMEWORK_COLUMNS)


PHASE_COLUMNS = ["phase", "steps", "latency", "median_ms", "p90_ms", "kernel_busy_ms", "idle_share", "idle_dominant",
                 "regime"]


@dataclass(frozen=True)
class PhaseTable:
    """Prefill against decode (Analysis.phases), a row per phase: its latency (TTFT for prefill, per token for
    decode), median and p90, its kernels' busy time, idle share and dominant cause, and its regime."""
    rows: pd.DataFrame
    found_from: str             # "ranges" | "shapes"
    ranges: tuple[str, ...]     # the named ranges it was read from (none: from shapes)
    prompt_tokens: int | None
    batch: int | None
    mixed_steps: int
    decode_inferred: bool


def phase_table(a: Analysis) -> PhaseTable | None:
    p = a.phases
    if p is None:
        return None

    def row(kind: str, x, median_us: float, p90_us: float) -> dict:
        return {"phase": kind, "steps": x.count, "latency": dashboard_words.phase_latency(kind),
                "median_ms": median_us / 1e3, "p90_ms": p90_us / 1e3, "kernel_busy_ms": x.kernel_busy_us / 1e3,
                "idle_share": x.idle_share, "idle_dominant": x.idle_dominant.value if x.idle_dominant else None,
                "regime": x.regime.value}

    rows = pd.DataFrame([row("prefill", p.prefill, p.ttft_us, p.ttft_p90_us),
                         row("decode", p.decode, p.per_token_median_us, p.per_token_p90_us)], columns=PHASE_COLUMNS)
    return PhaseTable(rows, p.found_from.value, tuple(x.range for x in (p.prefill, p.decode) if x.range),
                      p.prompt_tokens, p.batch, p.mixed_steps, p.decode_inferred)


STEP_COLUMNS = ["step", "start_us", "end_us", "wall_us", "kernel_busy_us", "idle_us", "idle_dominant", "regular",
                "setup", "outlier", "kind"]


def steps(a: Analysis) -> pd.DataFrame:
    """One row per step (tracetriage.analyzers.analyses.steps), in the timeline's µs from its origin, for a steps lane above
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
                         "device_us": p.device_us, "device_ms": p.device_us / 1e3, "flops": p.flops,
                         "bytes": p.bytes, "intensity": p.intensity, "tflops": p.achieved_tflops,
                         "gbps": p.achieved_gbps, "bound": p.bound.value, "frac_of_peak": p.frac_of_peak}
                        for p in a.roof.points],
                       columns=["name", "shapes", "dtype", "kind", "calls", "device_us", "device_ms", "flops", "bytes",
                                "intensity", "tflops", "gbps", "bound", "frac_of_peak"])
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
# Every timeline frame is in ms from the timeline's origin, the start of the report's GPU span (the first
# GPU activity): host work before it has negative times. Rows are drawn top to bottom in their order:
# the extra lanes (steps, phases), the host lanes (a row per nesting depth), the GPU streams, the idle lanes.

def timeline_extent(a: Analysis) -> tuple[float, float]:
    """First start and last end of everything drawn, ms from the origin."""
    lo, hi = timeline.extent_us(a)
    return lo / 1e3, hi / 1e3


def events_in(a: Analysis, window_ms: tuple[float, float]) -> int:
    return timeline.count(a, _us(window_ms))


def _us(window_ms: tuple[float, float]) -> tuple[float, float]:
    return window_ms[0] * 1e3, window_ms[1] * 1e3


@dataclass(frozen=True)
class Row:
    label: str      # drawn left of the row: the lane's name on its first row, "" on the nested rows below
    lane: str       # the lane the row belongs to
    kind: str       # "extra" | "found" (an extra lane the analysis found) | "host" | "gpu" | "idle"


@dataclass(frozen=True)
class LaneSpans:
    """A lane of named spans drawn above the host lanes: the steps, prefill and decode, the framework
    constructs. A source is a function of the analysis in LANE_SOURCES."""
    lane: str
    kinds: tuple[str, ...]      # each span's colour key: "step", "setup step", "outlier step", "prefill", ...
    start_ms: np.ndarray
    end_ms: np.ndarray
    names: tuple[str, ...]
    details: tuple[str, ...] = ()   # each span's tooltip: what the analysis found in it ("" where nothing)
    found: bool = False         # what the analysis found, not what the trace names (prefill and decode from
                                # shapes): a drill's timeline leaves it out, since a drill asks for it


STEP, SETUP_STEP, OUTLIER_STEP = "step", "setup step", "outlier step"     # the steps lane's colour keys


def _range_spans(a: Analysis, name: str, o: int) -> tuple[np.ndarray, np.ndarray]:
    stats = next((r for r in a.ranges if r.name == name), None)
    if stats is None:
        return np.zeros(0), np.zeros(0)
    s, e = stats.windows
    order = np.argsort(s, kind="stable")
    return (s[order] - o) / 1e6, (e[order] - o) / 1e6


def _outliers(a: Analysis) -> dict[int, str]:
    """The outlier step of the loop, and of the decode steps: index -> what made it slow (voice.steps)."""
    out = {}
    for s, what in ((a.steps.summary if a.steps else None, "step"),
                    (a.inference.decode_summary if a.inference else None, "decode step")):
        if s is not None and s.outlier is not None:
            out.setdefault(s.outlier.step, step_words.outlier(s.outlier, what))
    return out


def steps_lane(a: Analysis) -> LaneSpans | None:
    """The loop's steps (tracetriage.analyzers.analyses.steps: the ProfilerStep ranges, or found from the repeated ops),
    each with its wall, kernel busy and idle by cause; the set-up steps and the outlier marked. Without a
    step analysis (a trace with no GPU timeline), the profiler's ProfilerStep ranges, each with its GPU tail."""
    st = a.steps
    o = timeline.origin_ns(a.trace)
    if st is None or not st.found:
        s, e = _range_spans(a, PROFILER_STEP_RANGE, o)
        if not len(s):
            return None
        return LaneSpans(dashboard_words.steps_lane_label(), (STEP,) * len(s), s, e,
                         tuple(dashboard_words.step_label(i + 1) for i in range(len(s))))
    out = _outliers(a)
    steps = st.steps
    return LaneSpans(dashboard_words.steps_lane_label(),
                     tuple(OUTLIER_STEP if x.index in out else SETUP_STEP if x.setup else STEP for x in steps),
                     np.array([(x.start_ns - o) / 1e6 for x in steps]), np.array([(x.end_ns - o) / 1e6 for x in steps]),
                     tuple(dashboard_words.found_step_label(x.index) for x in steps),
                     tuple(dashboard_words.step_detail(x.wall_ns, x.kernel_busy_ns, x.idle_by_cause_ns, x.setup,
                                                       x.regular, out.get(x.index)) for x in steps))


def _phase_words(a: Analysis) -> dict[str, str]:
    """Each phase's words for its spans' tooltips: TTFT for prefill, per-token median and p90 for decode, the
    regime of each."""
    p = a.phases
    return {"prefill": dashboard_words.prefill_words(p.ttft_us, p.ttft_p90_us, p.requests, p.prefill.regime.value),
            "decode": dashboard_words.decode_words(p.per_token_median_us, p.per_token_p90_us, p.decode.count,
                                                   p.decode.regime.value),
            "mixed": dashboard_words.mixed_words()}


def prefill_decode_lane(a: Analysis) -> LaneSpans | None:
    """Prefill and decode (Analysis.phases): the ranges the report reads them from, or, in a trace without
    them, the steps whose shapes say prefill, decode or mixed (tracetriage.analyzers.analyses.inference)."""
    p = a.phases
    if p is None:
        return None
    words = _phase_words(a)
    o = timeline.origin_ns(a.trace)
    if p.found_from is PhasesFrom.SHAPES and a.inference is not None and a.steps is not None:
        by_index = {x.index: x for x in a.steps.steps}
        kinds = [(k.kind.value, by_index[k.step]) for k in a.inference.steps
                 if k.kind.value in words and k.step in by_index]
        return LaneSpans(dashboard_words.phases_lane_label(), tuple(k for k, _ in kinds),
                         np.array([(x.start_ns - o) / 1e6 for _, x in kinds]),
                         np.array([(x.end_ns - o) / 1e6 for _, x in kinds]), tuple(k for k, _ in kinds),
                         tuple(dashboard_words.phase_step_detail(k, x.index, x.wall_ns, words[k]) for k, x in kinds),
                         found=True)
    parts = [(label, *_range_spans(a, x.range, o)) for label, x in (("prefill", p.prefill), ("decode", p.decode))]
    s = np.concatenate([x[1] for x in parts])
    e = np.concatenate([x[2] for x in parts])
    names = tuple(label for label, ss, _ in parts for _ in range(len(ss)))
    order = np.argsort(s, kind="stable")
    names = tuple(names[i] for i in order)
    s, e = s[order], e[order]
    details = tuple(dashboard_words.phase_step_detail(n, None, (hi - lo) * 1e6, words[n])
                    for n, lo, hi in zip(names, s, e))
    return LaneSpans(dashboard_words.phases_lane_label(), names, s, e, names, details)


def construct_doings(a: Analysis) -> dict[Construct, str]:
    """Each construct the framework analysis found -> what it did over the trace (its launches, its calls, its
    share of all idle), for the tooltips of its lane and of the idle it held."""
    fw = a.framework
    if fw is None:
        return {}
    return {x.construct: dashboard_words.construct_doing(x, fw.optimizer, fw.idle_share(x.construct))
            for x in fw.constructs}


def framework_lanes(a: Analysis) -> list[LaneSpans]:
    """A lane per framework construct the trace marks (DataLoader, optimizer, backward, compile ...), where it ran."""
    out = []
    doing = construct_doings(a)
    for x in timeline.construct_spans(a):
        label = dashboard_words.construct_lane(x.construct.value)
        n = len(x.start_us)
        out.append(LaneSpans(label, (x.construct.value,) * n, x.start_us / 1e3, x.end_us / 1e3, (label,) * n,
                             (doing.get(x.construct, ""),) * n))
    return out


# Extra lanes, top to bottom. Adding one is a function of the analysis returning LaneSpans (or a list of
# them, or None), listed here; both levels of detail draw it.
LANE_SOURCES = (steps_lane, prefill_decode_lane, framework_lanes)


def extra_lanes(a: Analysis) -> list[LaneSpans]:
    out = []
    for src in LANE_SOURCES:
        got = src(a)
        out += [x for x in (got if isinstance(got, list) else [got]) if x is not None and len(x.start_ms)]
    return out


def _spans_frame(lanes: list[LaneSpans], window_ms: tuple[float, float]) -> pd.DataFrame:
    frames = []
    for i, x in enumerate(lanes):
        keep = (x.end_ms > window_ms[0]) & (x.start_ms < window_ms[1])
        details = np.array(x.details if x.details else ("",) * len(x.start_ms), dtype=object)
        frames.append(pd.DataFrame({"row": i, "lane": x.lane, "kind": np.array(x.kinds, dtype=object)[keep],
                                    "start_ms": x.start_ms[keep],
                                    "end_ms": x.end_ms[keep], "name": np.array(x.names, dtype=object)[keep],
                                    "dur": [duration_us(v) for v in (x.end_ms[keep] - x.start_ms[keep]) * 1e3],
                                    "detail": details[keep]}))
    return pd.concat(frames, ignore_index=True) if frames else _no_spans()


def idle_lane(device: int) -> str:
    return f"gpu{device} idle"


def _host_first(lanes) -> list[str]:
    """A host thread's ranges above its ops (as Nsight Systems draws NVTX above the CUDA API), then the GPUs."""
    def key(name: str):
        host = name.startswith("host")
        return (not host, name.removesuffix(" ranges") if host else name, not name.endswith(" ranges"))
    return sorted(lanes, key=key)


@dataclass(frozen=True)
class OverviewFrames:
    rows: tuple[Row, ...]
    busy: pd.DataFrame              # row, lane, start_ms, end_ms, busy (0..1)
    idle: pd.DataFrame              # row, lane, start_ms, end_ms, idle (0..1), cause (the bin's largest), by-cause columns,
                                    # construct (holding most of the bin's idle), construct_share (of it), held (its words)
    spans: pd.DataFrame             # row, lane, kind, start_ms, end_ms, name, dur: the extra lanes
    hits: pd.DataFrame              # start_ms, end_ms: search matches (drawn as ticks on their own row)
    events: int
    bins: int

    @property
    def lanes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.lane for r in self.rows))


def timeline_overview(a: Analysis, window_ms: tuple[float, float] | None = None, bins: int = 400,
                      search: "SearchView | None" = None) -> OverviewFrames:
    ov = timeline.overview(a, bins=bins, window_us=_us(window_ms) if window_ms else None)
    window_ms = window_ms or (ov.edges_us[0] / 1e3, ov.edges_us[-1] / 1e3)
    extras = extra_lanes(a)
    lanes = _host_first(ov.lanes)
    rows = [Row(x.lane, x.lane, "found" if x.found else "extra") for x in extras]
    rows += [Row(l, l, "host" if l.startswith("host") else "gpu") for l in lanes]
    rows += [Row(idle_lane(d), idle_lane(d), "idle") for d in ov.idle_devices]
    at = {r.lane: i for i, r in enumerate(rows)}
    s, e = ov.edges_us[:-1] / 1e3, ov.edges_us[1:] / 1e3
    nl = len(ov.lanes)
    busy = pd.DataFrame({"lane": np.repeat(np.array(ov.lanes, dtype=object), ov.bins),
                         "start_ms": np.tile(s, nl), "end_ms": np.tile(e, nl), "busy": ov.busy.reshape(-1)})
    busy = busy[busy["busy"] > 0].reset_index(drop=True)
    busy.insert(0, "row", busy["lane"].map(at).astype(int))
    frames = []
    held = idle_constructs.bin_constructs(a, ov.edges_us)  # [device, construct, bin]
    doing = construct_doings(a)
    for j, d in enumerate(ov.idle_devices):
        share = ov.idle[j]                                  # [cause, bin]
        total = share.sum(axis=0)
        f = pd.DataFrame({"row": at[idle_lane(d)], "lane": idle_lane(d), "start_ms": s, "end_ms": e, "idle": total,
                          "cause": np.array(CAUSES, dtype=object)[share.argmax(axis=0)]})
        for c, r in zip(CAUSES, share):
            f[c] = r
        top = held[j].argmax(axis=0)
        f["construct"] = np.array([c.value for c in CONSTRUCTS], dtype=object)[top]
        f["construct_share"] = np.minimum(held[j].max(axis=0) / np.maximum(total, 1e-12), 1.0)
        f = f[f["idle"] > 0]
        frames.append(f.assign(held=[_held(doing, Construct(c), x) for c, x in zip(f["construct"],
                                                                                  f["construct_share"])]))
    idle = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["row", "lane", "start_ms", "end_ms", "idle", "cause", *CAUSES, "construct", "construct_share", "held"])
    return OverviewFrames(rows=tuple(rows), busy=busy, idle=idle, spans=_spans_frame(extras, window_ms),
                          hits=_hits(search, window_ms), events=ov.events, bins=ov.bins)


def _held(doing: dict[Construct, str], c: Construct, share_of_idle: float | None = None) -> str:
    """Where the host was in an idle stretch: the construct holding it and what it did over the trace."""
    if not doing:
        return dashboard_words.no_construct()
    return dashboard_words.idle_held(doing.get(c, dashboard_words.construct_name_of(c)), share_of_idle)


def _hits(search: "SearchView | None", window_ms: tuple[float, float]) -> pd.DataFrame:
    if search is None or not search.count:
        return pd.DataFrame(columns=["start_ms", "end_ms"])
    keep = (search.end_ms > window_ms[0]) & (search.start_ms < window_ms[1])
    return pd.DataFrame({"start_ms": search.start_ms[keep], "end_ms": search.end_ms[keep]})


@dataclass(frozen=True)
class BarFrames:
    rows: tuple[Row, ...]
    bars: pd.DataFrame      # row, lane, depth, start_ms, end_ms, dur, kind, name, shapes, id, tid, a0, a1, hit
    gaps: pd.DataFrame      # row, lane, start_ms, end_ms, dur, cause, evidence parts (host_call, called_from, next)
    flows: pd.DataFrame     # id, tid, a0, a1 (of the GPU bar), call_ms, call_row, gpu_ms, gpu_row: op -> kernel arrows
    spans: pd.DataFrame     # the extra lanes, as OverviewFrames.spans

    @property
    def lanes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.lane for r in self.rows))


def timeline_bars(a: Analysis, window_ms: tuple[float, float], search: "SearchView | None" = None) -> BarFrames:
    """Each drawable event of the window: its row (lane and nesting depth), its anchor on the host (the
    flow's key: tracetriage.analyzers.triage.timeline._anchors) and whether it matches the search."""
    t = timeline.build(a, window_us=_us(window_ms), max_bars=RAW_LIMIT)
    extras = extra_lanes(a)
    lane_names = [t.lanes[i] for i in t.lane]
    depth = t.depth.astype(int)
    deepest: dict[str, int] = {}
    for ln, d in zip(lane_names, depth.tolist()):
        deepest[ln] = max(deepest.get(ln, 0), d)
    rows = [Row(x.lane, x.lane, "found" if x.found else "extra") for x in extras]
    at: dict[tuple[str, int], int] = {}
    for ln in _host_first(t.lanes):
        kind = "host" if ln.startswith("host") else "gpu"
        for d in range(deepest.get(ln, 0) + 1):
            at[(ln, d)] = len(rows)
            rows.append(Row(ln if d == 0 else "", ln, kind))
    devices = sorted({int(d.device) for d in a.devices})
    for d in devices:
        at[(idle_lane(d), 0)] = len(rows)
        rows.append(Row(idle_lane(d), idle_lane(d), "idle"))
    row = np.array([at[(ln, d)] for ln, d in zip(lane_names, depth.tolist())], dtype=np.int64)
    hit = np.isin(t.row, search.rows) if search is not None and search.count else np.zeros(len(t.row), bool)
    bars = pd.DataFrame({"row": row, "lane": lane_names, "depth": depth, "start_ms": t.start_us / 1e3,
                         "end_ms": t.end_us / 1e3, "dur": [duration_us(x) for x in t.end_us - t.start_us],
                         "kind": t.kind, "name": t.name, "shapes": t.shapes, "id": t.row.astype(np.int64),
                         "tid": np.where(t.anchor_tid != NONE, t.anchor_tid, np.nan).astype(np.float64),
                         "a0": t.anchor_start_us / 1e3, "a1": t.anchor_end_us / 1e3, "hit": hit})
    gap_rows = [at[(idle_lane(int(d)), 0)] for d in t.gap_device]
    gaps = pd.DataFrame({"row": np.array(gap_rows, dtype=np.int64), "lane": [idle_lane(int(d)) for d in t.gap_device],
                         "start_ms": t.gap_start_us / 1e3, "end_ms": t.gap_end_us / 1e3,
                         "dur_us": t.gap_end_us - t.gap_start_us, "cause": t.gap_cause, "host_call": t.gap_host_call,
                         "called_from": t.gap_called_from, "next": t.gap_next})
    held = idle_constructs.gap_constructs(a, _us(window_ms))
    doing = construct_doings(a)
    gaps["held"] = [_held(doing, c) for c in held] if len(held) == len(gaps) else ""
    return BarFrames(rows=tuple(rows), bars=bars, gaps=gaps, flows=_flows(bars), spans=_spans_frame(extras, window_ms))


def _flows(bars: pd.DataFrame) -> pd.DataFrame:
    """An arrow per GPU bar whose launch call is drawn too: from the call's start on its row to the bar's start."""
    host = bars[bars["lane"].str.startswith("host") & ~bars["lane"].str.endswith(" ranges")]
    calls = host[host["kind"].isin(("launch call", "sync call", "runtime call"))]
    gpu = bars[bars["lane"].str.startswith("gpu") & bars["tid"].notna()]
    key = pd.MultiIndex.from_arrays([calls["tid"], calls["a0"]])
    where = pd.Series(calls["row"].to_numpy(), index=key)
    where = where[~where.index.duplicated()]
    call_row = where.reindex(pd.MultiIndex.from_arrays([gpu["tid"], gpu["a0"]])).to_numpy()
    f = pd.DataFrame({"id": gpu["id"].to_numpy(), "tid": gpu["tid"].to_numpy(), "a0": gpu["a0"].to_numpy(),
                      "a1": gpu["a1"].to_numpy(), "call_ms": gpu["a0"].to_numpy(), "call_row": call_row,
                      "gpu_ms": gpu["start_ms"].to_numpy(), "gpu_row": gpu["row"].to_numpy()})
    return f.dropna(subset=["call_row"]).reset_index(drop=True)


def without_causes(frames: OverviewFrames | BarFrames) -> OverviewFrames | BarFrames:
    """The same timeline with what the analysis decided left out: a drill's timeline before it is graded. No
    idle rows or gaps, no lane the analysis found (prefill and decode from shapes), no step marked set-up or
    outlier, no span's tooltip of what was found in it (TTFT, idle by cause, the construct's share of the idle)."""
    from dataclasses import replace

    keep = [i for i, r in enumerate(frames.rows) if r.kind not in ("idle", "found")]
    renumber = {old: new for new, old in enumerate(keep)}
    rows = tuple(frames.rows[i] for i in keep)
    sp = frames.spans[frames.spans["row"].isin(keep)]
    spans = sp.assign(row=sp["row"].map(renumber), detail="",
                      kind=sp["kind"].replace({SETUP_STEP: STEP, OUTLIER_STEP: STEP}))
    if isinstance(frames, OverviewFrames):
        return replace(frames, rows=rows, busy=frames.busy.assign(row=frames.busy["row"].map(renumber)),
                       idle=frames.idle.iloc[0:0], spans=spans)
    flows = frames.flows.assign(call_row=frames.flows["call_row"].map(renumber),
                                gpu_row=frames.flows["gpu_row"].map(renumber))
    return replace(frames, rows=rows, bars=frames.bars.assign(row=frames.bars["row"].map(renumber)),
                   gaps=frames.gaps.iloc[0:0], flows=flows, spans=spans)


@dataclass(frozen=True)
class SearchView:
    text: str
    count: int
    names: tuple[str, ...]      # the distinct names matched, most frequent first
    rows: np.ndarray            # trace rows (a bar's id)
    start_ms: np.ndarray
    end_ms: np.ndarray


def search(a: Analysis, text: str) -> SearchView:
    """Drawable events whose name holds `text` (case-insensitive), in time order."""
    m = timeline.matches(a, text)
    return SearchView(text=text, count=len(m), names=m.names, rows=m.row, start_ms=m.start_us / 1e3,
                      end_ms=m.end_us / 1e3)


@dataclass(frozen=True)
class Picked:
    """The bar a click or a search selected: what the chart's `pick` selection holds, to draw it selected."""
    id: int
    tid: float | None
    a0: float | None
    a1: float | None


def picked(frames: BarFrames, row_id: int) -> Picked | None:
    b = frames.bars[frames.bars["id"] == row_id]
    if not len(b):
        return None
    r = b.iloc[0]
    def num(x):
        return None if pd.isna(x) else float(x)
    return Picked(int(r["id"]), num(r["tid"]), num(r["a0"]), num(r["a1"]))


@dataclass(frozen=True)
class FlowView:
    """One selected event and what it is linked to, for the details table under the timeline."""
    name: str
    kind: str
    lane: str
    start_ms: float
    dur: str
    shapes: str
    steps: pd.DataFrame     # role, name, kind, lane, start_ms, dur, queued (after its launch call), shapes


def flow(a: Analysis, row_id: int) -> FlowView | None:
    """The flow of one drawable event (timeline.flow); None for a row that is no drawable event."""
    ev = a.trace.ev
    if not (0 <= row_id < len(ev)) or int(ev.cat[row_id]) not in timeline.KINDS:
        return None
    f = timeline.flow(a, row_id)
    steps = [("op", f.op)] if f.op else []
    steps += [("launch call", s) for s in f.calls] + [("GPU", s) for s in f.gpu]
    table = pd.DataFrame([{"role": dashboard_words.flow_role(role), "name": s.name, "kind": s.kind, "lane": s.lane,
                           "start_ms": s.start_us / 1e3, "dur": duration_us(s.dur_us),
                           "queued": duration_us(s.queued_us) if s.queued_us is not None else ""}
                          for role, s in steps if s.row != f.event.row],
                         columns=["role", "name", "kind", "lane", "start_ms", "dur", "queued"])
    shapes = timeline.shape_text(*a.trace.shapes(row_id)[:2]) if int(ev.cat[row_id]) == CPU_OP else ""
    e = f.event
    return FlowView(e.name, e.kind, e.lane, e.start_us / 1e3, duration_us(e.dur_us), shapes, table)


# --- diff ---------------------------------------------------------------------------------

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
    ops: pd.DataFrame           # op, before_ms, after_ms, change_ms, calls/kernels/bytes before and after, largest change first


def diff(before: Analysis, after: Analysis) -> DiffView:
    """The diff of two analysed traces (tracetriage.analyzers.triage.diff), with the per-op table (tracetriage.analyzers.triage.opdiff)."""
    from tracetriage.analyzers.triage.opdiff import op_diff

    d = diff_analyses(before, after)
    j = serialize.diff(d)   # the `diff --json` object: what the CLI prints, so the page says the same
    b, f = j["before"], j["after"]
    db, da = d.divisors       # per profiled step when the traces hold a different number of steps, as the diff compares
    same = {k: j.get(k) is not None and d.about_same(j[k]) for k in ("launch_ratio", "kernel_ratio", "byte_ratio")}

    def m(label, unit, key, **change):
        per = (lambda x, n: None if x is None else x / n)
        return dashboard_words.diff_measure(label, unit, per(b[key], db), per(f[key], da), **change)

    measures = pd.DataFrame([
        m("GPU span", "us", "span_us", speedup=j.get("speedup")),
        m("kernels busy", "us", "kernel_busy_us", change_us=j["busy_change_us"]),
        m("idle", "us", "idle_us", change_us=sum(j["idle_change_us"].values())),
        m("launch calls", "count", "launch_calls", ratio_value=j.get("launch_ratio"), same=same["launch_ratio"]),
        m("kernels", "count", "kernels", ratio_value=j.get("kernel_ratio"), same=same["kernel_ratio"]),
        m("bytes", "bytes", "bytes", ratio_value=j.get("byte_ratio"), same=same["byte_ratio"]),
    ], columns=["measure", "before", "after", "change"])
    idle = pd.DataFrame([{"cause": c.value, "before_us": b["idle_by_cause_us"].get(c.value, 0.0) / db,
                          "after_us": f["idle_by_cause_us"].get(c.value, 0.0) / da,
                          "change_us": j["idle_change_us"].get(c.value, 0.0)} for c in CAUSES])
    idle = idle.assign(before_ms=idle["before_us"] / 1e3, after_ms=idle["after_us"] / 1e3,
                       change_ms=idle["change_us"] / 1e3)
    ops = pd.DataFrame([{"op": r.name,
                         "before_ms": r.before.device_us / 1e3 if r.before else 0.0,
                         "after_ms": r.after.device_us / 1e3 if r.after else 0.0,
                         "change_ms": r.change_us / 1e3,
                         "calls": dashboard_words.before_after_count(r.before and r.before.calls, r.after and r.after.calls),
                         "kernels": dashboard_words.before_after_count(r.before and r.before.kernels,
                                                                       r.after and r.after.kernels),
                         "bytes": dashboard_words.before_after_bytes(r.before and r.before.bytes, r.after and r.after.bytes)}
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


# --- what-if ------------------------------------------------------------------------------

@dataclass(frozen=True)
class LeversView:
    baseline_us: float          # the replay's traced span: first traced event to last (tracetriage.analyzers.model.span)
    replay_us: float
    report_span_us: float       # the report's GPU span (first to last GPU activity, per device)
    spans_agree: bool           # the two spans are one within the clock's tolerance
    host_outside_us: float      # how much longer the traced span is: host work before the first GPU activity or after the last
    levers: pd.DataFrame        # lever, predicted_us, predicted_ms, predicted_ratio, saving_us, saving, assumption, label


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


def _no_gaps() -> pd.DataFrame:
    return pd.DataFrame(columns=["row", "lane", "start_ms", "end_ms", "dur_us", "cause", "host_call", "called_from",
                                 "next", "held"])


def _no_spans() -> pd.DataFrame:
    return pd.DataFrame(columns=["row", "lane", "kind", "start_ms", "end_ms", "name", "dur", "detail"])


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
                                  spans=_no_spans(), hits=pd.DataFrame(columns=["start_ms", "end_ms"]), events=n,
                                  bins=bins)
        bars = pd.DataFrame({"row": at[lane], "lane": [t.lanes[i] for i in lane], "depth": 0,
                             "start_ms": start / 1e6, "end_ms": end / 1e6,
                             "dur": [duration_ns(x) for x in (end - start)], "kind": list(t.kind),
                             "name": list(t.name), "shapes": "", "id": np.arange(n), "tid": np.nan, "a0": np.nan,
                             "a1": np.nan, "hit": False})
        flows = pd.DataFrame(columns=["id", "tid", "a0", "a1", "call_ms", "call_row", "gpu_ms", "gpu_row"])
        return BarFrames(rows=rows, bars=bars, gaps=_no_gaps(), flows=flows, spans=_no_spans())

    return WhatIfTimelines(lever=lever, measured=frames(t.measured_lane, t.measured_start_ns, t.measured_end_ns),
                           predicted=frames(t.predicted_lane, t.predicted_start_ns, t.predicted_end_ns),
                           binned=binned, activities=n, hi_ms=hi_ns / 1e6)


# --- ranks --------------------------------------------------------------------------------

@dataclass(frozen=True)
class RanksView:
    lines: list[str]                # what `tracetriage report DIR` prints
    straggler_line: str
    straggler_rank: int | None
    ranks: pd.DataFrame             # rank, file, rank_from, idle_share, idle_cause, kernel_busy_ms, span_ms, collectives, collective_ms, collective_step_ms, host_step_ms
    steps: pd.DataFrame             # rank, step, collective_ms: each rank's collective time per step
    caveats: list[str]


def ranks(directory: Path, progress=None) -> RanksView:
    """The directory's multi-rank report (tracetriage.analyzers.runs.pool.report_object); TraceError with one line."""
    from tracetriage.analyzers.runs.pool import report_object
    from tracetriage.analyzers.voice import ranks as rank_words

    rr = report_object(Path(directory), progress=progress)
    s = rr.straggler
    found = getattr(s, "rank", None) is not None
    stats = {x.row.rank: x for x in s.stats} if found else {}
    rows, steps = [], []
    for r in rr.rows:
        c = r.r.collectives
        stat = stats.get(r.rank)
        rows.append({"rank": r.rank, "file": r.path.name, "rank_from": r.how, "idle_share": r.r.idle_share,
                     "idle_cause": common_words.cause_words(r.r.dominant), "kernel_busy_ms": r.r.kernel_busy_us / 1e3,
                     "span_ms": r.r.span_us / 1e3, "collectives": c.calls, "collective_ms": c.total_ns / 1e6,
                     "collective_step_ms": stat.per_step_med / 1e6 if stat and stat.per_step_med is not None else np.nan,
                     "host_step_ms": stat.host_step / 1e6 if stat and stat.host_step is not None else np.nan,
                     "straggler": found and r.rank == s.rank})
        steps += [{"rank": f"rank {r.rank}", "step": i + 1, "collective_ms": ns / 1e6}
                  for i, ns in enumerate(c.per_step_ns)]
    return RanksView(lines=rank_words.ranks_lines(rr), straggler_line=rank_words.straggler_line(s),
                     straggler_rank=s.rank if found else None, ranks=pd.DataFrame(rows),
                     steps=pd.DataFrame(steps, columns=["rank", "step", "collective_ms"]),
                     caveats=rank_words.ranks_caveats(rr))


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
    from tracetriage.drills import bank

    return [DrillView(d.id, d.title, d.lesson, d.kind, d.source(), d.questions,
                      tuple((k, t, doc) for k, (t, doc) in d.parts.items()),
                      drill_words.rubric_line(d.rubric, d.decisive, d.cap_if_wrong)) for d in bank.all_drills()]


def drill_traces(drill_id: str) -> list[Path]:
    """The trace a drill shows (a toy timeline is written from its seed), and its `after` trace if it has one."""
    from tracetriage.drills import bank

    d = bank.get(drill_id)
    return [d.trace_path()] + ([d.after_path()] if d.after else [])


def drill_answers(drill_id: str, raw: dict[str, str]) -> dict:
    """The form's text fields as the answer file's types: numbers parsed, a list of names split at commas.
    Raises AnswerError (one line) for a number that is not one; a blank field is a blank answer."""
    from tracetriage.drills import bank
    from tracetriage.drills.amounts import amounts
    from tracetriage.drills.answers import AnswerError

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
                if not amounts(text):    # "0.79 PFLOP/s": a number with its unit, graded in the key's unit
                    raise AnswerError(dashboard_words.answer_not_a_number(part, text)) from None
                out[part] = text
                continue
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
    from tracetriage.drills import bank, grader
    from tracetriage.drills.predictions import Log

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
    from tracetriage.drills import predictions as pr

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
    from tracetriage.drills.commands import USER_ERRORS

    return USER_ERRORS


DrillErrors = _drill_errors()   # what a drill, an answer or the log raises for the user: one line each


@dataclass(frozen=True)
class DrillTables:
    """What `tracetriage drill show` prints beside the timeline, and nothing more (no answer)."""
    span_line: str | None           # triage: the GPU span, busy and idle shares
    operators: pd.DataFrame | None  # triage: name, share, device_us, calls
    ranges: pd.DataFrame | None     # ranges: name, count, median_wall_us, wall_us, kernel_busy_us


def drill_tables(drill_id: str) -> DrillTables:
    from tracetriage.drills import bank, evidence

    d = bank.get(drill_id)
    if d.kind not in ("triage", "ranges"):
        return DrillTables(None, None, None)
    f = evidence.facts(d.trace_path())
    if d.kind == "triage":
        ops = pd.DataFrame(f.hotspots, columns=["name", "share", "device_us", "calls"])
        return DrillTables(drill_words.span_line(f.span_ms, f.kernel_busy_ms, f.idle_share), ops, None)
    cols = ["name", "count", "median_wall_us", "wall_us", "kernel_busy_us"]
    return DrillTables(None, None, pd.DataFrame([{k: r[k] for k in cols} for r in f.ranges], columns=cols))
