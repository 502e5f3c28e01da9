"""The Timeline page's frames: the binned overview of a window and its bars, the search, the selected event
and its flow, and a drill's timeline without what the analysis decided.

Every timeline frame is in ms from the timeline's origin, the start of the report's GPU span (the first
GPU activity): host work before it has negative times. Rows are drawn top to bottom in their order:
the extra lanes (steps, phases: tracetriage.dashboard.frames.lanes), the host lanes (a row per nesting
depth), the GPU streams, the idle lanes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tracetriage.analyzers.model.trace import CPU_OP, NONE
from tracetriage.analyzers.model.units import duration_us
from tracetriage.analyzers.model.verdicts import CAUSES, CONSTRUCTS, Construct
from tracetriage.analyzers.triage import idle_constructs, timeline
from tracetriage.analyzers.triage.report import Analysis
from tracetriage.dashboard import words as dashboard_words
from tracetriage.dashboard.frames.lanes import (
    OUTLIER_STEP,
    SETUP_STEP,
    STEP,
    construct_doings,
    extra_lanes,
    spans_frame,
)

RAW_LIMIT = 5_000  # a window with more drawable events is shown binned


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
    idle: pd.DataFrame              # row, lane, start_ms, end_ms, idle (0..1), cause (the bin's largest), by-cause
                                    # columns, construct (holding most of the bin's idle), construct_share (of
                                    # it), held (its words)
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
    rows += [Row(ln, ln, "host" if ln.startswith("host") else "gpu") for ln in lanes]
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
    return OverviewFrames(rows=tuple(rows), busy=busy, idle=idle, spans=spans_frame(extras, window_ms),
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
    return BarFrames(rows=tuple(rows), bars=bars, gaps=gaps, flows=_flows(bars), spans=spans_frame(extras, window_ms))


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


def no_gaps() -> pd.DataFrame:
    return pd.DataFrame(columns=["row", "lane", "start_ms", "end_ms", "dur_us", "cause", "host_call", "called_from",
                                 "next", "held"])
