"""Altair charts from the adapter's frames. No analysis here: these only draw.

Colours are fixed per cause, per kind of event and per bound, so the same thing has the same colour on
every page (and in the README's screenshots). A sync call takes the synchronization cause's colour.

The timeline is drawn as Perfetto and Nsight Systems draw theirs: a row per lane and nesting depth
(quantitative y, so flow arrows can join two rows), names on the bars wide enough to hold them, a click
selecting an event (the `pick` selection) and lighting up its flow in magenta: every bar anchored on the
same host thread inside its host span or around it (an op's launch calls and their kernels, a kernel's
launch call and ops), with an arrow from each launch call to its GPU work. Search matches are outlined in
black. The selection and the highlight run in the browser; the page hears the click too (its details).
"""
from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from tracetriage.analyzers.voice.causes import CAUSE_SPECS
from tracetriage.dashboard import words as words

CAUSE_COLORS = {c.value: s.colour for c, s in CAUSE_SPECS.items()}     # each cause's record's colour
KIND_COLORS = {"kernel": "#54a24b", "memcpy": "#4c78a8", "memset": "#72b7b2", "cpu_op": "#bab0ac",
               "launch call": "#eeca3b", "sync call": CAUSE_COLORS["synchronization"], "runtime call": "#d6b48c",
               "range": "#9d755d", "step": "#79706e", "prefill": "#d67195", "decode": "#fcbfd2"}
# The framework constructs' lanes (each lane is one construct: its label says which), one hue for the kind
CONSTRUCT_COLORS = {"compile": "#8f6fb5", "allocator": "#b5a46f", "dataloader": "#6f9fb5", "optimizer": "#b56f8a",
                    "collective": "#6fb58a", "backward": "#b5856f", "compiled": "#8a8fb5", "module": "#9fb56f"}
# The steps lane's set-up steps and its outlier (no other mark uses the outlier's colour: the e2e test finds it),
# and the steps that mix prefill and decode tokens
SPAN_COLORS = {"setup step": "#cfc6c0", "outlier step": "#c2185b", "mixed": "#a05195"}
BOUND_COLORS = {"compute": "#e45756", "memory": "#4c78a8"}
FLOW = "#ff00ff"         # the selected event's flow: no other mark uses it (the e2e test looks for it)
HIT = "#000000"          # search matches' outline
BRUSH = "brush"          # the interval selection's name: the page reads it back to zoom
PICK = "pick"            # the point selection of one event: the page reads it back for its details
ROW_PX = 24              # a timeline row (a lane, or one nesting depth of a host lane)
OVERVIEW_ROW_PX = 30
LABEL_PX = 150           # the lane labels' width on every timeline: stacked timelines' time axes line up
CHROME_PX = 150          # x axis, its title and the legends below: Streamlit fits the chart, these included,
                         # in the height
LABEL_MIN_PX = 28        # a bar narrower than this carries no name



class _Altair:
    """altair, imported at the first chart drawn rather than with this module: the import takes 2-3 s of CPU
    (jsonschema builds its format grammars), paid by every process that only reads the colours above (the tests'
    workers collecting test_causes, the report page before its first chart)."""

    def __getattr__(self, name: str):
        import altair

        # The level of detail bounds what a chart holds (a few thousand rows); Altair's own 5,000-row guard
        # would refuse an overview of many lanes for no reason.
        altair.data_transformers.disable_max_rows()
        globals()["alt"] = altair          # later calls go to the module itself
        return getattr(altair, name)


alt: Any = _Altair()


def _cause_scale() -> alt.Scale:
    return alt.Scale(domain=list(CAUSE_COLORS), range=list(CAUSE_COLORS.values()))


def _cause_legend() -> alt.Legend:
    return alt.Legend(values=list(CAUSE_COLORS), orient="bottom", labelExpr=_CAUSE_LABEL_EXPR)


_CAUSE_LABEL_EXPR = "replace(datum.label, '_', ' ')"


