"""Report: the five lines, idle by cause with its evidence, hotspots, the framework constructs that made the idle,
prefill against decode (from ranges or from the ops' shapes), ranges."""
from __future__ import annotations

import streamlit as st

from tracetriage.dashboard import charts, data, state, tables
from tracetriage.dashboard import words as words


def _perfetto(entry, a) -> None:
    key = f"perfetto:{entry.key}"
    if st.button("Prepare the trace for Perfetto", key="prepare_perfetto"):
        with st.spinner("Writing the idle track…"):
            st.session_state[key] = data.annotated_trace(state.path_of(entry), a)
    if key in st.session_state:
        st.download_button("Download the annotated trace", st.session_state[key],
                           file_name=data.annotated_name(entry.name), mime="application/gzip", key="download_perfetto")
        st.caption(words.annotated_caption(data.gap_count(a)))


def _framework(a) -> None:
    """Whose code made the idle and the launches (tracetriage.analyzers.analyses.framework)."""
    fw = data.framework(a)
    if not len(fw):
        return
    st.subheader("Framework constructs")
    if set(fw["construct"]) <= {data.USER_CODE}:
        st.caption(words.plain(words.no_constructs()))
        return
    st.caption(words.plain(words.framework_caption()))
    tables.show(fw.assign(idle_dominant=fw["idle_dominant"].map(words.cause)),
                {"name": tables.text("construct", width="medium"), "idle_ms": tables.ms("idle (ms)"),
                 "idle_share": tables.share("share of idle"), "idle_dominant": tables.text("mostly idle for"),
                 "launches": tables.count("launches"), "calls": tables.count("calls"),
                 "host_ms": tables.ms("host time (ms)"), "marked_by": tables.text("marked by", width="large")})


def _phases(a) -> None:
    """Prefill against decode: TTFT, per-token median and p90, and the regime of each phase, whether the phases
    came from named ranges or from the ops' shapes."""
    ph, table = data.phases(a), data.phase_table(a)
    if ph is None or table is None:
        return
    st.subheader("Prefill and decode")
    st.markdown(words.plain(words.phase_summary(ph.ttft_us, ph.per_token_us, ph.decode.count, ph.tokens_per_prefill)))
    rows = table.rows
    tables.show(rows.assign(idle_dominant=rows["idle_dominant"].map(words.cause)),
                {"phase": tables.text("phase"), "steps": tables.count("steps"), "latency": tables.text("latency"),
                 "median_ms": tables.ms("median (ms)"), "p90_ms": tables.ms("p90 (ms)"),
                 "kernel_busy_ms": tables.ms("kernels busy (ms)"), "idle_share": tables.share("idle share"),
                 "idle_dominant": tables.text("mostly idle for"), "regime": tables.text("regime")})
    st.caption(words.plain(words.phases_found(table.found_from, table.ranges, table.prompt_tokens, table.batch,
                                              table.mixed_steps, table.decode_inferred)))


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
                             "share_shown": tables.shown("share of span"),
                             "evidence": tables.text("evidence", width="medium"),
                             "first_experiment": tables.text("first experiment", width="large")}, wrap=True)

    st.subheader("Hotspots")
    tables.show(data.hotspots(a), {"name": tables.text("op", width="large"), "device_ms": tables.ms("device (ms)"),
                                   "share": tables.share("share"), "calls": tables.count("calls"),
                                   "kernels": tables.count("kernels")})

    _framework(a)
    _phases(a)

    st.subheader("Ranges")
    rng = data.ranges(a)
    if len(rng):
        rng = rng.assign(regime=rng["regime"].map(words.regime_cell),
                         idle_dominant=rng["idle_dominant"].map(words.cause))
        tables.show(rng, {"name": tables.text("range", width="medium"), "count": tables.count("instances"),
                          "wall_ms": tables.ms("wall (ms)"), "median_wall_ms": tables.ms("median wall (ms)"),
                          "kernel_busy_ms": tables.ms("kernels busy (ms)"), "idle_ms": tables.ms("idle (ms)"),
                          "idle_share": tables.share("idle share"), "regime": tables.text("regime"),
                          "idle_dominant": tables.text("mostly idle for")})
    else:
        st.caption(words.no_ranges())

    st.subheader("Open in Perfetto")
    _perfetto(entry, a)
