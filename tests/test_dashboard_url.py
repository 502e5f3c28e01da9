"""The URL is the view at every moment, under load too: the real server, driven by headless Chromium.

A loaded machine delivers a run's messages to the browser late, and a user clicks on in the meantime: the next
run is asked for with the URL of before the last change. browser.HeldMessages makes that certain: it holds the
server's messages while the clicks go through, then delivers them in order. Each test fails on a dashboard that
writes only the query keys that differ from `st.query_params` (the URL as the browser had it when it asked), or
that writes the URL after the page's module has loaded.
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from lazy_import import skip_unless_installed  # noqa: E402

skip_unless_installed("playwright", "streamlit")   # (imported by the tests that run, not at collection)

from tracetriage.dashboard import browser  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(browser.chromium_path() is None,
                                 reason="Debian's chromium is not installed (apt-get install -y chromium)")]
LONG = 300_000
TRACE = "samples/smell-sync-item.json.gz"
WHOLE = "2,482 events from"            # the caption of the zoomed-out window of TRACE
SEARCH = "Search events by name"


def _query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def _path(page) -> str:
    return urlparse(page.url).path


def _window_caption(page) -> str:
    return page.get_by_text("each drawn", exact=False).first.inner_text()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module (each test is a new browser, so a new session)."""
    tmp = tmp_path_factory.mktemp("url")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACETRIAGE_DB", str(tmp / "log.db"))
        mp.setenv("TRACETRIAGE_CACHE_DIR", str(tmp / "cache"))
        with browser.server(log=tmp / "server.log") as url:
            yield url


@pytest.fixture
def timeline(server):
    """(page, held messages, base URL): the Timeline of TRACE in a new session, zoomed out, settled."""
    errors: list[str] = []
    url = server
    with browser.browser(1280, 800) as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        held = browser.HeldMessages(page)
        page.goto(f"{url}/timeline?trace={TRACE}")
        page.get_by_text(WHOLE, exact=False).first.wait_for(timeout=LONG)
        browser.wait_chart(page, at_least=2000)
        browser.wait_settled(page, timeout_ms=LONG)
        yield page, held, url
        assert page.locator('[data-testid="stException"]').count() == 0
    assert not errors, errors


def _settle(page, held) -> None:
    held.release()
    browser.wait_settled(page, timeout_ms=LONG)


def test_zoom_out_clicked_before_the_zooms_url_arrived_leaves_no_window_in_the_url(timeline):
    page, held, _ = timeline
    held.held = True
    browser.drag_across(page, 0.3, 0.6)                       # zoom: its run sends from=...&to=..., held
    held.wait_runs(page, 1)
    page.get_by_role("button", name="Zoom out").click()       # asked for with the URL of before the zoom
    held.wait_runs(page, 2)
    _settle(page, held)
    page.get_by_text(WHOLE, exact=False).first.wait_for(timeout=LONG)
    assert "from" not in _query(page) and "to" not in _query(page), page.url
    assert _query(page)["trace"] == TRACE


def _search(page, text: str) -> None:
    box = page.get_by_role("textbox", name=SEARCH)
    box.fill(text)
    box.press("Enter")


def test_a_search_changed_back_before_the_changes_url_arrived_leaves_the_search_shown_in_the_url(timeline):
    page, held, _ = timeline
    _search(page, "cudaStreamSynchronize")
    page.get_by_text("match 1 of 80", exact=False).first.wait_for(timeout=LONG)
    browser.wait_settled(page, timeout_ms=LONG)
    first = _query(page)
    held.held = True
    _search(page, "aten::item")                               # its run sends q=aten::item and its match, held
    held.wait_runs(page, 1)
    _search(page, "cudaStreamSynchronize")                    # back: the view is the URL the browser still has
    held.wait_runs(page, 2)
    _settle(page, held)
    page.get_by_text("match 1 of 80", exact=False).first.wait_for(timeout=LONG)
    assert page.get_by_role("textbox", name=SEARCH).input_value() == "cudaStreamSynchronize"
    assert _query(page) == first, (page.url, first)
    lo, hi = float(first["from"]), float(first["to"])         # and the URL's window is the one drawn
    assert f"from {lo:.3f} ms to {hi:.3f} ms".replace("-", "−") in _window_caption(page)


def test_next_then_previous_before_nexts_url_arrived_leaves_the_first_match_in_the_url(timeline):
    page, held, _ = timeline
    box = page.get_by_role("textbox", name=SEARCH)
    box.fill("cudaStreamSynchronize")
    box.press("Enter")
    page.get_by_text("match 1 of 80", exact=False).first.wait_for(timeout=LONG)
    browser.wait_settled(page, timeout_ms=LONG)
    first = _query(page)
    held.held = True
    page.get_by_role("button", name="Next").click()
    held.wait_runs(page, 1)
    page.get_by_role("button", name="Previous").click()
    held.wait_runs(page, 2)
    _settle(page, held)
    page.get_by_text("match 1 of 80", exact=False).first.wait_for(timeout=LONG)
    assert _query(page) == first, (page.url, first)


