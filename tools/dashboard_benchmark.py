"""Time to first paint of the dashboard, in the real app and browser, on a big trace.

    python -m tools.dashboard_benchmark                      # grows gpt-eager to 732k events in /tmp first
    python -m tools.dashboard_benchmark --trace BIG.json --repeats 3

In process (median of --repeats): the binned overview (tracetriage.analyzers.triage.timeline.overview) and
the chart built from it (frames + Vega-Lite spec), and what importing altair costs a fresh interpreter.
In the browser (headless Debian chromium against `streamlit run`, as `tracetriage dashboard BIG.json`
starts it; the browser is up before the server starts, so its own start is not counted):
  1. a fresh server starts -> the Library page has painted (its title and its lists);
  2. -> the trace named on the command line has loaded (cold: the analyzers' cache is off);
  3. a click on Timeline -> the overview has painted;
  4. a zoom to a 1 ms window -> its raw bars have painted;
  5. a reload of that URL -> the same window has painted again (the state lives in the URL).
No assertion: it prints the figures docs/dashboard.md quotes (with the load average at its start and end).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parent.parent / "traces" / "gpt-eager.json.gz"


def _median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def import_altair_s(repeats: int) -> float:
    """What `import altair` costs a fresh interpreter (the import the dashboard keeps off the first paint)."""
    def once():
        subprocess.run([sys.executable, "-c", "import altair"], check=True)

    base = _median_s(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), repeats)
    return _median_s(once, repeats) - base


def in_process(path: Path, repeats: int) -> dict:
    from tracetriage.analyzers.triage import timeline
    from tracetriage.analyzers.triage.report import analyze_file
    from tracetriage.dashboard import charts, data

    a = analyze_file(path)
    lo, hi = data.timeline_extent(a)
    return {"events_in_file": data.trace_events(a), "drawable_events": data.events_in(a, (lo, hi)),
            "overview_s": _median_s(lambda: timeline.overview(a, bins=400), repeats),
            "overview_chart_s": _median_s(lambda: charts.timeline_overview(data.timeline_overview(a, None, 400), lo, hi)
                                          .to_dict(), repeats)}


def _say(name: str, seconds: float) -> None:
    print(f"  {name}: {seconds:.2f} s", file=sys.stderr, flush=True)


def in_browser(path: Path, log: Path) -> dict:
    """The browser steps, each timed; the server (which inherits this process's environment) loads cold."""
    old = os.environ.get("TRACETRIAGE_NO_CACHE")
    os.environ["TRACETRIAGE_NO_CACHE"] = "1"     # the server inherits it: the first open is a cold load
    try:
        return _in_browser(path, log)
    finally:   # ... and this process gets its cache back (a test run goes on after this)
        if old is None:
            del os.environ["TRACETRIAGE_NO_CACHE"]
        else:
            os.environ["TRACETRIAGE_NO_CACHE"] = old


def _in_browser(path: Path, log: Path) -> dict:
    from tracetriage.dashboard import browser

    out = {}
    clock: dict = {}
    with browser.browser() as page, browser.server(target=path, log=log, clock=clock, wait=False) as url:
        browser.wait_healthy(url, clock)
        page.goto(url + "/")
        page.locator("h1", has_text="Library").first.wait_for(timeout=600_000)
        page.get_by_text("Sample traces", exact=True).first.wait_for(timeout=600_000)
        now = time.perf_counter()
        out["library_s"] = now - clock["spawned"]
        out["library_after_health_s"] = now - clock["healthy"]
        _say("library_s", out["library_s"])
        t = time.perf_counter()
        browser.wait_loaded(page, timeout_ms=600_000)
        out["open_s"] = time.perf_counter() - t
        _say("open_s", out["open_s"])
        t = time.perf_counter()
        browser.go(page, "Timeline")
        page.get_by_text("busy shares", exact=False).first.wait_for(timeout=600_000)
        browser.wait_chart(page, at_least=500, timeout_ms=600_000)
        out["overview_paint_s"] = time.perf_counter() - t
        _say("overview_paint_s", out["overview_paint_s"])
        t = time.perf_counter()
        box = page.get_by_role("spinbutton", name="to ms", exact=True)
        box.fill("1")
        box.press("Enter")
        page.get_by_text("each drawn", exact=False).first.wait_for(timeout=600_000)
        browser.wait_chart(page, at_least=300, timeout_ms=600_000)
        out["zoom_paint_s"] = time.perf_counter() - t
        _say("zoom_paint_s", out["zoom_paint_s"])
        t = time.perf_counter()
        page.reload()
        page.get_by_text("each drawn", exact=False).first.wait_for(timeout=600_000)
        browser.wait_chart(page, at_least=300, timeout_ms=600_000)
        out["reload_paint_s"] = time.perf_counter() - t
        _say("reload_paint_s", out["reload_paint_s"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.dashboard_benchmark")
    ap.add_argument("--trace", type=Path, help="a big trace (default: gpt-eager grown to 732k events)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-browser", action="store_true")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tracetriage-dash-bench-"))
    try:
        return _run(a, work)
    finally:        # the grown trace is 234 MB: it was left in /tmp after every run
        shutil.rmtree(work, ignore_errors=True)


def _run(a: argparse.Namespace, work: Path) -> int:
    path = a.trace
    if path is None:
        path = work / "big.json"
        subprocess.run([sys.executable, "-m", "tools.grow", str(SAMPLE), str(path), "--min-events", "732000",
                        "--min-mb", "1"], check=True)
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    print(f"import altair in a fresh interpreter: {import_altair_s(a.repeats):.2f} s (median of {a.repeats})")
    r = in_process(path, a.repeats)
    print(f"{path}: {r['events_in_file']:,} events in the file, {r['drawable_events']:,} drawn on the timeline")
    print(f"overview binning (400 bins): {r['overview_s']:.3f} s; overview frames + Vega-Lite spec: "
          f"{r['overview_chart_s']:.3f} s (median of {a.repeats})")
    if not a.no_browser:
        b = in_browser(path, work / "server.log")
        print(f"browser: fresh server -> Library painted {b['library_s']:.2f} s "
              f"({b['library_after_health_s']:.2f} s after it answered); then the trace opened (cold load + analysis) "
              f"{b['open_s']:.2f} s; click Timeline -> overview painted {b['overview_paint_s']:.2f} s; "
              f"zoom to 1 ms -> raw bars painted {b['zoom_paint_s']:.2f} s; reload -> painted again "
              f"{b['reload_paint_s']:.2f} s")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
