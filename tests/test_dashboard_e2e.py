"""End to end: the real dashboard server, driven by headless Chromium through Playwright.

Debian's `chromium` is the browser (.ci/run installs it with apt); without it the tests
skip and say why. Nothing downloads a browser. Screenshots of each page land in the
test's tmp dir. The timeline is drawn on a canvas, so what it shows is read from its pixels:
the selected flow is the only magenta (#ff00ff), search matches the only pure black outlines.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from lazy_import import Lazy, skip_unless_installed  # noqa: E402

skip_unless_installed("playwright", "streamlit")   # (imported by the tests that run, not at collection)

from tracetriage.dashboard import browser  # noqa: E402
from tracetriage.dashboard.library import SAMPLES  # noqa: E402
from tracetriage.drills import bank, grader  # noqa: E402
from tracetriage.drills import words as words  # noqa: E402

pytestmark = [pytest.mark.slow,        # a real browser on a real server: the slow step's
              pytest.mark.skipif(browser.chromium_path() is None,
                                 reason="Debian's chromium is not installed (apt-get install -y chromium)")]
charts = Lazy("tracetriage.dashboard.charts")     # (pandas: at the first test, not at collection)
LONG = 300_000      # ms: a cold page on a loaded 2-core machine


def _query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def _in_view(page, key: str) -> None:
    """The page's caption names the trace in view."""
    page.get_by_text(key, exact=True).first.wait_for(timeout=LONG)


def _hover_until_tooltip(page, has: str) -> str:
    """Move over the first chart from its bottom up until a tooltip holding `has` shows; its text."""
    box = page.locator(browser.CHART).first.bounding_box()
    tip = page.locator("#vg-tooltip-element")
    for frac_x in (0.5, 0.3, 0.7):
        for i in range(60):
            page.mouse.move(box["x"] + box["width"] * frac_x, box["y"] + box["height"] - 4 - 4 * i)
            page.wait_for_timeout(40)
            if tip.count() and tip.is_visible() and has in tip.inner_text():
                return tip.inner_text()
    raise AssertionError(f"no tooltip with {has!r} over the chart")


def _hover_until(page, pattern: str, at=None) -> str:
    """Move over the first chart until a tooltip whose text matches the regex `pattern` shows; its text.
    From the chart's bottom up at a few places across it, or around `at` (page coordinates) when given."""
    tip = page.locator("#vg-tooltip-element")
    if at is not None:
        spots = [(at[0] + dx, at[1] + dy) for dy in (0, 2, 4, 6) for dx in (0, 4, 8, 16)]
    else:
        box = page.locator(browser.CHART).first.bounding_box()
        spots = [(box["x"] + box["width"] * fx, box["y"] + box["height"] - 4 - 4 * i)
                 for fx in (0.5, 0.3, 0.7, 0.4, 0.6, 0.2, 0.8) for i in range(60)]
    for x, y in spots:
        page.mouse.move(x, y)
        page.wait_for_timeout(40)
        if tip.count() and tip.is_visible() and re.search(pattern, tip.inner_text()):
            return tip.inner_text()
    raise AssertionError(f"no tooltip matching {pattern!r} over the chart")


def _a_bar(page, color: str) -> tuple[float, float]:
    at = browser.find_color(page, color)
    assert at is not None, f"no bar of {color} on the chart"
    return at


