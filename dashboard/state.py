"""What the pages share within a session: the trace in view, the cached analyses, the upload folder."""
from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from analyzers.voice import dashboard as words
from dashboard import data, library
from dashboard.library import Entry, PathRefused

CURRENT = "trace_entry"
UPLOADS = "uploads"


@st.cache_resource(max_entries=6, show_spinner="Analysing the trace…")
def _analysis(path: str, mtime_ns: int, size: int):
    # Keyed by the file's identity too, so an edited file is analysed again.
    return data.open_analysis(path)


def path_of(entry: Entry) -> Path:
    return library.confine(entry.root, entry.name)


def analysis_of(entry: Entry):
    """The analysis of a library entry; TraceError or PathRefused with a one-line message."""
    p = path_of(entry)
    try:
        s = p.stat()
    except OSError:
        raise data.TraceError(f"no such file: {entry.name}") from None
    return _analysis(str(p), s.st_mtime_ns, s.st_size)


def analysis_of_path(path: Path):
    """The analysis of a file the app itself names (a drill's trace); TraceError with a one-line message."""
    try:
        s = Path(path).stat()
    except OSError:
        raise data.TraceError(f"no such file: {path}") from None
    return _analysis(str(path), s.st_mtime_ns, s.st_size)


def target() -> library.Target:
    return library.target_from_env()


def upload_dir() -> Path:
    if "upload_dir" not in st.session_state:
        st.session_state["upload_dir"] = Path(tempfile.mkdtemp(prefix="tracetriage-upload-"))
    return st.session_state["upload_dir"]


def entries() -> list[Entry]:
    """Every trace the session can open: samples, the command line's directory, this session's uploads."""
    t = target()
    out = library.samples()
    if t.root is not None and t.root.resolve() != library.SAMPLES.resolve():
        out += library.directory_entries(t.root)
    return out + list(st.session_state.get(UPLOADS, []))


def choose(entry: Entry) -> None:
    st.session_state[CURRENT] = entry


def current() -> Entry | None:
    return st.session_state.get(CURRENT)


def show_error(message: str) -> None:
    """A bad trace: its one line on the page, as plain text."""
    st.error(words.plain(words.trace_error(message)))


def current_analysis():
    """(entry, analysis) of the trace in view, or None after saying on the page why there is none."""
    entry = current()
    if entry is None:
        st.info("Pick a trace in the Library first.")
        return None
    try:
        return entry, analysis_of(entry)
    except (data.TraceError, PathRefused) as e:
        show_error(str(e))
        return None
