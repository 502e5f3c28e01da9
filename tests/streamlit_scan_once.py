"""Imported by the tests that run dashboard pages under Streamlit's AppTest (tests/test_dashboard_app.py).

Each AppTest run builds a new component registry, which scans every installed distribution's metadata for
Streamlit components (streamlit >= 1.5x: components.v2), parsing each METADATA file: about half of a page run's CPU
here (~150 distributions), again for every run of every page. What is installed does not change during a test
session, so the process scans once and each run registers what that scan found.
"""
from __future__ import annotations

import functools


def _scan_installed_components_once() -> None:
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:     # an older Streamlit: no such scan
        return
    scan = manifest_scanner.scan_component_manifests
    if getattr(scan, "cache_info", None) is None:
        # (discover_and_register_components imports the function from its module at each call)
        manifest_scanner.scan_component_manifests = functools.lru_cache(maxsize=None)(scan)


_scan_installed_components_once()
