"""Timeline: lanes of GPU streams and host threads, idle gaps coloured by cause, brush to zoom.

Level of detail: a window holding more than data.RAW_LIMIT events is drawn as busy
shares in bins (the overview); a smaller one as its events. Dragging across the
chart zooms to the dragged range.
"""
from __future__ import annotations

import streamlit as st

from analyzers.voice import dashboard as words
from dashboard import charts, data, state

TITLE, URL, ICON = "Timeline", "timeline", ":material/view_timeline:"
WINDOW = "tl_window"      # (lo, hi) µs of the view, per trace
CHART = "tl_chart"
BINS = 400


def _on_brush(key: str) -> None:
    """The brushed x range becomes the window (the chart redraws at the level of detail it needs)."""
    event = st.session_state.get(key)
    sel = (event or {}).get("selection", {}).get(charts.BRUSH) if event else None
    rng = (sel or {}).get("start_us")
    if rng and len(rng) == 2 and rng[1] > rng[0]:
        st.session_state[WINDOW] = (float(rng[0]), float(rng[1]))


def render() -> None:
    got = state.current_analysis()
    st.title("Timeline")
    if got is None:
        return
    entry, a = got
    full = data.timeline_extent(a)
    if st.session_state.get("tl_trace") != entry.key:   # a new trace starts zoomed out
        st.session_state["tl_trace"] = entry.key
        st.session_state[WINDOW] = full
    lo, hi = st.session_state[WINDOW]
    c1, c2, c3 = st.columns([2, 2, 1])
    new_lo = c1.number_input("from µs", value=float(lo), min_value=float(full[0]), max_value=float(full[1]),
                             key=f"tl_lo_{lo}")
    new_hi = c2.number_input("to µs", value=float(hi), min_value=float(full[0]), max_value=float(full[1]),
                             key=f"tl_hi_{hi}")
    if c3.button("Zoom out", key="tl_reset"):
        new_lo, new_hi = full
    if (new_lo, new_hi) != (lo, hi) and new_hi > new_lo:
        st.session_state[WINDOW] = (new_lo, new_hi)
        lo, hi = new_lo, new_hi
    n = data.events_in(a, (lo, hi))
    if n > data.RAW_LIMIT:
        frames = data.timeline_overview(a, (lo, hi), bins=BINS)
        chart = charts.timeline_overview(frames, lo, hi)
        st.caption(words.plain(words.window_caption(n, lo, hi, data.RAW_LIMIT, frames.bins)))
    else:
        frames = data.timeline_bars(a, (lo, hi))
        chart = charts.timeline_bars(frames, lo, hi)
        st.caption(words.plain(words.window_caption(n, lo, hi, data.RAW_LIMIT, None)))
    # A key per window: the zoomed chart starts without the brush that made it (a kept selection would
    # grey the whole new view).
    key = f"{CHART}_{lo}_{hi}"
    st.altair_chart(chart, width="stretch", on_select=lambda: _on_brush(key), selection_mode=[charts.BRUSH], key=key)
