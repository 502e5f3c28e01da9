"""Altair charts from the adapter's frames. No analysis here: these only draw.

Colours are fixed per cause and per bound, so the same cause has the same colour on
every page (and in the README's screenshots).
"""
from __future__ import annotations

import math

import altair as alt
import pandas as pd

from analyzers.voice import dashboard as words

CAUSE_COLORS = {"launch_overhead": "#e45756", "host_work": "#f58518", "synchronization": "#b279a2",
                "data_transfer": "#4c78a8", "other": "#9d9d9d"}
KIND_COLORS = {"kernel": "#54a24b", "memcpy": "#4c78a8", "memset": "#72b7b2", "cpu_op": "#bab0ac",
               "launch call": "#eeca3b", "range": "#9467bd"}
BOUND_COLORS = {"compute": "#e45756", "memory": "#4c78a8"}
BRUSH = "brush"          # the interval selection's name: the page reads it back to zoom
LANE_HEIGHT = 34
WHATIF_LABELS = 140      # px of lane labels on both what-if timelines: their time axes line up
CHROME_HEIGHT = 200      # title, x axis and its label: Streamlit fits the whole chart, these included, in the height

# The level of detail bounds what a chart holds (a few thousand rows); Altair's own 5,000-row guard
# would refuse an overview of many lanes for no reason.
alt.data_transformers.disable_max_rows()


def _cause_scale() -> alt.Scale:
    return alt.Scale(domain=list(CAUSE_COLORS), range=list(CAUSE_COLORS.values()))


def _cause_legend() -> alt.Legend:
    return alt.Legend(values=list(CAUSE_COLORS), orient="bottom", labelExpr=_CAUSE_LABEL_EXPR)


_CAUSE_LABEL_EXPR = "replace(datum.label, '_', ' ')"


def _lane_y(lanes) -> alt.Y:
    return alt.Y("lane:N", sort=list(lanes), title=None, axis=alt.Axis(labelLimit=220, labelOverlap=False))


def _x(lo: float, hi: float) -> alt.X:
    return alt.X("start_us:Q", title="µs from the first GPU activity", scale=alt.Scale(domain=[lo, hi], nice=False))


def _brush() -> alt.Parameter:
    return alt.selection_interval(name=BRUSH, encodings=["x"])


def idle_by_cause(df: pd.DataFrame) -> alt.Chart:
    d = df.assign(label=df["cause"].map(words.cause), idle_ms=df["idle_us"] / 1e3)
    return alt.Chart(d).mark_bar().encode(
        x=alt.X("idle_ms:Q", title="idle (ms)"),
        y=alt.Y("label:N", sort="-x", title=None),
        color=alt.Color("cause:N", scale=_cause_scale(), legend=None),
        tooltip=[alt.Tooltip("label:N", title="cause"), alt.Tooltip("idle_ms:Q", title="idle ms", format=",.2f"),
                 alt.Tooltip("share_of_span:Q", title="share of span", format=".1%"),
                 alt.Tooltip("gaps:Q", title="gaps")]).properties(height=220)


def timeline_overview(frames, lo: float, hi: float, causes: bool = True) -> alt.LayerChart:
    """Binned busy shares per lane, and per device an idle lane coloured by each bin's largest cause
    (causes=False: busy shares only, for a drill before it is graded)."""
    return _legends_below(_overview_layer(frames, lo, hi, causes=causes))


def _overview_layer(frames, lo: float, hi: float, causes: bool = True, title: str = "overview (binned)",
                    brush: bool = True) -> alt.LayerChart:
    height = LANE_HEIGHT * max(len(frames.lanes), 1) + CHROME_HEIGHT
    busy = frames.busy.assign(tip=[words.bin_tooltip(l, b) for l, b in zip(frames.busy["lane"], frames.busy["busy"])])
    idle = frames.idle.copy()
    idle["tip"] = [words.idle_bin_tooltip(r["idle"], {c: r[c] for c in CAUSE_COLORS}) for _, r in idle.iterrows()]
    base_busy = alt.Chart(busy).mark_rect(clip=True).encode(
        x=_x(lo, hi), x2="end_us:Q", y=_lane_y(frames.lanes),
        color=alt.Color("busy:Q", title="busy share", scale=alt.Scale(scheme="greens", domain=[0, 1]),
                        legend=alt.Legend(orient="top", gradientLength=160)),
        tooltip=[alt.Tooltip("lane:N"), alt.Tooltip("start_us:Q", title="from µs", format=",.1f"),
                 alt.Tooltip("end_us:Q", title="to µs", format=",.1f"), alt.Tooltip("tip:N", title="busy")])
    base_idle = alt.Chart(idle).mark_rect(clip=True).encode(
        x=_x(lo, hi), x2="end_us:Q", y=_lane_y(frames.lanes),
        color=alt.Color("cause:N", title="idle cause", scale=_cause_scale(), legend=_cause_legend()),
        opacity=alt.Opacity("idle:Q", scale=alt.Scale(domain=[0, 1], range=[0.25, 1]), legend=None),
        tooltip=[alt.Tooltip("lane:N"), alt.Tooltip("start_us:Q", title="from µs", format=",.1f"),
                 alt.Tooltip("end_us:Q", title="to µs", format=",.1f"), alt.Tooltip("tip:N", title="idle")])
    busy_layer = base_busy.add_params(_brush()) if brush else base_busy
    layers = [busy_layer, base_idle] if causes else [busy_layer]
    return alt.layer(*layers).resolve_scale(color="independent").properties(height=height, title=title)