def _x(lo: float, hi: float, field: str = "start_ms") -> alt.X:
    return alt.X(f"{field}:Q", title=words.time_axis_title(), scale=alt.Scale(domain=[lo, hi], nice=False, zero=False),
                 axis=alt.Axis(format=_ms_format(hi - lo), labelFlush=True))


def _ms_format(width_ms: float) -> str:
    """Enough decimals of a ms to tell the axis' ticks apart ('1,200', '12.35', '12.3456')."""
    decimals = max(0, min(6, math.ceil(-math.log10(max(width_ms, 1e-9) / 8)))) if width_ms > 0 else 3
    return f",.{decimals}f"


def _rows_y(rows, field: str = "y0") -> alt.Y:
    """Rows as a quantitative y, row 0 on top, each labelled with its lane on its first row only."""
    labels = json.dumps([r.label for r in rows])       # our own lane names ("host thread 608"), never trace strings
    n = max(len(rows), 1)
    return alt.Y(f"{field}:Q", title=None, scale=alt.Scale(domain=[n - 0.5, -0.5], nice=False, zero=False),
                 axis=alt.Axis(values=list(range(len(rows))), labelExpr=f"{labels}[datum.value] || ''", grid=False,
                               ticks=False, domain=False, labelLimit=LABEL_PX - 8, minExtent=LABEL_PX,
                               maxExtent=LABEL_PX, labelFontSize=11, labelOverlap=False))


def _band(df: pd.DataFrame, half: float = 0.42) -> pd.DataFrame:
    """Each record's rectangle on its row: y0..y1 around the row's centre."""
    return df.assign(y0=df["row"] - half, y1=df["row"] + half)


def _brush() -> alt.Parameter:
    return alt.selection_interval(name=BRUSH, encodings=["x"])


def _cause_color(legend: bool = True) -> alt.Color:
    return alt.Color("cause:N", title="idle cause", scale=_cause_scale(), legend=_cause_legend() if legend else None)


def _kind_color(kinds) -> alt.Color:
    present = [k for k in KIND_COLORS if k in set(kinds)]
    return alt.Color("kind:N", title="event",
                     scale=alt.Scale(domain=list(KIND_COLORS), range=list(KIND_COLORS.values())),
                     legend=alt.Legend(values=present or list(KIND_COLORS), orient="top", columns=8))


def _height(rows, row_px: int) -> int:
    return row_px * max(len(rows), 2) + CHROME_PX


def _spans_layers(spans: pd.DataFrame, rows, lo: float, hi: float) -> list:
    """The extra lanes (steps, phases): named spans, coloured by kind."""
    if not len(spans):
        return []
    d = _band(spans)
    colors = {**KIND_COLORS, **CONSTRUCT_COLORS, **SPAN_COLORS}
    tooltip = [alt.Tooltip("name:N"), alt.Tooltip("lane:N"), alt.Tooltip("dur:N", title="duration"),
               alt.Tooltip("start_ms:Q", title="from ms", format=",.3f")]
    if "detail" in d and d["detail"].astype(bool).any():      # what the analysis found in the span
        tooltip.append(alt.Tooltip("detail:N", title="found"))
    rect = alt.Chart(d).mark_rect(stroke="white", strokeWidth=0.5, clip=True).encode(
        x=_x(lo, hi), x2="end_ms:Q", y=_rows_y(rows), y2="y1:Q",
        color=alt.Color("kind:N", scale=alt.Scale(domain=list(colors), range=list(colors.values())), legend=None),
        tooltip=tooltip)
    return [rect, _labels(d.drop(columns=["detail"], errors="ignore"), rows, lo, hi)]   # (names only: no tooltip)


def _labels(d: pd.DataFrame, rows, lo: float, hi: float) -> alt.Chart:
    """Each bar's name on it, cut to the bar's drawn width (Vega re-measures on every redraw), and none
    on a bar too narrow to hold a few letters."""
    width = f"scale('x', min(datum.end_ms, {hi!r})) - scale('x', max(datum.start_ms, {lo!r}))"
    lab = d.assign(label_ms=d["start_ms"].clip(lower=lo))
    return alt.Chart(lab).mark_text(align="left", baseline="middle", dx=3, fontSize=10, color="#1a1a1a", clip=True,
                                    limit=alt.expr(f"max(0, {width} - 6)"),
                                    opacity=alt.expr(f"{width} >= {LABEL_MIN_PX} ? 1 : 0")).encode(
        x=alt.X("label_ms:Q"), y=_rows_y(rows, "row"), text="name:N")


