"""The run without the profiler (issue 24 items 2 and 3): the profiler's per-event cost taken out of the
dependency graph, checked against the H200 runs timed with and without the profiler."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tools import profiler_cost
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines
from tracetriage.analyzers.voice.whatif import whatif_table
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif import replay as rp
from tracetriage.analyzers.whatif.predict import predict
from tracetriage.analyzers.whatif.unprofiled import unprofile

TRACES = Path(__file__).resolve().parent.parent / "traces"


@pytest.fixture(scope="module")
def measured():
    return profiler_cost.rows()


def test_the_unprofiled_replay_matches_the_runs_timed_without_the_profiler(measured):
    over, _ = measured
    err = np.array([np.log(o["predicted"] / o["measured"]) for o in over])
    assert len(over) >= 70
    assert np.median(np.abs(err)) < 0.05 and np.sqrt(np.mean(err ** 2)) < 0.12


def test_both_ratios_of_most_fixes_fall_inside_their_measured_spread(measured):
    _, fixes = measured
    inside = [f for f in fixes if profiler_cost._within(f["unprofiled_predicted"], f["unprofiled_p10"],
                                                       f["unprofiled_p90"])]
    assert len(fixes) >= 40 and len(inside) >= 0.85 * len(fixes)


def test_a_launch_bound_loop_is_slower_under_the_profiler_and_a_gpu_bound_one_is_not(measured):
    over, _ = measured
    by = {(o["workload"], o["variant"]): o for o in over}
    tiny, mm = by[("tiny_ops", "before")], by[("matmul_loop", "before")]
    assert tiny["predicted"] == pytest.approx(tiny["measured"], abs=0.05) and tiny["measured"] < 0.8
    assert mm["predicted"] == pytest.approx(1.0, abs=0.02) and mm["measured"] == pytest.approx(1.0, abs=0.02)


def test_taking_the_profiler_out_never_lengthens_the_replay_or_leaves_a_negative_time():
    t = load(TRACES / "realworld" / "cnn_b1--before.json.gz")
    g = dg.build(t)
    base = rp.Plan.of(g)
    bare = base.copy()
    cost = unprofile(t, g, bare)
    assert cost.ops == int(np.sum(t.ev.cat == 1)) and cost.host_ns > 0
    for k in ("c_gap", "c_dur", "c_min", "g_dur", "g_gap", "thread_tail"):
        assert (getattr(bare, k) >= 0).all(), k
    assert rp.replay(g, bare).span_ns < rp.replay(g, base).span_ns


def test_whatif_gives_each_levers_ratio_without_the_profiler_beside_the_profiled_one():
    w = predict(load(TRACES / "realworld" / "cnn_b1--before.json.gz"), unprofiled=True)
    graphs = w.lever("cuda_graphs")
    # measured on the H200: 0.15 under the profiler, 0.20 without it
    assert graphs.predicted_ratio == pytest.approx(0.15, abs=0.05)
    assert graphs.unprofiled_ratio == pytest.approx(0.20, abs=0.05)
    assert w.unprofiled_ns < w.baseline_ns
    table = whatif_table(w)
    assert "unprofiled ratio" in table and "without the profiler" in table.splitlines()[0]


def test_the_report_says_how_much_slower_the_profiler_made_a_launch_bound_loop():
    a = analyze_file(TRACES / "realworld" / "cnn_b1--before.json.gz")
    p = a.profiler
    assert p.worth_saying and p.slowdown == pytest.approx(35.1 / 24.9, abs=0.15)   # measured: 1.41x
    said = [c for c in analysis_caveats(a) if c.startswith("under the profiler")]
    assert len(said) == 1 and "not measured in this trace" in said[0]


def test_a_gpu_bound_trace_gets_no_profiler_caveat():
    a = analyze_file(TRACES / "matmul-sweep-bf16.json.gz")
    assert not a.profiler.worth_saying
    assert not any(c.startswith("under the profiler") for c in analysis_caveats(a))


def test_a_launch_bound_verdict_still_idling_half_its_span_without_the_profiler_is_kept():
    # ~49% idle without the profiler and CUDA graphs still -36% without it: the verdict stands, with less to gain
    a = analyze_file(TRACES / "softmax-triton.json.gz")
    assert a.verdict.regime.value == "overhead" and not a.profiler.launch_bound_only_under_profiler
    assert 0.3 <= a.profiler.unprofiled_idle_share <= 0.5 < a.idle_share and a.profiler.launch_bound_kept
    assert not any("holds only under the profiler" in c for c in analysis_caveats(a))
    assert any("the launch-bound verdict holds without it too, with less to gain" in c for c in analysis_caveats(a))


def test_the_next_line_gives_the_unprofiled_saving_where_it_differs():
    # (a sync's removal: the host work the profiler adds stays; a CUDA graph's replay takes it with the launches,
    # so smell-launch-small-mlp's graphs save about the same share either way now)
    a = analyze_file(TRACES / "control-sync-light.json.gz")
    lv = a.next_experiment.lever
    assert lv.unprofiled_ratio is not None and lv.unprofiled_differs
    assert "; without the profiler −" in five_lines(a)[4]


def test_cuptis_buffer_requests_are_named_as_the_profilers_own_time():
    a = analyze_file(TRACES / "chain-triton-large.json.gz")
    assert a.profiler.buffer_worth_naming and a.profiler.buffer_ns > 2_000_000
    assert any(c.startswith("the profiler's own activity-buffer requests") and "not your code" in c
               for c in analysis_caveats(a))


def test_the_per_event_costs_agree_with_the_direct_h200_measurements():
    """Loops timed with and without the profiler on the H200: traces/overhead/profiler_cost.json
    (tracetriage.capture.profiler_cost: a view, an add_ and its launch, 7 runs of 2,000 calls) and
    traces/overhead/profiler_overhead.json (capture/profiler_overhead.py: graph replays of N nodes). The fitted
    cost of an op, of an op and its launch (a launch call traced at ~6 µs keeps a quarter) and of a graph node lie
    within a third, a third and a factor of two of what they measured."""
    import json

    from tracetriage.analyzers.whatif import unprofiled as u

    per_call = json.loads((TRACES / "overhead" / "profiler_cost.json").read_text())["loops"]
    assert u.PER_OP_NS == pytest.approx(per_call["view_only"]["added_ns_per_call"], rel=0.34)        # 1.4 µs
    op_and_launch = u.PER_OP_NS + min(u.PER_CALL_NS, int(6_000 * (1 - u.CALL_FLOOR)))
    assert op_and_launch == pytest.approx(per_call["add_tiny"]["added_ns_per_call"], rel=0.34)       # 5.4 µs
    nodes = json.loads((TRACES / "overhead" / "profiler_overhead.json").read_text())["loops"]["graph_nodes"]
    for n in ("1000", "10000"):                                                                       # 2.1, 1.2 µs
        assert 0.5 <= u.PER_NODE_NS / nodes[n]["added_ns_per_iteration"] <= 2.0


def test_a_harness_truth_file_is_read_as_the_profilers_slowdown_per_traced_variant(tmp_path):
    """`profiler_cost --truth DIR`: the capture harness's truth.json (fresh7, fresh8 on an H100) gives each variant's
    profiled ms per step over its unprofiled median; the prediction is the replay without the profiler's cost."""
    import json
    import shutil

    shutil.copy(TRACES / "fixes" / "mid_ops--before.json.gz", tmp_path / "mid-before.json.gz")
    (tmp_path / "truth.json").write_text(json.dumps({"workloads": [
        {"name": "mid", "before": {"trace": "mid-before.json.gz", "profiler_slowdown": 1.25},
         "after": {"trace": "missing.json.gz", "profiler_slowdown": 1.1}}]}))
    [row] = profiler_cost.truth_rows([tmp_path])
    run = predict(load(tmp_path / "mid-before.json.gz"), levers=["kernels_2x"], unprofiled=True).unprofiled_run
    assert row["measured"] == 1 / 1.25 and row["predicted"] == run.unprofiled_ns / run.replay_ns < 1