# Records the page's URL at the moment an <h1> with the given title is added: what a user sees in the address bar
# when the new page's title paints (a MutationObserver runs before the next paint).
_URL_AT_TITLE = """(title) => {
  window.__ttUrlAtTitle = null;
  const seen = () => [...document.querySelectorAll('h1')].some(h => h.innerText.trim() === title);
  const obs = new MutationObserver(() => {
    if (window.__ttUrlAtTitle === null && seen()) { window.__ttUrlAtTitle = location.pathname + location.search;
                                                    obs.disconnect(); }
  });
  obs.observe(document.body, {childList: true, subtree: true, characterData: true});
}"""


def _go_and_read_url_at_title(page, title: str) -> str:
    page.evaluate(_URL_AT_TITLE, title)
    page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
    page.wait_for_function("window.__ttUrlAtTitle !== null", timeout=LONG)
    return page.evaluate("window.__ttUrlAtTitle")


def _query_of(path_and_query: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(path_and_query).query).items()}


def test_a_page_change_puts_the_new_pages_path_and_view_in_the_url_before_its_title_paints(timeline):
    page, held, _ = timeline
    browser.drag_across(page, 0.3, 0.6)                       # a window in the Timeline's URL
    page.wait_for_function("location.search.includes('from=')", timeout=LONG)
    browser.wait_settled(page, timeout_ms=LONG)
    window = {k: _query(page)[k] for k in ("from", "to")}

    at = _go_and_read_url_at_title(page, "Report")
    assert urlparse(at).path == "/report" and _query_of(at) == {"trace": TRACE}, at     # no window on the Report
    browser.wait_settled(page, timeout_ms=LONG)

    at = _go_and_read_url_at_title(page, "Timeline")                                  # the window it left
    assert urlparse(at).path == "/timeline" and _query_of(at) == {"trace": TRACE, **window}, at
    page.get_by_text(f"from {float(window['from']):.3f} ms", exact=False).first.wait_for(timeout=LONG)
    browser.wait_settled(page, timeout_ms=LONG)

    at = _go_and_read_url_at_title(page, "Drills")                                    # a page with no trace
    assert urlparse(at).path == "/drills" and _query_of(at) == {}, at


def test_a_page_change_asked_for_while_the_last_runs_url_is_on_its_way_ends_on_the_new_pages_view(timeline):
    page, held, _ = timeline
    held.held = True
    browser.drag_across(page, 0.3, 0.6)                       # the zoom's window, held
    held.wait_runs(page, 1)
    page.locator('[data-testid="stSidebarNav"] a', has_text="Drills").first.click()
    held.wait_runs(page, 2)
    _settle(page, held)
    page.locator("h1", has_text="Drills").first.wait_for(timeout=LONG)
    page.get_by_role("combobox", name="Drill").first.wait_for(timeout=LONG)
    assert _path(page) == "/drills" and _query(page) == {}, page.url      # not the Timeline's window


# Records the page's URL at the moment its text first includes the given text (a MutationObserver runs before the
# next paint): what a reload or a copied link would have shown then.
_URL_AT_TEXT = """(text) => {
  window.__ttUrlAtText = null;
  const obs = new MutationObserver(() => {
    if (window.__ttUrlAtText === null && document.body.innerText.includes(text)) {
      window.__ttUrlAtText = location.pathname + location.search; obs.disconnect(); }
  });
  obs.observe(document.body, {childList: true, subtree: true, characterData: true});
}"""


def test_next_puts_its_match_in_the_url_before_the_page_names_it(timeline):
    """A reload taken the moment the page says "match 2" shows match 2: the run writes the URL before the caption.
    (It wrote it after, and a reload in between, on a loaded machine, came back on match 1.)"""
    page, held, _ = timeline
    _search(page, "cudaStreamSynchronize")
    page.get_by_text("match 1 of 80", exact=False).first.wait_for(timeout=LONG)
    browser.wait_settled(page, timeout_ms=LONG)
    first = _query(page)
    page.evaluate(_URL_AT_TEXT, "match 2 of 80")
    held.held = True
    page.get_by_role("button", name="Next").click()
    held.wait_runs(page, 1)
    held.release(page, gap_ms=60)                             # the run's messages one at a time, spaced out
    page.wait_for_function("window.__ttUrlAtText !== null", timeout=LONG)
    at = _query_of(page.evaluate("window.__ttUrlAtText"))
    browser.wait_settled(page, timeout_ms=LONG)
    assert at == _query(page), (at, page.url)                 # the match's whole view, as the settled page has it
    assert at["sel"] != first["sel"] and at["q"] == "cudaStreamSynchronize", (at, first)
