"""Each dashboard page, run by Streamlit's AppTest: what it says, the tables it shows, and the chart specs it sends.

Charts are read back from the element protos (the Vega-Lite JSON the browser would get), tables from
their column configuration (what the browser shows as headers and formats). The browser itself is
driven in test_dashboard_e2e.py.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import kineto_factory as kf
from lazy_import import skip_unless_installed
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.voice.whatif import assumption
from tracetriage.dashboard import library, words
from tracetriage.dashboard.library import PATH_ENV, SAMPLES, UPLOAD_ENV, Entry
from tracetriage.dashboard.words import (
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
from tracetriage.drills.words import calibration, span_line, summary

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

skip_unless_installed("streamlit")

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 300


def app_test() -> type[AppTest]:
    """Streamlit's AppTest, imported by the first page run, not at collection (tests/lazy_import.py)."""
    from streamlit.testing.v1 import AppTest as _AppTest

    import streamlit_scan_once  # noqa: F401  (a page run scans the installed packages once a process)

    return _AppTest


@pytest.fixture(autouse=True)
def _main_module_restored():
    """Streamlit's script runner installs its script as sys.modules["__main__"] and never puts the real one
    back; a later test whose code starts processes with spawn (a multi-rank report, when a leftover thread
    rules out fork) would then re-run that script in each child and fail. Put it back after each test."""
    import sys

    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


# A page run as the app runs it: a script whose body runs only as __main__ (a rank worker started with
# spawn re-imports the script as __mp_main__ and must draw nothing, as dashboard/app.py does).
PAGE_SCRIPT = """
import importlib
if __name__ == "__main__":
    importlib.import_module("tracetriage.dashboard.views.{name}").render()
"""


def page(name: str, trace: str | None = None, run: bool = True, **params) -> AppTest:
    """The page, with ?trace=KEY (and other query parameters) in its URL as a link would give them."""
    at = app_test().from_string(PAGE_SCRIPT.format(name=name), default_timeout=TIMEOUT)
    if trace is not None:
        at.query_params["trace"] = trace
    for k, v in params.items():
        at.query_params[k] = v
    return at.run() if run else at


def sample(name: str) -> str:
    return f"samples/{name}"


def _sample_entry(name: str) -> Entry:
    """The Library's own entry for a sample (with its manifest label, as the picker lists it)."""
    return next(e for e in library.samples() if e.name == name)


def specs(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("vega_lite_chart")]


def markdown_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def shown_columns(table) -> list[tuple[str, dict]]:
    """(header, column config) of each column the browser shows, in order."""
    config = json.loads(table.proto.columns)
    return [(config[c].get("label", c), config[c]) for c in table.proto.column_order]


def headers(table) -> list[str]:
    return [h for h, _ in shown_columns(table)]


def layer_marks(spec: dict) -> list[str]:
    return [(layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]) for layer in spec["layer"]]


def params_of(spec: dict) -> dict:
    out = {p["name"]: p for p in spec.get("params", [])}
    for layer in spec.get("layer", []):
        out.update({p["name"]: p for p in layer.get("params", [])})
    return out


# --- the app and its URL -------------------------------------------------------------------

def test_the_app_registers_every_page_and_opens_on_the_library(monkeypatch):
    monkeypatch.delenv(PATH_ENV, raising=False)
    at = app_test().from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.title[0].value == "Library"
    from tracetriage.dashboard.views import PAGES

    assert [p.title for p in PAGES] == ["Library", "Report", "Timeline", "Ranks", "Roofline", "Diff", "What-if",
                                        "Try", "Drills"]
    assert [p.url for p in PAGES] == ["library", "report", "timeline", "ranks", "roofline", "diff", "whatif", "try",
                                      "drills"]


def test_the_trace_in_the_url_is_the_trace_in_view_and_the_page_writes_it_back():
    at = page("report", sample("smell-host-sleep.json.gz"))
    assert not at.exception
    assert at.caption[0].value == plain("samples/smell-host-sleep.json.gz")
    assert at.query_params["trace"] == "samples/smell-host-sleep.json.gz"


def test_the_command_line_trace_is_the_default_of_a_new_session_and_lands_in_the_url(monkeypatch):
    monkeypatch.setenv(PATH_ENV, str(SAMPLES / "smell-sync-item.json.gz"))
    at = page("report")
    assert not at.exception
    assert at.caption[0].value == plain("samples/smell-sync-item.json.gz")     # (a sample named on the command line)
    assert at.query_params["trace"] == "samples/smell-sync-item.json.gz"


def test_the_first_trace_of_a_command_line_directory_is_the_default(tmp_path, monkeypatch):
    (tmp_path / "b.json.gz").write_bytes((SAMPLES / "smell-host-sleep.json.gz").read_bytes())
    (tmp_path / "a-ceilings.json").write_text('{"device_name": "NVIDIA H200"}')
    monkeypatch.setenv(PATH_ENV, str(tmp_path))
    at = page("report")
    assert at.query_params["trace"] == "directory/b.json.gz"


def test_a_url_naming_no_trace_of_the_library_says_so_in_one_line_and_shows_no_other():
    at = page("report", "samples/../../etc/passwd")
    assert not at.exception
    assert [e.value for e in at.error] == [plain("error: no trace samples/../../etc/passwd in the library (the link "
                                                 "names a trace this server does not list)")]
    assert not at.markdown and not at.get("vega_lite_chart")


def test_without_a_trace_a_page_says_where_to_pick_one(monkeypatch):
    monkeypatch.delenv(PATH_ENV, raising=False)
    at = page("timeline")
    assert [i.value for i in at.info] == ["Pick a trace in the Library first."]


