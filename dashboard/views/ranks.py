"""Ranks: a multi-rank run (a directory of rank traces) as `tracetriage report DIR` reports it: a line per
rank, the straggler with its evidence, each rank's collective time per step; a row picked opens that
rank's timeline. The run lives in the URL (?run=samples/ddp)."""
from __future__ import annotations

import streamlit as st

from tracetriage.dashboard import charts, data, library, state, tables, url
from tracetriage.dashboard import words as words
from tracetriage.dashboard.views import page


@st.cache_resource(max_entries=4, show_spinner=False)
def _ranks(path: str, stamp: tuple):
    # Keyed by the run's files and their versions: a rank rewritten is analysed again.
    bar = st.progress(0.0, text=words.analysing_ranks(0, len(stamp)))

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=words.analysing_ranks(done, total))

    try:
        return data.ranks(library.confine(library.SAMPLES if path.startswith("samples/") else state.target().root,
                                          path.split("/", 1)[1]), progress=progress)
    finally:
        bar.empty()


def _runs() -> list[library.Run]:
    mine = library.directory_run(state.target())
    return ([mine] if mine else []) + library.sample_runs()


def _stamp(run: library.Run) -> tuple:
    files = library.trace_files(library.confine(run.root, run.name))
    return tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in files)


def _entry_key(run: library.Run, file: str) -> str:
    return f"{run.source}/{file}" if run.name == "." else f"{run.source}/{run.name}/{file}"


def render() -> None:
    runs = _runs()
    if not runs:
        st.info(words.no_runs())
        return
    keys = [r.key for r in runs]
    want = st.query_params.get("run")
    run = st.selectbox("Run", runs, index=keys.index(want) if want in keys else 0, format_func=lambda r: r.label,
                       key="ranks_run")
    url.remember("ranks", {"run": run.key})
    try:
        v = _ranks(run.key, _stamp(run))
    except (data.TraceError, library.PathRefused) as e:
        state.show_error(str(e))
        return
    st.caption(words.plain(words.ranks_caption(run.label, run.source == "directory")))
    st.markdown(words.plain(v.straggler_line))
    st.caption(words.plain(words.ranks_table_caption()))
    table = v.ranks.assign(rank_label=[words.rank_cell(r, s) for r, s in zip(v.ranks["rank"], v.ranks["straggler"])])
    # (eight columns and the row picker fill the page at 1280x800: each rank's file is its link's, below)
    event = tables.show(table, {"rank_label": tables.text("rank"),
                                "idle_share": tables.share("idle share"), "idle_cause": tables.text("mostly idle for"),
                                "kernel_busy_ms": tables.ms("kernels busy (ms)"),
                                "collective_ms": tables.ms("collectives (ms)"),
                                "collective_step_ms": tables.ms("per step (ms)", help=words.median_per_step_help()),
                                "host_step_ms": tables.ms("host per step (ms)", help=words.host_step_help())},
                        on_select="rerun", selection_mode="single-row", key=f"ranks_table:{run.key}")
    picked = (event.selection.rows if event is not None else []) or []
    if picked:
        file = str(v.ranks["file"].iloc[picked[0]])
        st.switch_page(page("timeline"), query_params={state.TRACE: _entry_key(run, file)})
    cols = st.columns(max(len(v.ranks), 1))
    for col, (r, s, file) in zip(cols, v.ranks[["rank", "straggler", "file"]].itertuples(index=False)):
        col.page_link(page("timeline"), label=words.open_rank_timeline(int(r), bool(s)),
                      icon=":material/view_timeline:",
                      query_params={state.TRACE: _entry_key(run, file)})
    if len(v.steps):
        strag = f"rank {v.straggler_rank}" if v.straggler_rank is not None else None
        st.subheader(words.collective_steps_title())
        st.altair_chart(charts.rank_steps(v.steps, strag), width="stretch")
    with st.expander(words.ranks_report_title(), expanded=False):
        for line in v.lines:
            st.markdown(words.plain(line))
