"""The dashboard shows what the framework, steps and inference analyses found: which construct held the host in
each idle bin and gap (the idle lane's tooltips), the framework table, the steps lane (found steps, set-up
marked, the outlier highlighted with its cause), and prefill / decode found from shapes (the phase lane and the
Report's phase table). Real traces from traces/, read back from the chart specs and data the browser gets; the
browser itself hovers them in test_dashboard_e2e.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lazy_import import Lazy, skip_unless_installed

skip_unless_installed("streamlit")
from test_dashboard_app import (  # noqa: E402,F401  (the fixtures: __main__ restored after each run, a drill's log)
    _main_module_restored,
    _pick,
    _rows_axis,
    drill_env,
    headers,
    markdown_text,
    page,
    shown_columns,
)
from tracetriage.analyzers.model.verdicts import CONSTRUCTS, Construct  # noqa: E402
from tracetriage.analyzers.triage import idle_constructs, timeline  # noqa: E402
from tracetriage.analyzers.triage.report import analyze_file, analyze_trace  # noqa: E402

# pandas and pyarrow (~0.7 CPU-s) at the first test that asks, not at collection in every worker (tests/lazy_import.py)
charts, data, pa = Lazy("tracetriage.dashboard.charts"), Lazy("tracetriage.dashboard.data"), Lazy("pyarrow")

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
DATALOADER = "realworld/dataloader_cnn--before.json.gz"     # 82% of its idle inside the DataLoader's __next__
OUTLIER = "steps/training-outlier.json.gz"                  # step 7 stalls 41.9 ms in the DataLoader
GENERATE = "generate/generate-gpt2-b1-eager.json.gz"        # HF generate: no ranges, prefill and decode from shapes


def _sample(name: str) -> str:
    return f"samples/{name}"


def _spec(at) -> dict:
    return json.loads(at.get("vega_lite_chart")[0].proto.spec)


def _layers(at) -> list[tuple[dict, object]]:
    """(layer spec, its data as a frame) of each layer of the page's first chart."""
    el = at.get("vega_lite_chart")[0]
    spec = json.loads(el.proto.spec)
    frames = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in el.proto.datasets}
    return [(layer, frames.get((layer.get("data") or {}).get("name"))) for layer in spec["layer"]]


def _layer_with_tooltip(at, field: str) -> tuple[dict, object]:
    return next((layer, d) for layer, d in _layers(at)
                if field in [t.get("field") for t in layer["encoding"].get("tooltip", [])])


def _table(at, header: str):
    return next(t for t in at.dataframe if header in headers(t))


# --- which construct held the host while the GPU idled -----------------------------------------------------

def test_each_gap_is_given_the_construct_the_framework_charged_it_to_in_the_timelines_gap_order():
    a = analyze_file(TRACES / OUTLIER)
    for window in (None, (40_000.0, 100_000.0)):
        t = timeline.build(a, window_us=window)
        held = idle_constructs.gap_constructs(a, window)
        assert len(held) == len(t.gap_start_us) > 0
    t = timeline.build(a)
    held = idle_constructs.gap_constructs(a)
    longest = int(np.argmax(t.gap_end_us - t.gap_start_us))              # step 7's 41.9 ms stall
    assert held[longest] is Construct.DATALOADER
    assert a.framework.gap_construct[0][longest] == CONSTRUCTS.index(Construct.DATALOADER)


def test_a_bins_idle_by_construct_adds_up_to_its_idle_by_cause():
    a = analyze_file(TRACES / DATALOADER)
    ov = timeline.overview(a, bins=200)
    held = idle_constructs.bin_constructs(a, ov.edges_us)
    assert held.shape == (len(ov.idle_devices), len(CONSTRUCTS), 200)
    np.testing.assert_allclose(held.sum(axis=1), ov.idle.sum(axis=1), atol=1e-9)
    dl = held[0, CONSTRUCTS.index(Construct.DATALOADER)].sum() / held[0].sum()
    assert dl == pytest.approx(a.framework.idle_share(Construct.DATALOADER), abs=0.02)


def test_the_overviews_idle_bins_say_which_construct_held_the_host_and_what_it_did():
    at = page("timeline", _sample(DATALOADER))
    assert not at.exception
    layer, idle = _layer_with_tooltip(at, "held")
    tip = {t["field"]: t.get("title") for t in layer["encoding"]["tooltip"]}
    assert tip["held"] == "host was in" and "tip" in tip
    held = idle["held"]
    dl = held.str.startswith("the DataLoader's __next__: 8 calls; 82% of all idle (")
    assert dl.sum() > len(idle) / 2                                     # most idle bins are the DataLoader's
    assert held.str.endswith("of this bin's idle)").all()
    frames = data.timeline_overview(analyze_file(TRACES / DATALOADER), bins=400)
    assert ((frames.idle["construct"] == "dataloader") == dl.to_numpy()).all()


