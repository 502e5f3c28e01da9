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

from tracetriage.dashboard import launch

CHART = '[data-testid="stVegaLiteChart"]'
HEALTH_TRIES = 2400           # x 0.05 s: a cold start on a loaded 2-core machine takes ~10 s


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
def server(target: str | Path | None = None, log: Path | None = None, clock: dict | None = None, wait: bool = True):
    """A dashboard server on a free localhost port; yields its base URL, stops it on exit. `clock` receives
    time.perf_counter() at the spawn ("spawned") and, when `wait`, once it answers ("healthy"); without
    `wait` the caller waits (wait_healthy), so it can time the start itself."""
    port = free_port()
    env = launch.environment(str(target) if target else None)
    cmd = launch.command(port, headless_=True, upload_mb=500)       # loopback, as `tracetriage dashboard` runs it
    out = open(log, "wb") if log else subprocess.DEVNULL
    clock = {} if clock is None else clock
    clock["spawned"] = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    clock["process"] = proc
    url = f"http://127.0.0.1:{port}"
    try:
        if wait:
            wait_healthy(url, clock)
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


def wait_healthy(url: str, clock: dict) -> None:
    """Wait until the server answers its health check; clock["healthy"] is when it did."""
    proc = clock.get("process")
    for _ in range(HEALTH_TRIES):
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the dashboard server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    clock["healthy"] = time.perf_counter()
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the dashboard server did not answer on {url}")


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
            context = b.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
            yield context.new_page()          # (context.new_page() opens a second tab of the same browser)
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


def wait_settled(page, polls: int = 3, interval_ms: int = 150, timeout_ms: int = 120_000) -> None:
    """Wait until no script run is in flight and the first chart has shown the same picture `polls` polls in
    a row. A rerun replaces the chart (a new window is a new chart): a click or drag on the one being replaced
    is lost, so act on a chart only once it has settled (and check that the action took)."""
    page.evaluate("window.__ttSettle = null")
    page.wait_for_function(_SETTLED_JS, arg=polls, polling=interval_ms, timeout=timeout_ms)


# Streamlit shows its status widget while the script runs and marks the last run's elements stale until
# they are drawn again.
_SETTLED_JS = """(polls) => {
  const busy = document.querySelector('[data-testid="stStatusWidget"], [data-stale="true"]');
  const fp = busy ? null : """ + _FINGERPRINT_JS + """;
  const s = window.__ttSettle || (window.__ttSettle = {fp: null, same: 0});
  if (fp && fp === s.fp) s.same++; else { s.fp = fp; s.same = 0; }
  return s.same >= polls;
}"""


def screenshot(page, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path


def _hex_rgb(color: str) -> tuple[int, int, int]:
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


# The timeline is drawn on a canvas (tracetriage.dashboard.charts._on_canvas): what it shows is read from its pixels.
_COLOR_JS = """([r, g, b, tol, nth, mode]) => {
  const canvases = [...document.querySelectorAll('[data-testid="stVegaLiteChart"] canvas')]
    .filter(c => c.width && c.height);
  const c = canvases[nth];
  if (!c) return mode === 'count' ? 0 : null;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const box = c.getBoundingClientRect();
  const sx = box.width / c.width, sy = box.height / c.height;
  const hit = i => Math.abs(d[i] - r) <= tol && Math.abs(d[i+1] - g) <= tol && Math.abs(d[i+2] - b) <= tol
    && d[i+3] > 200;
  let n = 0, best = null, run = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (!hit(i)) { run = 0; continue; }
    n++; run++;
    const p = i / 4, x = p % c.width, y = Math.floor(p / c.width);
    // the first pixel with 4 of its colour to its left and below: inside a bar, not on an anti-aliased edge
    if (best === null && run >= 12 && hit(i + 4 * c.width * 3))
      best = [box.left + (x - 6) * sx, box.top + (y + 1.5) * sy];
  }
  return mode === 'count' ? n : best;
}"""


def count_color(page, color: str, tolerance: int = 8, nth: int = 0) -> int:
    """How many pixels of the nth canvas chart have this colour (within tolerance per channel)."""
    return int(page.evaluate(_COLOR_JS, [*_hex_rgb(color), tolerance, nth, "count"]) or 0)


def find_color(page, color: str, tolerance: int = 2, nth: int = 0) -> tuple[float, float] | None:
    """Page coordinates inside the first (top-left-most) patch of this colour in the nth canvas chart:
    where to click to hit a bar of that colour."""
    at = page.evaluate(_COLOR_JS, [*_hex_rgb(color), tolerance, nth, "find"])
    return tuple(at) if at else None


def color_count_js(color: str, tolerance: int = 8, nth: int = 0) -> str:
    """A JS expression counting the pixels of this colour in the nth canvas chart (for page.wait_for_function)."""
    r, g, b = _hex_rgb(color)
    return f"({_COLOR_JS})([{r}, {g}, {b}, {int(tolerance)}, {int(nth)}, 'count'])"


class HeldMessages:
    """The server's messages to the page held back while `held`, then delivered in order: what a loaded machine
    or a slow link does to the browser, made certain. The page's own messages to the server go through at once,
    so a click made while held reaches the server before the page has seen the answer to the click before it.
    Install before the page opens (page.route_web_socket on Streamlit's stream)."""

    def __init__(self, page):
        self.held = False
        self._waiting: list = []
        page.route_web_socket("**/_stcore/stream", self._route)

    def _route(self, ws) -> None:
        server = ws.connect_to_server()

        def to_page(message) -> None:
            if self.held:
                self._waiting.append((ws, message))
            else:
                ws.send(message)

        server.on_message(to_page)

    def runs_finished(self) -> int:
        """How many script runs the held messages say have finished on the server."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        n = 0
        for _, m in self._waiting:
            msg = ForwardMsg()
            if isinstance(m, bytes):
                msg.ParseFromString(m)
                n += msg.WhichOneof("type") == "script_finished"
        return n

    def wait_runs(self, page, n: int, timeout_ms: int = 120_000) -> None:
        """Wait (dispatching Playwright's events, which is what fills the hold) until n runs have finished."""
        waited = 0
        while self.runs_finished() < n:
            if waited > timeout_ms:
                raise AssertionError(f"{self.runs_finished()} of {n} script runs finished while held")
            page.wait_for_timeout(50)
            waited += 50

    def release(self, page=None, gap_ms: int = 0) -> int:
        """Deliver what was held, in order; how many messages that was. With `gap_ms` (and the page, whose events
        fill the hold), one at a time, gap_ms apart, with what arrives meanwhile: a server that a loaded machine
        slows between one message of a run and the next, made certain."""
        n = 0
        while self._waiting:
            ws, m = self._waiting.pop(0)
            ws.send(m)
            n += 1
            if gap_ms:
                page.wait_for_timeout(gap_ms)
        self.held = False
        return n
