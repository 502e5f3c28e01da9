"""Drive the real dashboard in headless Chromium: for the end-to-end test, the README's
screenshots and the paint-time benchmark.

The browser is Debian's `chromium` (apt-get install chromium), given to Playwright as
`executable_path`; nothing here downloads a browser. The server is `streamlit run` with
the exact command `tracetriage dashboard` uses, on a free localhost port.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from dashboard import launch

CHART = '[data-testid="stVegaLiteChart"]'
HEALTH_TRIES = 480            # x 0.25 s: a cold start on a loaded 2-core machine takes ~10 s


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(target: str | Path | None = None, log: Path | None = None):
    """A dashboard server on a free localhost port; yields its base URL, stops it on exit."""
    port = free_port()
    env = launch.environment(str(target) if target else None)
    cmd = launch.command(port, headless_=True, upload_mb=500) + ["--server.address", "127.0.0.1"]
    out = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(HEALTH_TRIES):
            if proc.poll() is not None:
                raise RuntimeError(f"the dashboard server exited with {proc.returncode} (log: {log})")
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                time.sleep(0.25)
        else:
            raise RuntimeError(f"the dashboard server did not answer on {url}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            out.close()


@contextmanager
def browser(width: int = 1400, height: int = 900):
    """A Playwright page in headless Debian chromium."""
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    if exe is None:
        raise RuntimeError("no chromium on PATH: apt-get install -y chromium")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True,
                               args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        try:
            page = b.new_page(viewport={"width": width, "height": height}, device_scale_factor=1)
            yield page
        finally:
            b.close()


def open_trace(page, url: str, key: str, timeout_ms: int = 120_000) -> None:
    """Open the library with ?trace=KEY and wait until the page says it loaded it."""
    page.goto(f"{url}/?trace={key}")   # the Library is the default page, at /
    wait_loaded(page, timeout_ms)


class PageError(RuntimeError):
    """The page showed an error where the caller waited for success."""


def wait_loaded(page, timeout_ms: int = 120_000) -> None:
    """Wait for the Library's "Loaded ..." line; a one-line error shown instead is raised at once."""
    done = page.get_by_text("Loaded", exact=False).or_(page.locator('[data-testid="stAlertContentError"]'))
    done.first.wait_for(timeout=timeout_ms)
    err = page.locator('[data-testid="stAlertContentError"]')
    if err.count():
        raise PageError(err.first.inner_text())


def go(page, title: str, timeout_ms: int = 60_000) -> None:
    """Click a page in the sidebar (a click keeps the session; a new URL would start a new one)."""
    page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
    page.locator('h1', has_text=title).first.wait_for(timeout=timeout_ms)


def wait_chart(page, at_least: int = 1, timeout_ms: int = 120_000) -> int:
    """Wait until the page's Vega charts have painted at least `at_least` units; returns the units painted:
    SVG marks (one per bar, point or line) for SVG charts, non-background pixels for canvas charts
    (Streamlit draws charts with a selection on a canvas)."""
    page.locator(f"{CHART} svg, {CHART} canvas").first.wait_for(timeout=timeout_ms)
    page.wait_for_function(f"{_PAINTED_JS} >= {int(at_least)}", timeout=timeout_ms)
    return int(page.evaluate(_PAINTED_JS))


_PAINTED_JS = """(() => {
  let n = document.querySelectorAll(
    '[data-testid="stVegaLiteChart"] svg g.role-mark > path, ' +
    '[data-testid="stVegaLiteChart"] svg g.role-mark > line').length;
  for (const c of document.querySelectorAll('[data-testid="stVegaLiteChart"] canvas')) {
    if (!c.width || !c.height) continue;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < d.length; i += 4)
      if (d[i+3] !== 0 && (d[i] < 235 || d[i+1] < 235 || d[i+2] < 235)) n++;   // not blank, not near-white
  }
  return n;
})()"""


def grade_drill(page, label: str, answers: dict[str, str], timeout_ms: int = 120_000) -> str:
    """On the Drills page: pick the drill whose label starts with `label` (typed into the box: the list is
    virtual), type the answers, press Grade; returns the score heading once it shows."""
    box = page.get_by_role("combobox", name="Drill").first
    box.click()
    page.keyboard.type(label)
    page.get_by_role("option", name=label, exact=False).first.click()
    page.wait_for_function(f"document.querySelector('{_DRILL_BOX}').value.startsWith({label!r})",
                           timeout=timeout_ms)
    for part, text in answers.items():
        field = page.get_by_role("textbox", name=part, exact=True)
        field.wait_for(timeout=timeout_ms)
        field.fill(text)
    page.get_by_role("button", name="Grade").click()
    heading = page.get_by_role("heading", name=f"{label}: ", exact=False).first
    heading.wait_for(timeout=timeout_ms)
    return heading.inner_text()


_DRILL_BOX = '[data-testid="stSelectbox"] input[aria-label="Drill"]'


def drag_across(page, start: float, end: float) -> None:
    """Drag across the first chart, from `start` to `end` of its width (fractions), at mid-height."""
    box = page.locator(CHART).first.bounding_box()
    y = box["y"] + box["height"] * 0.45
    x0, x1 = box["x"] + box["width"] * start, box["x"] + box["width"] * end
    page.mouse.move(x0, y)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, y)
    page.mouse.move(x1, y)
    page.mouse.up()


def chart_fingerprint(page) -> str:
    """A short hash of what the first chart shows now: it changes when the chart is redrawn."""
    return page.evaluate(_FINGERPRINT_JS)


def wait_redrawn(page, before: str, timeout_ms: int = 120_000) -> None:
    """Wait until the first chart shows something else than it did at `before` (chart_fingerprint)."""
    page.wait_for_function(f"{_FINGERPRINT_JS} !== {before!r}", timeout=timeout_ms)


_FINGERPRINT_JS = """(() => {
  const el = document.querySelector('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg');
  if (!el) return '';
  const s = el.tagName === 'CANVAS' ? el.toDataURL() : el.outerHTML;
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return String(h);
})()"""


def screenshot(page, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path
