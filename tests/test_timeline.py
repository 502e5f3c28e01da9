"""The timeline arrays a dashboard draws: bars per lane, gaps with causes, windows."""
from pathlib import Path

from analyzers import timeline
from analyzers.report import analyze_file

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
