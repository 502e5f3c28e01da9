"""Report: the five lines, idle by cause with its evidence, hotspots, ranges, prefill against decode."""
from __future__ import annotations

import streamlit as st

from analyzers.voice import dashboard as words
from dashboard import charts, data, state, tables


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
        for r in idle.itertuples()])
    tables.show(idle_table, {"cause": tables.text("cause"), "idle_ms": tables.ms("idle (ms)"),
                             "share_of_span": tables.share("share of span"),
                             "evidence": tables.text("evidence", width="medium"),
                             "first_experiment": tables.text("first experiment", width="large")}, wrap=True)

    st.subheader("Hotspots")
    tables.show(data.hotspots(a), {"name": tables.text("op", width="large"), "device_ms": tables.ms("device (ms)"),
                                   "share": tables.share("share"), "calls": tables.count("calls"),
                                   "kernels": tables.count("kernels")})

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
        rng = rng.assign(regime=rng["regime"].map(words.regime_cell), idle_dominant=rng["idle_dominant"].map(words.cause))
        tables.show(rng, {"name": tables.text("range", width="medium"), "count": tables.count("instances"),
                          "wall_ms": tables.ms("wall (ms)"), "median_wall_ms": tables.ms("median wall (ms)", 3),
                          "kernel_busy_ms": tables.ms("kernels busy (ms)"), "idle_ms": tables.ms("idle (ms)"),
                          "idle_share": tables.share("idle share"), "regime": tables.text("regime"),
                          "idle_dominant": tables.text("mostly idle for")})
    else:
        st.caption(words.no_ranges())

    st.subheader("Open in Perfetto")
    _perfetto(entry, a)
