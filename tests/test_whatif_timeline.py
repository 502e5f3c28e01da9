"""whatif.predicted_timeline: the GPU activities as traced and where the replay puts them under a lever
(the dashboard's What-if page draws the two, one above the other)."""
from pathlib import Path

import numpy as np
import pytest

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import GPU_CATS
from tracetriage.analyzers.whatif import depgraph, replay
from tracetriage.analyzers.whatif import predict as whatif

TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_the_measured_side_is_every_gpu_activity_of_the_trace_from_the_first_one():
    t = load(TRACES / "smell-sync-item.json.gz")
    p = whatif.predicted_timeline(t, "remove_syncs")
    gpu = np.isin(t.ev.cat, GPU_CATS)
    assert len(p.name) == int(gpu.sum())
    assert p.measured_start_ns.min() == 0
    assert sorted((p.measured_end_ns - p.measured_start_ns).tolist()) == \
        sorted((t.ev.end[gpu] - t.ev.start[gpu]).tolist())
    assert set(p.kind) <= {"kernel", "memcpy", "memset"}


def test_kernels_2x_halves_every_kernel_in_the_predicted_timeline():
    p = whatif.predicted_timeline(load(TRACES / "smell-sync-item.json.gz"), "kernels_2x")
    k = np.array(p.kind) == "kernel"
    assert k.any()
    assert np.array_equal(p.predicted_end_ns[k] - p.predicted_start_ns[k],
                          (p.measured_end_ns[k] - p.measured_start_ns[k]) // 2)


def test_the_predicted_timeline_is_the_replay_the_lever_prediction_is_made_from():
    t = load(TRACES / "smell-sync-item.json.gz")
    g = depgraph.build(t)
    w = whatif.predict(t, ["remove_syncs"], graph=g)
    p = whatif.predicted_timeline(t, "remove_syncs", graph=g)
    assert p.baseline_ns == w.baseline_ns and p.replay_ns == w.replay_ns
    # the lever's span is the replay's, rescaled by baseline/replay; the GPU part of it ends within it
    gpu_end = int(p.predicted_end_ns.max()) + int(g.g_start.min()) - g.span_start
    assert gpu_end <= round(w.levers[0].predicted_ns * p.replay_ns / p.baseline_ns) + 1
    assert p.predicted_end_ns.max() < p.measured_end_ns.max()       # the syncs' drains are gone


def test_async_copies_moves_pageable_copies_to_a_side_stream_lane():
    p = whatif.predicted_timeline(load(TRACES / "smell-transfer-pageable-h2d.json.gz"), "async_copies")
    side = [i for i, name in enumerate(p.lanes) if name.endswith("side stream")]
    assert side and p.lanes[side[0]].startswith("gpu")
    moved = np.isin(p.predicted_lane, side)
    assert moved.any() and set(np.array(p.kind)[moved]) == {"memcpy"}
    assert not np.isin(p.measured_lane, side).any()


def test_a_lever_with_nothing_to_act_on_predicts_every_activity_where_it_ran():
    t = load(TRACES / "smell-sync-item.json.gz")
    g = depgraph.build(t)
    assert whatif.predict(t, ["no_host_work"], graph=g).levers[0].assumption.count == 0   # no host stretch here
    p = whatif.predicted_timeline(t, "no_host_work", graph=g)
    assert p.replay_ns == replay.replay(g, replay.Plan.of(g)).span_ns
    assert np.array_equal(p.predicted_start_ns, p.measured_start_ns)
    assert np.array_equal(p.predicted_end_ns, p.measured_end_ns)
    assert np.array_equal(p.predicted_lane, p.measured_lane)


def test_an_unknown_lever_is_refused_in_one_line():
    with pytest.raises(whatif.WhatIfError, match="no lever named 'faster'; choose from: remove_syncs"):
        whatif.predicted_timeline(load(TRACES / "smell-sync-item.json.gz"), "faster")
