"""What the pages share: the trace in view, the cached analyses, the upload folder.

The trace in view lives in the URL (?trace=samples/gpt-eager.json.gz), so a reload, a bookmark, a deep
link (/timeline?trace=...) and a second tab on another trace all keep theirs. Its order of precedence:
the URL, then what this session opened last (a click in the sidebar drops the query string), then the
trace the command line named (or the first trace of its directory), the default of every new session.
Every page that shows a trace writes it back to the URL (tracetriage.dashboard.url: the whole query string,
every run).

The analysis module (pandas, the analyzers) is imported on first use, not here: the Library paints
before anything heavy is loaded.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import streamlit as st

from tracetriage.dashboard import library
from tracetriage.dashboard import words as words
from tracetriage.dashboard.library import Entry, PathRefused
from tracetriage.dashboard.url import CURRENT, TRACE


@st.cache_resource(max_entries=6, show_spinner=False)
def _analysis(path: str, mtime_ns: int, size: int):
    # Keyed by the file's identity too, so an edited file is analysed again. Shared by every session:
    # a second tab on the same trace opens at once.
    from tracetriage.dashboard import data

    return data.open_analysis(path)


@st.cache_resource(show_spinner=False)
def upload_dir() -> Path:
    """One folder per server process: an uploaded trace survives a reload (its URL names it), and goes with the
    server (Streamlit stops on Ctrl-C and on SIGTERM by leaving its loop, so the interpreter's exit handlers run):
    the user's copy is theirs, ours is not left in the temp directory."""
    path = Path(tempfile.mkdtemp(prefix="tracetriage-upload-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def path_of(entry: Entry) -> Path:
    return library.confine(entry.root, entry.name)


def _trace_error():
    from tracetriage.dashboard.data import TraceError

    return TraceError


def analysis_of(entry: Entry):
    """The analysis of a library entry; TraceError or PathRefused with a one-line message."""
    p = path_of(entry)
    try:
        s = p.stat()
    except OSError:
        raise _trace_error()(f"no such file: {entry.name}") from None
    with st.spinner(words.analysing(entry.name)):
        return _analysis(str(p), s.st_mtime_ns, s.st_size)


def analysis_of_path(path: Path):
    """The analysis of a file the app itself names (a drill's trace); TraceError with a one-line message."""
    try:
        s = Path(path).stat()
    except OSError:
        raise _trace_error()(f"no such file: {Path(path).name}") from None
    return _analysis(str(path), s.st_mtime_ns, s.st_size)


def target() -> library.Target:
    return library.target_from_env()


def entries() -> list[Entry]:
    """Every trace the session can open: samples, the command line's directory, the uploads."""
    t = target()
    out = library.samples()
    if t.root is not None and t.root.resolve() != library.SAMPLES.resolve():
        out += library.directory_entries(t.root)
    return out + library.upload_entries(upload_dir())


def find(key: str) -> Entry | None:
    """The entry a URL names, if the library holds it (a name is only ever matched, never opened as a path)."""
    t = target()
    if key.startswith("directory/") and t.root is not None and t.root.resolve() == library.SAMPLES.resolve():
        key = "samples/" + key.removeprefix("directory/")       # the command line named a sample
    found = next((e for e in entries() if e.key == key), None)
    if found is None and t.first and key == f"directory/{t.first}":
        found = Entry("directory", t.root, t.first)      # the file the command line named, trace or not: its error
                                                         # shows
    return found


def default_entry() -> Entry | None:
    """The command line's trace, or the first trace of the directory it named."""
    t = target()
    if t.root is None:
        return None
    if t.first:
        return find(f"directory/{t.first}")
    listed = library.directory_entries(t.root)
    return listed[0] if listed else None


def choose(entry: Entry) -> None:
    st.session_state[CURRENT] = entry
    if st.query_params.get(TRACE) != entry.key:
        st.query_params[TRACE] = entry.key


def current() -> Entry | None:
    """The trace in view (the URL's, this session's, or the command line's), written back to the URL.
    A URL naming no trace of the library says so on the page and gives None."""
    want = st.query_params.get(TRACE)
    if want:
        entry = find(want)
        if entry is None:
            st.error(words.plain(words.no_such_trace(want)))
            return None
    else:
        entry = st.session_state.get(CURRENT) or default_entry()
    if entry is not None:
        choose(entry)
    return entry


def roots() -> list[Path]:
    """The server directories a page must never name (library.public_message takes them out)."""
    return [library.SAMPLES, target().root, upload_dir()]


def show_error(message: str) -> None:
    """A bad trace: its one line on the page, as plain text, with no server path in it."""
    st.error(words.plain(words.trace_error(library.public_message(message, roots()))))


def current_analysis():
    """(entry, analysis) of the trace in view, or None after saying on the page why there is none."""
    entry = current()
    if entry is None:
        if not st.query_params.get(TRACE):
            st.info(words.pick_a_trace())
        return None
    try:
        return entry, analysis_of(entry)
    except (_trace_error(), PathRefused) as e:
        show_error(str(e))
        return None