def timeline_overview(frames, lo: float, hi: float, causes: bool = True) -> alt.LayerChart:
    """Binned busy shares per lane, and per device an idle lane coloured by each bin's largest cause
    (causes=False: busy shares only, for a drill before it is graded)."""
    return _legends_below(_on_canvas(_overview_layer(frames, lo, hi, causes=causes)))


def _overview_layer(frames, lo: float, hi: float, causes: bool = True, title: str | None = None,
                    brush: bool = True) -> alt.LayerChart:
    busy = _band(frames.busy).assign(
        tip=[words.bin_tooltip(lane, b) for lane, b in zip(frames.busy["lane"], frames.busy["busy"])],
        when=[words.bin_range(a, b) for a, b in zip(frames.busy["start_ms"], frames.busy["end_ms"])])
    base_busy = alt.Chart(busy).mark_rect(clip=True).encode(
        x=_x(lo, hi), x2="end_ms:Q", y=_rows_y(frames.rows), y2="y1:Q",
        color=alt.Color("busy:Q", title="busy share", scale=alt.Scale(scheme="greens", domain=[0, 1]),
                        legend=alt.Legend(orient="top", gradientLength=160)),
        tooltip=[alt.Tooltip("tip:N", title="busy"), alt.Tooltip("when:N", title="bin")])
    layers = [base_busy.add_params(_brush()) if brush else base_busy]
    if causes and len(frames.idle):
        idle = _band(frames.idle.drop(columns=["construct", "construct_share"], errors="ignore"))  # said in `held`
        idle = idle.assign(tip=[words.idle_bin_tooltip(r["idle"], {c: r[c] for c in CAUSE_COLORS})
                                for _, r in idle.iterrows()],
                           when=[words.bin_range(a, b) for a, b in zip(idle["start_ms"], idle["end_ms"])])
        layers.append(alt.Chart(idle).mark_rect(clip=True).encode(
            x=_x(lo, hi), x2="end_ms:Q", y=_rows_y(frames.rows), y2="y1:Q", color=_cause_color(),
            opacity=alt.Opacity("idle:Q", scale=alt.Scale(domain=[0, 1], range=[0.25, 1]), legend=None),
            tooltip=[alt.Tooltip("lane:N"), alt.Tooltip("tip:N", title="idle"), alt.Tooltip("when:N", title="bin"),
                     *([alt.Tooltip("held:N", title="host was in")] if "held" in idle else [])]))
    layers += _spans_layers(frames.spans, frames.rows, lo, hi)
    if len(frames.hits):
        layers.append(alt.Chart(frames.hits).mark_rule(color=HIT, strokeWidth=1, opacity=0.6, clip=True).encode(
            x=_x(lo, hi)))
    chart = alt.layer(*layers).resolve_scale(color="independent")
    return chart.properties(height=_height(frames.rows, OVERVIEW_ROW_PX), **({"title": title} if title else {}))


def timeline_bars(frames, lo: float, hi: float, causes: bool = True, picked=None) -> alt.LayerChart:
    """Each event as a bar on its row, named when wide enough; idle gaps on the idle lane and shaded across
    the chart; a click selects an event and lights up its flow (causes=False: the events only, for a drill
    before it is graded). `picked` (data.Picked) is the event selected from the page (a search's match)."""
    return _legends_below(_on_canvas(_bars_layer(frames, lo, hi, causes=causes, picked=picked)))


def _picked_value(picked) -> list[dict] | None:
    if picked is None:
        return None
    return [{"id": picked.id, "tid": picked.tid, "a0": picked.a0, "a1": picked.a1}]