# --- library -----------------------------------------------------------------------------------

def test_library_opens_a_sample_says_once_what_it_loaded_and_puts_it_in_the_url(monkeypatch):
    monkeypatch.delenv(PATH_ENV, raising=False)
    at = page("library")
    box = next(s for s in at.selectbox if s.label == "Sample trace")
    box.set_value(_sample_entry("smell-sync-item.json.gz")).run()
    assert not at.exception
    assert [s.value for s in at.success] == [plain("Loaded smell-sync-item.json.gz: 4,312 events on NVIDIA H200.")]
    assert at.query_params["trace"] == "samples/smell-sync-item.json.gz"
    at.run()                                           # a rerun keeps one message
    assert len(at.success) == 1


def test_library_lists_each_sample_with_its_label_filters_on_words_and_offers_the_way_on(monkeypatch):
    monkeypatch.delenv(PATH_ENV, raising=False)
    at = page("library")
    box = next(s for s in at.selectbox if s.label == "Sample trace")
    labelled = {e.name: e.about for e in library.samples() if e.about}
    assert labelled and all(f"{name} — {about}" in box.options for name, about in labelled.items())
    from streamlit.proto.SelectWidgetFilterMode_pb2 import SelectWidgetFilterMode

    assert box.proto.filter_mode == SelectWidgetFilterMode.FILTER_MODE_CONTAINS  # "ddp": DDP, not d..d..p
    box.set_value(_sample_entry("smell-sync-item.json.gz")).run()
    links = {link.proto.page: (link.proto.label, link.proto.query_string) for link in at.get("page_link")}
    assert links == {"report": ("Open its report", "trace=samples%2Fsmell-sync-item.json.gz"),
                     "timeline": ("Open its timeline", "trace=samples%2Fsmell-sync-item.json.gz")}


def test_library_lists_traces_by_content_and_defaults_to_the_command_line_file(tmp_path, monkeypatch):
    (tmp_path / "ceilings.json").write_text('{"device_name": "NVIDIA H200", "matmul_tflops": {"bf16": 800}}')
    (tmp_path / "run.meta.json").write_text('{"workload": "x"}')
    (tmp_path / "notes.json").write_text("[1, 2, 3]")
    (tmp_path / "run.json.gz").write_bytes((SAMPLES / "smell-host-sleep.json.gz").read_bytes())
    (tmp_path / "zz.json").write_bytes((SAMPLES / "smell-sync-item.json.gz").read_bytes())   # gzip, named .json
    monkeypatch.setenv(PATH_ENV, str(tmp_path / "zz.json"))
    at = page("library")
    assert not at.exception
    box = next(s for s in at.selectbox if s.label == "Trace file")
    assert box.options == ["run.json.gz", "zz.json"]
    assert box.value.name == "zz.json"
    assert [s.value for s in at.success] == [plain("Loaded zz.json: 4,312 events on NVIDIA H200.")]
    samples = next(s for s in at.selectbox if s.label == "Sample trace")
    assert "ceilings.json" not in samples.options and "manifest.json" not in samples.options
    assert "ddp/rank0.json.gz" in samples.options                        # the sample runs' ranks


def test_a_bad_file_shows_its_one_line_error_without_a_server_path(tmp_path, monkeypatch):
    kf.write(tmp_path / "broken.json", '{"traceEvents": [{"ph": "X", "cat": "kernel", not json')
    monkeypatch.setenv(PATH_ENV, str(tmp_path / "broken.json"))
    at = page("library")
    assert not at.exception
    assert len(at.error) == 1
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.model.trace import TraceError

    with pytest.raises(TraceError) as e:
        load(tmp_path / "broken.json", use_cache=False)
    assert str(tmp_path) in str(e.value)                                 # the loader names the file by its path ...
    message = at.error[0].value
    assert message.startswith(plain("error: broken.json")) and str(tmp_path.name) not in message   # ... the page
                                                                                                   # does not
    assert "Traceback" not in message and not at.success


def test_a_command_line_file_that_is_no_trace_is_opened_and_says_why(tmp_path, monkeypatch):
    (tmp_path / "ceilings.json").write_text('{"device_name": "NVIDIA H200"}')
    monkeypatch.setenv(PATH_ENV, str(tmp_path / "ceilings.json"))
    at = page("library")
    assert not at.exception
    (message,) = [e.value for e in at.error]
    assert message.startswith(plain("error: ceilings.json")) and str(tmp_path.name) not in message
    assert at.query_params["trace"] == "directory/ceilings.json"


def test_an_upload_that_is_no_trace_names_the_upload_not_the_servers_folder(monkeypatch):
    at = page("library")
    at.file_uploader(key="upload").set_value(("mine.json", b'{"hello": 1}', "application/json")).run()
    assert not at.exception
    (message,) = [e.value for e in at.error]
    assert (message.startswith(plain("error: mine.json")) and "tracetriage-upload" not in message
            and "/tmp" not in message)


def test_an_upload_over_the_cap_is_refused_with_the_limit_named(monkeypatch):
    monkeypatch.setenv(UPLOAD_ENV, "1")
    at = page("library")
    at.file_uploader(key="upload").set_value(("big.json", b" " * 1_500_000, "application/json")).run()
    assert not at.exception
    assert at.error[0].value == plain(upload_too_large("big.json", 1_500_000, 1))
    assert "trace" not in at.query_params