def test_a_launch_bound_verdict_its_own_unprofiled_numbers_keep_is_not_withdrawn():
    """heldout-user15 hpdl_resnet_bneck: 54% idle under the profiler, ~40% without it, CUDA graphs still -29% without
    it; the caveat said "the launch-bound verdict holds only under the profiler". Withdrawn only where the GPU would
    idle under LAUNCH_KEPT_IDLE of its span without the profiler."""
    from tracetriage.analyzers.model.verdicts import Cause, Regime
    from tracetriage.analyzers.triage.overhead import ProfilerOverhead, launch_verdict
    from tracetriage.analyzers.voice.health import profiler_caveats

    assert launch_verdict(Regime.OVERHEAD, Cause.LAUNCH_OVERHEAD, 0.40) == (False, True)
    assert launch_verdict(Regime.OVERHEAD, Cause.LAUNCH_OVERHEAD, 0.20) == (True, False)
    assert launch_verdict(Regime.OVERHEAD, Cause.LAUNCH_OVERHEAD, 0.60) == (False, False)
    assert launch_verdict(Regime.OVERHEAD, Cause.HOST_WORK, 0.20) == (False, False)

    def said(bare: float) -> str:
        only, kept = launch_verdict(Regime.OVERHEAD, Cause.LAUNCH_OVERHEAD, bare)
        p = ProfilerOverhead(profiled_ns=38_700_000, unprofiled_ns=30_800_000, host_ns=8_040_000, ops=2_881,
                             calls=1_570, idle_share=0.54, unprofiled_idle_share=bare, buffer_ns=0, source="fitted",
                             launch_bound_only_under_profiler=only, launch_bound_kept=kept)
        return profiler_caveats(p)[0]

    assert "holds only under the profiler" not in said(0.40)
    assert "the launch-bound verdict holds without it too" in said(0.40)
    assert "holds only under the profiler" in said(0.20)