# The flow of the picked event, as a Vega expression over a datum's anchor (tid, a0, a1): the picked bar
# itself, and every bar anchored on the picked one's host thread inside its host span or around it.
_PICKED = f"isArray({PICK}.id) && length({PICK}.id) > 0"
_IN_FLOW = (f"({_PICKED}) && (datum.id == {PICK}.id[0] || (isValid(datum.tid) && isValid({PICK}.tid[0]) && "
            f"datum.tid == {PICK}.tid[0] && ((datum.a0 >= {PICK}.a0[0] && datum.a1 <= {PICK}.a1[0]) || "
            f"(datum.a0 <= {PICK}.a0[0] && datum.a1 >= {PICK}.a1[0]))))")


def _bars_layer(frames, lo: float, hi: float, causes: bool = True, title: str | None = None, brush: bool = True,
                interactive: bool = True, picked=None) -> alt.LayerChart:
    rows = frames.rows
    n = len(rows)
    bars = _band(frames.bars)
    layers = []
    if causes and len(frames.gaps):
        gaps = _band(frames.gaps).assign(label=frames.gaps["cause"].map(words.cause), evidence=[
            words.gap_evidence(r.cause, r.dur_us, r.host_call, r.called_from, r.next)
            for r in frames.gaps.itertuples()])
        shade = gaps.assign(top=-0.5, bottom=n - 0.5)          # across every row
        layers.append(alt.Chart(shade).mark_rect(opacity=0.12, clip=True).encode(
            x=_x(lo, hi), x2="end_ms:Q", y=_rows_y(rows, "top"), y2="bottom:Q", color=_cause_color(legend=False)))
        layers.append(alt.Chart(gaps).mark_rect(clip=True).encode(
            x=_x(lo, hi), x2="end_ms:Q", y=_rows_y(rows), y2="y1:Q", color=_cause_color(),
            tooltip=[alt.Tooltip("label:N", title="idle"), alt.Tooltip("dur_us:Q", title="duration µs", format=",.1f"),
                     alt.Tooltip("evidence:N"),
                     *([alt.Tooltip("held:N", title="host was in")] if "held" in gaps else [])]))
    tooltip = [alt.Tooltip("name:N"), alt.Tooltip("kind:N"), alt.Tooltip("dur:N", title="duration"),
               alt.Tooltip("start_ms:Q", title="at ms", format=",.4f"), alt.Tooltip("shapes:N"), alt.Tooltip("lane:N")]
    base = alt.Chart(bars).mark_rect(stroke="white", strokeWidth=0.3, clip=True).encode(
        x=_x(lo, hi), x2="end_ms:Q", y=_rows_y(rows), y2="y1:Q", color=_kind_color(bars["kind"]), tooltip=tooltip,
        opacity=alt.condition(f"!({_PICKED}) || {_IN_FLOW}", alt.value(1.0), alt.value(0.3)) if interactive
        else alt.value(1.0))
    params = []
    if brush:
        params.append(_brush())
    if interactive:
        params.append(alt.selection_point(name=PICK, fields=["id", "tid", "a0", "a1"], on="click", clear="dblclick",
                                          value=_picked_value(picked)))
    layers.append(base.add_params(*params) if params else base)
    layers.append(_labels(bars, rows, lo, hi))
    hits = bars[bars["hit"].astype(bool)]
    if len(hits):
        layers.append(alt.Chart(hits).mark_rect(filled=False, stroke=HIT, strokeWidth=2, clip=True).encode(
            x=_x(lo, hi), x2="end_ms:Q", y=_rows_y(rows), y2="y1:Q"))
    if interactive:
        layers.append(alt.Chart(bars).transform_filter(_IN_FLOW).mark_rect(
            filled=False, stroke=FLOW, strokeWidth=2, clip=True).encode(x=_x(lo, hi), x2="end_ms:Q", y=_rows_y(rows),
                                                                        y2="y1:Q"))
        if len(frames.flows):
            layers.append(alt.Chart(frames.flows).transform_filter(_IN_FLOW).mark_rule(
                color=FLOW, strokeWidth=1.5, clip=True).encode(x=_x(lo, hi, "call_ms"), y=_rows_y(rows, "call_row"),
                                                              x2="gpu_ms:Q", y2="gpu_row:Q"))
    layers += _spans_layers(frames.spans, frames.rows, lo, hi)
    chart = alt.layer(*layers).resolve_scale(color="independent")
    return chart.properties(height=_height(rows, ROW_PX), **({"title": title} if title else {}))


