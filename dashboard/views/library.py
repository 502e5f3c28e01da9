"""Library: pick a bundled sample, a trace from the command line's directory, or upload one.

The lists paint first (nothing heavy is imported for them); the trace in view is analysed after, and
the page says once what it loaded (or its one-line error).
"""
from __future__ import annotations

import streamlit as st

from tracetriage.dashboard import library, state, views, warm
from tracetriage.dashboard import words as words
from tracetriage.dashboard.library import Entry, PathRefused


def accept_upload(filename: str, payload: bytes, cap_mb: int) -> Entry | None:
    if len(payload) > cap_mb * 1_000_000:
        st.error(words.plain(words.upload_too_large(filename, len(payload), cap_mb)))
        return None
    return library.save_upload(state.upload_dir(), filename, payload)


def _picker(label: str, options: list[Entry], cur: Entry | None, key: str, describe) -> Entry | None:
    """A selectbox over entries, each shown with what it is, showing the trace in view when it is among them; a
    new pick opens it. Typing filters on the words as typed ("ddp" finds the DDP traces), not on letters
    scattered through a name (the selectbox's default fuzzy match found 24 unrelated entries for "ddp")."""
    keys = [e.key for e in options]
    at = keys.index(cur.key) if cur is not None and cur.key in keys else None
    pick = st.selectbox(label, options, index=at, format_func=words.entry_option,
                        key=f"{key}:{cur.key if cur else ''}", placeholder=words.pick_placeholder(),
                        filter_mode="contains")
    if pick is not None:
        st.caption(words.plain(describe(pick)))
    return pick


def _describe_sample(e: Entry, runs: set[str]) -> str:
    if e.folder in runs:
        return words.run_member(e.folder)
    if e.folder:
        return words.sample_in_folder(e.folder)
    return words.sample_about(e.about, e.idle_cause, e.regime)


def _status(entry: Entry) -> None:
    """One line for the trace in view: what it holds, or why it cannot be read."""
    from tracetriage.dashboard import data  # (after the lists have painted: pandas and the analyzers load here)

    try:
        a = state.analysis_of(entry)
    except (data.TraceError, PathRefused) as e:
        state.show_error(str(e))
        return
    st.success(words.plain(words.loaded(entry.name, data.trace_events(a), data.device_name(a))))
    # the way on from a picked trace: its report first, the timeline beside it
    c1, c2, _ = st.columns([1, 1, 3])
    c1.page_link(views.page("report"), label=words.open_report(), icon=":material/summarize:",
                 query_params={state.TRACE: entry.key})
    c2.page_link(views.page("timeline"), label=words.open_timeline(), icon=":material/view_timeline:",
                 query_params={state.TRACE: entry.key})


def render() -> None:
    cur = state.current()
    status = st.container()      # the one status line, above the lists, filled once they have painted
    opened: Entry | None = None

    samples = library.samples()
    if samples:
        st.subheader("Sample traces")
        runs = {r.name for r in library.sample_runs()}
        pick = _picker("Sample trace", samples, cur, "sample", lambda e: _describe_sample(e, runs))
        if pick is not None and (cur is None or pick.key != cur.key):
            opened = pick

    t = state.target()
    if t.root is not None and t.root.resolve() != library.SAMPLES.resolve():
        st.subheader("From the command line")
        st.caption(words.plain(words.directory_caption(t.root.name)))
        mine = library.directory_entries(t.root)
        if mine:
            pick = _picker("Trace file", mine, cur, "dir_trace", lambda e: "")
            if pick is not None and (cur is None or pick.key != cur.key):
                opened = pick
        else:
            st.caption(words.no_traces_in_directory())

    st.subheader("Upload")
    cap = library.upload_cap_mb()
    up = st.file_uploader(words.upload_label(cap), type=["json", "gz"], key="upload")
    if up is not None and st.session_state.get("_uploaded") != (up.name, up.size):
        st.session_state["_uploaded"] = (up.name, up.size)
        entry = accept_upload(up.name, up.getvalue(), cap)
        if entry is not None:
            opened = entry

    if opened is not None:
        state.choose(opened)
        st.rerun()               # the pickers redraw around the trace now in view
    warm.start(p.module for p in views.PAGES)    # the lists have painted: the other pages' imports can start
    if cur is not None:
        with status:
            _status(cur)
    elif not st.query_params.get(state.TRACE):
        status.info(words.pick_a_trace_here())