def test_an_uploaded_trace_is_opened_and_named_in_the_url(monkeypatch):
    monkeypatch.delenv(UPLOAD_ENV, raising=False)
    data = (SAMPLES / "smell-host-sleep.json.gz").read_bytes()
    at = page("library")
    at.file_uploader(key="upload").set_value(("../../etc/my trace.json.gz", data, "application/gzip")).run()
    assert not at.exception
    assert at.query_params["trace"] == "upload/my_trace.json.gz"
    assert at.success[0].value.startswith(plain("Loaded my_trace.json.gz: 302 events"))


# --- report ------------------------------------------------------------------------------------

def test_report_shows_the_five_lines_idle_by_cause_hotspots_and_phases():
    from tracetriage.analyzers.triage.report import analyze_file

    a = analyze_file(SAMPLES / "gpt-eager.json.gz")
    at = page("report", sample("gpt-eager.json.gz"))
    assert not at.exception
    text = markdown_text(at)
    for line in five_lines(a):
        assert plain(line) in text
    assert "Time to first token 18.8 ms" in text.replace("\\", "")   # (one duration format: voice.duration_us)
    chart = specs(at)[0]
    assert chart["layer"][0]["encoding"]["color"]["field"] == "cause"
    assert chart["layer"][1]["mark"]["type"] == "text"               # each bar's time and share written on it
    idle, hot = (d.value for d in at.dataframe[:2])
    assert list(idle["cause"]) == ["launch overhead", "host work", "synchronization", "data transfer", "other"]
    # advice only where the cause has gaps: no fix offered for idle that is not there
    assert {r.cause for r in idle.itertuples() if r.first_experiment} == \
        {words.cause(c.value) for c, e in a.evidence.items() if e.gaps}
    assert hot["name"].iloc[0] == a.hotspots[0].name
    ranges = next(d.value for d in at.dataframe if "instances" in headers(d))
    assert set(ranges["name"]) == {"prefill", "decode_step"}


def test_report_tables_have_human_headers_units_and_wrapped_evidence():
    at = page("report", sample("smell-sync-item.json.gz"))
    idle, hot = at.dataframe[:2]
    ranges = next(d for d in at.dataframe if "instances" in headers(d))
    assert headers(idle) == ["cause", "idle (ms)", "share of span", "evidence", "first experiment"]
    cols = dict(shown_columns(idle))
    assert cols["idle (ms)"]["type_config"] == {"type": "number", "format": "localized", "step": 0.01}
    # the Idle line's own shares, as its text: they add up to its idle share, and a cause that is there is never 0%
    from tracetriage.analyzers.triage.report import analyze_file

    idle_line = next(s for s in five_lines(analyze_file(SAMPLES / "smell-sync-item.json.gz")) if s.startswith("Idle:"))
    shares = dict(zip(idle.value["cause"], idle.value["share_shown"]))
    assert all(f"{cause} {shares[cause]}" in idle_line for cause in ("synchronization", "launch overhead",
                                                                    "host work", "data transfer")), (shares, idle_line)
    assert cols["share of span"]["alignment"] == "right"
    assert isinstance(cols["first experiment"]["width"], int) and idle.proto.row_height >= 65   # rows tall enough
    #                                                                                             to wrap
    assert headers(hot) == ["op", "device (ms)", "share", "calls", "kernels"]
    assert headers(ranges) == ["range", "instances", "wall (ms)", "median wall (ms)", "kernels busy (ms)", "idle (ms)",
                               "idle share", "regime", "mostly idle for"]
    assert not ranges.value[["regime", "idle_dominant"]].isna().any().any()         # no None in a cell


def test_report_prepares_the_perfetto_download():
    at = page("report", sample("smell-sync-item.json.gz"))
    at.button(key="prepare_perfetto").click().run()
    assert not at.exception
    assert at.get("download_button")
    from tracetriage.analyzers.triage.report import analyze_file

    gaps = sum(len(d.gaps) for d in analyze_file(SAMPLES / "smell-sync-item.json.gz").devices)
    assert at.caption[-1].value == annotated_caption(gaps)


# --- timeline ----------------------------------------------------------------------------------

def _timeline_spec(at) -> dict:
    return specs(at)[0]


def _rows_axis(spec: dict) -> list[str]:
    """The lane label of each row, from the y axis' label expression."""
    for layer in spec["layer"]:
        axis = layer["encoding"].get("y", {}).get("axis")
        if axis and "labelExpr" in axis:
            return json.loads(axis["labelExpr"].split("[datum.value]")[0])
    raise AssertionError("no row labels")


def test_timeline_of_a_big_trace_starts_with_the_binned_overview_a_brush_and_the_steps_and_phases_lanes():
    at = page("timeline", sample("gpt-eager.json.gz"))
    assert not at.exception
    spec = _timeline_spec(at)
    assert any(p["select"]["type"] == "interval" for p in params_of(spec).values())
    rows = _rows_axis(spec)
    assert rows[:2] == ["steps", "prefill / decode"]              # the extra lanes come first
    assert "gpu0 stream 7" in rows and rows[-1] == "gpu0 idle" and any(r.startswith("host thread") for r in rows)
    assert "shown as busy shares in 400 bins" in at.caption[1].value.replace("\\", "")
    busy, idle = spec["layer"][0], spec["layer"][1]
    assert [t["field"] for t in busy["encoding"]["tooltip"]] == ["tip", "when"]            # busy share, the bin
    # idle share and cause, and the construct that held the host
    assert [t["field"] for t in idle["encoding"]["tooltip"]] == ["lane", "tip", "when", "held"]
    assert spec["usermeta"]["embedOptions"]["renderer"] == "canvas"


