"""The URL is the view: the page's path and its whole query string, written as the view changes, under load too.

Two things made the URL lag behind the view, and both are answered here:

1. A page compared what it wanted with `st.query_params` and wrote only the keys that differed. But
   `st.query_params` is the URL the browser had when it asked for this run: a URL change that an earlier run
   sent and the browser had not yet applied is not in it. Zoom in and click Zoom out before the zoom's URL
   arrives, and the zoom-out run saw no window to remove, while the zoom's late message put one in: the URL
   kept `from=...&to=...` under a zoomed-out view. So a page writes its *whole* query string on every run,
   whatever `st.query_params` says, in one message: the last run's message is the browser's last word, and a
   view change is one history entry (not one per key).
2. A page wrote its URL after its module had been imported (altair and pandas: seconds on a busy machine),
   after the library was scanned or a search ran. So the page's run writes first, before its title: from
   what the session last showed on this page for this trace (`remember`), or, the first time, the URL's own
   keys as they arrived (a link or a reload).

The keys of each page are listed with it (`PageSpec.keys`); a key the page does not own (a window carried to
the Report by a late message) is dropped. Only streamlit is imported here: this runs before a page's module.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import streamlit as st

TRACE = "trace"          # the query parameter that names the trace in view
CURRENT = "trace_entry"  # the session's trace in view (a library Entry), when the URL names none
SHOWN = "url_shown"      # {(page, trace): {key: value}}: what the session last showed on each page, per trace


def write(view: Mapping[str, str | None]) -> None:
    """The URL's whole query string, now, in one message, even when `st.query_params` already holds it (it may
    be the browser's URL of before a change still on its way there)."""
    st.query_params.from_dict({k: v for k, v in view.items() if v})


def remember(page: str, view: Mapping[str, str | None]) -> None:
    """What this page shows now (its trace among its keys), kept for the session and written to the URL."""
    shown = {k: v for k, v in view.items() if v}
    st.session_state.setdefault(SHOWN, {})[(page, shown.get(TRACE))] = shown
    write(shown)


def forget(page: str, trace: str | None, keys: Iterable[str]) -> None:
    """Take keys out of what the page shows (a callback's change, before the run that draws it)."""
    shown = st.session_state.get(SHOWN, {}).get((page, trace))
    if shown is not None:
        for k in keys:
            shown.pop(k, None)


def update(page: str, trace: str | None, **keys: str) -> None:
    """Put keys into what the page shows (a callback's change, before the run that draws it)."""
    st.session_state.setdefault(SHOWN, {}).setdefault((page, trace), {TRACE: trace} if trace else {}).update(keys)


def trace_in_view() -> str | None:
    """The trace key the page will show, as far as it is known before anything is loaded: the URL's, else the
    session's (a click in the sidebar drops the query string)."""
    entry = st.session_state.get(CURRENT)
    return st.query_params.get(TRACE) or (entry.key if entry is not None else None)


def arrive(page: str, keys: tuple[str, ...]) -> None:
    """First thing in a page's run: the URL is this page's view as the session knows it."""
    trace = trace_in_view() if TRACE in keys else None
    shown = st.session_state.get(SHOWN, {}).get((page, trace))
    if shown is None:       # first visit for this trace: the keys the URL came with
        shown = {k: st.query_params.get(k) for k in keys}
    view = {k: shown.get(k) for k in keys}
    if trace:
        view[TRACE] = trace
    write(view)
