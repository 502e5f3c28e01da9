"""The timeline arrays a dashboard draws: bars per lane, gaps with causes, windows."""
from pathlib import Path

from analyzers.triage import timeline
from analyzers.triage.report import analyze_file

TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_timeline_has_gpu_and_host_lanes_and_every_gap_with_its_cause():
    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    t = timeline.build(a)
    assert any(l.startswith("gpu0 stream") for l in t.lanes)
    assert any(l.startswith("host thread") for l in t.lanes)
    assert len(t.gap_cause) == sum(len(d.gaps) for d in a.devices)
    assert "synchronization" in t.gap_cause
    assert (t.end_us >= t.start_us).all() and (t.gap_end_us > t.gap_start_us).all()


def test_a_window_keeps_only_what_overlaps_it():
    a = analyze_file(TRACES / "gpt-graphs.json.gz")
    t = timeline.build(a, window_us=(1000.0, 2000.0))
    assert len(t.start_us) > 0
    assert (t.end_us > 1000.0).all() and (t.start_us < 2000.0).all()
    assert (t.gap_end_us > 1000.0).all() and (t.gap_start_us < 2000.0).all()


def test_records_are_plain_dicts_for_a_chart():
    a = analyze_file(TRACES / "smell-host-sleep.json.gz")
    recs = timeline.build(a, max_bars=50).records()
    assert {"lane", "start_us", "end_us", "kind", "name"} <= set(recs[0])
    assert sum(1 for r in recs if r["kind"] != "idle") <= 50
    assert any(r["kind"] == "idle" and r["name"] == "host_work" for r in recs)


def test_the_overview_bins_hold_exactly_the_analysis_idle_time_by_cause():
    import numpy as np

    from analyzers.analyses.idle import CAUSES

    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    ov = timeline.overview(a, bins=300)
    width_us = np.diff(ov.edges_us)
    for j, c in enumerate(CAUSES):
        binned_us = float((ov.idle[0, j] * width_us).sum())
        assert abs(binned_us - a.by_cause_ns[c] / 1e3) < 0.01, c
    assert ((ov.busy >= 0) & (ov.busy <= 1 + 1e-9)).all()
    stream = ov.lanes.index("gpu0 stream 7")
    assert abs(float((ov.busy[stream] * width_us).sum()) - (a.kernel_busy_ns + a.copy_ns) / 1e3) < 0.01


def test_count_says_how_many_events_a_window_would_draw():
    a = analyze_file(TRACES / "gpt-graphs.json.gz")
    assert timeline.count(a, (1000.0, 2000.0)) == len(timeline.build(a, window_us=(1000.0, 2000.0)).start_us)
    lo, hi = timeline.extent_us(a)
    assert timeline.count(a, (lo, hi)) == timeline.overview(a, bins=10).events


def test_bars_carry_their_input_shapes_and_gaps_the_call_that_explains_them():
    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    t = timeline.build(a)
    mm = [s for n, k, s in zip(t.name, t.kind, t.shapes) if n == "aten::mm" and k == "cpu_op"]
    assert mm and all("bf16" in s and s.startswith("[") for s in mm)
    sync = [h for c, h in zip(t.gap_cause, t.gap_host_call) if c == "synchronization"]
    assert sync and set(sync) == {"cudaStreamSynchronize"}