def test_the_framework_constructs_a_trace_marks_are_lanes_above_the_host_threads():
    at = page("timeline", sample("steps/training-outlier.json.gz"))
    assert not at.exception
    spec = _timeline_spec(at)
    rows = _rows_axis(spec)
    assert rows[:4] == ["steps", "DataLoader", "optimizer step", "autograd backward"]
    spans = next(layer for layer in spec["layer"] if layer["encoding"].get("tooltip", [{}])[0].get("field") == "name"
                 and layer["mark"]["type"] == "rect")
    assert spans["encoding"]["tooltip"][1]["field"] == "lane"


def test_timeline_axis_is_ms_from_the_span_start_and_the_caption_keeps_the_sign():
    at = page("timeline", sample("gpt-eager.json.gz"))
    spec = _timeline_spec(at)
    x = spec["layer"][0]["encoding"]["x"]
    assert x["title"] == "ms from the start of the GPU span" and x["field"] == "start_ms"
    lo, hi = x["scale"]["domain"]
    assert lo < 0 < hi < 2000                                       # ms, host set-up before the first kernel
    assert "from −2.623 ms to 1,159.562 ms" in at.caption[1].value.replace("\\", "")


def test_a_window_in_the_url_is_the_view_on_arrival_and_draws_each_event_nested():
    at = page("timeline", sample("gpt-eager.json.gz"), **{"from": "1", "to": "1.3"})
    assert not at.exception
    spec = _timeline_spec(at)
    assert spec["layer"][0]["encoding"]["x"]["scale"]["domain"] == [1.0, 1.3]
    assert "each drawn" in at.caption[1].value
    rows = _rows_axis(spec)
    host = [i for i, r in enumerate(rows) if r.startswith("host thread") and not r.endswith("ranges")][0]
    assert rows[host + 1] == ""                                     # its nested depths: rows without a label
    marks = layer_marks(spec)
    assert "text" in marks                                          # names on the bars
    texts = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert any("limit" in layer["mark"] and "scale('x'" in layer["mark"]["limit"]["expr"] for layer in texts)
    assert at.query_params["from"] == "1" and at.query_params["to"] == "1.3"


def test_timeline_zoomed_in_carries_shapes_gap_evidence_and_the_flow_selection():
    at = page("timeline", sample("gpt-eager.json.gz"), **{"from": "1", "to": "1.3"})
    spec = _timeline_spec(at)
    tips = [t["field"] for layer in spec["layer"] for t in layer["encoding"].get("tooltip", [])]
    assert {"name", "dur", "shapes", "evidence"} <= set(tips)
    pick = params_of(spec)["pick"]
    assert pick["select"] == {"type": "point", "fields": ["id", "tid", "a0", "a1"], "on": "click", "clear": "dblclick"}
    flow = [layer for layer in spec["layer"] if layer.get("transform") and "pick.id" in layer["transform"][0]["filter"]]
    assert {layer["mark"]["type"] for layer in flow} == {"rect", "rule"}    # the selected flow's outlines and its
                                                                            # arrows
    assert all(layer["mark"].get("stroke", layer["mark"].get("color")) == "#ff00ff" for layer in flow)


def test_sync_calls_have_their_own_kind_in_the_synchronization_colour():
    from tracetriage.dashboard import charts

    at = page("timeline", sample("smell-sync-item.json.gz"), **{"from": "0", "to": "6"})
    spec = _timeline_spec(at)
    bars = next(layer for layer in spec["layer"] if layer["encoding"].get("color", {}).get("field") == "kind")
    scale = bars["encoding"]["color"]["scale"]
    colour = dict(zip(scale["domain"], scale["range"]))
    assert colour["sync call"] == charts.CAUSE_COLORS["synchronization"] != colour["launch call"]
    from tracetriage.analyzers.triage import timeline
    from tracetriage.analyzers.triage.report import analyze_file

    t = timeline.build(analyze_file(SAMPLES / "smell-sync-item.json.gz"), window_us=(0, 6000))
    kinds = {n: k for n, k in zip(t.name, t.kind)}
    assert kinds["cudaStreamSynchronize"] == "sync call" and kinds["cudaLaunchKernel"] == "launch call"


def test_search_jumps_to_the_first_match_outlines_the_matches_and_selects_it():
    at = page("timeline", sample("smell-sync-item.json.gz"))
    at.text_input(key=next(t.key for t in at.text_input if t.label == "Search events by name")).input(
        "cudaStreamSynchronize").run()
    assert not at.exception
    caption = at.caption[1].value.replace("\\", "")
    assert caption.startswith("80 events named like “cudaStreamSynchronize” (cudaStreamSynchronize); match 1 of 80")
    spec = _timeline_spec(at)
    lo, hi = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
    from tracetriage.analyzers.triage import timeline
    from tracetriage.analyzers.triage.report import analyze_file

    first = timeline.matches(analyze_file(SAMPLES / "smell-sync-item.json.gz"), "cudaStreamSynchronize")
    assert lo <= first.start_us[0] / 1e3 < first.end_us[0] / 1e3 <= hi < 5      # zoomed in around the first match
    assert "each drawn" in at.caption[2].value
    hits = [layer for layer in spec["layer"] if layer["mark"].get("stroke") == "#000000"]
    assert hits and hits[0]["mark"]["filled"] is False
    assert params_of(spec)["pick"]["value"][0]["id"] == int(at.query_params["sel"])
    assert at.query_params["q"] == "cudaStreamSynchronize"
    assert markdown_text(at).replace("\\", "").startswith("Selected: cudaStreamSynchronize (sync call")
    next(b for b in at.button if b.label == "Next").click().run()
    assert "match 2 of 80" in at.caption[1].value.replace("\\", "")


