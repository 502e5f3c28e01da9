"""The Streamlit app: `tracetriage dashboard [TRACE_OR_DIR]` runs this file.

Pages are listed in dashboard.views.PAGES; the trace or directory named on the command line arrives in
the TRACETRIAGE_DASHBOARD_PATH environment variable. A directory of rank traces opens on the Ranks page.
"""
import streamlit as st

from dashboard import library, views

# Streamlit runs this file as __main__. The Ranks page analyses each rank in a worker process; a worker
# started with spawn re-imports the parent's main file as __mp_main__, and must draw no page.
if __name__ == "__main__":
    st.set_page_config(page_title="tracetriage", layout="wide")
    first = "ranks" if library.directory_run(library.target_from_env()) is not None else "library"
    views.navigation(default_url=first).run()