def _until_it_takes(page, act, took, tries: int = 5) -> None:
    """Act on the chart once it has settled, until `took(fingerprint before the act)` says the action took, at most
    `tries` times. A click or drag on a chart that a rerun is replacing is lost, and nothing would ever answer it:
    the count of tries bounds the retries, not a clock."""
    for _ in range(tries):
        browser.wait_settled(page, timeout_ms=LONG)
        before = browser.chart_fingerprint(page)
        act()
        browser.wait_settled(page, timeout_ms=LONG)                      # the action's own redraw (and its rerun)
        if took(before):
            return
    raise AssertionError(f"the action did not take in {tries} tries on a settled chart")


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_DB", str(tmp_path / "log.db"))            # the server's drill attempts
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_every_page_paints_and_the_trace_survives_reloads_deep_links_and_a_second_tab(env):
    shots = env / "shots"
    errors: list[str] = []
    with browser.server(log=env / "server.log") as url, browser.browser() as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
        browser.open_trace(page, url, "samples/smell-sync-item.json.gz")
        page.get_by_text("Upload", exact=True).first.wait_for()          # the whole page, not its first lines
        assert page.get_by_text("Loaded", exact=False).count() == 1      # one message per load
        browser.screenshot(page, shots / "library.png")

        browser.go(page, "Report")                                       # a click in the sidebar keeps the trace
        page.get_by_text("Measured", exact=False).first.wait_for(timeout=LONG)
        assert _query(page)["trace"] == "samples/smell-sync-item.json.gz"
        assert browser.wait_chart(page, at_least=4) >= 4
        browser.screenshot(page, shots / "report.png")
        page.reload()                                                    # a reload keeps it (the URL holds it)
        page.locator("h1", has_text="Report").first.wait_for(timeout=LONG)
        _in_view(page, "samples/smell-sync-item.json.gz")

        browser.go(page, "Timeline")
        page.get_by_text("each drawn", exact=False).first.wait_for(timeout=LONG)
        assert browser.wait_chart(page, at_least=2000) >= 2000          # 2,482 bars and the gaps (painted pixels)
        browser.screenshot(page, shots / "timeline.png")
        whole = page.get_by_text("each drawn", exact=False).first.inner_text()
        _until_it_takes(page, lambda: browser.drag_across(page, 0.45, 0.55),      # brush to zoom
                        lambda before: browser.chart_fingerprint(page) != before)  # the brush drawn, or the zoom
        page.wait_for_function(f"!document.body.innerText.includes({whole!r})", timeout=LONG)
        zoomed = page.get_by_text("each drawn", exact=False).first.inner_text()
        assert int(zoomed.split(" events")[0].replace(",", "")) < int(whole.split(" events")[0].replace(",", ""))
        assert {"from", "to"} <= set(_query(page))                       # the window is in the URL
        browser.wait_chart(page, at_least=50)

        # the flow: a click on an op lights up its launch calls and kernels in magenta, and names them below
        page.get_by_role("button", name="Zoom out").click()
        page.get_by_text("2,482 events", exact=False).first.wait_for(timeout=LONG)
        browser.wait_chart(page, at_least=2000)
        browser.wait_settled(page, timeout_ms=LONG)
        assert browser.count_color(page, charts.FLOW) == 0
        _until_it_takes(page, lambda: page.mouse.click(*_a_bar(page, charts.KIND_COLORS["cpu_op"])),
                        lambda before: browser.count_color(page, charts.FLOW) > 0)   # the browser lights the flow
        page.get_by_text("Selected:", exact=False).first.wait_for(timeout=LONG)
        page.wait_for_function(f"{browser.color_count_js(charts.FLOW)} > 50", timeout=LONG)
        assert "sel" in _query(page)
        browser.screenshot(page, shots / "timeline-flow.png")

        # search: highlights the matches and jumps to the first; the URL keeps it through a reload
        box = page.get_by_role("textbox", name="Search events by name")
        box.fill("cudaStreamSynchronize")
        box.press("Enter")
        page.get_by_text("match 1 of 80", exact=False).first.wait_for(timeout=LONG)
        assert _query(page)["q"] == "cudaStreamSynchronize"
        page.wait_for_function(f"{browser.color_count_js(charts.HIT, 6)} > 20", timeout=LONG)    # black outlines
        page.get_by_role("button", name="Next").click()
        page.get_by_text("match 2 of 80", exact=False).first.wait_for(timeout=LONG)
        before_reload = (_query(page)["from"], _query(page)["to"])
        page.reload()
        page.get_by_text("each drawn", exact=False).first.wait_for(timeout=LONG)
        assert (_query(page)["from"], _query(page)["to"]) == before_reload
        assert page.get_by_role("textbox", name="Search events by name").input_value() == "cudaStreamSynchronize"
        page.get_by_text("match 2 of 80", exact=False).first.wait_for(timeout=LONG)    # the match the URL selects
        browser.screenshot(page, shots / "timeline-search.png")

        # a second tab on another trace, by deep link: its overview bins say their busy share and cause
        other = page.context.new_page()
        other.goto(f"{url}/timeline?trace=samples/gpt-eager.json.gz")
        other.get_by_text("busy shares", exact=False).first.wait_for(timeout=LONG)
        browser.wait_chart(other, at_least=500)
        tip = _hover_until_tooltip(other, "mostly")
        assert re.search(r"idle \d+% of the bin, mostly launch overhead", tip), tip
        browser.screenshot(other, shots / "timeline-overview.png")
        page.reload()                                                     # the first tab still shows its own trace
        _in_view(page, "samples/smell-sync-item.json.gz")
        other.close()

        browser.go(page, "Roofline")
        page.get_by_text("ridge at", exact=False).first.wait_for(timeout=LONG)
        assert browser.wait_chart(page, at_least=3) >= 3
        browser.screenshot(page, shots / "roofline.png")

        browser.go(page, "What-if")
        page.get_by_text("GPU activities, each drawn", exact=False).first.wait_for(timeout=LONG)
        assert browser.wait_chart(page, at_least=700) >= 700
        # the value on the best lever's bar
        page.get_by_text("34.6 ms (−38%)", exact=True).first.wait_for(timeout=LONG)
        browser.screenshot(page, shots / "whatif.png")

        page.goto(f"{url}/diff?before=samples/chain-eager-large.json.gz&after=samples/chain-triton-large.json.gz")
        page.get_by_text("Explained by bytes", exact=False).first.wait_for(timeout=LONG)
        page.get_by_role("heading", name="Timelines").first.wait_for(timeout=LONG)
        browser.wait_chart(page, at_least=100)
        browser.screenshot(page, shots / "diff.png")

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
    for name in ("library", "report", "timeline", "timeline-flow", "timeline-search", "timeline-overview", "roofline",
                 "whatif", "diff", "drills"):
        assert (shots / f"{name}.png").stat().st_size > 10_000