def test_a_selected_op_lists_its_launch_calls_and_kernels_with_their_queueing():
    from tracetriage.analyzers.triage import timeline
    from tracetriage.analyzers.triage.report import analyze_file

    a = analyze_file(SAMPLES / "smell-sync-item.json.gz")
    mm = int(timeline.matches(a, "aten::mm").row[3])
    at = page("timeline", sample("smell-sync-item.json.gz"), **{"from": "0", "to": "6", "sel": str(mm)})
    assert not at.exception
    assert markdown_text(at).replace("\\", "").startswith("Selected: aten::mm (cpu_op")
    steps = at.dataframe[0].value
    assert list(steps["role"]) == ["launch call", "launch call", "GPU work it queued", "GPU work it queued"]
    assert list(steps["name"][:2]) == ["cudaMemsetAsync", "cuLaunchKernelEx"]           # cuBLAS's workspace, its GEMM
    assert steps["name"].iloc[3].startswith("nvjet") and steps["queued"].iloc[3].endswith("µs")
    assert headers(at.dataframe[0]) == ["role", "name", "kind", "lane", "at (ms)", "duration", "queued"]


def test_timeline_window_of_a_small_trace_is_drawn_raw_from_the_start():
    at = page("timeline", sample("smell-sync-item.json.gz"))
    assert not at.exception
    assert "each drawn" in at.caption[1].value


# --- ranks -------------------------------------------------------------------------------------