def timeline_bars(frames, lo: float, hi: float, causes: bool = True) -> alt.LayerChart:
    """Each event as a bar on its lane; idle gaps as bars on the idle lane and shaded across the chart
    (causes=False: the events only, for a drill before it is graded)."""
    return _legends_below(_bars_layer(frames, lo, hi, causes=causes))


def _bars_layer(frames, lo: float, hi: float, causes: bool = True, title: str = "events",
                brush: bool = True) -> alt.LayerChart:
    height = LANE_HEIGHT * max(len(frames.lanes), 1) + CHROME_HEIGHT
    gaps = frames.gaps.assign(label=frames.gaps["cause"].map(words.cause), evidence=[
        words.gap_evidence(r.cause, r.dur_us, r.host_call, r.called_from, r.next) for r in frames.gaps.itertuples()])
    shade = alt.Chart(gaps).mark_rect(opacity=0.15, clip=True).encode(
        x=_x(lo, hi), x2="end_us:Q", color=alt.Color("cause:N", scale=_cause_scale(), legend=None))
    gap_tip = [alt.Tooltip("label:N", title="idle"), alt.Tooltip("dur_us:Q", title="duration µs", format=",.1f"),
               alt.Tooltip("evidence:N")]
    gap_bars = alt.Chart(gaps).mark_rect(clip=True).encode(
        x=_x(lo, hi), x2="end_us:Q", y=_lane_y(frames.lanes),
        color=alt.Color("cause:N", scale=_cause_scale(), title="idle cause", legend=_cause_legend()), tooltip=gap_tip)
    bars = alt.Chart(frames.bars).mark_rect(stroke="white", strokeWidth=0.3, clip=True).encode(
        x=_x(lo, hi), x2="end_us:Q", y=_lane_y(frames.lanes),
        color=alt.Color("kind:N", title="event", scale=alt.Scale(domain=list(KIND_COLORS), range=list(KIND_COLORS.values())),
                        legend=alt.Legend(values=list(KIND_COLORS), orient="top")),
        tooltip=[alt.Tooltip("name:N"), alt.Tooltip("kind:N"), alt.Tooltip("dur_us:Q", title="duration µs", format=",.2f"),
                 alt.Tooltip("shapes:N"), alt.Tooltip("lane:N")])
    bar_layer = bars.add_params(_brush()) if brush else bars
    layers = [shade, bar_layer, gap_bars] if causes else [bar_layer]
    return alt.layer(*layers).resolve_scale(color="independent").properties(height=height, title=title)


def whatif_timeline(frames, binned: bool, hi_us: float, title: str) -> alt.LayerChart:
    """One of the what-if page's two GPU timelines: drawn like the Timeline page (binned when it holds more
    than data.RAW_LIMIT activities), on 0 .. hi_us, its lane labels a fixed width, so that the measured and
    the predicted chart, one above the other, share one time axis."""
    draw = _overview_layer if binned else _bars_layer
    chart = draw(frames, 0.0, hi_us, causes=False, title=title, brush=False)
    height = LANE_HEIGHT * max(len(frames.lanes), 2) + CHROME_HEIGHT
    return _legends_below(chart.properties(height=height).configure_axisY(minExtent=WHATIF_LABELS,
                                                                         maxExtent=WHATIF_LABELS))


def lever_bars(levers: pd.DataFrame, baseline_us: float, baseline_label: str) -> alt.LayerChart:
    """Each lever's predicted span as a bar, best first, with the traced span as a rule."""
    d = levers.assign(predicted_ms=levers["predicted_us"] / 1e3)
    bars = alt.Chart(d).mark_bar(color="#4c78a8").encode(
        x=alt.X("predicted_ms:Q", title="predicted GPU span (ms)"),
        y=alt.Y("lever:N", sort=list(d["lever"]), title=None),
        tooltip=[alt.Tooltip("lever:N"), alt.Tooltip("predicted_ms:Q", title="predicted ms", format=",.3f"),
                 alt.Tooltip("predicted_ratio:Q", title="of the traced span", format=".2f"),
                 alt.Tooltip("saving:N"), alt.Tooltip("assumption:N")])
    rule_df = pd.DataFrame({"predicted_ms": [baseline_us / 1e3], "label": [baseline_label]})
    rule = alt.Chart(rule_df).mark_rule(color="black", strokeDash=[4, 4], strokeWidth=2).encode(x="predicted_ms:Q")
    text = alt.Chart(rule_df).mark_text(align="left", dx=4, dy=-6, baseline="bottom", color="black").encode(
        x="predicted_ms:Q", y=alt.value(0), text="label:N")
    return alt.layer(bars, rule, text).properties(height=40 * max(len(d), 1) + 40, title="predicted span per lever")


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
                 alt.Tooltip("tflops:Q", title="TFLOP/s", format=",.2f"), alt.Tooltip("gbps:Q", title="GB/s", format=",.0f"),
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
        color=alt.Color("cause:N", scale=_cause_scale(), title="idle cause"),
        tooltip=[alt.Tooltip("trace:N"), alt.Tooltip("label:N", title="cause"),
                 alt.Tooltip("idle_ms:Q", title="idle ms", format=",.2f")]).properties(height=120)
