"""Diff: two traces, the change explained in launches, bytes and idle (the analyzers' diff)."""
from __future__ import annotations

import streamlit as st

from analyzers.voice import dashboard as words
from dashboard import charts, data, state
from dashboard.library import PathRefused

TITLE, URL, ICON = "Diff", "diff", ":material/compare_arrows:"


@st.cache_data(max_entries=8, show_spinner="Comparing the traces…")
def _diff(before: str, after: str, stamp: tuple):
    return data.diff(before, after)


def render() -> None:
    st.title("Diff")
    options = state.entries()
    if len(options) < 2:
        st.info("The library needs two traces to compare.")
        return
    keys = [e.key for e in options]
    cur = state.current()
    b0 = keys.index(cur.key) if cur is not None and cur.key in keys else 0
    c1, c2 = st.columns(2)
    before = c1.selectbox("Before", options, index=b0, format_func=lambda e: e.key, key="diff_before")
    after = c2.selectbox("After", options, index=(b0 + 1) % len(options), format_func=lambda e: e.key,
                         key="diff_after")
    if not st.button("Compare", key="diff_go") and st.session_state.get("diff_pair") != (before.key, after.key):
        return
    st.session_state["diff_pair"] = (before.key, after.key)
    try:
        pb, pa = state.path_of(before), state.path_of(after)
        d = _diff(str(pb), str(pa), (pb.stat().st_mtime_ns, pa.stat().st_mtime_ns))
    except (data.TraceError, PathRefused, OSError) as e:
        state.show_error(str(e))
        return
    st.subheader(words.plain(words.diff_headline(d.before_name, d.after_name, d.speedup, d.explained_by)))
    for line in d.lines:
        st.markdown(words.plain(line))
    st.subheader("Launches and bytes")
    st.dataframe(d.measures, hide_index=True, width="stretch")
    st.subheader("Idle by cause")
    st.altair_chart(charts.diff_idle(d.idle, d.before_name, d.after_name), width="stretch")
    st.dataframe(d.idle.assign(cause=d.idle["cause"].map(words.cause)), hide_index=True, width="stretch")