@pytest.mark.slow   # ~6 s on a 2-core machine (the page's pool of processes starts by spawn under the test runner)
def test_a_run_directory_opens_on_the_ranks_page_with_the_straggler_its_steps_and_a_link_per_rank(monkeypatch):
    monkeypatch.setenv(PATH_ENV, str(SAMPLES / "ddp"))
    at = app_test().from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.title[0].value == "Ranks"
    from tracetriage.analyzers.runs.pool import report_object
    from tracetriage.analyzers.voice import ranks as rank_words

    rr = report_object(SAMPLES / "ddp")
    assert plain(rank_words.straggler_line(rr.straggler)) in markdown_text(at)
    table = at.dataframe[0]
    assert list(table.value["rank"]) == [0, 1] and list(table.value["file"]) == ["rank0.json.gz", "rank1.json.gz"]
    assert headers(table) == ["rank", "idle share", "mostly idle for", "kernels busy (ms)", "collectives (ms)",
                              "per step (ms)", "host per step (ms)"]
    assert list(table.value["rank_label"]) == ["0", "1 (straggler)"]
    chart = specs(at)[0]
    assert "collective time per step, by rank" in [h.value for h in at.subheader]
    assert chart["layer"][0]["mark"]["type"] == "line" and chart["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    links = [link for link in at.get("page_link")]
    assert [link.proto.label for link in links] == ["Rank 0's timeline", "Rank 1's timeline (the straggler)"]
    assert [link.proto.query_string for link in links] == ["trace=directory%2Frank0.json.gz",
                                                            "trace=directory%2Frank1.json.gz"]
    assert at.query_params["run"] == "directory/."


@pytest.mark.slow   # a second run's ranks analysed in the page (~15 s of a core); the test above keeps the page fast
def test_the_ranks_page_without_a_run_lists_the_sample_runs():
    at = page("ranks", run=False)
    at.query_params["run"] = "samples/ddp-skewed"
    at.run()
    assert not at.exception
    assert at.selectbox(key="ranks_run").value.key == "samples/ddp-skewed"
    assert "Straggler" in markdown_text(at)


# --- roofline ----------------------------------------------------------------------------------

def test_roofline_is_log_log_with_the_measured_ridge_a_dtype_switch_and_a_formatted_table():
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
    assert headers(at.dataframe[0]) == ["op", "input shapes", "device (ms)", "FLOPs", "bytes", "FLOP/byte", "TFLOP/s",
                                        "GB/s", "bound", "of its peak"]
    at.selectbox(key="roof_dtype").set_value("fp32").run()
    assert "fp32: 50.9 TFLOP/s" in at.caption[0].value.replace("\\", "")


# --- diff --------------------------------------------------------------------------------------

def test_diff_of_the_pair_in_the_url_explains_the_change_per_op_and_draws_both_timelines_on_one_axis():
    at = page("diff", before=sample("chain-eager-large.json.gz"), after=sample("chain-triton-large.json.gz"))
    assert not at.exception
    text = markdown_text(at).replace("\\", "")
    assert "Explained by bytes" in text and "800 → 200 launch calls" in text
    measures = at.dataframe[0].value
    assert list(measures["measure"]) == ["GPU span", "kernels busy", "idle", "launch calls", "kernels", "bytes"]
    assert list(measures.iloc[3]) == ["launch calls", "800", "200", "4.00× fewer"]
    assert measures.iloc[0]["change"] == "4.44× speedup" and not (measures == "None").any().any()
    ops = at.dataframe[1].value
    assert list(ops["op"])[:4] == ["aten::mul", "aten::sigmoid", "aten::add", "_fused_chain_kernel"]
    assert ops["change_ms"].iloc[0] < 0 and ops["calls"].iloc[0] == "400 → —"
    assert headers(at.dataframe[1]) == ["op", "before (ms)", "after (ms)", "change (ms)", "calls", "kernels", "bytes"]
    idle_chart, before, after = specs(at)
    assert idle_chart["encoding"]["color"]["field"] == "cause"
    assert before["title"] == "before: chain-eager-large.json.gz"
    assert after["title"] == "after: chain-triton-large.json.gz"
    domain = [next(layer["encoding"]["x"] for layer in s["layer"] if "x" in layer["encoding"])["scale"]["domain"]
              for s in (before, after)]
    assert domain[0] == domain[1]


def test_coming_from_a_diff_the_trace_in_view_is_the_pairs_before():
    # a session that had another trace in view opens a diff: What-if (and every page) then shows the pair's before
    at = page("diff", sample("smell-sync-item.json.gz"), before=sample("chain-eager-large.json.gz"),
              after=sample("chain-triton-large.json.gz"))
    assert not at.exception
    assert at.query_params["trace"] == "samples/chain-eager-large.json.gz"
    assert at.session_state["trace_entry"].key == "samples/chain-eager-large.json.gz"   # (state.CURRENT)


def test_diff_waits_for_both_traces():
    at = page("diff", sample("chain-eager-large.json.gz"))
    assert not at.exception
    assert (at.selectbox(key="diff_before:samples/chain-eager-large.json.gz").value.key
            == "samples/chain-eager-large.json.gz")
    assert not at.dataframe and at.query_params["before"] == "samples/chain-eager-large.json.gz"


# --- safety ------------------------------------------------------------------------------------

def test_no_trace_string_reaches_the_page_as_html(tmp_path, monkeypatch):
    evil_k, evil_op = "<script>alert(1)</script>", "<img src=x onerror=alert(1)>"
    launches = [kf.Launch(op_start=i * 50_000, op_end=i * 50_000 + 8_000, call_start=i * 50_000 + 1_000,
                          call_end=i * 50_000 + 5_000, gpu_start=i * 50_000 + 6_000, gpu_end=i * 50_000 + 16_000,
                          kernel=evil_k, op=evil_op) for i in range(10)]
    kf.write(tmp_path / "evil.json", kf.document(kf.events_for(launches)))
    monkeypatch.setenv(PATH_ENV, str(tmp_path / "evil.json"))
    for name in ("library", "report", "timeline", "roofline", "whatif"):
        at = page(name, "directory/evil.json", q="onerror")
        assert not at.exception
        for m in at.markdown:
            assert not m.proto.allow_html
            assert not re.search(r"(?<!\\)<", m.value), m.value   # every < escaped: text, not a tag
        for c in at.caption:
            assert not re.search(r"(?<!\\)<", c.value), c.value
        assert not at.get("html")
    text = markdown_text(page("report", "directory/evil.json"))
    assert plain(evil_op) in text      # shown, as text


def test_no_dashboard_module_asks_streamlit_to_render_html():
    sources = [p.read_text() for p in (ROOT / "dashboard").rglob("*.py")]
    assert sources and not any("unsafe_allow_html" in s or "st.html(" in s or "components.html" in s for s in sources)


# --- what-if ------------------------------------------------------------------------------

def test_whatif_draws_each_levers_predicted_span_as_a_bar_with_its_value_best_first_with_its_assumption():
    from tracetriage.analyzers.triage.report import analyze_file

    an = analyze_file(SAMPLES / "smell-sync-item.json.gz")
    w = an.levers.all
    at = page("whatif", sample("smell-sync-item.json.gz"))
    assert not at.exception
    bars = specs(at)[0]
    assert bars["title"] == "predicted span per lever"
    assert bars["layer"][0]["encoding"]["y"]["sort"] == [p.lever for p in w.levers]
    assert bars["layer"][0]["encoding"]["x"]["field"] == "predicted_ms"
    # the values at the bars' ends: inside a long bar, just past a short one
    inside, outside = bars["layer"][1], bars["layer"][2]
    assert inside["mark"]["align"] == "right" and outside["mark"]["align"] == "left"
    assert all(layer["mark"]["type"] == "text" and layer["encoding"]["text"]["field"] == "label"
               and layer["encoding"]["x"]["field"] == "predicted_ms" for layer in (inside, outside))
    assert bars["layer"][3]["mark"]["type"] == "rule"                     # the traced span
    # the axis is the span the predictions are of, tight to the longest bar or the traced span's rule
    x = bars["layer"][0]["encoding"]["x"]
    assert x["title"] == "predicted span, host and GPU (ms)"
    assert x["scale"]["domain"] == [0, max(w.baseline_ns, *(p.predicted_ns for p in w.levers)) / 1e6]
    # one baseline, named: the traced span (host and GPU) the levers are shares of, beside the report's GPU span
    assert at.caption[1].value == plain(whatif_caption(w.baseline_ns, w.replay_ns))
    assert "host and GPU" in at.caption[1].value and "GPU span" in at.caption[2].value
    text = markdown_text(at)
    captions = [c.value for c in at.caption]
    for p in w.levers:
        assert plain(lever_line(p.lever, p.predicted_ns, p.predicted_ratio, p.saving_ns,
                                            w.baseline_ns)) in text
        assert plain(assumption(p.assumption)) in captions
    assert "kernels\\_2x\\: 34\\.6 ms predicted, 0\\.62 of the traced span \\(−38%\\)" in text


def test_whatif_says_why_its_traced_span_is_not_the_reports_span():
    at = page("whatif", sample("smell-sync-item.json.gz"))
    note = at.caption[2].value.replace("\\", "")
    assert note.startswith("The traced span (55.5 ms) runs from the first traced event to the last, host work included")
    assert "3.30 ms more than the report's GPU span (52.2 ms)" in note


def _timeline_specs(at):
    return [s for s in specs(at) if str(s.get("title", "")).startswith(("measured:", "predicted under"))]


def test_whatif_draws_the_predicted_timeline_below_the_measured_one_on_one_time_axis():
    at = page("whatif", sample("smell-sync-item.json.gz"))
    measured, predicted = _timeline_specs(at)
    assert measured["title"] == "measured: GPU activities as traced (traced span 55.5 ms)"
    assert predicted["title"] == "predicted under kernels_2x (span 34.6 ms)"      # the best lever first
    axes = [next(layer["encoding"]["x"] for layer in s["layer"] if "y" in layer["encoding"])
            for s in (measured, predicted)]
    assert axes[0]["scale"]["domain"] == axes[1]["scale"]["domain"] and axes[0]["scale"]["domain"][0] == 0
    y = [next(layer["encoding"]["y"] for layer in s["layer"] if "axis" in layer["encoding"].get("y", {}))
         for s in (measured, predicted)]
    assert y[0]["axis"]["minExtent"] == y[1]["axis"]["minExtent"] == y[0]["axis"]["maxExtent"]
    assert all("cause" not in json.dumps(s) for s in (measured, predicted))    # GPU lanes only, no idle lanes
    assert "720 GPU activities, each drawn" in at.caption[-1].value.replace("\\", "")
    at.selectbox(key="whatif_lever:samples/smell-sync-item.json.gz").set_value("remove_syncs").run()
    assert not at.exception
    assert _timeline_specs(at)[1]["title"] == "predicted under remove_syncs (span 47.3 ms)"
    assert at.query_params["lever"] == "remove_syncs"


def test_whatif_of_a_big_trace_bins_both_timelines_like_the_timeline_overview():
    at = page("whatif", sample("gpt-eager.json.gz"), lever="cuda_graphs")
    assert not at.exception
    measured, predicted = _timeline_specs(at)
    for s in (measured, predicted):
        assert s["layer"][0]["encoding"]["color"]["field"] == "busy"          # busy shares in bins
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.model.units import duration_ns
    from tracetriage.analyzers.whatif.predict import predict

    want = predict(load(SAMPLES / "gpt-eager.json.gz"), ["cuda_graphs"]).levers[0].predicted_ns
    assert predicted["title"] == f"predicted under cuda_graphs (span {duration_ns(want)})"   # the replay's own span
    assert "shown as busy shares in 400 bins" in at.caption[-1].value.replace("\\", "")


def test_whatif_of_a_cpu_only_trace_says_there_is_nothing_to_replay(tmp_path, monkeypatch):
    ops = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
           for i in range(5)]
    kf.write(tmp_path / "cpu.json", json.dumps({"traceEvents": ops}))
    monkeypatch.setenv(PATH_ENV, str(tmp_path))
    at = page("whatif", "directory/cpu.json")
    assert not at.exception
    assert at.info[0].value == no_whatif()
    assert not at.get("vega_lite_chart")