def paired_timeline(frames, binned: bool, lo: float, hi: float, title: str) -> alt.LayerChart:
    """One of two timelines drawn one above the other on the same time axis (the what-if page's measured and
    predicted GPU timelines, the diff's before and after): drawn like the Timeline page, binned past
    data.RAW_LIMIT events, no selection, lane labels of one width so the axes line up. Idle gaps are drawn
    by cause where the frames hold them (the diff's traces; the what-if's replay has none)."""
    if binned:
        chart = _overview_layer(frames, lo, hi, title=title, brush=False)
    else:
        chart = _bars_layer(frames, lo, hi, title=title, brush=False, interactive=False)
    return _legends_below(_on_canvas(chart))


def idle_by_cause(df: pd.DataFrame) -> alt.LayerChart:
    """Idle time per cause as bars, each with its time and share written at its end."""
    d = df.assign(label=df["cause"].map(words.cause), idle_ms=df["idle_us"] / 1e3,
                  value=[words.idle_bar_label(u, s) for u, s in zip(df["idle_us"], df["share_shown"])])
    y = alt.Y("label:N", sort="-x", title=None)
    bars = alt.Chart(d).mark_bar().encode(
        x=alt.X("idle_ms:Q", title="idle (ms)"), y=y,
        color=alt.Color("cause:N", scale=_cause_scale(), legend=None),
        tooltip=[alt.Tooltip("label:N", title="cause"), alt.Tooltip("idle_ms:Q", title="idle ms", format=",.2f"),
                 alt.Tooltip("share_of_span:Q", title="share of span", format=".1%"),
                 alt.Tooltip("gaps:Q", title="gaps", format=",")])
    text = alt.Chart(d).mark_text(align="left", dx=4, color="#1a1a1a").encode(x="idle_ms:Q", y=y, text="value:N")
    return alt.layer(bars, text).properties(height=220)


INSIDE_SHARE = 0.45    # a bar this long (of the axis) has room for "34.6 ms (−38%)" inside its end


def lever_bars(levers: pd.DataFrame, baseline_us: float, baseline_label: str) -> alt.LayerChart:
    """Each lever's predicted span as a bar, best first, its value written at its end, with the traced span as a
    rule. The axis is the span the predictions are of (the traced span, host and GPU), tight to the longest bar or
    the rule: a long bar carries its value inside its end, a short one just past it."""
    d = levers.assign(inside=levers["predicted_ms"] >= INSIDE_SHARE * max([baseline_us / 1e3, *levers["predicted_ms"]]))
    y = alt.Y("lever:N", sort=list(d["lever"]), title=None)
    x_max = max([baseline_us / 1e3, *d["predicted_ms"]])
    scale = alt.Scale(domain=[0, x_max], nice=False)
    x = alt.X("predicted_ms:Q", title="predicted span, host and GPU (ms)", scale=scale)
    bars = alt.Chart(d).mark_bar(color="#4c78a8").encode(
        x=x, y=y,
        tooltip=[alt.Tooltip("lever:N"), alt.Tooltip("predicted_ms:Q", title="predicted ms", format=",.3f"),
                 alt.Tooltip("predicted_ratio:Q", title="of the traced span", format=".2f"),
                 alt.Tooltip("saving:N"), alt.Tooltip("assumption:N")])
    inside = alt.Chart(d).transform_filter("datum.inside").mark_text(
        align="right", dx=-4, color="white", fontWeight="bold").encode(x=x, y=y, text="label:N")
    outside = alt.Chart(d).transform_filter("!datum.inside").mark_text(
        align="left", dx=4, color="#1a1a1a", fontWeight="bold").encode(x=x, y=y, text="label:N")
    rule_df = pd.DataFrame({"predicted_ms": [baseline_us / 1e3], "label": [baseline_label]})
    rule = alt.Chart(rule_df).mark_rule(color="black", strokeDash=[4, 4], strokeWidth=2).encode(
        x=alt.X("predicted_ms:Q", scale=scale))
    text = alt.Chart(rule_df).mark_text(align="right", dx=-4, dy=-6, baseline="bottom", color="black").encode(
        x=alt.X("predicted_ms:Q", scale=scale), y=alt.value(0), text="label:N")
    return alt.layer(bars, inside, outside, rule, text).properties(height=40 * max(len(d), 1) + 40,
                                                                    title="predicted span per lever")


