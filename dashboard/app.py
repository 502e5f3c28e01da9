"""The Streamlit app: `tracetriage dashboard [TRACE_OR_DIR]` runs this file.

Pages are listed in tracetriage.dashboard.views.PAGES; the trace or directory named on the command line arrives in
the TRACETRIAGE_DASHBOARD_PATH environment variable. A directory of rank traces opens on the Ranks page.
"""
import sys
from pathlib import Path

# `streamlit run` puts this file's folder first on sys.path: its modules (data, state, library, ...) would
# then be importable under bare names that other packages own. Ours are imported as tracetriage.dashboard.*.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import streamlit as st  # noqa: E402

from tracetriage.dashboard import library, views  # noqa: E402

# Streamlit runs this file as __main__. The Ranks page analyses each rank in a worker process; a worker
# started with spawn re-imports the parent's main file as __mp_main__, and must draw no page.
if __name__ == "__main__":
    # Our own favicon, served from this machine: a page's :material/...: icon as the favicon is an SVG the browser
    # fetches from fonts.gstatic.com, and the dashboard makes no request that leaves the machine.
    st.set_page_config(page_title="tracetriage", page_icon=Path(__file__).with_name("icon.png"), layout="wide")
    first = "ranks" if library.directory_run(library.target_from_env()) is not None else "library"
    views.navigation(default_url=first).run()