def test_off_the_host_the_costs_were_fitted_on_the_slowdown_is_said_with_the_fits_measured_range(tmp_path):
    """Was: fresh11 streaming_conformer_compiled_no_cudagraphs (an H100) "takes ~1.3× as long as without it ... without
    it the work takes ~199.9 ms", measured 2.18× (118.7 ms); llama_sft 1.3× against 1.66×, crnn 1.5× against 1.82×:
    the per-event costs, fitted on H200 runs, under-state the profiler's cost on most H100 captures. The same trace
    said to come from an H100 gets the slowdown as a floor and the unprofiled time as a ceiling."""
    import gzip
    import json

    doc = json.loads(gzip.open(TRACES / "realworld" / "cnn_b1--before.json.gz").read())
    for d in doc["deviceProperties"]:
        d["name"] = "NVIDIA H100 80GB HBM3"
    (tmp_path / "h100.json").write_text(json.dumps(doc))
    on_h200 = analyze_file(TRACES / "realworld" / "cnn_b1--before.json.gz")
    on_h100 = analyze_file(tmp_path / "h100.json")
    assert on_h200.profiler.fitted_host and not on_h100.profiler.fitted_host
    said = next(c for c in analysis_caveats(on_h100) if c.startswith("under the profiler"))
    # sized both ways by the fit's error on 136 H100 captures (0.90-1.30x of the fitted slowdown, 9 in 10): a bare
    # "or more" pointed away from the truth where the fit over-states (fresh12 distilbert: 1.47x measured beside
    # "1.6× or more") and said nothing of how far where it under-states (bart: 1.86x beside "1.3× or more")
    lo, hi = on_h100.profiler.slowdown_range
    assert lo < on_h100.profiler.slowdown < hi
    lo, hi = math.floor(lo * 10) / 10, math.ceil(hi * 10) / 10      # rounded outward
    assert f"takes ~{on_h100.profiler.slowdown:.1f}× as long as without it ({lo:.1f}-{hi:.1f}×: the fit's error on " \
        "136 H100 captures timed both ways, 0.90-1.30× of the fitted slowdown, puts 9 in 10 there, most of the rest " \
        "above)" in said, said
    assert "without it the work takes ~" in said and "for the same 9 in 10, most of the rest below)" in said
    kept = next(c for c in analysis_caveats(on_h200) if c.startswith("under the profiler"))
    assert " or more" not in kept and " or less" not in kept


def test_the_profiler_caveats_bound_and_range_agree_and_round_outward(tmp_path):
    """heldout-user19: "adds ~114.4 ms or more of host time" beside an unprofiled range whose upper end left 92.7 ms
    added, and a slowdown range's upper end 2.06 cut to "2.0". The range is said rounded outward, the host time as
    the fit's point with no one-sided bound the range contradicts, and the unprofiled time from the same range."""
    import gzip
    import json
    import re

    doc = json.loads(gzip.open(TRACES / "realworld" / "cnn_b1--before.json.gz").read())
    for d in doc["deviceProperties"]:
        d["name"] = "NVIDIA H100 80GB HBM3"
    (tmp_path / "h100.json").write_text(json.dumps(doc))
    a = analyze_file(tmp_path / "h100.json")
    said = next(c for c in analysis_caveats(a) if c.startswith("under the profiler"))
    assert " or more of host time" not in said
    lo, hi = a.profiler.slowdown_range
    said_lo, said_hi = (float(x) for x in re.search(r"\((\d+\.\d)-(\d+\.\d)×", said).groups())
    assert said_lo <= lo and said_hi >= hi
    ms = [float(x) for x in re.search(r"between ([\d.]+) ms and ([\d.]+) ms for the same", said).groups()]
    profiled_ms = a.profiler.profiled_ns / 1e6
    assert ms[0] <= profiled_ms / said_hi + 0.05 and ms[1] >= profiled_ms / said_lo - 0.05