# --- drills and predictions --------------------------------------------------------------------

@pytest.fixture
def drill_env(tmp_path, monkeypatch):
    """A drill log of the test's own; the drills' traces come from the session's cache (made once)."""
    db = tmp_path / "log.db"
    monkeypatch.setenv("TRACETRIAGE_DB", str(db))
    return db


def _pick(at, drill_id: str):
    from tracetriage.dashboard import data

    at.selectbox(key="drill_pick").set_value(next(d for d in data.drills() if d.id == drill_id)).run()
    return at


def _grade_button(at):
    return next(b for b in at.button if b.label == "Grade")


def test_drill_page_shows_the_drills_timeline_without_the_causes_of_its_gaps(drill_env):
    at = _pick(page("practice"), "M02.03-c")
    assert not at.exception
    chart = specs(at)[0]
    rows = _rows_axis(chart)
    assert any(row.startswith("gpu") for row in rows) and not any(row.endswith("idle") for row in rows)
    assert "cause" not in json.dumps(chart)          # no idle lane, no shading, no cause legend
    assert [t.label for t in at.text_input] == ["pattern", "cause", "experiment"]


def test_grading_a_drill_shows_the_score_and_each_parts_feedback_and_records_the_attempt(drill_env):
    from tracetriage.drills import bank, grader
    from tracetriage.drills.predictions import Log

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
    from tracetriage.drills.predictions import Log

    at = _pick(page("practice"), "M01.05-a")
    at.text_input(key="answer_M01.05-a_regime").input("compute")
    at.text_input(key="answer_M01.05-a_achieved").input("lots")
    _grade_button(at).click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [plain("error: " + answer_not_a_number("achieved", "lots"))]
    assert Log(drill_env).attempts() == []


def test_prediction_log_is_a_table_with_a_log_log_calibration_plot_and_the_2x_band(drill_env):
    from tracetriage.drills import predictions as pr

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
    assert "measured/predicted" in headers(at.dataframe[0])
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
    from tracetriage.drills import bank, evidence

    at = _pick(page("practice"), "M02.01-a")
    assert not at.exception
    f = evidence.facts(bank.get("M02.01-a").trace_path())
    ops = at.dataframe[0].value
    assert list(ops["name"]) == [h["name"] for h in f.hotspots]
    assert plain(span_line(f.span_ms, f.kernel_busy_ms, f.idle_share)) in markdown_text(at)
    assert "cause" not in json.dumps(specs(at)[0])                      # the key's bound is a cause here


