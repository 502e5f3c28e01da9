"""What-if: the replay reproduces every trace, and each lever's prediction from a "before" trace
lands where the fix, really made on an H200, landed (traces/fixes/, capture/fixes.py)."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sweep import sweep
from tracetriage.analyzers.loading.load import find_traces, load
from tracetriage.analyzers.voice import whatif as voice
from tracetriage.analyzers.whatif import depgraph, replay
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import LEVERS, cuda_graphs
from tracetriage.analyzers.whatif.levers.spec import Context
from tracetriage.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
FIXES = TRACES / "fixes"
MEASURED = json.loads((FIXES / "measured.json").read_text())["scenarios"]
SAMPLES = [p for d in (TRACES, FIXES, TRACES / "ddp", TRACES / "ddp-skewed") if d.is_dir() for p in find_traces(d)
           if not p.name.endswith(("ceilings.json", "measurements.json", "measured.json"))]
PAIRS = [(kind, lever) for kind, sc in MEASURED.items() for lever in sc["ratio"]]
WIDEN = 0.05      # the issue's tolerance around the measured spread


def _predict(kind: str) -> whatif.WhatIf:
    return whatif.predict(load(FIXES / f"{kind}--before.json.gz"))


# The fast suite replays the sample library and the smallest pair of traces/fixes (the 4.5 MB gpt-eager is left to
# the slow step with every other fix); each item is one trace's replay either way.
FAST_REPLAYS = [p for p in SAMPLES if p.parent in (TRACES, TRACES / "ddp", TRACES / "ddp-skewed")
                and p.name != "gpt-eager.json.gz"] + [min((p for p in SAMPLES if p.parent == FIXES),
                                                           key=lambda p: p.stat().st_size)]


@pytest.mark.parametrize("path", sweep(SAMPLES, FAST_REPLAYS, ids=[str(p.relative_to(TRACES)) for p in SAMPLES]))
def test_unchanged_replay_predicts_the_span_within_3_percent(path):
    t = load(path)
    g = depgraph.build(t)
    if len(g.g_row) == 0:
        pytest.skip("CPU-only trace: no GPU timeline")
    r = replay.replay(g, replay.Plan.of(g))
    assert abs(r.span_ns - g.span_ns) <= 0.03 * g.span_ns, (r.span_ns, g.span_ns)
    # stronger than the span: every call and every GPU start is explained by its launch, its queue,
    # another stream or the GPU work a call waited for, to the ns
    assert np.abs(r.g_start - g.g_start).max() == 0 and np.abs(r.c_start - g.c_start).max() == 0


def test_the_sample_library_is_all_covered():
    assert len(SAMPLES) >= 70 and len(MEASURED) >= 15


@pytest.mark.parametrize("kind,lever", PAIRS, ids=[f"{k}-{v}" for k, v in PAIRS])
def test_prediction_from_the_before_trace_lands_in_the_measured_spread(kind, lever):
    r = MEASURED[kind]["ratio"][lever]
    pred = _predict(kind).lever(lever).predicted_ratio
    assert r["p10"] - WIDEN <= pred <= r["p90"] + WIDEN, \
        f"{kind} {lever}: predicted {pred:.3f}, measured {r['median']:.3f} [{r['p10']:.3f}, {r['p90']:.3f}]"


@pytest.mark.parametrize("kind", [k for k, sc in MEASURED.items() if len(sc["ratio"]) >= 2])
def test_the_lever_that_measured_best_is_ranked_first(kind):
    """Among the levers measured on a workload, the prediction's best is the measured best (or measured
    within WIDEN of it: the fixes cannot be told apart by the measurement)."""
    measured = {lv: r["median"] for lv, r in MEASURED[kind]["ratio"].items()}
    w = _predict(kind)
    predicted_best = min(measured, key=lambda lv: w.lever(lv).predicted_ratio)
    assert measured[predicted_best] <= min(measured.values()) + WIDEN, (predicted_best, measured)


REALWORLD = TRACES / "realworld"
REAL_MEASURED = json.loads((REALWORLD / "measured.json").read_text())["scenarios"]
KNOBS = FIXES / "knobs"
KNOB_MEASURED = json.loads((KNOBS / "measured.json").read_text())["scenarios"]
KNOBS3 = FIXES / "knobs3"
KNOB3_MEASURED = json.loads((KNOBS3 / "measured.json").read_text())["scenarios"]
LOADER = FIXES / "loader"
LOADER_MEASURED = json.loads((LOADER / "measured.json").read_text())["scenarios"]
KNOBS4 = FIXES / "knobs4"
KNOB4_MEASURED = json.loads((KNOBS4 / "measured.json").read_text())["scenarios"]
KNOBS5 = FIXES / "knobs5"     # keeps its before traces and one after trace a lever (the 64 MiB working-tree limit)
KNOB5_MEASURED = json.loads((KNOBS5 / "measured.json").read_text())["scenarios"]


def test_every_lever_has_three_workloads_of_ground_truth_with_five_runs_each():
    """On one GPU: a lever whose fix needs more ranks (overlap_comm) is measured on two-GPU pairs, captured apart."""
    from tracetriage.analyzers.whatif.levers import CAPTURE_PENDING

    for lever in (name for name, spec in LEVERS.items() if spec.ranks == 1 and name not in CAPTURE_PENDING):
        n = 0
        for folder, measured in ((FIXES, MEASURED), (REALWORLD, REAL_MEASURED), (KNOBS, KNOB_MEASURED),
                                 (KNOBS3, KNOB3_MEASURED), (LOADER, LOADER_MEASURED),
                                 (KNOBS4, KNOB4_MEASURED), (KNOBS5, KNOB5_MEASURED)):
            kinds = [k for k, sc in measured.items() if lever in sc["ratio"]]
            n += len(kinds)
            for k in kinds:
                assert len(measured[k]["span_us"][lever]["runs"]) >= 5
                assert len(measured[k]["span_us"]["before"]["runs"]) >= 5
                assert (folder / f"{k}--before.json.gz").exists()
                assert folder == KNOBS5 or (folder / f"{k}--{lever}.json.gz").exists()
        assert n >= 3, lever


def test_committed_pairs_are_small():
    assert all(p.stat().st_size < 300_000 for p in FIXES.glob("*.json.gz"))


def test_the_capture_span_and_the_model_span_agree_on_every_committed_trace():
    from tracetriage.capture.fixes import span_us

    for p in FIXES.glob("*.json.gz"):
        ours = depgraph.build(load(p)).span_ns / 1e3
        theirs = span_us(json.loads(gzip.decompress(p.read_bytes())))
        assert abs(ours - theirs) < 0.01, p.name


def test_issue_example_names_the_sync_and_the_host_work_and_kernels_save_less():
    w = _predict("item_python")
    assert {w.levers[0].lever, w.levers[1].lever} == {"remove_syncs", "no_host_work"}
    assert w.lever("async_copies").saving_ns == 0
    assert "nothing to pin" in voice.assumption(w.lever("async_copies").assumption)


def test_only_limits_remove_syncs_to_the_syncs_of_one_op():
    t = load(TRACES / "smell-sync-item.json.gz")
    every = whatif.predict(t, levers=["remove_syncs"]).lever("remove_syncs")
    item = whatif.predict(t, levers=["remove_syncs"], only="aten::item").lever("remove_syncs")
    other = whatif.predict(t, levers=["remove_syncs"], only="aten::mm").lever("remove_syncs")
    assert item.predicted_ns == every.predicted_ns < every.predicted_ns + every.saving_ns
    assert other.saving_ns == 0 and "nothing to remove" in voice.assumption(other.assumption)


# --- the command -------------------------------------------------------------------------------

def test_cli_json_is_the_documented_shape_sorted_by_prediction(capsys):
    assert main(["whatif", str(FIXES / "tiny_ops--before.json.gz"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"schema_version", "baseline_us", "unprofiled_us", "levers"}
    assert [set(x) for x in out["levers"]] == [{"lever", "predicted_us", "predicted_ratio", "saving_us",
                                                "unprofiled_ratio", "assumptions"}] * len(LEVERS)
    assert 0 < out["unprofiled_us"] < out["baseline_us"]     # a launch-bound loop: the profiler's cost is on its path
    preds = [x["predicted_us"] for x in out["levers"]]
    assert preds == sorted(preds) and out["levers"][0]["lever"] == "cuda_graphs"
    for x in out["levers"]:
        assert x["predicted_ratio"] == pytest.approx(x["predicted_us"] / out["baseline_us"], abs=1e-3)


def test_cli_table_names_each_lever_with_its_assumption(capsys):
    assert main(["whatif", str(FIXES / "host_numpy--before.json.gz"), "--lever", "no_host_work", "kernels_2x"]) == 0
    out = capsys.readouterr().out
    assert "traced span" in out and "no_host_work:" in out and "kernels_2x:" in out and "cuda_graphs" not in out


@pytest.mark.parametrize("args,message", [
    (["whatif", "/no/such.json"], "error: no such file"),
    (["whatif", "TRACE", "--lever", "faster"], "error: no lever named 'faster'"),
    (["whatif", "TRACE", "--only", "aten::nope"], "error: --only aten::nope: no op of that name in the trace "
                                                  "(ops that wait in a sync here: aten::item)"),
    (["whatif", "TRACE", "--lever", "kernels_2x", "--only", "aten::item"], "error: --only limits remove_syncs"),
])
def test_cli_bad_input_is_one_line_and_exit_2(args, message, capsys):
    args = [str(FIXES / "item_python--before.json.gz") if a == "TRACE" else a for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_cli_refuses_a_cpu_only_trace(tmp_path, capsys):
    src = json.loads(gzip.decompress((TRACES / "smell-sync-item.json.gz").read_bytes()))
    src["traceEvents"] = [e for e in src["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation")]
    p = tmp_path / "cpu.json"
    p.write_text(json.dumps(src))
    assert main(["whatif", str(p)]) == 2
    assert "no GPU activity in the trace" in capsys.readouterr().err


def test_cli_whatif_never_imports_torch():
    code = ("import sys; from tracetriage.cli import main; "
            f"rc = main(['whatif', {str(FIXES / 'item_python--before.json.gz')!r}, '--json']); "
            "bad = [m for m in ('torch', 'triton', 'streamlit', 'pandas') if m in sys.modules]; "
            "print('IMPORTED', bad); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "IMPORTED []" in r.stdout


def test_gpu_activity_with_no_launch_call_is_replayed_where_it_was(tmp_path):
    """Activity launched before profiling began (no call in the trace) still counts, and moves with nothing."""
    src = json.loads(gzip.decompress((TRACES / "smell-sync-item.json.gz").read_bytes()))
    evs = src["traceEvents"]
    first_call = min(e["ts"] for e in evs if e.get("cat") in ("cuda_runtime", "cuda_driver"))
    k = next(e for e in evs if e.get("cat") == "kernel")
    early = dict(k, ts=first_call - 500.0, args={**k.get("args", {}), "correlation": 999999999})
    src["traceEvents"] = evs + [early]
    p = tmp_path / "early.json"
    p.write_text(json.dumps(src))
    g = depgraph.build(load(p))
    assert (g.g_call < 0).sum() == 1
    r = replay.replay(g, replay.Plan.of(g))
    assert r.span_ns == g.span_ns and np.abs(r.g_start - g.g_start).max() == 0


def test_levers_only_ever_shorten_except_the_work_they_add():
    """cuda_graphs adds its graph launch; autocast its casts (measured: autocast slowed a host-bound resnet18 step,
    traces/fixes/knobs/autocast_resnet_train)."""
    adds_work = {"cuda_graphs", "autocast_bf16"}
    for name in ["smell-sync-item", "healthy-overlap", "probe-transfer-unpinned-batches", "gpt-eager"]:
        w = whatif.predict(load(TRACES / f"{name}.json.gz"))
        for p in w.levers:
            if p.lever not in adds_work:
                assert p.predicted_ns <= w.baseline_ns, (name, p.lever)


def test_compiled_call_reference_is_what_the_chain_pair_measures():
    """COMPILED_CALL_OPS: the compiled chain's call (region + cache lookup) over the eager chain's per-op dispatch."""
    from tracetriage.analyzers.analyses.fusion import chain_table
    from tracetriage.analyzers.whatif.levers import fuse

    eager = load(TRACES / "chain-eager-large.json.gz")
    call_ns, source = fuse.compiled_call_ns(load(TRACES / "chain-compile-large.json.gz"))
    assert source == "trace"
    ratio = call_ns / fuse.per_op_dispatch_ns(eager, chain_table(eager))
    assert abs(ratio - fuse.COMPILED_CALL_OPS) <= 0.1 * fuse.COMPILED_CALL_OPS, ratio


def test_replay_gap_reference_is_the_median_between_graph_replays_in_the_graph_fix_traces():
    """REPLAY_GAP_NS: the host's stretch between two cudaGraphLaunch calls, over the CUDA-graph fix traces."""
    gaps = []
    for p in [*FIXES.glob("*--cuda_graphs.json.gz"), *(TRACES / "realworld").glob("*--cuda_graphs.json.gz")]:
        t = load(p)
        gap, source = cuda_graphs.replay_gap(Context(t, depgraph.build(t)))
        if source == "trace":
            gaps.append(gap)
    assert len(gaps) >= 6
    assert abs(np.median(gaps) - cuda_graphs.REPLAY_GAP_NS) <= 0.25 * cuda_graphs.REPLAY_GAP_NS, sorted(gaps)


