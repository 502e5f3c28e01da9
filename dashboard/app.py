"""The Streamlit app: `tracetriage dashboard [TRACE_OR_DIR]` runs this file.

Pages are registered in dashboard.views.PAGES; the trace or directory named on the
command line arrives in the TRACETRIAGE_DASHBOARD_PATH environment variable.
"""
import streamlit as st

from dashboard.views import PAGES

st.set_page_config(page_title="tracetriage", layout="wide")
nav = st.navigation([st.Page(p.render, title=p.TITLE, url_path=p.URL, icon=p.ICON, default=(i == 0))
                     for i, p in enumerate(PAGES)])
nav.run()