def rank_steps(steps: pd.DataFrame, straggler: str | None) -> alt.LayerChart:
    """Each rank's collective time per step, a line per rank, the straggler's drawn thicker."""
    x = alt.X("step:O", title="step", axis=alt.Axis(labelAngle=0))
    # log: a rank's first collective can wait out another rank's late start (hundreds of ms) beside steps of a ms
    y = alt.Y("collective_ms:Q", title="collective time (ms, log)", scale=alt.Scale(type="log"))
    width = (alt.condition(alt.datum.rank == straggler, alt.value(3.5), alt.value(1.5)) if straggler
             else alt.value(2))
    lines = alt.Chart(steps).mark_line(point=True).encode(
        x=x, y=y, color=alt.Color("rank:N", title=None, scale=alt.Scale(scheme="tableau10"),
                                  legend=alt.Legend(orient="bottom")), strokeWidth=width,
        tooltip=[alt.Tooltip("rank:N"), alt.Tooltip("step:O"),
                 alt.Tooltip("collective_ms:Q", title="collective ms", format=",.3f")])
    return alt.layer(lines).properties(height=300)


def calibration(points: pd.DataFrame) -> alt.LayerChart:
    """Predicted against measured, log-log, with y = x and the band within 2x of it."""
    vals = list(points["predicted"]) + list(points["measured"])
    lo, hi = _log_range(vals)
    xs = [lo * (hi / lo) ** (i / 20) for i in range(21)]
    ref = pd.DataFrame({"predicted": xs, "measured": xs, "low": [x / 2 for x in xs], "high": [x * 2 for x in xs]})
    x = alt.X("predicted:Q", title="predicted", scale=alt.Scale(type="log", domain=[lo, hi]))
    y = alt.Y("measured:Q", title="measured", scale=alt.Scale(type="log", domain=[lo, hi]))
    band = alt.Chart(ref).mark_area(opacity=0.15, color="gray", clip=True).encode(x=x, y="low:Q", y2="high:Q")
    line = alt.Chart(ref).mark_line(color="black", strokeDash=[4, 4], clip=True).encode(x=x, y=y)
    dots = alt.Chart(points).mark_circle(size=90, opacity=0.85, stroke="black", strokeWidth=0.5).encode(
        x=x, y=y, color=alt.Color("quantity:N", title="quantity"),
        tooltip=[alt.Tooltip("id:Q"), alt.Tooltip("quantity:N"), alt.Tooltip("predicted:Q", format=",.3g"),
                 alt.Tooltip("measured:Q", format=",.3g"), alt.Tooltip("ratio:Q", title="measured/predicted",
                                                                       format=".2f"), alt.Tooltip("why:N")])
    return alt.layer(band, line, dots).properties(height=420, width=420, title="calibration (grey: within 2×)")


def _legends_below(chart):
    # Beside the lanes, two legends would need more height than a few lanes give.
    return chart.configure_legend(direction="horizontal", titleOrient="left")


def _on_canvas(chart):
    """Drawn on a canvas, not as SVG: thousands of bars paint in a fraction of the time (Streamlit reads
    usermeta.embedOptions; it switches to canvas by itself only past 2,000 rows per dataset), and no
    ARIA node per mark."""
    return chart.properties(usermeta={"embedOptions": {"renderer": "canvas"}}).configure(aria=False)


def _log_range(values) -> tuple[float, float]:
    v = [x for x in values if x and x > 0 and math.isfinite(x)]
    if not v:
        return 0.01, 100.0
    return 10 ** math.floor(math.log10(min(v))), 10 ** math.ceil(math.log10(max(v)))