def test_the_whatif_modules_docstring_names_every_lever_of_the_registry():
    from tracetriage.analyzers.whatif import predict as predict_mod
    from tracetriage.analyzers.whatif.levers import NAMES

    assert ", ".join(NAMES) in " ".join(predict_mod.__doc__.split())


def test_a_sync_that_never_blocked_takes_only_its_own_call_not_the_host_work_before_it(tmp_path):
    """(compile_warmup_resnet18_4090: 105 syncs that never waited, each after a stretch of torch.compile compiling,
    and remove_syncs 'overlapped' 902.9 ms, -52%, while saying there was nothing to remove.)"""
    import kineto_factory as kf
    first = kf.chain(20)
    pause = 50_000_000                                   # 50 ms of Python that issues nothing, then a quick sync
    at = first[-1].gpu_end + pause
    later = [kf.Launch(**{**x.__dict__, **{k: getattr(x, k) + at - first[0].op_start + 10_000 for k in
                                           ("op_start", "op_end", "call_start", "call_end", "gpu_start", "gpu_end")}})
             for x in kf.chain(20)]
    sync = kf.call("cudaDeviceSynchronize", at, at + 3_000, corr=90_000)
    path = kf.write(tmp_path / "quick-sync.json", kf.document(kf.events_for(first) + [sync]
                                                             + kf.events_for(later, first_id=1_000)))
    w = whatif.predict(load(path, use_cache=False), levers=["remove_syncs"])
    lever = w.lever("remove_syncs")
    assert lever.predicted_ns >= 0.99 * w.baseline_ns


