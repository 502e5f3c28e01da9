"""The dashboard works offline: every request the browser makes goes to the dashboard's own server (a page's
Material icon as the favicon would be an SVG fetched from fonts.gstatic.com; telemetry is off at launch)."""
from __future__ import annotations

from urllib.parse import urlparse

import pytest

from lazy_import import skip_unless_installed  # noqa: E402

skip_unless_installed("playwright", "streamlit")   # (imported by the tests that run, not at collection)

from tracetriage.dashboard import browser  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(browser.chromium_path() is None,
                                 reason="Debian's chromium is not installed (apt-get install -y chromium)")]
PAGES = ("/", "/report", "/timeline", "/roofline", "/whatif", "/drills")


def test_no_request_leaves_the_machine_on_any_page(tmp_path, monkeypatch):
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("TRACETRIAGE_DB", str(tmp_path / "log.db"))
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    elsewhere: list[str] = []
    seen = 0
    with browser.server("traces/smell-sync-item.json.gz") as url, sync_playwright() as p:
        ours = urlparse(url).netloc
        b = p.chromium.launch(executable_path=browser.chromium_path(), args=["--no-sandbox"])
        try:
            page = b.new_page()

            def note(request) -> None:
                nonlocal seen
                seen += 1
                if urlparse(request.url).scheme in ("http", "https", "ws", "wss") and \
                        urlparse(request.url).netloc != ours:
                    elsewhere.append(request.url)

            page.on("request", note)
            for path in PAGES:
                page.goto(url + path)
                page.locator('[data-testid="stSidebarNav"]').wait_for(timeout=300_000)   # the app has drawn
                # the page's script has run (its status widget gone), and a moment for what it asks the browser to
                # fetch (the favicon, fonts, images)
                page.wait_for_function("!document.querySelector('[data-testid=\"stStatusWidget\"]')",
                                       timeout=300_000)
                page.wait_for_timeout(2000)
        finally:
            b.close()
    assert seen > len(PAGES)          # the pages did load (requests were seen at all)
    assert not elsewhere, sorted(set(elsewhere))


def test_an_uploaded_trace_is_kept_for_the_session_and_its_folder_goes_with_the_server(tmp_path, monkeypatch):
    from playwright.sync_api import sync_playwright

    temp = tmp_path / "t"
    temp.mkdir()
    monkeypatch.setenv("TRACETRIAGE_DB", str(tmp_path / "log.db"))
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=browser.chromium_path(), args=["--no-sandbox"])
        monkeypatch.setenv("TMPDIR", str(temp))      # the server's temp directory (the browser keeps its own)
        try:
            with browser.server() as url:
                _upload(b, url, temp)
        finally:
            b.close()
    assert not list(temp.glob("tracetriage-upload-*"))                   # and gone with it


def _upload(b, url: str, temp) -> None:
    page = b.new_page()
    page.goto(url + "/")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files("traces/smell-sync-item.json.gz")
    page.get_by_text("Loaded smell-sync-item.json.gz", exact=False).first.wait_for(timeout=300_000)
    uploads = list(temp.glob("tracetriage-upload-*"))
    assert len(uploads) == 1 and list(uploads[0].rglob("*.json.gz"))     # kept while the server runs
