"""Timeline: lanes of host threads (nested by depth) and GPU streams, idle gaps coloured by cause, the
steps and phases above them; brush to zoom, click an event for its flow, search by name.

Level of detail: a window holding more than data.RAW_LIMIT events is drawn as busy shares in bins (the
overview); a smaller one as its events. The window, the search and the selected event live in the URL
(?trace=...&from=MS&to=MS&q=TEXT&sel=ID), so a reload or a shared link shows the same view.
"""
from __future__ import annotations

import math

import streamlit as st

from tracetriage.dashboard import charts, data, state, tables, url
from tracetriage.dashboard import words as words

PAGE = "timeline"         # its URL path, and its views' key in tracetriage.dashboard.url
WINDOW = "tl_window"      # (lo, hi) ms of the view
PICKED = "tl_pick"        # the trace row of the selected event, or None
MATCH = "tl_match"        # (search text, index of the match jumped to)
CHART = "tl_chart"
BINS = 400
JUMP_WIDTHS = 20          # a jump to a match with no zoom to keep shows this many times the match's duration
JUMP_MIN_MS = 0.05
ARRIVED = "arrived"       # a search that came with the URL: shown where the URL's window and selection put it


def _float(text) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _from_url(full: tuple[float, float]) -> tuple[float, float]:
    """The URL's window, clipped to the trace; the whole trace when the URL has none or a bad one."""
    lo, hi = _float(st.query_params.get("from")), _float(st.query_params.get("to"))
    if lo is None or hi is None:
        return full
    lo, hi = max(lo, full[0]), min(hi, full[1])
    return (lo, hi) if hi > lo else full


def _ms_param(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".")


def _to_url(trace: str, lo: float, hi: float, query: str, picked: int | None, full: tuple[float, float]) -> None:
    """The URL is the view: the window (none when zoomed out: a link to the whole trace stays one when the trace's
    extent is computed anew), the search and the selected event; the whole query string, every run."""
    zoomed = (lo, hi) != full
    url.remember(PAGE, {url.TRACE: trace, "from": _ms_param(lo) if zoomed else None,
                        "to": _ms_param(hi) if zoomed else None, "q": query or None,
                        "sel": str(picked) if picked is not None else None})


def _zoom_out(full: tuple[float, float]) -> None:
    # in the button's callback, before the run: the run's first step writes the URL without the window
    st.session_state[WINDOW] = full
    url.forget(PAGE, st.session_state.get("tl_trace"), ("from", "to"))


def _on_select(key: str) -> None:
    """A brushed x range becomes the window; a clicked event becomes the selected one (its flow and details)."""
    sel = (st.session_state.get(key) or {}).get("selection") or {}
    rng = (sel.get(charts.BRUSH) or {}).get("start_ms")
    trace = st.session_state.get("tl_trace")
    if rng and len(rng) == 2 and rng[1] > rng[0]:
        st.session_state[WINDOW] = (float(rng[0]), float(rng[1]))
        url.update(PAGE, trace, **{"from": _ms_param(float(rng[0])), "to": _ms_param(float(rng[1]))})
        return
    if charts.PICK in sel:
        pts = sel.get(charts.PICK) or []
        ids = [p.get("id") for p in pts if isinstance(p, dict) and isinstance(p.get("id"), (int, float))]
        st.session_state[PICKED] = int(ids[0]) if ids else None
        if ids:
            url.update(PAGE, trace, sel=str(int(ids[0])))
        else:
            url.forget(PAGE, trace, ("sel",))


def _jump(start: float, end: float, window: tuple[float, float], full: tuple[float, float]) -> tuple[float, float]:
    """A window centred on a match: the current width when the view is zoomed in and holds it, else a width
    a few times the match's, within the trace."""
    dur = max(end - start, 1e-6)
    width = window[1] - window[0]
    if not (width < full[1] - full[0] and width >= 2 * dur):
        width = max(JUMP_WIDTHS * dur, JUMP_MIN_MS)
    mid = (start + end) / 2
    lo = max(full[0], mid - width / 2)
    hi = min(full[1], lo + width)
    return max(full[0], hi - width), hi


