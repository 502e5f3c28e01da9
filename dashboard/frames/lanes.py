"""The timeline's extra lanes, drawn above the host threads: the loop's steps, prefill and decode, the
framework constructs. Each is a function of the analysis in LANE_SOURCES; both levels of detail
(tracetriage.dashboard.frames.timeline) draw them."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tracetriage.analyzers.analyses.inference import PhasesFrom
from tracetriage.analyzers.model.span import PROFILER_STEP_RANGE
from tracetriage.analyzers.model.units import duration_us
from tracetriage.analyzers.model.verdicts import Construct
from tracetriage.analyzers.triage import timeline
from tracetriage.analyzers.triage.report import Analysis
from tracetriage.analyzers.voice import steps as step_words
from tracetriage.dashboard import words as dashboard_words


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


def spans_frame(lanes: list[LaneSpans], window_ms: tuple[float, float]) -> pd.DataFrame:
    frames = []
    for i, x in enumerate(lanes):
        keep = (x.end_ms > window_ms[0]) & (x.start_ms < window_ms[1])
        details = np.array(x.details if x.details else ("",) * len(x.start_ms), dtype=object)
        frames.append(pd.DataFrame({"row": i, "lane": x.lane, "kind": np.array(x.kinds, dtype=object)[keep],
                                    "start_ms": x.start_ms[keep],
                                    "end_ms": x.end_ms[keep], "name": np.array(x.names, dtype=object)[keep],
                                    "dur": [duration_us(v) for v in (x.end_ms[keep] - x.start_ms[keep]) * 1e3],
                                    "detail": details[keep]}))
    return pd.concat(frames, ignore_index=True) if frames else no_spans()


def no_spans() -> pd.DataFrame:
    return pd.DataFrame(columns=["row", "lane", "kind", "start_ms", "end_ms", "name", "dur", "detail"])
