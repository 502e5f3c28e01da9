"""The timeline arrays a dashboard draws: bars per lane, gaps with causes, windows."""
from pathlib import Path

from tracetriage.analyzers.triage import timeline
from tracetriage.analyzers.triage.report import analyze_file

TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_timeline_has_gpu_and_host_lanes_and_every_gap_with_its_cause():
    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    t = timeline.build(a)
    assert any(lane.startswith("gpu0 stream") for lane in t.lanes)
    assert any(lane.startswith("host thread") for lane in t.lanes)
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

    from tracetriage.analyzers.analyses.idle import CAUSES

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


def test_host_bars_nest_by_depth_in_their_lane_and_gpu_bars_stay_on_one_row():
    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    t = timeline.build(a, window_us=(0.0, 6000.0))
    lane = [t.lanes[i] for i in t.lane]
    by = {}
    for ln, n, d, s, e in zip(lane, t.name, t.depth.tolist(), t.start_us, t.end_us):
        by.setdefault((ln, n), set()).add(d)
    host = next(lane for lane in t.lanes if lane.startswith("host thread") and not lane.endswith("ranges"))
    assert by[(host, "aten::matmul")] == {0} and by[(host, "aten::mm")] == {1}        # matmul > mm
    assert by[(host, "aten::item")] == {0} and by[(host, "cudaStreamSynchronize")] == {2}   # item > scalar > sync
    assert all(d == 0 for ln, d in zip(lane, t.depth.tolist()) if ln.startswith("gpu"))
    # a nested bar lies inside the bar one row up that was open when it started
    rows = sorted(zip(t.start_us, t.end_us, t.depth.tolist(), lane))
    for s, e, d, ln in rows:
        if d and ln == host:
            assert any(ps <= s and pe >= e and pd == d - 1 for ps, pe, pd, pl in rows if pl == ln)


def test_host_calls_are_launch_sync_or_other_calls():
    kind = {}
    for trace in ("smell-sync-item.json.gz", "script-toy-train.json.gz"):
        t = timeline.build(analyze_file(TRACES / trace))
        for n, k in zip(t.name, t.kind):
            kind.setdefault(n, set()).add(k)
    assert kind["cudaStreamSynchronize"] == {"sync call"}
    assert kind["cudaLaunchKernel"] == {"launch call"} and kind["cudaMemcpyAsync"] == {"launch call"}
    assert kind["cuLaunchKernelEx"] == {"launch call"}                   # the driver API, as cuBLAS launches
    assert kind["cudaMalloc"] == {"runtime call"} and kind["cudaStreamIsCapturing"] == {"runtime call"}


def test_a_gpu_bar_is_anchored_on_its_launch_call_and_an_op_on_itself():
    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    t = timeline.build(a, window_us=(0.0, 6000.0))
    tr = a.trace
    for i, (r, k) in enumerate(zip(t.row.tolist(), t.kind)):
        if k == "kernel":
            call = int(tr.launch_of[r])
            assert t.anchor_tid[i] == tr.ev.tid[call]
            assert abs(t.anchor_start_us[i] - (tr.ev.start[call] - t.origin_ns) / 1e3) < 1e-6
        elif k == "cpu_op":
            assert t.anchor_start_us[i] == t.start_us[i] and t.anchor_end_us[i] == t.end_us[i]


def test_matches_find_every_drawable_event_by_part_of_its_name_in_time_order():
    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    m = timeline.matches(a, "STREAMsync")
    assert len(m) == 80 and m.names == ("cudaStreamSynchronize",)       # one per iteration (79 drains in the report)
    assert (m.start_us[1:] >= m.start_us[:-1]).all()
    assert len(timeline.matches(a, "")) == 0 and len(timeline.matches(a, "no such event")) == 0


def test_the_flow_of_an_op_is_its_launch_calls_and_their_gpu_work_and_back():
    a = analyze_file(TRACES / "smell-sync-item.json.gz")
    mm = int(timeline.matches(a, "aten::mm").row[3])
    f = timeline.flow(a, mm)
    assert f.event.name == "aten::mm" and f.op is None
    assert [c.name for c in f.calls] == ["cudaMemsetAsync", "cuLaunchKernelEx"]     # cuBLAS's workspace, its GEMM
    assert [g.kind for g in f.gpu] == ["memset", "kernel"] and f.gpu[1].name.startswith("nvjet")
    assert all(g.queued_us > 0 for g in f.gpu)                       # from the launch call's start to the GPU work's
    back = timeline.flow(a, f.gpu[1].row)                          # the kernel: its launch call and its op
    assert back.op.row == mm and [c.row for c in back.calls] == [f.calls[1].row]


def test_the_framework_constructs_are_spans_where_their_marking_events_ran():
    from tracetriage.analyzers.model.verdicts import Construct

    a = analyze_file(TRACES / "steps" / "training-outlier.json.gz")
    spans = {x.construct: x for x in timeline.construct_spans(a)}
    assert list(spans) == [Construct.DATALOADER, Construct.OPTIMIZER, Construct.BACKWARD]   # CONSTRUCTS order
    dl = spans[Construct.DATALOADER]
    assert len(dl.start_us) == 12 and (dl.start_us[1:] > dl.end_us[:-1]).all()              # disjoint, in order
    # the outlier step's 40 ms load
    assert (dl.end_us - dl.start_us).max() > 30_000
    assert timeline.construct_spans(analyze_file(TRACES / "smell-sync-item.json.gz")) == ()
