"""The Report page's frames: the five lines and caveats, idle by cause with its evidence, hotspots, ranges,
prefill against decode, the framework constructs that made the idle, the steps; and the trace annotated for
Perfetto."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tracetriage.analyzers.loading.formats import trace_stem
from tracetriage.analyzers.model.units import shares_of_a_whole
from tracetriage.analyzers.model.verdicts import CAUSES, Construct
from tracetriage.analyzers.triage import timeline
from tracetriage.analyzers.triage.report import Analysis, analyze_file
from tracetriage.analyzers.voice import common as common_words
from tracetriage.analyzers.voice import report as report_words
from tracetriage.dashboard import words as dashboard_words


def open_analysis(path: str | Path) -> Analysis:
    """Load and analyse one trace; raises TraceError with the analyzers' one-line message."""
    return analyze_file(Path(path))


def annotated_trace(path: str | Path, a: Analysis) -> bytes:
    """The trace with its idle gaps as a track named by cause, gzipped, for Perfetto
    (tracetriage.analyzers.output.annotate)."""
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
        rows.append({"cause": c.value, "idle_us": a.by_cause_ns.get(c, 0) / 1e3,
                     "idle_ms": a.by_cause_ns.get(c, 0) / 1e6,
                     "share_of_span": a.by_cause_ns.get(c, 0) / a.span_ns if a.span_ns else 0.0,
                     "gaps": e.gaps if e else 0, "median_gap_us": e.median_gap_us if e else 0.0,
                     "max_gap_us": e.max_gap_us if e else 0.0,
                     # no gap of this cause: nothing to advise (advice for idle that is not there misleads)
                     "first_experiment": common_words.advice(c, e) if e and e.gaps else ""})
    out = pd.DataFrame(rows)
    # the shares as the Idle line prints them (they add up to its idle share): one figure in the CLI and here
    present = [i for i in sorted(range(len(rows)), key=lambda i: -rows[i]["idle_us"]) if rows[i]["idle_us"] > 0]
    _, texts = shares_of_a_whole(a.idle_share if a.span_ns else 0.0, [rows[i]["share_of_span"] for i in present])
    shown = ["0%"] * len(rows)
    for i, t in zip(present, texts):
        shown[i] = t
    return out.assign(share_shown=shown)


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
    """One row per framework construct the trace ran (tracetriage.analyzers.analyses.framework), most idle first:
    the idle it made, its share of all idle and the cause holding most of it, the launches made inside it, how
    many times it ran, the host time inside it, and the events that mark it. Empty when there was no framework
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
    """One row per step (tracetriage.analyzers.analyses.steps), in the timeline's µs from its origin, for a steps
    lane above the timeline and a per-step chart: its window, wall, kernel busy and idle time, the cause holding
    most of its idle, whether it is the loop's structure, set-up kept apart, the outlier, and its kind (prefill,
    decode, mixed, other) where prefill and decode were found from shapes. Empty when no steps were found."""
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