def _search(a, full) -> tuple[data.SearchView | None, str | None]:
    """The search box and its previous / next buttons; a new text or a step jumps to its match. Returns the search
    and its caption ("match N of M at ..."), which the caller shows only once the URL holds that match: a reload
    or a copied link taken when the page names the match must show that match, however late the run's next
    message comes on a loaded machine."""
    c1, c2, c3 = st.columns([6, 1, 1], vertical_alignment="bottom")
    text = c1.text_input(words.search_label(), value=st.query_params.get("q", ""), help=words.search_help(),
                         key=f"tl_q:{st.session_state.get('tl_trace')}").strip()
    if not text:
        st.session_state[MATCH] = None
        return None, None
    found = data.search(a, text)
    prev, nxt = c2.button("Previous", key="tl_prev", width="stretch"), c3.button("Next", key="tl_next", width="stretch")
    last = st.session_state.get(MATCH)
    index = None if not (last and last[0] == text) else last[1]
    if index is ARRIVED:      # from the URL: the match is the selected event's place among the matches
        rows = found.rows.tolist()
        picked = st.session_state.get(PICKED)
        index = rows.index(picked) if picked in rows else 0
        st.session_state[MATCH] = (text, index)
    if found.count and (index is None or prev or nxt):
        index = 0 if index is None else (index + (1 if nxt else -1)) % found.count
        st.session_state[MATCH] = (text, index)
        st.session_state[WINDOW] = _jump(float(found.start_ms[index]), float(found.end_ms[index]),
                                         st.session_state[WINDOW], full)
        st.session_state[PICKED] = int(found.rows[index])
    at = float(found.start_ms[index]) if found.count and index is not None else None
    return found, words.plain(words.search_caption(text, found.count, index, found.names, at))


def _details(a, row_id: int) -> None:
    f = data.flow(a, row_id)
    if f is None:
        return
    st.markdown(words.plain(words.selected_event(f.name, f.kind, f.lane, f.start_ms, f.dur, f.shapes)))
    st.caption(words.plain(words.flow_caption(len(f.steps))))
    if len(f.steps):
        tables.show(f.steps, {"role": tables.text("role"), "name": tables.text("name", width="large"),
                              "kind": tables.text("kind"), "lane": tables.text("lane"),
                              "start_ms": tables.ms("at (ms)", 4), "dur": tables.text("duration"),
                              "queued": tables.text("queued", help=words.queued_help())})


def render() -> None:
    got = state.current_analysis()
    if got is None:
        return
    entry, a = got
    full = data.timeline_extent(a)
    if st.session_state.get("tl_trace") != entry.key:     # a new trace: its URL's view, else zoomed out
        st.session_state["tl_trace"] = entry.key
        st.session_state[WINDOW] = _from_url(full)
        st.session_state[PICKED] = int(st.query_params["sel"]) if st.query_params.get("sel", "").isdigit() else None
        # A URL's search with a window is shown as it was (no jump on arrival); without one, it jumps.
        q = st.query_params.get("q", "").strip()
        st.session_state[MATCH] = (q, ARRIVED if "from" in st.query_params else None) if q else None
    st.caption(words.plain(entry.key))
    found, found_caption = _search(a, full)
    # The search's caption goes under its box, written once the URL is: a new element in a container, not an
    # st.empty() filled later. Streamlit's outgoing queue composes a delta into an earlier one at the same place
    # (runtime/forward_msg_queue.py): a placeholder's fill takes the placeholder's slot in the queue, before the
    # URL's message, whenever both leave in one flush (a matter of timing: it did on a loaded machine, and the page
    # said "match 2" while the URL still held match 1). A container's child has a place of its own, queued after.
    found_slot = st.container()
    lo, hi = st.session_state[WINDOW]
    c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
    new_lo = c1.number_input("from ms", value=float(lo), min_value=float(full[0]), max_value=float(full[1]),
                             format="%.4f", key=f"tl_lo_{lo}")
    new_hi = c2.number_input("to ms", value=float(hi), min_value=float(full[0]), max_value=float(full[1]),
                             format="%.4f", key=f"tl_hi_{hi}")
    if c3.button("Zoom out", key="tl_reset", width="stretch", on_click=_zoom_out, args=(full,)):
        new_lo, new_hi = full
    if (new_lo, new_hi) != (lo, hi) and new_hi > new_lo:
        st.session_state[WINDOW] = (new_lo, new_hi)
        lo, hi = new_lo, new_hi
    picked_id = st.session_state.get(PICKED)
    _to_url(entry.key, lo, hi, found.text if found else "", picked_id, full)
    if found_caption:
        found_slot.caption(found_caption)
    n = data.events_in(a, (lo, hi))
    # A key per window: the zoomed chart starts without the brush that made it (a kept selection would
    # grey the whole new view).
    key = f"{CHART}_{lo}_{hi}"
    if n > data.RAW_LIMIT:
        frames = data.timeline_overview(a, (lo, hi), bins=BINS, search=found)
        chart = charts.timeline_overview(frames, lo, hi)
        st.caption(words.plain(words.window_caption(n, lo, hi, data.RAW_LIMIT, frames.bins)))
        st.altair_chart(chart, width="stretch", on_select=lambda: _on_select(key), selection_mode=[charts.BRUSH],
                        key=key)
        return
    frames = data.timeline_bars(a, (lo, hi), search=found)
    picked = data.picked(frames, picked_id) if picked_id is not None else None
    chart = charts.timeline_bars(frames, lo, hi, picked=picked)
    st.caption(words.plain(words.window_caption(n, lo, hi, data.RAW_LIMIT, None)))
    st.altair_chart(chart, width="stretch", on_select=lambda: _on_select(key),
                    selection_mode=[charts.BRUSH, charts.PICK], key=key)
    if picked_id is not None:
        _details(a, picked_id)
