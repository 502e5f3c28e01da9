"""The dashboard's pages, in the order of the sidebar.

A page is one small module with render() (its title is drawn for it, first); PAGES lists each with its
title, URL and icon. Adding one
(the what-if page, the drills page, the ranks page) is writing that module and adding its line here.
A page's module is imported when the page first runs, not when the app starts: the Library paints
before altair (its jsonschema import alone takes seconds on a busy machine), pandas and the analysis
are loaded.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from tracetriage.dashboard import warm


@dataclass(frozen=True)
class PageSpec:
    module: str      # tracetriage.dashboard.views.<module>
    title: str
    url: str         # the page's path: /report, /timeline ...
    icon: str

    def render(self) -> None:
        # The title first: it paints while the page's module (altair, pandas, the analysis) is imported.
        import streamlit as st

        st.title(self.title)
        importlib.import_module(f"tracetriage.dashboard.views.{self.module}").render()
        warm.start(p.module for p in PAGES)      # the other pages' imports, off the next click's path


PAGES = (
    PageSpec("library", "Library", "library", ":material/folder_open:"),
    PageSpec("report", "Report", "report", ":material/summarize:"),
    PageSpec("timeline", "Timeline", "timeline", ":material/view_timeline:"),
    PageSpec("ranks", "Ranks", "ranks", ":material/stacked_bar_chart:"),
    PageSpec("roofline", "Roofline", "roofline", ":material/show_chart:"),
    PageSpec("diff", "Diff", "diff", ":material/compare_arrows:"),
    PageSpec("whatif", "What-if", "whatif", ":material/model_training:"),
    PageSpec("trytable", "Try", "try", ":material/science:"),
    PageSpec("practice", "Drills", "drills", ":material/school:"),
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