def test_an_edited_copy_of_a_plan_leaves_its_source_and_replays_as_a_whole_copy_would():
    """Plan.copy copies an array when first asked for: an edit reaches the copy only, and a copy of a copy reads
    its source's edits as they stood."""
    t = load(TRACES / "healthy-overlap.json.gz")
    g = depgraph.build(t)
    base = replay.Plan.of(g)
    p = base.copy()
    p.g_dur[:] = p.g_dur // 2
    p.c_gap = np.zeros_like(p.c_gap)
    assert np.array_equal(base.g_dur, g.g_dur) and np.array_equal(base.c_gap, g.c_gap)
    eager = replay.Plan(**{k: getattr(base, k).copy() for k in vars(base)})
    eager.g_dur[:] = eager.g_dur // 2
    eager.c_gap[:] = 0
    a, b = replay.replay(g, p), replay.replay(g, eager)
    assert a.span_ns == b.span_ns < replay.replay(g, base).span_ns
    assert np.array_equal(a.g_start, b.g_start) and np.array_equal(a.c_end, b.c_end)
    q = p.copy()
    q.g_dur[:] = 0
    assert (p.g_dur > 0).any() and np.array_equal(q.c_gap, p.c_gap)


def test_activities_a_plan_moves_to_another_queue_replay_in_that_queues_order():
    """The replay gathers nothing where the activities lie in the graph's (queue, call, start) order; a plan that
    moves some to another queue is sorted: every other kernel of a stream moved to a new one, each queue still runs
    its own work one activity after another, and no sooner than the unchanged replay puts it."""
    t = load(TRACES / "healthy-overlap.json.gz")
    g = depgraph.build(t)
    p = replay.Plan.of(g)
    on_first = np.flatnonzero(p.g_queue == 0)
    p.g_queue[on_first[1::2]] = len(g.queue_keys)      # interleaved with the ones that stay
    moved = replay.replay(g, p)
    for q in np.unique(p.g_queue).tolist():
        on = np.flatnonzero(p.g_queue == q)
        o = on[np.argsort(moved.g_start[on], kind="stable")]
        assert (moved.g_start[o][1:] >= moved.g_end[o][:-1]).all(), q
    assert moved.span_ns <= replay.replay(g, replay.Plan.of(g)).span_ns
