"""Diff: two traces, the change explained in launches, bytes and idle (the analyzers' diff), each op's
change, and both timelines on one time axis. The pair lives in the URL (?before=KEY&after=KEY)."""
from __future__ import annotations

import streamlit as st

from tracetriage.dashboard import charts, data, state, tables, url
from tracetriage.dashboard import words as words
from tracetriage.dashboard.library import PathRefused

BINS = 400


@st.cache_resource(max_entries=8, show_spinner="Comparing the traces…")
def _diff(before: str, after: str, stamp: tuple, _b, _a):
    # Keyed by the two entries and their files' versions; the analyses themselves are the cached ones.
    return data.diff(_b, _a), data.paired_timelines(_b, _a, bins=BINS)


def _pick(col, label: str, options, want: str | None, key: str):
    keys = [e.key for e in options]
    at = keys.index(want) if want in keys else None
    return col.selectbox(label, options, index=at, format_func=lambda e: e.key, key=f"{key}:{want}",
                         placeholder=words.pick_placeholder())


def _timeline(frames, lo: float, hi: float, title: str) -> None:
    binned = isinstance(frames, data.OverviewFrames)
    st.altair_chart(charts.paired_timeline(frames, binned, lo, hi, title), width="stretch")


def render() -> None:
    options = state.entries()
    if len(options) < 2:
        st.info(words.need_two_traces())
        return
    cur = state.current()
    c1, c2 = st.columns(2)
    before = _pick(c1, "Before", options, st.query_params.get("before") or (cur.key if cur else None), "diff_before")
    after = _pick(c2, "After", options, st.query_params.get("after"), "diff_after")
    if before is not None:
        state.choose(before)   # the trace in view is the pair's before: What-if and the others pick up from it
    url.remember("diff", {url.TRACE: before.key if before else (cur.key if cur else None),
                          "before": before.key if before else None, "after": after.key if after else None})
    if before is None or after is None:
        st.caption(words.diff_pick_both())
        return
    try:
        ab, aa = state.analysis_of(before), state.analysis_of(after)
        pb, pa = state.path_of(before), state.path_of(after)
        d, pair = _diff(before.key, after.key, (pb.stat().st_mtime_ns, pa.stat().st_mtime_ns), ab, aa)
    except (data.TraceError, PathRefused, OSError) as e:
        state.show_error(str(e))
        return
    st.subheader(words.plain(words.diff_headline(d.before_name, d.after_name, d.speedup, d.explained_by)))
    for line in d.lines:
        st.markdown(words.plain(line))
    st.subheader("Launches and bytes")
    tables.show(d.measures, {"measure": tables.text("measure"), "before": tables.text("before"),
                             "after": tables.text("after"), "change": tables.text("change")})
    st.subheader("Ops")
    st.caption(words.plain(words.diff_ops_caption(d.per_step)))
    tables.show(d.ops, {"op": tables.text("op", width="large"), "before_ms": tables.ms("before (ms)", 3),
                        "after_ms": tables.ms("after (ms)", 3), "change_ms": tables.ms("change (ms)", 3),
                        "calls": tables.text("calls"), "kernels": tables.text("kernels"),
                        "bytes": tables.text("bytes")}, height=min(38 + 35 * len(d.ops), 420))
    st.subheader("Idle by cause")
    st.altair_chart(charts.diff_idle(d.idle, d.before_name, d.after_name), width="stretch")
    idle = d.idle.assign(cause=d.idle["cause"].map(words.cause))
    tables.show(idle, {"cause": tables.text("cause"), "before_ms": tables.ms("before (ms)", 3),
                       "after_ms": tables.ms("after (ms)", 3), "change_ms": tables.ms("change (ms)", 3)})
    st.subheader("Timelines")
    st.caption(words.plain(words.diff_timelines_caption()))
    lo, hi = pair.window_ms
    _timeline(pair.before, lo, hi, words.before_title(d.before_name))
    _timeline(pair.after, lo, hi, words.after_title(d.after_name))
