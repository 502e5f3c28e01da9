"""What-if: each lever's predicted span, and the GPU timeline the replay predicts under one lever,
drawn below the measured one on the same time axis (analyzers.whatif, through the adapter)."""
from __future__ import annotations

import streamlit as st

from analyzers.voice import dashboard as words
from dashboard import charts, data, state

TITLE, URL, ICON = "What-if", "whatif", ":material/model_training:"
BINS = 400


def _timelines(entry, a, lever: str):
    """The replay under one lever, kept for the session (a big trace's graph takes a moment to build)."""
    key = ("whatif_timelines", entry.key, lever)
    if key not in st.session_state:
        with st.spinner("Replaying the trace under the lever…"):
            st.session_state[key] = data.whatif_timelines(a, lever, bins=BINS)
    return st.session_state[key]


def render() -> None:
    got = state.current_analysis()
    st.title("What-if")
    if got is None:
        return
    entry, a = got
    st.caption(words.plain(entry.key))
    view = data.levers(a)
    if view is None:
        st.info(words.no_whatif())
        return
    base_ns, replay_ns = view.baseline_us * 1e3, view.replay_us * 1e3
    st.caption(words.plain(words.whatif_caption(base_ns, replay_ns, a.span_ns)))
    st.altair_chart(charts.lever_bars(view.levers, view.baseline_us, words.traced_span_label(base_ns)),
                    width="stretch")
    box = st.expander("What each lever assumes", expanded=False)
    for r in view.levers.itertuples():
        box.markdown(words.plain(words.lever_line(r.lever, r.predicted_us * 1e3, r.predicted_ratio,
                                                 r.saving_us * 1e3, base_ns)))
        box.caption(words.plain(r.assumption))

    st.subheader("Predicted timeline")
    names = list(view.levers["lever"])
    lever = st.selectbox("Lever", names, index=0, key="whatif_lever")
    try:
        t = _timelines(entry, a, lever)
    except data.WhatIfError as e:
        state.show_error(str(e))
        return
    pred_ns = float(view.levers.loc[view.levers["lever"] == lever, "predicted_us"].iloc[0]) * 1e3
    st.caption(words.plain(words.whatif_timeline_caption(t.activities, t.binned, BINS, data.RAW_LIMIT)))
    st.altair_chart(charts.whatif_timeline(t.measured, t.binned, t.hi_us, words.measured_timeline_title(base_ns)),
                    width="stretch")
    st.altair_chart(charts.whatif_timeline(t.predicted, t.binned, t.hi_us,
                                           words.predicted_timeline_title(lever, pred_ns)), width="stretch")
