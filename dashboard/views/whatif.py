"""What-if: each lever's predicted span, and the GPU timeline the replay predicts under one lever,
drawn below the measured one on the same time axis (tracetriage.analyzers.whatif, through the adapter). The lever
shown lives in the URL (?lever=NAME)."""
from __future__ import annotations

import streamlit as st

from tracetriage.dashboard import charts, data, state, url
from tracetriage.dashboard import words as words

BINS = 400


@st.cache_resource(max_entries=16, show_spinner="Replaying the trace under the lever…")
def _timelines(key: str, stamp: tuple, lever: str, _a):
    """The replay under one lever, kept for every session (a big trace's graph takes a moment to build)."""
    return data.whatif_timelines(_a, lever, bins=BINS)


def render() -> None:
    got = state.current_analysis()
    if got is None:
        return
    entry, a = got
    st.caption(words.plain(entry.key))
    view = data.levers(a)
    if view is None:
        st.info(words.no_whatif())
        return
    base_ns, replay_ns = view.baseline_us * 1e3, view.replay_us * 1e3
    st.caption(words.plain(words.whatif_caption(base_ns, replay_ns)))
    st.caption(words.plain(words.span_note(base_ns, view.report_span_us * 1e3, view.spans_agree, view.host_outside_us)))
    st.altair_chart(charts.lever_bars(view.levers, view.baseline_us, words.traced_span_label(base_ns)),
                    width="stretch")
    box = st.expander("What each lever assumes", expanded=False)
    for r in view.levers.itertuples():
        box.markdown(words.plain(words.lever_line(r.lever, r.predicted_us * 1e3, r.predicted_ratio,
                                                 r.saving_us * 1e3, base_ns)))
        box.caption(words.plain(r.assumption))

    st.subheader("Predicted timeline")
    names = list(view.levers["lever"])
    want = st.query_params.get("lever")
    lever = st.selectbox("Lever", names, index=names.index(want) if want in names else 0,
                         key=f"whatif_lever:{entry.key}")
    url.remember("whatif", {url.TRACE: entry.key, "lever": lever})
    try:
        p = state.path_of(entry)
        t = _timelines(entry.key, (p.stat().st_mtime_ns, p.stat().st_size), lever, a)
    except data.WhatIfError as e:
        state.show_error(str(e))
        return
    pred_ns = float(view.levers.loc[view.levers["lever"] == lever, "predicted_us"].iloc[0]) * 1e3
    st.caption(words.plain(words.whatif_timeline_caption(t.activities, t.binned, BINS, data.RAW_LIMIT)))
    st.altair_chart(charts.paired_timeline(t.measured, t.binned, 0.0, t.hi_ms, words.measured_timeline_title(base_ns)),
                    width="stretch")
    st.altair_chart(charts.paired_timeline(t.predicted, t.binned, 0.0, t.hi_ms,
                                           words.predicted_timeline_title(lever, pred_ns)), width="stretch")