def roofline(points: pd.DataFrame, ceilings) -> alt.LayerChart:
    """Log-log: achieved TFLOP/s against FLOP/byte, the memory slope and compute roof, the ridge."""
    xs = list(points["intensity"]) + ([ceilings.ridge] if ceilings else [])
    ys = list(points["tflops"]) + ([ceilings.flops_per_s / 1e12] if ceilings else [])
    x_lo, x_hi = _log_range(xs)
    y_lo, y_hi = _log_range(ys)
    x = alt.X("intensity:Q", title="arithmetic intensity (FLOP/byte)", scale=alt.Scale(type="log", domain=[x_lo, x_hi]))
    y = alt.Y("tflops:Q", title="achieved TFLOP/s", scale=alt.Scale(type="log", domain=[y_lo, y_hi]))
    dots = alt.Chart(points).mark_circle(opacity=0.8, stroke="black", strokeWidth=0.5).encode(
        x=x, y=y, size=alt.Size("device_us:Q", title="device µs", scale=alt.Scale(range=[30, 900])),
        color=alt.Color("bound:N", scale=alt.Scale(domain=list(BOUND_COLORS), range=list(BOUND_COLORS.values()))),
        tooltip=[alt.Tooltip("name:N"), alt.Tooltip("shapes:N"), alt.Tooltip("dtype:N"), alt.Tooltip("calls:Q"),
                 alt.Tooltip("device_us:Q", title="device µs", format=",.1f"),
                 alt.Tooltip("intensity:Q", title="FLOP/byte", format=",.2f"),
                 alt.Tooltip("tflops:Q", title="TFLOP/s", format=",.2f"),
                 alt.Tooltip("gbps:Q", title="GB/s", format=",.0f"),
                 alt.Tooltip("bound:N"), alt.Tooltip("frac_of_peak:Q", title="of its peak", format=".0%")])
    layers = []
    if ceilings is not None:
        peak_tf, bw = ceilings.flops_per_s / 1e12, ceilings.bytes_per_s / 1e12   # TFLOP/s, TB/s
        x_start = max(x_lo, y_lo / bw)   # where the memory slope enters the plot
        roof = pd.DataFrame({"intensity": [x_start, ceilings.ridge, x_hi], "tflops": [x_start * bw, peak_tf, peak_tf]})
        layers.append(alt.Chart(roof).mark_line(color="black", strokeWidth=2).encode(x=x, y=y))
        ridge = pd.DataFrame({"intensity": [ceilings.ridge], "tflops": [y_lo * 1.5],   # label low, clear of the roof
                              "label": [words.ridge_label(ceilings.ridge)]})
        layers.append(alt.Chart(ridge).mark_rule(strokeDash=[4, 4], color="gray").encode(x=x))
        layers.append(alt.Chart(ridge).mark_text(align="left", dx=5, color="gray").encode(x=x, y=y, text="label:N"))
    return alt.layer(*layers, dots).properties(height=460, title="roofline")


def diff_idle(df: pd.DataFrame, before: str, after: str) -> alt.Chart:
    long = pd.concat([df.assign(trace=before, idle_ms=df["before_us"] / 1e3),
                      df.assign(trace=after, idle_ms=df["after_us"] / 1e3)], ignore_index=True)
    long["label"] = long["cause"].map(words.cause)
    return alt.Chart(long).mark_bar().encode(
        y=alt.Y("trace:N", title=None, sort=[before, after]), x=alt.X("idle_ms:Q", title="idle (ms)", stack="zero"),
        color=alt.Color("cause:N", scale=_cause_scale(), title="idle cause",
                        legend=alt.Legend(labelExpr=_CAUSE_LABEL_EXPR)),
        tooltip=[alt.Tooltip("trace:N"), alt.Tooltip("label:N", title="cause"),
                 alt.Tooltip("idle_ms:Q", title="idle ms", format=",.2f")]).properties(height=120)


