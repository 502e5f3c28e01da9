"""The screenshots of docs/dashboard.md, taken with the end-to-end harness (headless Debian chromium).

    python -m tools.screenshots docs/
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tracetriage.dashboard import browser
from tracetriage.dashboard.library import SAMPLES

TIMELINE_TRACE = "samples/smell-sync-item.json.gz"   # sync drains between matmuls: every cause but other
OVERVIEW_TRACE = "samples/steps/training-outlier.json.gz"   # binned; one step's DataLoader stalls the GPU
RANKS_RUN = "samples/ddp"                            # rank 1 sleeps on the host: the straggler
DIFF = ("samples/chain-eager-large.json.gz", "samples/chain-triton-large.json.gz")   # fused: 4.5x fewer bytes
ROOFLINE_TRACE = "samples/gpt-eager.json.gz"         # prefill GEMMs at the roof, decode ops on the slope
WHATIF_TRACE = "samples/gpt-eager.json.gz"           # CUDA graphs would collapse 1.16 s of launches
DRILL = ("M02.03-c", {"pattern": "a drain after every step: the GPU waits while the host reads a value",
                      "cause": "synchronization", "experiment": "keep the flag on the device; read it every 100 steps"})


def _flow_pick() -> int:
    """The trace row of an aten::item in 0..6 ms of the timeline trace: the screenshot shows its flow selected."""
    from tracetriage.dashboard import data

    a = data.open_analysis(SAMPLES / TIMELINE_TRACE.removeprefix("samples/"))
    found = data.search(a, "aten::item")
    return int(next(r for r, s in zip(found.rows, found.start_ms) if 2.7 < s < 4.0))


def take(out: Path) -> list[Path]:
    work = Path(tempfile.mkdtemp(prefix="tracetriage-shots-"))
    log = work / "server.log"
    os.environ["TRACETRIAGE_DB"] = str(work / "log.db")     # the server inherits it: the drill's attempt lands here
    shots = []
    with browser.server(log=log) as url, browser.browser(width=1400, height=800) as page:
        page.goto(f"{url}/timeline?trace={TIMELINE_TRACE}&from=2.6&to=4.4&sel={_flow_pick()}")
        page.get_by_text("Selected:", exact=False).first.wait_for(timeout=300_000)
        browser.wait_chart(page, at_least=300)
        page.wait_for_timeout(800)   # the legend paints after the marks
        shots.append(_chart(page, out / "dashboard-timeline.png"))
        page.goto(f"{url}/timeline?trace={OVERVIEW_TRACE}")
        page.get_by_text("busy shares", exact=False).first.wait_for(timeout=300_000)
        browser.wait_chart(page, at_least=300)
        page.wait_for_timeout(800)
        shots.append(_chart(page, out / "dashboard-timeline-overview.png"))
        page.goto(f"{url}/ranks?run={RANKS_RUN}")
        page.get_by_text("Straggler:", exact=False).first.wait_for(timeout=300_000)
        browser.wait_chart(page, at_least=10)
        page.wait_for_timeout(800)
        shots.append(_section(page, out / "dashboard-ranks.png", "h1", page.locator(browser.CHART).first))
        browser.open_trace(page, url, ROOFLINE_TRACE)
        browser.go(page, "Roofline")
        browser.wait_chart(page, at_least=3)
        page.wait_for_timeout(500)
        shots.append(_chart(page, out / "dashboard-roofline.png"))
        page.goto(f"{url}/diff?before={DIFF[0]}&after={DIFF[1]}")
        page.get_by_role("heading", name="Timelines").first.wait_for(timeout=300_000)
        browser.wait_chart(page, at_least=100)
        page.wait_for_timeout(800)
        shots.append(_section(page, out / "dashboard-diff.png", "h1", page.locator(browser.CHART).nth(2)))
        browser.open_trace(page, url, WHATIF_TRACE)
        browser.go(page, "What-if")
        page.get_by_text("GPU activities", exact=False).first.wait_for(timeout=300_000)
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
    page.set_viewport_size({"width": page.viewport_size["width"], "height": 800})
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
