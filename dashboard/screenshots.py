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
WHATIF_TRACE = "samples/gpt-eager.json.gz"           # CUDA graphs would collapse 1.16 s of launches
DRILL = ("M02.03-c", {"pattern": "a drain after every step: the GPU waits while the host reads a value",
                      "cause": "synchronization", "experiment": "keep the flag on the device; read it every 100 steps"})


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
        browser.open_trace(page, url, WHATIF_TRACE)
        browser.go(page, "What-if")
        page.get_by_text("predicted under", exact=False).first.wait_for(timeout=120_000)
        browser.wait_chart(page, at_least=100)
        page.wait_for_timeout(500)
        shots.append(_section(page, out / "dashboard-whatif.png", "h1", page.locator(browser.CHART).nth(2)))
        browser.go(page, "Drills")
        browser.grade_drill(page, DRILL[0], DRILL[1])
        page.mouse.click(5, 5)
        page.wait_for_timeout(500)
        shots.append(_section(page, out / "dashboard-drills.png", "h1",
                              page.get_by_text("Attempt", exact=False).first))
    return shots


def _section(page, path: Path, top: str, bottom) -> Path:
    """The main column from the `top` element to the `bottom` locator (the page grows taller to hold it all:
    Streamlit scrolls inside its own container, which a full-page screenshot does not follow)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    main = page.locator('[data-testid="stMain"]').first
    need = page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": page.viewport_size["width"], "height": int(need) + 40})
    page.wait_for_timeout(800)
    t = page.locator(top).first.bounding_box()
    b = bottom.bounding_box()
    x0 = main.bounding_box()["x"]
    width = main.bounding_box()["width"]
    clip = {"x": x0, "y": t["y"] - 8, "width": width, "height": b["y"] + b["height"] - t["y"] + 24}
    page.screenshot(path=str(path), clip=clip)
    page.set_viewport_size({"width": page.viewport_size["width"], "height": 720})
    return path


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
