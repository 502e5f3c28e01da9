"""Try: a `tracetriage try` table, predicted beside measured per knob, profiled and unprofiled
(tracetriage.trial; the table as kept in its --out folder, through the adapter). The table shown lives in the URL
(?try=PATH)."""
from __future__ import annotations

import streamlit as st

from tracetriage.dashboard import charts, data, tables, url
from tracetriage.dashboard import words as words

TABLE_COLUMNS = ("knob", "predicted", "measured", "verdict", "change")   # the figures before the line to change:
                                                                      # a long line pushed them off the page


def render() -> None:
    path = st.text_input(words.try_path_label(), value=st.query_params.get("try", ""), key="try_path")
    url.remember("try", {"try": path or None})     # an emptied box leaves the URL too
    if not path:
        st.info(words.try_pick())
        return
    try:
        view = data.try_table(path)
    except data.TryTableError as e:
        st.error(words.plain(str(e)))
        return
    st.caption(words.plain(words.try_caption(view.script, view.device, view.repeats)))
    if view.bars.empty:
        st.info(words.try_no_bars())
    else:
        for run in ("profiled", "unprofiled"):
            st.altair_chart(charts.try_bars(view.bars, run, words.try_chart_title(run), words.try_axis_title(run)),
                            width="stretch")
    table = view.rows
    if len(table):
        table = table.assign(predicted=[_both(p) for p in table["predicted"]],
                             measured=[_both(m) for m in table["measured"]])
        # the line to change wraps in what the figures leave it: the table fits the page at 1280x800
        tables.show(table, {"knob": tables.text("knob"), "predicted": tables.text("predicted"),
                            "measured": tables.text("measured"), "verdict": tables.text("verdict"),
                            "change": tables.text("change", width="large")})
    else:
        st.dataframe(table[list(TABLE_COLUMNS)], hide_index=True, width="stretch")
    if view.gpu_only:
        st.caption(words.plain(words.try_gpu_only(view.gpu_only)))
    if view.stopped:
        st.caption(words.plain(words.try_stopped(view.stopped)))


def _both(x: dict) -> str:
    """Profiled / unprofiled, as the try table prints them."""
    return words.try_cell(x["profiled"]) + " / " + words.try_cell(x["unprofiled"])