def test_a_zoomed_in_gap_says_the_construct_around_the_host_call_that_explains_it():
    at = page("timeline", _sample(OUTLIER), **{"from": "55", "to": "60"})  # inside step 7's stall
    assert not at.exception
    assert "each drawn" in at.caption[1].value
    layer, gaps = _layer_with_tooltip(at, "evidence")
    assert [t["field"] for t in layer["encoding"]["tooltip"]][-1] == "held"
    assert gaps["held"].tolist() == ["the DataLoader's __next__: 12 calls; 66% of all idle"]


def test_the_optimizer_lane_and_its_idle_name_the_optimizers_class_and_its_launches():
    a = analyze_file(TRACES / OUTLIER)
    lanes = {x.lane: x for x in data.framework_lanes(a)}
    assert set(lanes["optimizer step"].details) == {"AdamW's step (Optimizer.step): 96 launches in 12 calls; "
                                                    "6% of all idle"}


def test_the_report_shows_the_framework_table_with_units_most_idle_first():
    at = page("report", _sample(DATALOADER))
    assert not at.exception
    table = _table(at, "construct")
    assert headers(table) == ["construct", "idle (ms)", "share of idle", "mostly idle for", "launches", "calls",
                              "host time (ms)", "marked by"]
    cols = dict(shown_columns(table))
    assert cols["idle (ms)"]["type_config"]["format"] == "localized"
    assert cols["share of idle"]["alignment"] == "right"           # the CLI's text ('82%', '<1%'), as numbers align
    f = table.value
    assert f["name"].tolist()[:2] == ["the DataLoader's __next__", "your own code"]
    assert f["idle_share"].iloc[0] == "82%" and f["idle_dominant"].iloc[0] == "host work"
    assert "SGD's step (Optimizer.step)" in f["name"].tolist()
    assert f.loc[f["construct"] == "user", "host_ms"].isna().all()       # the framework measures no host time there
    assert any(c.value.startswith("Whose code made the idle") for c in at.caption)


def test_a_trace_whose_idle_is_all_the_users_own_code_says_so_instead_of_a_one_row_table():
    at = page("report", _sample(GENERATE))
    assert not at.exception
    assert not any("marked by" in headers(t) for t in at.dataframe)
    assert any(c.value.replace("\\", "").startswith("No framework construct") for c in at.caption)


# --- the steps lane ------------------------------------------------------------------------------------------

def _spans(at):
    return _layer_with_tooltip(at, "detail")


def test_the_steps_lane_draws_the_found_steps_and_highlights_the_outlier_with_its_cause():
    at = page("timeline", _sample(OUTLIER))
    assert not at.exception
    rows = _rows_axis(_spec(at))
    assert rows[:2] == ["steps", "DataLoader"]
    layer, spans = _spans(at)
    assert [t["field"] for t in layer["encoding"]["tooltip"]][-1] == "detail"
    colour = dict(zip(layer["encoding"]["color"]["scale"]["domain"], layer["encoding"]["color"]["scale"]["range"]))
    assert colour["outlier step"] == charts.SPAN_COLORS["outlier step"] != colour["step"]
    steps = spans[spans["lane"] == "steps"]
    assert steps["name"].tolist() == [f"step {i}" for i in range(12)]    # numbered as the report numbers them
    assert steps.loc[steps["kind"] == "outlier step", "name"].tolist() == ["step 7"]
    seven = steps.loc[steps["name"] == "step 7", "detail"].iloc[0]
    assert seven.startswith("46.8 ms wall, kernels busy 476.8 µs, idle 46.4 ms (host work 43.2 ms")
    assert "the outlier: step 7 took 5.7× the median (46.8 ms): a 41.9 ms host stretch in the DataLoader's __next__" \
        in seven
    assert steps.loc[steps["name"] == "step 3", "detail"].iloc[0].startswith("7.93 ms wall")


def test_a_step_that_pays_set_up_is_marked_in_the_steps_lane():
    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    assert [s.index for s in a.steps.setup_steps] == [0]
    lane = data.steps_lane(a)
    assert lane.kinds[0] == data.SETUP_STEP and set(lane.kinds[1:]) == {data.STEP}
    assert "pays one-time set-up" in lane.details[0] and "set-up" not in lane.details[1]
    at = page("timeline", _sample("smell-sync-item.json.gz"))
    _, spans = _spans(at)
    assert spans.loc[spans["kind"] == "setup step", "name"].tolist() == ["step 0"]


def test_without_a_step_analysis_the_steps_lane_is_the_profiler_step_ranges():
    from dataclasses import replace

    a = analyze_file(TRACES / DATALOADER)
    lane = data.steps_lane(replace(a, steps=None))
    ranges = next(r for r in a.ranges if r.name.startswith("ProfilerStep"))
    assert lane.names == tuple(f"step {i + 1}" for i in range(ranges.count))
    assert lane.details == ()


# --- prefill and decode from shapes -------------------------------------------------------------------------

