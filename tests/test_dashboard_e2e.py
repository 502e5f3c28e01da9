"""End to end: the real dashboard server, driven by headless Chromium through Playwright.

Debian's `chromium` is the browser (.ci/run installs it with apt); without it the test
skips and says why. Nothing downloads a browser. Screenshots of each page land in the
test's tmp dir.
"""
from __future__ import annotations

import pytest

pytest.importorskip("playwright")
pytest.importorskip("streamlit")

from analyzers.voice import drills as words  # noqa: E402
from dashboard import browser  # noqa: E402
from drills import bank, grader  # noqa: E402

pytestmark = pytest.mark.skipif(browser.chromium_path() is None,
                                reason="Debian's chromium is not installed (apt-get install -y chromium)")


def test_a_sample_trace_opens_and_its_timeline_and_roofline_paint_in_chromium(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_DB", str(tmp_path / "log.db"))            # the server's drill attempts
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    shots = tmp_path / "shots"
    errors: list[str] = []
    with browser.server(log=tmp_path / "server.log") as url, browser.browser() as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
        browser.open_trace(page, url, "samples/smell-sync-item.json.gz")
        page.get_by_text("Upload", exact=True).first.wait_for()          # the whole page, not its first lines
        browser.screenshot(page, shots / "library.png")

        browser.go(page, "Report")
        page.get_by_text("Measured", exact=False).first.wait_for()
        assert browser.wait_chart(page, at_least=4) >= 4              # a bar per idle cause with time
        browser.screenshot(page, shots / "report.png")

        browser.go(page, "Timeline")
        page.get_by_text("each drawn", exact=False).first.wait_for()
        assert browser.wait_chart(page, at_least=2000) >= 2000        # 2,482 bars and the gaps (marks or pixels)
        browser.screenshot(page, shots / "timeline.png")
        whole = page.get_by_text("each drawn", exact=False).first.inner_text()
        browser.drag_across(page, 0.45, 0.55)                          # brush to zoom
        brushed = browser.chart_fingerprint(page)                      # the old chart with the brush on it
        page.wait_for_function(f"!document.body.innerText.includes({whole!r})")
        browser.wait_redrawn(page, brushed)                            # the zoomed chart has replaced it
        zoomed = page.get_by_text("each drawn", exact=False).first.inner_text()
        assert int(zoomed.split(" events")[0].replace(",", "")) < int(whole.split(" events")[0].replace(",", ""))
        assert browser.wait_chart(page, at_least=50) >= 50
        browser.screenshot(page, shots / "timeline-zoomed.png")

        browser.go(page, "Roofline")
        page.get_by_text("ridge at", exact=False).first.wait_for()
        assert browser.wait_chart(page, at_least=3) >= 3              # the ops, the ceiling, the ridge
        browser.screenshot(page, shots / "roofline.png")

        browser.go(page, "What-if")
        page.get_by_text("predicted under", exact=False).first.wait_for()
        assert browser.wait_chart(page, at_least=700) >= 700          # lever bars, 720 activities measured
        browser.screenshot(page, shots / "whatif.png")

        browser.go(page, "Drills")
        answers = {"pattern": "the GPU drains after every iteration and waits for the host",
                   "cause": "synchronization", "experiment": "keep the flag on the device, read it every 100 steps"}
        score = browser.grade_drill(page, "M02.03-c", answers)
        assert score == words.summary("M02.03-c", grader.grade(bank.get("M02.03-c"), answers).score)
        page.get_by_text("cause: 1.00", exact=False).first.wait_for()                # each part's feedback
        page.get_by_text("Attempt 1 recorded", exact=False).first.wait_for()
        browser.screenshot(page, shots / "drills.png")

        assert page.locator('[data-testid="stException"]').count() == 0
    assert not errors, errors
    for name in ("library", "report", "timeline", "roofline", "whatif", "drills"):
        assert (shots / f"{name}.png").stat().st_size > 10_000
