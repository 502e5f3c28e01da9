"""No table is cut at a normal width: every page's tables, in headless Chromium at 1280x800 and 1440x900, are as
wide as the page (nothing scrolls sideways). The widths are tracetriage.dashboard.tables' (test_dashboard_app pins
their sum); this reads what the browser draws. Screenshots of each page land in the test's tmp dir. And a figure
in a table reads as the CLI rounds it, in the browser too.
"""
from __future__ import annotations

import pytest

from lazy_import import skip_unless_installed  # noqa: E402

skip_unless_installed("playwright", "streamlit")   # (imported by the tests that run, not at collection)

from tracetriage.dashboard import browser  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(browser.chromium_path() is None,
                                 reason="Debian's chromium is not installed (apt-get install -y chromium)")]
LONG = 300_000

# (name, path, text the page shows once its tables are drawn)
PAGES = [
    ("report-sync", "/report?trace=samples/smell-sync-item.json.gz", "Open in Perfetto"),
    ("report-gpt", "/report?trace=samples/gpt-eager.json.gz", "Open in Perfetto"),
    ("report-dataloader", "/report?trace=samples/realworld/dataloader_cnn--before.json.gz", "Open in Perfetto"),
    ("timeline-flow", "/timeline?trace=samples/smell-sync-item.json.gz&from=0.4&to=0.6&sel=29", "Selected:"),
    ("ranks", "/ranks?run=samples/ddp", "Straggler"),
    ("roofline", "/roofline?trace=samples/gpt-eager.json.gz", "ridge at"),
    ("diff", "/diff?before=samples/chain-eager-large.json.gz&after=samples/chain-triton-large.json.gz", "Timelines"),
]

# how far each table's content reaches past its visible width (0: nothing cut)
_CUT_PX = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')].map(t => {
  const s = t.querySelector('.dvn-scroller');
  return s ? s.scrollWidth - s.clientWidth : -1;
})"""


@pytest.mark.parametrize("width,height", [(1280, 800), (1440, 900)])
def test_no_table_on_any_page_is_cut_at_a_normal_width(width, height, tmp_path, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    from test_dashboard_try import h200_try_table

    tried = h200_try_table(tmp_path / "tf32.try").parent           # a try table whose line to change is long
    cut = {}
    with browser.server(log=tmp_path / "server.log") as url, browser.browser(width, height) as page:
        for name, path, ready in [*PAGES, ("try", f"/try?try={tried}", "tracetriage try")]:
            page.goto(url + path)
            page.get_by_text(ready, exact=False).first.wait_for(timeout=LONG)
            page.locator('[data-testid="stDataFrame"] .dvn-scroller').first.wait_for(timeout=LONG)
            page.wait_for_timeout(1000)                  # the grid measures its columns after it mounts
            reach = page.evaluate(_CUT_PX)
            assert reach and all(r >= 0 for r in reach), (name, reach)
            if any(r > 0 for r in reach):
                cut[name] = reach
            browser.screenshot(page, tmp_path / f"{name}-{width}.png")
    assert not cut, f"tables scrolling sideways at {width}x{height} (px past the edge): {cut}"


_CELLS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')].map(t =>
  [...t.querySelectorAll('td')].map(c => c.textContent))"""


def test_the_browser_writes_a_tables_figure_as_the_cli_rounds_it(tmp_path, monkeypatch):
    """smell-sync-item's launch overhead is 1.986 ms: the CLI and the idle bar say 1.99 ms, and so does the table's
    cell in the browser (Streamlit cuts a number to its column's decimals: it drew '1.98')."""
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    with browser.server(log=tmp_path / "server.log") as url, browser.browser(1280, 800) as page:
        page.goto(url + "/report?trace=samples/smell-sync-item.json.gz")
        page.get_by_text("Open in Perfetto", exact=False).first.wait_for(timeout=LONG)
        page.locator('[data-testid="stDataFrame"] td').first.wait_for(state="attached", timeout=LONG)
        idle = page.evaluate(_CELLS)[0]
    row = idle[idle.index("launch overhead"):][:3]
    assert row[:2] == ["launch overhead", "1.99"], idle