TRY_COLORS = {"predicted": "#9ecae9", "measured": "#e45756"}     # light blue beside red: told apart in grey too
TRY_BAR_PX = 22          # one bar (a knob's row holds two: predicted above measured)
TRY_CHROME_PX = 120      # the title, the x axis and its title and the legend below: Streamlit fits the chart, these
                         # included, in its height (a height of the bars alone left them none: drawn collapsed)
TRY_PAD_PCT = 12         # room past the longest bar for its value written at its end


def try_bars(bars: pd.DataFrame, run: str, title: str, axis_title: str) -> alt.LayerChart:
    """One run's knobs: the predicted and the measured change of the span as two bars side by side in each knob's
    row (grouped: the knob on y, the kind as its offset, predicted above measured whether or not both were made),
    each bar's value at its end, the measured bar with the runs' range as a black line across it."""
    d = bars[bars["run"] == run]
    knobs = list(dict.fromkeys(bars["knob"]))
    kinds = list(TRY_COLORS)
    # the bars' own columns only (no empty range on a predicted bar: the browser's data stays plain)
    change = d["change_pct"].astype(float)
    low, high = d["low_pct"].astype(float), d["high_pct"].astype(float)
    # the value goes past the bar's far end, past its range where it has one
    tip = change.where(change >= 0, pd.concat([change, low], axis=1).min(axis=1))
    tip = tip.where(change < 0, pd.concat([change, high], axis=1).max(axis=1))
    b = pd.DataFrame({"knob": d["knob"], "kind": d["kind"], "change_pct": change, "runs": d["runs"].astype(int),
                      "verdict": d["verdict"], "tip_pct": tip, "value": [words.try_bar_label(x) for x in change]})
    m = d[(d["kind"] == "measured")].dropna(subset=["low_pct", "high_pct"])
    r = pd.DataFrame({"knob": m["knob"], "kind": m["kind"], "low_pct": m["low_pct"].astype(float),
                      "high_pct": m["high_pct"].astype(float)})
    y = alt.Y("knob:N", title=None, sort=knobs, axis=alt.Axis(labelLimit=LABEL_PX, labelFontSize=12))
    offset = alt.YOffset("kind:N", sort=kinds, scale=alt.Scale(domain=kinds, paddingInner=0.1))
    lo = min([0.0, *b["tip_pct"]])
    hi = max([0.0, *b["tip_pct"]])
    scale = alt.Scale(domain=[lo - TRY_PAD_PCT if lo < 0 else lo, hi + TRY_PAD_PCT if hi > 0 else hi + 2], nice=False)
    x = alt.X("change_pct:Q", title=axis_title, scale=scale)
    color = alt.Color("kind:N", title=None, scale=alt.Scale(domain=kinds, range=list(TRY_COLORS.values())),
                      legend=alt.Legend(orient="bottom"))
    bar = alt.Chart(b).mark_bar().encode(
        x=x, y=y, yOffset=offset, color=color,
        tooltip=[alt.Tooltip("knob:N"), alt.Tooltip("kind:N"),
                 alt.Tooltip("change_pct:Q", title="change %", format="+.1f"), alt.Tooltip("runs:Q"),
                 alt.Tooltip("verdict:N")])
    spread = alt.Chart(r).mark_rule(color="black", strokeWidth=2).encode(
        x=alt.X("low_pct:Q", scale=scale), x2="high_pct:Q", y=y, yOffset=offset,
        tooltip=[alt.Tooltip("low_pct:Q", title="runs' range from %", format="+.1f"),
                 alt.Tooltip("high_pct:Q", title="to %", format="+.1f")])
    tip_x = alt.X("tip_pct:Q", scale=scale)
    left = alt.Chart(b).transform_filter("datum.change_pct < 0").mark_text(
        align="right", dx=-4, color="#1a1a1a").encode(x=tip_x, y=y, yOffset=offset, text="value:N")
    right = alt.Chart(b).transform_filter("datum.change_pct >= 0").mark_text(
        align="left", dx=4, color="#1a1a1a").encode(x=tip_x, y=y, yOffset=offset, text="value:N")
    return alt.layer(bar, spread, left, right).properties(height={"step": TRY_BAR_PX, "for": "offset"}, title=title)