def test_a_ladder_drill_shows_the_lines_drill_show_prints_and_no_answer(drill_env):
    from tracetriage.drills import bank
    from tracetriage.drills.ladder import show

    at = _pick(page("practice"), "M03.02-a")
    assert not at.exception
    code = "\n".join(c.value for c in at.code)
    d = bank.get("M03.02-a")
    assert code == "\n".join(show.lines(d))
    assert "worth" not in code and [t.label for t in at.text_input] == ["strided", "sector_bytes", "verdict"]


def test_a_page_run_installs_its_script_as_main_which_the_fixture_undoes():
    # (test_golden's multi-rank report once spawned workers that re-ran an AppTest script as __main__ and died)
    import sys

    before = sys.modules["__main__"]
    page("roofline", sample("smell-sync-item.json.gz"))
    assert sys.modules["__main__"] is not before         # Streamlit's doing: _main_module_restored puts it back


def test_after_a_page_ran_main_is_no_longer_the_apptest_script():
    import sys

    path = getattr(sys.modules["__main__"], "__file__", None)
    assert not (path and Path(path).is_file() and "tracetriage.dashboard.views" in Path(path).read_text())


def test_zoom_out_takes_the_window_out_of_the_url_at_once():
    at = page("timeline", sample("gpt-eager.json.gz"), **{"from": "1", "to": "1.3"})
    at.button(key="tl_reset").click().run()
    assert not at.exception
    assert "from" not in at.query_params and "to" not in at.query_params     # the whole trace: no window
    assert at.query_params["trace"]                                          # still this trace's view
    lo, hi = _timeline_spec(at)["layer"][0]["encoding"]["x"]["scale"]["domain"]
    assert lo < 0 and hi > 1.3


# --- every table: one number of decimals a column, the CLI's shares, the page's width ---------------------------

def _every_table() -> list[tuple[str, object]]:
    """(where, table) for each table the pages show on traces that fill them (the timeline's flow table too)."""
    out = []
    for where, at in [("report sync", page("report", sample("smell-sync-item.json.gz"))),
                      ("report gpt", page("report", sample("gpt-eager.json.gz"))),
                      ("report dataloader", page("report", sample("realworld/dataloader_cnn--before.json.gz"))),
                      ("roofline", page("roofline", sample("gpt-eager.json.gz"))),
                      ("ranks", page("ranks", run="samples/ddp")),
                      ("diff", page("diff", before=sample("chain-eager-large.json.gz"),
                                    after=sample("chain-triton-large.json.gz"))),
                      ("timeline", page("timeline", sample("smell-sync-item.json.gz"), **{"from": "2.6", "to": "4.4",
                                                                                          "sel": "29"}))]:
        assert not at.exception, where
        out += [(where, t) for t in at.dataframe]
    return out


@pytest.mark.slow   # seven page runs, a run directory's ranks among them (~8 s of a core); each page has its fast test
def test_every_table_has_one_number_of_decimals_a_column_the_clis_shares_and_fits_the_page_at_1280():
    from tracetriage.dashboard.tables import FIT_PX, SELECT_PX

    tables = _every_table()
    assert {w for w, _ in tables} >= {"report sync", "report gpt", "report dataloader", "roofline", "ranks", "diff",
                                      "timeline"}
    for where, t in tables:
        cols = shown_columns(t)
        numbers = [(h, c["type_config"]) for h, c in cols if c.get("type_config", {}).get("type") == "number"]
        # Streamlit trims zeros where a number column has no step, and its percent, bytes and compact formats too
        assert all(tc.get("format") == "localized" and tc.get("step") for _, tc in numbers), (where, numbers)
        durations = {tc["step"] for h, tc in numbers if h.endswith("(ms)")}
        assert len(durations) <= 1, (where, "durations with different decimals in one table", durations)
        for h, c in cols:         # a share column is the CLI's text: '13%', '<1%', never '0.19%'
            if "share" in h:
                assert all(re.fullmatch(r"<1%|\d[\d,]*%|", v) for v in t.value[_name_of(t, h)]), (where, h)
        widths = [c["width"] for _, c in cols]
        assert all(isinstance(w, int) for w in widths), (where, widths)
        picker = SELECT_PX if t.proto.selection_mode else 0
        assert sum(widths) + picker <= FIT_PX, (where, headers(t), widths)


def _name_of(table, header: str) -> str:
    config = json.loads(table.proto.columns)
    return next(n for n in table.proto.column_order if config[n].get("label", n) == header)


def test_a_tables_figure_is_rounded_as_the_cli_writes_it_not_cut_at_its_decimals():
    """Streamlit cuts a number to its column's step (1.986 ms read '1.98'); the table hands it the figure the CLI
    and the idle bar write ('1.99 ms'), so that the three agree."""
    from tracetriage.analyzers.model import units
    from tracetriage.analyzers.model.verdicts import Cause
    from tracetriage.analyzers.triage.report import analyze_file

    a = analyze_file(SAMPLES / "smell-sync-item.json.gz")
    launch_ms = a.by_cause_ns[Cause.LAUNCH_OVERHEAD] / 1e6
    assert f"{launch_ms:.2f}" != f"{int(launch_ms * 100) / 100:.2f}"      # this trace's figure is one a cut changes
    idle = page("report", sample("smell-sync-item.json.gz")).dataframe[0].value.set_index("cause")
    assert idle.loc["launch overhead", "idle_ms"] == float(f"{launch_ms:.2f}") == 1.99
    assert "1.99 ms" in units.duration_ns(a.by_cause_ns[Cause.LAUNCH_OVERHEAD])
