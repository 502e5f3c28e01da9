"""The README's screenshots, taken with the end-to-end harness (headless Debian chromium).

    python -m dashboard.screenshots docs/
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from dashboard import browser

TIMELINE_TRACE = "samples/smell-sync-item.json.gz"   # sync drains between matmuls: every cause but other
ROOFLINE_TRACE = "samples/gpt-eager.json.gz"         # prefill GEMMs at the roof, decode ops on the slope


def take(out: Path) -> list[Path]:
    log = Path(tempfile.mkdtemp(prefix="tracetriage-shots-")) / "server.log"
    shots = []
    with browser.server(log=log) as url, browser.browser(width=1280, height=720) as page:
        browser.open_trace(page, url, TIMELINE_TRACE)
        browser.go(page, "Timeline")
        for label, value, shown in (("to µs", "6000", "to 6.00 ms"), ("from µs", "0", "from 0.0 µs")):
            box = page.get_by_role("spinbutton", name=label, exact=True)      # 0 to 6 ms: a few iterations, their drains and launches
            box.fill(value)
            box.press("Enter")
            page.get_by_text(shown, exact=False).first.wait_for()
        page.mouse.click(5, 5)                   # (no input left focused in the picture)
        browser.wait_chart(page, at_least=300)
        page.wait_for_timeout(500)   # the legend paints after the marks
        shots.append(_chart(page, out / "dashboard-timeline.png"))
        browser.open_trace(page, url, ROOFLINE_TRACE)
        browser.go(page, "Roofline")
        browser.wait_chart(page, at_least=3)
        page.wait_for_timeout(500)
        shots.append(_chart(page, out / "dashboard-roofline.png"))
    return shots


def _chart(page, path: Path) -> Path:
    """The main column from the title to the chart's bottom (not the sidebar, not the tables below)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    title = page.locator("h1").first.bounding_box()
    chart = page.locator(browser.CHART).first.bounding_box()
    x0 = chart["x"] - 16
    clip = {"x": x0, "y": title["y"] - 8, "width": chart["width"] + 32,
            "height": chart["y"] + chart["height"] - title["y"] + 48}
    page.screenshot(path=str(path), clip=clip)
    return path


if __name__ == "__main__":
    for p in take(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")):
        print(p)
