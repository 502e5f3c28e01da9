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
from streamlit.testing.v1 import AppTest  # noqa: E402

import kineto_factory as kf  # noqa: E402
from analyzers import voice as words  # noqa: E402
from dashboard.library import PATH_ENV, SAMPLES, Entry, UPLOAD_ENV  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120


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

    assert [p.TITLE for p in PAGES] == ["Library", "Report", "Timeline", "Roofline", "Diff"]


def test_library_opens_a_sample_and_says_what_it_loaded(monkeypatch):
    monkeypatch.delenv(PATH_ENV, raising=False)
    at = page("library")
    at.selectbox(key="sample").set_value(sample("smell-sync-item.json.gz"))
    at.button(key="open_sample").click().run()
    assert not at.exception
    assert at.success[0].value == words.plain("Loaded smell-sync-item.json.gz: 4,312 events on NVIDIA H200.")
    assert at.session_state["trace_entry"].key == "samples/smell-sync-item.json.gz"


def test_a_bad_file_in_the_directory_shows_its_one_line_error_not_a_traceback(tmp_path, monkeypatch):
    kf.write(tmp_path / "broken.json", "{not json")
    monkeypatch.setenv(PATH_ENV, str(tmp_path))
    at = page("library")
    at.selectbox(key="dir_trace").set_value(Entry("directory", tmp_path, "broken.json"))
    at.button(key="open_dir").click().run()
    assert not at.exception
    assert len(at.error) == 1
    from analyzers.load import load
    from analyzers.trace import TraceError

    with pytest.raises(TraceError) as e:
        load(tmp_path / "broken.json", use_cache=False)
    assert at.error[0].value == words.plain(f"error: {e.value}")
    assert "\n" not in str(e.value) and "Traceback" not in at.error[0].value


def test_an_upload_over_the_cap_is_refused_with_the_limit_named(monkeypatch):
    monkeypatch.setenv(UPLOAD_ENV, "1")
    at = page("library")
    at.file_uploader(key="upload").set_value(("big.json", b" " * 1_500_000, "application/json")).run()
    assert not at.exception
    assert at.error[0].value == words.plain(words.upload_too_large("big.json", 1_500_000, 1))
    assert "trace_entry" not in at.session_state


def test_an_uploaded_trace_is_opened(monkeypatch):
    monkeypatch.delenv(UPLOAD_ENV, raising=False)
    data = (SAMPLES / "smell-host-sleep.json.gz").read_bytes()
    at = page("library")
    at.file_uploader(key="upload").set_value(("../../etc/my trace.json.gz", data, "application/gzip")).run()
    assert not at.exception
    entry = at.session_state["trace_entry"]
    assert entry.source == "upload" and entry.name == "my_trace.json.gz"
    assert at.success[0].value.startswith(words.plain("Loaded my_trace.json.gz: 302 events"))


def test_report_shows_the_five_lines_idle_by_cause_hotspots_and_phases():
    from analyzers.report import analyze_file

    a = analyze_file(SAMPLES / "gpt-eager.json.gz")
    at = page("report", sample("gpt-eager.json.gz"))
    assert not at.exception
    text = markdown_text(at)
    for line in words.five_lines(a):
        assert words.plain(line) in text
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
    from analyzers.report import analyze_file

    gaps = sum(len(d.gaps) for d in analyze_file(SAMPLES / "smell-sync-item.json.gz").devices)
    assert at.caption[-1].value == words.annotated_caption(gaps)


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
    for name in ("report", "timeline", "roofline"):
        at = page(name, entry)
        assert not at.exception
        for m in at.markdown:
            assert not m.proto.allow_html
            assert not re.search(r"(?<!\\)<", m.value), m.value   # every < escaped: text, not a tag
        assert not at.get("html")
    text = markdown_text(page("report", entry))
    assert words.plain(evil_op) in text      # shown, as text


def test_no_dashboard_module_asks_streamlit_to_render_html():
    sources = [p.read_text() for p in (ROOT / "dashboard").rglob("*.py")]
    assert sources and not any("unsafe_allow_html" in s or "st.html(" in s or "components.html" in s for s in sources)
