"""Library: pick a bundled sample, a trace from the command line's directory, or upload one."""
from __future__ import annotations

import streamlit as st

from analyzers.voice import dashboard as words
from dashboard import data, library, state
from dashboard.library import Entry, PathRefused

TITLE, URL, ICON = "Library", "library", ":material/folder_open:"


def open_entry(entry: Entry) -> bool:
    """Make entry the trace in view; on a bad file, its one-line error on the page."""
    try:
        a = state.analysis_of(entry)
    except (data.TraceError, PathRefused) as e:
        state.show_error(str(e))
        return False
    state.choose(entry)
    st.success(words.plain(words.loaded(entry.name, data.trace_events(a), data.device_name(a))))
    return True


def accept_upload(filename: str, payload: bytes, cap_mb: int) -> Entry | None:
    if len(payload) > cap_mb * 1_000_000:
        st.error(words.plain(words.upload_too_large(filename, len(payload), cap_mb)))
        return None
    entry = library.save_upload(state.upload_dir(), filename, payload)
    uploads = [u for u in st.session_state.get(state.UPLOADS, []) if u.name != entry.name]
    st.session_state[state.UPLOADS] = uploads + [entry]
    return entry


def _from_query() -> None:
    """?trace=samples/NAME or ?trace=directory/NAME opens that trace once (the name is confined)."""
    want = st.query_params.get("trace")
    if not want or st.session_state.get("_query_done") == want:
        return
    st.session_state["_query_done"] = want
    match = next((e for e in state.entries() if e.key == want), None)
    if match is None:
        state.show_error(f"no trace {want} in the library")
        return
    open_entry(match)


def _first_from_command_line() -> None:
    t = state.target()
    if t.first and not st.session_state.get("_first_done"):
        st.session_state["_first_done"] = True
        open_entry(Entry("directory", t.root, t.first))


def render() -> None:
    st.title("Library")
    _first_from_command_line()
    _from_query()
    cur = state.current()
    if cur is not None:
        st.caption(words.plain(f"In view: {cur.key}"))

    samples = library.samples()
    if samples:
        st.subheader("Sample traces")
        keys = [e.key for e in samples]
        at = keys.index(cur.key) if cur is not None and cur.key in keys else 0
        pick = st.selectbox("Sample trace", samples, index=at, format_func=lambda e: e.name, key="sample")
        if pick is not None:
            st.caption(words.plain(words.sample_about(pick.about, pick.idle_cause, pick.regime)))
        if st.button("Open sample", key="open_sample") and pick is not None:
            open_entry(pick)

    t = state.target()
    if t.root is not None:
        st.subheader("From the command line's directory")
        st.caption(words.plain(str(t.root)))
        mine = library.directory_entries(t.root)
        if mine:
            pick_d = st.selectbox("Trace file", mine, format_func=lambda e: e.name, key="dir_trace")
            if st.button("Open file", key="open_dir") and pick_d is not None:
                open_entry(pick_d)
        else:
            st.caption("No .json or .json.gz trace files in it.")

    st.subheader("Upload")
    cap = library.upload_cap_mb()
    up = st.file_uploader(f"A torch.profiler trace (.json or .json.gz, up to {cap} MB)", type=["json", "gz"],
                          key="upload")
    if up is not None and st.session_state.get("_uploaded") != (up.name, up.size):
        st.session_state["_uploaded"] = (up.name, up.size)
        entry = accept_upload(up.name, up.getvalue(), cap)
        if entry is not None:
            open_entry(entry)
