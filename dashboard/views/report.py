"""Report: the five lines, idle by cause with its evidence, hotspots, ranges, prefill against decode."""
from __future__ import annotations

import streamlit as st

from analyzers.voice import dashboard as words
from dashboard import charts, data, state

TITLE, URL, ICON = "Report", "report", ":material/summarize:"


def _perfetto(entry, a) -> None:
    key = f"perfetto:{entry.key}"
    if st.button("Prepare the trace for Perfetto", key="prepare_perfetto"):
        with st.spinner("Writing the idle track…"):
            st.session_state[key] = data.annotated_trace(state.path_of(entry), a)
    if key in st.session_state:
        st.download_button("Download the annotated trace", st.session_state[key],
                           file_name=entry.name.split("/")[-1].removesuffix(".gz").removesuffix(".json")
                           + ".idle.json.gz", mime="application/gzip", key="download_perfetto")
        st.caption(words.annotated_caption(data.gap_count(a)))


def render() -> None:
    got = state.current_analysis()
    st.title("Report")
    if got is None:
        return
    entry, a = got
    st.caption(words.plain(entry.key))
    for line in data.five_lines(a):
        st.markdown(words.plain(line))
    for c in data.caveats(a):
        st.caption(words.plain(f"Caveat: {c}."))

    st.subheader("Idle by cause")
    idle = data.idle_by_cause(a)
    st.altair_chart(charts.idle_by_cause(idle), width="stretch")
    idle_table = idle.assign(cause=idle["cause"].map(words.cause), evidence=[
        words.cause_evidence(r.cause, r.gaps, r.median_gap_us, r.max_gap_us, data.evidence_names(a, r.cause))
        for r in idle.itertuples()])[["cause", "idle_us", "share_of_span", "evidence", "first_experiment"]]
    st.dataframe(idle_table, hide_index=True, width="stretch",
                 column_config={"idle_us": st.column_config.NumberColumn("idle µs", format="%.1f"),
                                "share_of_span": st.column_config.NumberColumn("share of span", format="percent")})

    st.subheader("Hotspots")
    st.dataframe(data.hotspots(a), hide_index=True, width="stretch",
                 column_config={"device_us": st.column_config.NumberColumn("device µs", format="%.1f"),
                                "share": st.column_config.NumberColumn("share", format="percent")})

    st.subheader("Ranges")
    ph = data.phases(a)
    if ph is not None:
        st.markdown(words.plain(words.phase_summary(ph.ttft_us, ph.per_token_us, ph.decode.count,
                                                    ph.tokens_per_prefill)))
        for p in (ph.prefill, ph.decode):
            st.markdown(words.plain(words.phase_detail(p.label, p.regime, p.idle_share, p.idle_dominant,
                                                       p.median_wall_us)))
    rng = data.ranges(a)
    if len(rng):
        st.dataframe(rng, hide_index=True, width="stretch")
    else:
        st.caption("No named ranges in this trace (record_function / named_range).")

    st.subheader("Open in Perfetto")
    _perfetto(entry, a)
