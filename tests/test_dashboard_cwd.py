"""`tracetriage dashboard` started from a user's project folder imports nothing from it.

An ML repository often holds an `analyzers.py`, a `drills.py` or even a `tracetriage.py`. `python -m
streamlit` would put the working directory first on sys.path, and the app would import (and run) those
files instead of ours. Here each of them writes a marker file when imported; the real command serves a
real page to headless Chromium, and no marker may appear.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lazy_import import skip_unless_installed  # noqa: E402

skip_unless_installed("playwright", "streamlit")   # (imported by the tests that run, not at collection)

from tracetriage.dashboard import browser  # noqa: E402

pytestmark = pytest.mark.skipif(browser.chromium_path() is None,
                                reason="Debian's chromium is not installed (apt-get install -y chromium)")
ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "traces" / "smell-sync-item.json.gz"
SHADOWS = ("analyzers", "drills", "dashboard", "capture", "kernels", "tracetriage", "data", "state", "views")
LONG = 300_000      # ms: a cold page on a loaded 2-core machine


def _project_with_shadowing_files(folder: Path) -> Path:
    markers = folder / "imported"
    markers.mkdir()
    for name in SHADOWS:
        (folder / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    return markers


@pytest.mark.slow   # a Streamlit server started in a project folder (~10 s); the app's own tests stay fast
def test_the_dashboard_started_in_a_project_folder_imports_none_of_its_files(tmp_path):
    markers = _project_with_shadowing_files(tmp_path)
    port = browser.free_port()
    exe = Path(sys.executable).with_name("tracetriage")
    cmd = [str(exe) if exe.exists() else sys.executable, *([] if exe.exists() else ["-m", "tracetriage"]),
           "dashboard", str(SAMPLE), "--port", str(port)]
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        browser.wait_healthy(url, {"process": proc})
        with browser.browser() as page:
            page.goto(url)
            # the app ran its script (every import done) and drew a page, or failed and showed why
            page.locator("h1").or_(page.locator('[data-testid="stException"]')).first.wait_for(timeout=LONG)
            page.wait_for_timeout(500)
            text = page.locator("body").inner_text()
        assert "ModuleNotFoundError" not in text and "Traceback" not in text, text[:2000]
        assert sorted(p.name for p in markers.iterdir()) == []
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_marker_files_would_show_an_import_from_the_working_directory(tmp_path):
    """The check above can fail: the same files, imported the way `python -m streamlit` would, leave markers."""
    markers = _project_with_shadowing_files(tmp_path)
    subprocess.run([sys.executable, "-c", "import analyzers, drills, tracetriage"], cwd=tmp_path, check=True)
    assert sorted(p.name for p in markers.iterdir()) == ["analyzers", "drills", "tracetriage"]