def test_a_trace_without_ranges_gets_a_phase_lane_from_its_shapes_each_step_with_its_phases_latency():
    a = analyze_file(TRACES / GENERATE)
    assert a.phases.found_from.value == "shapes" and not a.ranges
    at = page("timeline", _sample(GENERATE))
    assert not at.exception
    assert _rows_axis(_spec(at))[:2] == ["steps", "prefill / decode"]
    _, spans = _spans(at)
    ph = spans[spans["lane"] == "prefill / decode"]
    assert ph["kind"].tolist() == ["prefill"] + ["decode"] * 31
    assert ph["detail"].iloc[0] == ("prefill step 0, 9.52 ms; time to first token 10.3 ms; prefill is "
                                    "overhead-bound")
    assert ph["detail"].iloc[1] == ("decode step 1, 5.63 ms; per token: median 4.32 ms, p90 4.79 ms over 31 steps; "
                                    "decode is overhead-bound")


def test_the_report_shows_the_phase_table_for_a_trace_without_ranges():
    a = analyze_file(TRACES / GENERATE)
    at = page("report", _sample(GENERATE))
    assert not at.exception
    table = _table(at, "phase")
    assert headers(table) == ["phase", "steps", "latency", "median (ms)", "p90 (ms)", "kernels busy (ms)",
                              "idle share", "mostly idle for", "regime"]
    f = table.value
    assert f["latency"].tolist() == ["time to first token", "per token"] and f["steps"].tolist() == [1, 31]
    # as the table shows them: its two decimals, rounded as the CLI rounds
    assert f["median_ms"].tolist() == [float(f"{a.phases.ttft_us / 1e3:.2f}"),
                                       float(f"{a.phases.per_token_median_us / 1e3:.2f}")]
    assert f["p90_ms"].tolist() == [float(f"{a.phases.ttft_p90_us / 1e3:.2f}"),
                                    float(f"{a.phases.per_token_p90_us / 1e3:.2f}")]
    assert f["regime"].tolist() == ["overhead", "overhead"]
    captions = [c.value.replace("\\", "") for c in at.caption]
    assert any(c.startswith("Found from the ops' input shapes (a 128-token prompt, batch 1; no named ranges)")
               for c in captions)
    assert "Time to first token 10.3 ms" in markdown_text(at).replace("\\", "")


def test_phases_from_named_ranges_keep_their_lane_and_table_and_say_their_ranges():
    at = page("report", _sample("gpt-eager.json.gz"))
    f = _table(at, "phase").value
    assert f["phase"].tolist() == ["prefill", "decode"] and f["regime"].tolist() == ["compute", "overhead"]
    assert any(c.value.replace("\\", "").startswith("From the named ranges prefill and decode_step")
               for c in at.caption)
    lane = data.prefill_decode_lane(analyze_file(TRACES / "gpt-eager.json.gz"))
    assert not lane.found and lane.details[0].startswith("prefill, 18.2 ms; time to first token 18.8 ms (median over "
                                                         "2 requests")


def test_a_mixed_step_of_continuous_batching_is_drawn_as_mixed(tmp_path):
    from test_steps import Timeline, forward

    tl = Timeline()
    forward(tl, None, 128)
    for i in range(12):
        forward(tl, None, 4 + 64 if i == 6 else 4)
    a = analyze_trace(tl.write(tmp_path / "engine.json"))
    lane = data.prefill_decode_lane(a)
    assert lane.found and lane.kinds[7] == "mixed" and lane.kinds.count("decode") == 11
    assert "prefill and decode tokens in one batch" in lane.details[7]
    assert charts.SPAN_COLORS["mixed"]


# --- a drill's timeline keeps what the analysis found to itself ------------------------------------------

def test_a_drills_timeline_leaves_out_the_phases_found_the_marked_steps_and_the_tooltips_of_findings():
    a = analyze_file(TRACES / GENERATE)
    lo, hi = data.timeline_extent(a)
    shown = data.without_causes(data.timeline_overview(a, (lo, hi), bins=100))
    assert "prefill / decode" not in [r.lane for r in shown.rows]
    assert set(shown.spans["row"]) <= set(range(len(shown.rows)))
    assert (shown.spans["detail"] == "").all() and set(shown.spans["kind"]) == {"step"}
    b = analyze_file(TRACES / OUTLIER)
    bars = data.without_causes(data.timeline_bars(b, (40, 60)))
    assert "outlier step" not in set(bars.spans["kind"]) and (bars.spans["detail"] == "").all()
    assert [r.lane for r in bars.rows][0] == "steps"


def test_an_incident_drill_shows_its_steps_but_not_the_phases_and_latencies_it_asks_for(drill_env):  # noqa: F811
    at = _pick(page("practice"), "M00.04-d")                 # HF generate, ranges stripped: phases from shapes
    assert not at.exception
    rows = _rows_axis(_spec(at))
    assert rows[0] == "steps" and "prefill / decode" not in rows
    sent = b"".join(d.data.data for d in at.get("vega_lite_chart")[0].proto.datasets)
    for said in ("time to first token", "per token", "outlier", "of all idle"):
        assert said.encode() not in sent, said