def test_a_ladder_drill_shows_what_drill_show_prints_and_grades_in_the_browser(env):
    """The Drills page of an occupancy drill (issue 37): the lines `drill show` prints beside its timeline (the kernel's
    launch arguments, the device's limits, what the key reads), then a graded answer."""
    from tracetriage.drills.ladder import show

    d = bank.get("M03.01-b")
    want = show.lines(d)
    errors: list[str] = []
    with browser.server(log=env / "server.log") as url, browser.browser() as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        browser.open_trace(page, url, "samples/smell-sync-item.json.gz", timeout_ms=LONG)
        browser.go(page, "Drills", timeout_ms=LONG)
        key = bank.key_of(d)
        answers = {"occupancy_pct": f"{key['occupancy_pct']}%", "achieved": f"{key['achieved']} {key['achieved_unit']}",
                   "verdict": {"lever": "the lever", "sideshow": "a sideshow", "harm": "active harm"}[key["verdict"]]}
        score = browser.grade_drill(page, d.id, answers, timeout_ms=LONG)
        assert score == words.summary(d.id, grader.grade(d, answers).score)
        code = page.locator('[data-testid="stCode"]').first
        code.wait_for(timeout=LONG)
        shown = code.inner_text()
        assert [ln for ln in want if ln.strip() and ln.strip() not in shown] == []
        assert "est. achieved" not in shown and key["verdict"] not in shown.lower().split()
        page.get_by_text("verdict: 1.00", exact=False).first.wait_for(timeout=LONG)
        browser.screenshot(page, env / "ladder-drill.png")
        assert page.locator('[data-testid="stException"]').count() == 0
    assert not errors, errors


def test_the_idle_lane_names_the_construct_that_held_the_host_and_the_steps_lane_highlights_the_outlier(env):
    errors: list[str] = []
    with browser.server(log=env / "server.log") as url, browser.browser() as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        # a DataLoader-bound training loop: most idle bins were spent inside the DataLoader's __next__
        page.goto(f"{url}/timeline?trace=samples/realworld/dataloader_cnn--before.json.gz")
        page.get_by_text("busy shares", exact=False).first.wait_for(timeout=LONG)
        browser.wait_chart(page, at_least=500)
        tip = _hover_until(page, r"host was in\s+the DataLoader's __next__")
        assert re.search(r"idle \d+% of the bin", tip) and "82% of all idle" in tip, tip
        browser.screenshot(page, env / "timeline-dataloader.png")

        # the loop whose step 7 stalls in the DataLoader: the steps lane draws it in the outlier's colour
        page.goto(f"{url}/timeline?trace=samples/steps/training-outlier.json.gz")
        page.get_by_text("busy shares", exact=False).first.wait_for(timeout=LONG)
        browser.wait_chart(page, at_least=500)
        page.wait_for_function(f"{browser.color_count_js(charts.SPAN_COLORS['outlier step'], 2)} > 200",
                               timeout=LONG)
        at = browser.find_color(page, charts.SPAN_COLORS["outlier step"])
        assert at is not None
        tip = _hover_until(page, r"step 7", at)
        assert "the outlier: step 7 took 5.7× the median" in tip and "the DataLoader's __next__" in tip, tip
        browser.screenshot(page, env / "timeline-steps.png")
        assert page.locator('[data-testid="stException"]').count() == 0
    assert not errors, errors


def test_a_run_directory_opens_on_its_ranks_and_a_rank_opens_its_timeline(env):
    errors: list[str] = []
    with browser.server(target=SAMPLES / "ddp", log=env / "server.log") as url, browser.browser() as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url + "/")
        page.locator("h1", has_text="Ranks").first.wait_for(timeout=LONG)
        page.get_by_text("Straggler: rank 1", exact=False).first.wait_for(timeout=LONG)
        assert browser.wait_chart(page, at_least=10) >= 10               # collective time per step, per rank
        browser.screenshot(page, env / "ranks.png")
        page.get_by_role("link", name="Rank 1's timeline (the straggler)").click()
        page.locator("h1", has_text="Timeline").first.wait_for(timeout=LONG)
        _in_view(page, "directory/rank1.json.gz")
        assert _query(page)["trace"] == "directory/rank1.json.gz"
        assert browser.wait_chart(page, at_least=500) >= 500
    assert not errors, errors


def test_the_benchmark_measures_first_paint_and_the_timeline_in_chromium(env, capsys):
    from tools import dashboard_benchmark as benchmark

    got = benchmark.in_browser(SAMPLES / "gpt-eager.json.gz", env / "server.log")
    print(got)                                 # measured, not asserted: the README's table comes from the big trace
    assert set(got) == {"library_s", "library_after_health_s", "open_s", "overview_paint_s", "zoom_paint_s",
                        "reload_paint_s"}
    assert all(v > 0 for v in got.values())
