"""Each dashboard page, run by Streamlit's AppTest: what it says, and the chart specs it sends.

Charts are read back from the element protos (the Vega-Lite JSON the browser would get).
The browser itself is driven in test_dashboard_e2e.py.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
import kineto_factory as kf  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from analyzers.voice.dashboard import (
    annotated_caption,
    answer_not_a_number,
    attempt_recorded,
    calibration_caption,
    lever_line,
    no_whatif,
    part_feedback,
    plain,
    upload_too_large,
    whatif_caption,
)
from analyzers.voice.drills import calibration, span_line, summary
from analyzers.voice.report import five_lines
from analyzers.voice.whatif import assumption
from dashboard.library import PATH_ENV, SAMPLES, UPLOAD_ENV, Entry  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120


@pytest.fixture(autouse=True)
def _main_module_restored():
    """Streamlit's script runner installs its script as sys.modules["__main__"] and never puts the real one
    back; a later test whose code starts processes with spawn (a multi-rank report, when a leftover thread
    rules out fork) would then re-run that script in each child and fail. Put it back after each test."""
    import sys

    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


def _page(name: str) -> None:
    import importlib

    importlib.import_module(f"dashboard.views.{name}").render()


def page(name: str, entry: Entry | None = None) -> AppTest:
    at = AppTest.from_function(_page, args=(name,), default_timeout=TIMEOUT)
    if entry is not None:
        at.session_state["trace_entry"] = entry
    return at.run()


def sample(name: str) -> Entry:
    return Entry("samples", SAMPLES, name)


def specs(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("vega_lite_chart")]


def markdown_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_the_app_registers_every_page_and_opens_on_the_library(monkeypatch):
    monkeypatch.delenv(PATH_ENV, raising=False)
    at = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.title[0].value == "Library"
    from dashboard.views import PAGES

    assert [p.TITLE for p in PAGES] == ["Library", "Report", "Timeline", "Roofline", "Diff", "What-if", "Drills"]


def test_library_opens_a_sample_and_says_what_it_loaded(monkeypatch):
    monkeypatch.delenv(PATH_ENV, raising=False)
    at = page("library")
    at.selectbox(key="sample").set_value(sample("smell-sync-item.json.gz"))
    at.button(key="open_sample").click().run()
    assert not at.exception
    assert at.success[0].value == plain("Loaded smell-sync-item.json.gz: 4,312 events on NVIDIA H200.")
    assert at.session_state["trace_entry"].key == "samples/smell-sync-item.json.gz"


def test_a_bad_file_in_the_directory_shows_its_one_line_error_not_a_traceback(tmp_path, monkeypatch):
    kf.write(tmp_path / "broken.json", "{not json")
    monkeypatch.setenv(PATH_ENV, str(tmp_path))
    at = page("library")
    at.selectbox(key="dir_trace").set_value(Entry("directory", tmp_path, "broken.json"))
    at.button(key="open_dir").click().run()
    assert not at.exception
    assert len(at.error) == 1
    from analyzers.loading.load import load
    from analyzers.model.trace import TraceError

    with pytest.raises(TraceError) as e:
        load(tmp_path / "broken.json", use_cache=False)
    assert at.error[0].value == plain(f"error: {e.value}")
    assert "\n" not in str(e.value) and "Traceback" not in at.error[0].value


def test_an_upload_over_the_cap_is_refused_with_the_limit_named(monkeypatch):
    monkeypatch.setenv(UPLOAD_ENV, "1")
    at = page("library")
    at.file_uploader(key="upload").set_value(("big.json", b" " * 1_500_000, "application/json")).run()
    assert not at.exception
    assert at.error[0].value == plain(upload_too_large("big.json", 1_500_000, 1))
    assert "trace_entry" not in at.session_state


def test_an_uploaded_trace_is_opened(monkeypatch):
    monkeypatch.delenv(UPLOAD_ENV, raising=False)
    data = (SAMPLES / "smell-host-sleep.json.gz").read_bytes()
    at = page("library")
    at.file_uploader(key="upload").set_value(("../../etc/my trace.json.gz", data, "application/gzip")).run()
    assert not at.exception
    entry = at.session_state["trace_entry"]
    assert entry.source == "upload" and entry.name == "my_trace.json.gz"
    assert at.success[0].value.startswith(plain("Loaded my_trace.json.gz: 302 events"))


def test_report_shows_the_five_lines_idle_by_cause_hotspots_and_phases():
    from analyzers.triage.report import analyze_file

    a = analyze_file(SAMPLES / "gpt-eager.json.gz")
    at = page("report", sample("gpt-eager.json.gz"))
    assert not at.exception
    text = markdown_text(at)
    for line in five_lines(a):
        assert plain(line) in text
    assert "Time to first token 18.8 ms" in text.replace("\\", "")   # (one duration format: voice.duration_us)
    chart = specs(at)[0]
    assert chart["encoding"]["color"]["field"] == "cause"
    frames = [d.value for d in at.dataframe]
    idle, hot, ranges = frames[0], frames[1], frames[2]
    assert list(idle["cause"]) == ["launch overhead", "host work", "synchronization", "data transfer", "other"]
    assert hot["name"].iloc[0] == a.hotspots[0].name
    assert set(ranges["name"]) == {"prefill", "decode_step"}


def test_report_prepares_the_perfetto_download():
    at = page("report", sample("smell-sync-item.json.gz"))
    at.button(key="prepare_perfetto").click().run()
    assert not at.exception
    assert at.get("download_button")
    from analyzers.triage.report import analyze_file

    gaps = sum(len(d.gaps) for d in analyze_file(SAMPLES / "smell-sync-item.json.gz").devices)
    assert at.caption[-1].value == annotated_caption(gaps)


def test_timeline_of_a_big_trace_starts_with_the_binned_overview_and_a_brush():
    at = page("timeline", sample("gpt-eager.json.gz"))
    assert not at.exception
    spec = specs(at)[0]
    assert spec["title"] == "overview (binned)"
    params = spec.get("params", []) + [p for layer in spec["layer"] for p in layer.get("params", [])]
    assert any(p["name"] == "brush" and p["select"]["type"] == "interval" for p in params)
    lanes = spec["layer"][0]["encoding"]["y"]["sort"]
    assert "gpu0 stream 7" in lanes and "gpu0 idle" in lanes and lanes[0].startswith("host thread")
    assert "shown as busy shares in 400 bins" in at.caption[0].value.replace("\\", "")


def test_timeline_zoomed_in_draws_each_event_with_shapes_and_gap_evidence():
    at = page("timeline", sample("gpt-eager.json.gz"))
    at.session_state["tl_window"] = (1000.0, 1300.0)
    at.run()
    assert not at.exception
    spec = specs(at)[0]
    assert spec["title"] == "events"
    tips = [t["field"] for layer in spec["layer"] for t in layer["encoding"].get("tooltip", [])]
    assert {"name", "dur_us", "shapes", "evidence"} <= set(tips)
    assert "each drawn" in at.caption[0].value


def test_timeline_window_of_a_small_trace_is_drawn_raw_from_the_start():
    at = page("timeline", sample("smell-sync-item.json.gz"))
    assert not at.exception
    assert specs(at)[0]["title"] == "events"


def test_roofline_is_log_log_with_the_measured_ridge_and_a_dtype_switch():
    at = page("roofline", sample("gpt-eager.json.gz"))
    assert not at.exception
    assert at.selectbox(key="roof_dtype").options == ["bf16", "fp32", "int64"]
    assert "measured on this machine" in at.caption[0].value
    spec = specs(at)[0]
    dots = spec["layer"][-1]
    assert dots["mark"]["type"] == "circle"
    assert dots["encoding"]["x"]["scale"]["type"] == "log" and dots["encoding"]["y"]["scale"]["type"] == "log"
    assert dots["encoding"]["size"]["field"] == "device_us" and dots["encoding"]["color"]["field"] == "bound"
    assert any(layer["mark"]["type"] == "rule" for layer in spec["layer"])   # the ridge
    at.selectbox(key="roof_dtype").set_value("fp32").run()
    assert "fp32: 51 TFLOP/s" in at.caption[0].value.replace("\\", "")


def test_diff_explains_the_change_in_launches_bytes_and_idle():
    at = page("diff")
    at.selectbox(key="diff_before").set_value(sample("chain-eager-large.json.gz"))
    at.selectbox(key="diff_after").set_value(sample("chain-triton-large.json.gz"))
    at.button(key="diff_go").click().run()
    assert not at.exception
    text = markdown_text(at).replace("\\", "")
    assert "Explained by bytes" in text and "800 → 200 launch calls" in text
    measures = at.dataframe[0].value
    assert list(measures["measure"]) == ["GPU span (µs)", "kernel busy (µs)", "idle (µs)", "launch calls", "kernels",
                                         "bytes"]
    assert specs(at)[0]["encoding"]["color"]["field"] == "cause"


def test_no_trace_string_reaches_the_page_as_html(tmp_path, monkeypatch):
    evil_k, evil_op = "<script>alert(1)</script>", "<img src=x onerror=alert(1)>"
    launches = [kf.Launch(op_start=i * 50_000, op_end=i * 50_000 + 8_000, call_start=i * 50_000 + 1_000,
                          call_end=i * 50_000 + 5_000, gpu_start=i * 50_000 + 6_000, gpu_end=i * 50_000 + 16_000,
                          kernel=evil_k, op=evil_op) for i in range(10)]
    kf.write(tmp_path / "evil.json", kf.document(kf.events_for(launches)))
    monkeypatch.setenv(PATH_ENV, str(tmp_path))
    entry = Entry("directory", tmp_path, "evil.json")
    for name in ("report", "timeline", "roofline", "whatif"):
        at = page(name, entry)
        assert not at.exception
        for m in at.markdown:
            assert not m.proto.allow_html
            assert not re.search(r"(?<!\\)<", m.value), m.value   # every < escaped: text, not a tag
        assert not at.get("html")
    text = markdown_text(page("report", entry))
    assert plain(evil_op) in text      # shown, as text


def test_no_dashboard_module_asks_streamlit_to_render_html():
    sources = [p.read_text() for p in (ROOT / "dashboard").rglob("*.py")]
    assert sources and not any("unsafe_allow_html" in s or "st.html(" in s or "components.html" in s for s in sources)


# --- what-if ------------------------------------------------------------------------------

def test_whatif_draws_each_levers_predicted_span_as_a_bar_best_first_with_its_assumption():
    from analyzers.triage.report import analyze_file

    an = analyze_file(SAMPLES / "smell-sync-item.json.gz")
    w = an.levers.all
    at = page("whatif", sample("smell-sync-item.json.gz"))
    assert not at.exception
    bars = specs(at)[0]
    assert bars["title"] == "predicted span per lever"
    assert bars["layer"][0]["encoding"]["y"]["sort"] == [p.lever for p in w.levers]
    assert bars["layer"][0]["encoding"]["x"]["field"] == "predicted_ms"
    assert bars["layer"][1]["mark"]["type"] == "rule"                     # the traced span
    # one baseline, named: the traced span (host and GPU) the levers are shares of, beside the report's GPU span
    assert at.caption[1].value == plain(whatif_caption(w.baseline_ns, w.replay_ns, an.span_ns))
    assert "GPU span" in at.caption[1].value and "52" in at.caption[1].value      # the report's 52.2 ms
    text = markdown_text(at)
    captions = [c.value for c in at.caption]
    for p in w.levers:
        assert plain(lever_line(p.lever, p.predicted_ns, p.predicted_ratio, p.saving_ns,
                                            w.baseline_ns)) in text
        assert plain(assumption(p.assumption)) in captions
    assert "kernels\\_2x\\: 34\\.6 ms predicted, 0\\.62 of the traced span \\(−38%\\)" in text


def _timeline_specs(at):
    return [s for s in specs(at) if str(s.get("title", "")).startswith(("measured:", "predicted under"))]


def test_whatif_draws_the_predicted_timeline_below_the_measured_one_on_one_time_axis():
    at = page("whatif", sample("smell-sync-item.json.gz"))
    measured, predicted = _timeline_specs(at)
    assert measured["title"] == "measured: GPU activities as traced (traced span 55.5 ms)"
    assert predicted["title"] == "predicted under kernels_2x (span 34.6 ms)"      # the best lever first
    axes = [next(l["encoding"]["x"] for l in s["layer"] if "y" in l["encoding"]) for s in (measured, predicted)]
    assert axes[0]["scale"]["domain"] == axes[1]["scale"]["domain"] and axes[0]["scale"]["domain"][0] == 0
    assert measured["config"]["axisY"]["minExtent"] == predicted["config"]["axisY"]["minExtent"]
    assert all("cause" not in json.dumps(s) for s in (measured, predicted))    # GPU lanes only, no idle lanes
    assert "720 GPU activities, each drawn" in at.caption[-1].value.replace("\\", "")
    at.selectbox(key="whatif_lever").set_value("remove_syncs").run()
    assert not at.exception
    assert _timeline_specs(at)[1]["title"] == "predicted under remove_syncs (span 47.3 ms)"


def test_whatif_of_a_big_trace_bins_both_timelines_like_the_timeline_overview():
    at = page("whatif", sample("gpt-eager.json.gz"))
    at.selectbox(key="whatif_lever").set_value("cuda_graphs").run()
    assert not at.exception
    measured, predicted = _timeline_specs(at)
    for s in (measured, predicted):
        assert s["layer"][0]["encoding"]["color"]["field"] == "busy"          # busy shares in bins
    from analyzers.loading.load import load
    from analyzers.model.units import duration_ns
    from analyzers.whatif.predict import predict

    want = predict(load(SAMPLES / "gpt-eager.json.gz"), ["cuda_graphs"]).levers[0].predicted_ns
    assert predicted["title"] == f"predicted under cuda_graphs (span {duration_ns(want)})"   # the replay's own span
    assert "shown as busy shares in 400 bins" in at.caption[-1].value.replace("\\", "")


def test_whatif_of_a_cpu_only_trace_says_there_is_nothing_to_replay(tmp_path, monkeypatch):
    ops = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
           for i in range(5)]
    kf.write(tmp_path / "cpu.json", json.dumps({"traceEvents": ops}))
    monkeypatch.setenv(PATH_ENV, str(tmp_path))
    at = page("whatif", Entry("directory", tmp_path, "cpu.json"))
    assert not at.exception
    assert at.info[0].value == no_whatif()
    assert not at.get("vega_lite_chart")


# --- drills and predictions --------------------------------------------------------------------

@pytest.fixture
def drill_env(tmp_path, monkeypatch):
    db = tmp_path / "log.db"
    monkeypatch.setenv("TRACETRIAGE_DB", str(db))
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    return db


def _pick(at, drill_id: str):
    from dashboard import data

    at.selectbox(key="drill_pick").set_value(next(d for d in data.drills() if d.id == drill_id)).run()
    return at


def _grade_button(at):
    return next(b for b in at.button if b.label == "Grade")


def test_drill_page_shows_the_drills_timeline_without_the_causes_of_its_gaps(drill_env):
    at = _pick(page("practice"), "M02.03-c")
    assert not at.exception
    chart = specs(at)[0]
    assert chart["title"] in ("events", "overview (binned)")
    lanes = chart["layer"][0]["encoding"]["y"]["sort"]
    assert any(l.startswith("gpu") for l in lanes) and not any(l.endswith("idle") for l in lanes)
    assert "cause" not in json.dumps(chart)          # no idle lane, no shading, no cause legend
    assert [t.label for t in at.text_input] == ["pattern", "cause", "experiment"]


def test_grading_a_drill_shows_the_score_and_each_parts_feedback_and_records_the_attempt(drill_env):
    from drills import bank, grader
    from drills.predictions import Log

    at = _pick(page("practice"), "M02.03-c")
    answers = {"pattern": "the GPU drains after every .item() and waits for the host",
               "cause": "synchronization", "experiment": "keep the flag on the device and read it every 100 steps"}
    for part, text in answers.items():
        at.text_input(key=f"answer_M02.03-c_{part}").input(text)
    _grade_button(at).click().run()
    assert not at.exception
    want = grader.grade(bank.get("M02.03-c"), answers)
    assert at.subheader[-2].value == plain(summary("M02.03-c", want.score))
    text = markdown_text(at)
    for p in want.parts:
        assert plain(part_feedback(p.part, p.score, p.weight, p.feedback)) in text
    attempts = Log(drill_env).attempts()
    assert [(a["drill"], round(a["score"], 6)) for a in attempts] == [("M02.03-c", round(want.score, 6))]
    assert plain(attempt_recorded(attempts[0]["id"], drill_env)) in [c.value for c in at.caption]


def test_a_number_part_that_is_not_a_number_is_one_line_and_records_nothing(drill_env):
    from drills.predictions import Log

    at = _pick(page("practice"), "M01.05-a")
    at.text_input(key="answer_M01.05-a_regime").input("compute")
    at.text_input(key="answer_M01.05-a_achieved").input("lots")
    _grade_button(at).click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [plain("error: " + answer_not_a_number("achieved", "lots"))]
    assert Log(drill_env).attempts() == []


def test_prediction_log_is_a_table_with_a_log_log_calibration_plot_and_the_2x_band(drill_env):
    from drills import predictions as pr

    log = pr.Log(drill_env)
    for q, said, got in (("span_ms", 10.0, 12.0), ("gbps", 3000.0, 1200.0), ("ttft_ms", 20.0, None)):
        pid = log.predict(q, said, "because", None)
        if got is not None:
            log.set_measured(pid, got, "a trace")
    log.close()
    at = page("practice")
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["quantity"]) == ["span_ms", "gbps", "ttft_ms"]
    assert list(table["ratio"].round(2))[:2] == [1.2, 0.4]
    cal = pr.calibration(pr.Log(drill_env).predictions())
    assert plain(calibration(cal.measured, cal.median_ratio, cal.within_2x)) in markdown_text(at)
    chart = next(s for s in specs(at) if str(s.get("title", "")).startswith("calibration"))
    band, line, dots = chart["layer"]
    assert band["mark"]["type"] == "area" and band["encoding"]["y"]["field"] == "low"
    assert band["encoding"]["y2"]["field"] == "high"
    assert line["mark"]["type"] == "line"
    assert dots["encoding"]["x"]["scale"]["type"] == "log" and dots["encoding"]["y"]["scale"]["type"] == "log"
    assert dots["encoding"]["x"]["field"] == "predicted" and dots["encoding"]["y"]["field"] == "measured"
    assert plain(calibration_caption(2, 3)) in [c.value for c in at.caption]


def test_a_triage_drill_shows_the_operator_table_drill_show_prints_and_not_the_cause(drill_env):
    from drills import bank, evidence

    at = _pick(page("practice"), "M02.01-a")
    assert not at.exception
    f = evidence.facts(bank.get("M02.01-a").trace_path())
    ops = at.dataframe[0].value
    assert list(ops["name"]) == [h["name"] for h in f.hotspots]
    assert plain(span_line(f.span_ms, f.kernel_busy_ms, f.idle_share)) in markdown_text(at)
    assert "cause" not in json.dumps(specs(at)[0])                      # the key's bound is a cause here


def test_a_page_run_installs_its_script_as_main_which_the_fixture_undoes():
    # (test_golden's multi-rank report once spawned workers that re-ran an AppTest script as __main__ and died)
    import sys

    before = sys.modules["__main__"]
    page("roofline", sample("smell-sync-item.json.gz"))
    assert sys.modules["__main__"] is not before         # Streamlit's doing: _main_module_restored puts it back


def test_after_a_page_ran_main_is_no_longer_the_apptest_script():
    import sys

    path = getattr(sys.modules["__main__"], "__file__", None)
    assert not (path and Path(path).is_file() and "_page(*__args" in Path(path).read_text())
