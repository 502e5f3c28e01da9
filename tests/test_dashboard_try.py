"""The dashboard's Try page: a `tracetriage try` table, predicted beside measured per knob. The table is made by
try's own code from the H200 pair of traces/fixes/knobs/tf32_mlp_train (its first capture's proposals and their
predictions, and the spans and wall times measured.json holds for 5 runs before and 5 under TF32), kept as
try keeps it (try.json in its --out)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

KNOBS = Path(__file__).resolve().parent.parent / "traces" / "fixes" / "knobs"
# per Vega chart on the page, each SVG bar's fill and box; and the texts written on it
BARS = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].map(ch =>
  [...ch.querySelectorAll('g.mark-rect.role-mark path')].map(p => {
    const b = p.getBoundingClientRect();
    return {fill: (p.getAttribute('fill') || '').toLowerCase(), top: b.top, bottom: b.bottom, right: b.right,
            width: b.width, height: b.height};
  }))"""
LABELS = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].map(ch =>
  [...ch.querySelectorAll('g.mark-text.role-mark text')].map(t => t.textContent))"""


def h200_try_table(folder: Path) -> Path:
    from tracetriage.analyzers.triage.report import analyze_file
    from tracetriage.trial import measure, voice
    from tracetriage.trial.plan import propose
    from tracetriage.trial.results import Result, Row

    before, after = KNOBS / "tf32_mlp_train--before.json.gz", KNOBS / "tf32_mlp_train--allow_tf32.json.gz"
    runs = json.loads((KNOBS / "measured.json").read_text())["scenarios"]["tf32_mlp_train"]
    proposals, gpu_only = propose(analyze_file(str(before)), has_gpu=True)
    res = Result("tf32_mlp_train.py", [], "cuda", 5, str(before), folder, [Row(p) for p in proposals], gpu_only,
                 before_spans=[int(us * 1e3) for us in runs["span_us"]["before"]["runs"]],
                 before_walls=[int(ms * 1e6) for ms in runs["wall_ms"]["before"]["runs"]])
    for r in res.rows:
        if r.proposal.key == "allow_tf32":
            r.after_traces = [str(after)]
            r.after_spans = [int(us * 1e3) for us in runs["span_us"]["allow_tf32"]["runs"]]
            r.after_walls = [int(ms * 1e6) for ms in runs["wall_ms"]["allow_tf32"]["runs"]]
            r.profiled = measure.saving(res.before_spans, r.after_spans)
            r.unprofiled = measure.saving(res.before_walls, r.after_walls)
            r.verdict = measure.verdict(r.proposal.predicted, r.profiled)
            r.verdict_unprofiled = measure.verdict(r.proposal.predicted_unprofiled, r.unprofiled)
    folder.mkdir(parents=True, exist_ok=True)
    saved = voice.save(res)
    assert saved is not None
    return saved


def test_the_try_frame_puts_each_prediction_beside_its_measurement_signed_as_the_table_prints_them(tmp_path):
    from tracetriage.dashboard import data

    saved = h200_try_table(tmp_path / "tf32.try")
    view = data.try_table(saved.parent)                      # the --out folder will do
    kept = json.loads(saved.read_text())
    tf32 = next(k for k in kept["knobs"] if k["knob"] == "allow_tf32")
    bars = view.bars[(view.bars["knob"] == "allow_tf32") & (view.bars["run"] == "profiled")].set_index("kind")
    assert bars.loc["predicted", "change_pct"] == pytest.approx(-100 * tf32["predicted"]["profiled"], abs=0.05)
    m = tf32["measured"]["profiled"]
    assert bars.loc["measured", "change_pct"] == pytest.approx(-100 * m["median"], abs=0.05)
    assert bars.loc["measured", "change_pct"] < 0                                                  # a saving
    assert bars.loc["measured", "low_pct"] <= bars.loc["measured", "change_pct"] <= bars.loc["measured", "high_pct"]
    assert bars.loc["measured", "runs"] == 5
    # a knob run nowhere has its prediction and no measured bar
    unmeasured = [k["knob"] for k in kept["knobs"] if k["measured"]["profiled"] is None]
    assert unmeasured and set(view.bars[view.bars["knob"].isin(unmeasured)]["kind"]) == {"predicted"}


def test_a_path_with_no_try_table_is_one_line(tmp_path):
    from tracetriage.dashboard import data

    with pytest.raises(data.TryTableError, match=r"^no try table at .*try\.json in its --out"):
        data.try_table(tmp_path)
    (tmp_path / "try.json").write_text("{}")
    with pytest.raises(data.TryTableError, match=r"not a try table \(KeyError\)"):
        data.try_table(tmp_path)


@pytest.mark.slow
def test_the_try_page_draws_predicted_and_measured_bars_side_by_side_in_chromium(tmp_path, monkeypatch):
    """A real server and headless Chromium at 1280x800: per chart (profiled, unprofiled), each knob's row holds its
    predicted bar over its measured one, every bar a visible height, each as long as its number."""
    pytest.importorskip("playwright")
    from tracetriage.dashboard import browser, charts, words

    if browser.chromium_path() is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    monkeypatch.setenv("TRACETRIAGE_DB", str(tmp_path / "log.db"))
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    saved = h200_try_table(tmp_path / "tf32.try")
    kept = {k["knob"]: k for k in json.loads(saved.read_text())["knobs"]}
    assert list(kept) == ["allow_tf32", "autocast_bf16"] and kept["autocast_bf16"]["measured"]["profiled"] is None
    errors: list[str] = []
    with browser.server(log=tmp_path / "server.log") as url, browser.browser(1280, 800) as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{url}/try?try={saved.parent}")
        page.get_by_text("tracetriage try tf32_mlp_train.py, on the GPU", exact=False).first.wait_for(timeout=300_000)
        assert browser.wait_chart(page, at_least=2) >= 2
        browser.wait_settled(page, timeout_ms=300_000)
        browser.screenshot(page, tmp_path / "try.png")
        charts_drawn = page.evaluate(BARS)
        labels = page.evaluate(LABELS)
        # the verdict, in the table (a canvas grid: its cells are in the page, not visible as text)
        page.get_by_text(kept["allow_tf32"]["verdict_words"], exact=True).first.wait_for(state="attached",
                                                                                         timeout=60_000)
        assert page.locator('[data-testid="stException"]').count() == 0
    assert not errors, errors
    assert (tmp_path / "try.png").stat().st_size > 10_000
    assert len(charts_drawn) == 2, charts_drawn
    for run, rects, texts in zip(("profiled", "unprofiled"), charts_drawn, labels):
        fills = {kind: sorted((r for r in rects if r["fill"] == color), key=lambda r: r["top"])
                 for kind, color in charts.TRY_COLORS.items()}
        pred, meas = fills["predicted"], fills["measured"]
        assert len(pred) == 2 and len(meas) == 1, (run, rects)          # autocast_bf16 was not run: no measured bar
        assert min(r["height"] for r in rects) >= 10, (run, rects)      # each bar a row of its own, visible
        tf32, bf16 = pred
        # the knob's measured bar just under its predicted one, and above the next knob's
        assert tf32["bottom"] - 1 <= meas[0]["top"] <= tf32["bottom"] + 0.5 * tf32["height"], (run, rects)
        assert meas[0]["bottom"] < bf16["top"], (run, rects)
        # each bar as long as its number (a saving: drawn left from zero, on one axis)
        p, m = kept["allow_tf32"]["predicted"][run], kept["allow_tf32"]["measured"][run]["median"]
        assert meas[0]["width"] / tf32["width"] == pytest.approx(m / p, rel=0.03), (run, rects)
        assert bf16["width"] / tf32["width"] == pytest.approx(kept["autocast_bf16"]["predicted"][run] / p, rel=0.03)
        assert abs(tf32["right"] - meas[0]["right"]) < 1                 # both from zero
        assert words.try_bar_label(-100 * p) in texts and words.try_bar_label(-100 * m) in texts, (run, texts)


def test_the_try_page_titles_each_charts_axis_by_what_it_plots_and_keeps_its_table_in_the_url(tmp_path, monkeypatch):
    """The profiled chart plots the traced span, the unprofiled one the script's wall time; the table is the URL's."""
    pytest.importorskip("streamlit")
    from test_dashboard_app import headers, page, specs

    monkeypatch.setenv("TRACETRIAGE_DB", str(tmp_path / "log.db"))
    folder = h200_try_table(tmp_path / "tf32.try").parent
    at = page("trytable", **{"try": str(folder)})
    assert not at.exception
    axes = [s["layer"][0]["encoding"]["x"]["title"] for s in specs(at)]
    assert axes == ["change of the traced span (%; a saving is a minus)",
                    "change of the wall time (%; a saving is a minus)"], axes
    assert headers(at.dataframe[0]) == ["knob", "predicted", "measured", "verdict", "change"]
    assert at.query_params["try"] == str(folder)
