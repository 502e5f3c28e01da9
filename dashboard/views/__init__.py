"""The dashboard's pages, in the order of the sidebar.

A page is one small module with render() (its title is drawn for it, first); PAGES lists each with its
title, URL path, icon and the query keys of its view (tracetriage.dashboard.url: the URL is written from them
before the title, and a key the page does not list is dropped). Adding one
(the what-if page, the drills page, the ranks page) is writing that module and adding its line here.
A page's module is imported when the page first runs, not when the app starts: the Library paints
before altair (its jsonschema import alone takes seconds on a busy machine), pandas and the analysis
are loaded.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from tracetriage.dashboard import url as url_
from tracetriage.dashboard import warm

TRACE_ONLY = ("trace",)


@dataclass(frozen=True)
class PageSpec:
    module: str      # tracetriage.dashboard.views.<module>
    title: str
    url: str         # the page's path: /report, /timeline ...
    icon: str
    keys: tuple[str, ...] = TRACE_ONLY    # the query parameters of the page's view

    def render(self) -> None:
        # The URL first, then the title: both land while the page's module (altair, pandas, the analysis) is
        # imported.
        import streamlit as st

        url_.arrive(self.url, self.keys)
        st.title(self.title)
        importlib.import_module(f"tracetriage.dashboard.views.{self.module}").render()
        warm.start(p.module for p in PAGES)      # the other pages' imports, off the next click's path


PAGES = (
    PageSpec("library", "Library", "library", ":material/folder_open:"),
    PageSpec("report", "Report", "report", ":material/summarize:"),
    PageSpec("timeline", "Timeline", "timeline", ":material/view_timeline:", ("trace", "from", "to", "q", "sel")),
    PageSpec("ranks", "Ranks", "ranks", ":material/stacked_bar_chart:", ("run",)),
    PageSpec("roofline", "Roofline", "roofline", ":material/show_chart:"),
    PageSpec("diff", "Diff", "diff", ":material/compare_arrows:", ("trace", "before", "after")),
    PageSpec("whatif", "What-if", "whatif", ":material/model_training:", ("trace", "lever")),
    PageSpec("trytable", "Try", "try", ":material/science:", ("try",)),
    PageSpec("practice", "Drills", "drills", ":material/school:", ()),
)
BY_URL = {p.url: p for p in PAGES}


def page(url: str, default: bool = False):
    """The Streamlit page for a URL path: what st.navigation lists and st.switch_page / st.page_link go to
    (a page is known by its URL path, so a page made again on a later run is the same page)."""
    import streamlit as st

    p = BY_URL[url]
    return st.Page(p.render, title=p.title, url_path=p.url, icon=p.icon, default=default)


def navigation(default_url: str = "library"):
    import streamlit as st

    return st.navigation([page(p.url, default=(p.url == default_url)) for p in PAGES])
