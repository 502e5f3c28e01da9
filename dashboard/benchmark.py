"""Time to first paint of the timeline overview on a big trace, in the real app and browser.

    python -m dashboard.benchmark                      # grows gpt-eager to 732k events in /tmp first
    python -m dashboard.benchmark --trace BIG.json --repeats 3

In process (median of --repeats): the binned overview (analyzers.triage.timeline.overview) and
the chart built from it (frames + Vega-Lite spec). In the browser (headless Debian
chromium against `streamlit run`, as `tracetriage dashboard BIG.json` starts it):
the app's first page, opening the trace (load + analysis, cold: the cache is off), then from the click on
"Timeline" until the overview has painted, then a zoom into a 1 ms window until its
raw bars have painted. No assertion: it prints the figures for the README.
"""
from __future__ import annotations

import argparse
import os
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


def in_process(path: Path, repeats: int) -> dict:
    from analyzers.triage import timeline
    from analyzers.triage.report import analyze_file
    from dashboard import charts, data

    a = analyze_file(path)
    lo, hi = data.timeline_extent(a)
    return {"events_in_file": data.trace_events(a), "drawable_events": data.events_in(a, (lo, hi)),
            "overview_s": _median_s(lambda: timeline.overview(a, bins=400), repeats),
            "overview_chart_s": _median_s(lambda: charts.timeline_overview(data.timeline_overview(a, None, 400), lo, hi)
                                          .to_dict(), repeats)}


def in_browser(path: Path, log: Path) -> dict:
    from dashboard import browser

    os.environ["TRACETRIAGE_NO_CACHE"] = "1"     # the server inherits it: the first open is a cold load
    out = {}
    with browser.server(target=path, log=log) as url, browser.browser() as page:
        t = time.perf_counter()
        page.goto(url + "/")
        page.locator("h1", has_text="Library").first.wait_for(timeout=600_000)
        out["app_s"] = time.perf_counter() - t
        print(f"  app_s: {out['app_s']:.2f} s", file=sys.stderr, flush=True)
        t = time.perf_counter()
        browser.wait_loaded(page, timeout_ms=600_000)
        out["open_s"] = time.perf_counter() - t
        print(f"  open_s: {out['open_s']:.2f} s", file=sys.stderr, flush=True)
        t = time.perf_counter()
        browser.go(page, "Timeline")
        page.get_by_text("busy shares", exact=False).first.wait_for(timeout=600_000)
        browser.wait_chart(page, at_least=500, timeout_ms=600_000)
        out["overview_paint_s"] = time.perf_counter() - t
        print(f"  overview_paint_s: {out['overview_paint_s']:.2f} s", file=sys.stderr, flush=True)
        t = time.perf_counter()
        box = page.get_by_role("spinbutton", name="to µs", exact=True)
        box.fill("1000")
        box.press("Enter")
        page.get_by_text("each drawn", exact=False).first.wait_for(timeout=600_000)
        browser.wait_chart(page, at_least=300, timeout_ms=600_000)
        out["zoom_paint_s"] = time.perf_counter() - t
        print(f"  zoom_paint_s: {out['zoom_paint_s']:.2f} s", file=sys.stderr, flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dashboard.benchmark")
    ap.add_argument("--trace", type=Path, help="a big trace (default: gpt-eager grown to 732k events)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-browser", action="store_true")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tracetriage-dash-bench-"))
    path = a.trace
    if path is None:
        path = work / "big.json"
        subprocess.run([sys.executable, "-m", "analyzers.tools.grow", str(SAMPLE), str(path), "--min-events", "732000",
                        "--min-mb", "1"], check=True)
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    r = in_process(path, a.repeats)
    print(f"{path}: {r['events_in_file']:,} events in the file, {r['drawable_events']:,} drawn on the timeline")
    print(f"overview binning (400 bins): {r['overview_s']:.3f} s; overview frames + Vega-Lite spec: "
          f"{r['overview_chart_s']:.3f} s (median of {a.repeats})")
    if not a.no_browser:
        b = in_browser(path, work / "server.log")
        print(f"browser: first page of the app {b['app_s']:.2f} s; then the trace opened (cold load + analysis) "
              f"{b['open_s']:.2f} s; click Timeline -> overview painted "
              f"{b['overview_paint_s']:.2f} s; zoom to 1 ms -> raw bars painted {b['zoom_paint_s']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
