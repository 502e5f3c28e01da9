"""CUDA-graph replays charged to the ops captured: in the same trace, in a separate capture trace, or said
to be under-recorded; and a profile of the capture itself read as set-up, not as launch overhead."""
from pathlib import Path

import numpy as np
import pytest

from tests.kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import NONE
from tracetriage.analyzers.model.verdicts import Cause, Experiment, Regime
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.cli import main

TRACES = Path(__file__).resolve().parent.parent / "traces"
US = 1_000
MM_DIMS, MM_TYPES = [[64, 4096], [4096, 4096]], ["c10::BFloat16", "c10::BFloat16"]
ADD_DIMS, ADD_TYPES = [[64, 4096], [64, 4096]], ["c10::BFloat16", "c10::BFloat16"]
# what the captured step launches: (op, its shapes, the kernel the replay runs, its time)
STEP = (("aten::mm", MM_DIMS, MM_TYPES, "nvjet_sm90_tst_128x8_64x12_4x1_v_bz_TNT", 100 * US),
        ("aten::add", ADD_DIMS, ADD_TYPES, "void at::native::vectorized_elementwise_kernel<4>", 10 * US),
        ("aten::relu", ADD_DIMS[:1], ADD_TYPES[:1], "void at::native::vectorized_elementwise_kernel<4>", 10 * US))


def capture_events(t0: int, ext0: int, corr0: int, step=STEP, dims_scale: int = 1) -> list[dict]:
    """torch.cuda.graph's capture: begin, one op per node whose launch call runs nothing, end, instantiate."""
    ev = [call("cudaStreamBeginCapture", t0, t0 + 2 * US)]
    t = t0 + 10 * US
    for i, (name, dims, types, _, _) in enumerate(step):
        dims = [[d * dims_scale if j == 0 else d for j, d in enumerate(x)] for x in dims]
        ev.append(op(name, t, t + 8 * US, ext0 + i, dims=dims, types=types))
        ev.append(call("cudaLaunchKernel", t + 2 * US, t + 6 * US, corr0 + i, ext0 + i))
        t += 10 * US
    ev.append(call("cudaStreamEndCapture", t, t + 2 * US))
    ev.append(call("cudaGraphInstantiate", t + 5 * US, t + 50 * US))
    return ev


def replay_events(t0: int, n: int, corr0: int, step=STEP, node0: int = 11, with_nodes: bool = True) -> list[dict]:
    """n graph launches, each replaying the step's kernels back to back on stream 7."""
    ev, t = [], t0
    for r in range(n):
        corr = corr0 + r
        ev.append(call("cudaGraphLaunch", t, t + 5 * US, corr))
        k = t + 8 * US
        for i, (_, _, _, kernel, dur) in enumerate(step):
            extra = {"graph id": 3, "graph node id": node0 + i} if with_nodes else {}
            ev.append(gpu(kernel, k, k + dur, corr, **extra))
            k += dur + 1 * US
        t = k + 2 * US
    return ev


def graph_trace(tmp_path: Path, name: str = "graphs.json.gz", replays: int = 10, **kw) -> Path:
    return write(tmp_path / name, document(capture_events(100 * US, 1, 1000) + replay_events(1000 * US, replays, 5000,
                                                                                            **kw)))


def test_replayed_kernels_are_charged_to_the_ops_captured_in_the_same_trace(tmp_path):
    a = analyze_file(graph_trace(tmp_path))
    hot = {h.name: h for h in a.hotspots}
    assert set(hot) == {"aten::mm", "aten::add", "aten::relu"}
    assert hot["aten::mm"].kernels == 10 and hot["aten::mm"].device_us == pytest.approx(1000, abs=1)
    point = next(p for p in a.roof.points if p.name == "aten::mm")
    assert point.calls == 10 and point.flops == pytest.approx(10 * 2 * 64 * 4096 * 4096)
    assert a.verdict.uncosted_share == 0.0
    assert not any(c.kind == "graph_replay_unjoined" for c in a.trace.caveats)


def test_graph_node_ids_order_the_replay_not_the_start_times(tmp_path):
    """Nodes of parallel branches start out of capture order: the node id says which op each kernel is."""
    ev = capture_events(100 * US, 1, 1000)
    corr = 5000
    ev.append(call("cudaGraphLaunch", 1000 * US, 1005 * US, corr))
    # node 12 (the add) starts first, on another stream; node 11 (the mm) after it
    ev.append(gpu("add_kernel", 1010 * US, 1020 * US, corr, stream=8, **{"graph node id": 12}))
    ev.append(gpu("mm_kernel", 1012 * US, 1112 * US, corr, **{"graph node id": 11}))
    ev.append(gpu("relu_kernel", 1113 * US, 1123 * US, corr, **{"graph node id": 13}))
    tr = load(write(tmp_path / "t.json.gz", document(ev)), use_cache=False)
    k = np.flatnonzero(tr.ev.cat == 6)
    charged = {tr.name_of(r): tr.name_of(o) for r, o in zip(k, tr.graph_op_of[k])}
    assert charged == {"mm_kernel": "aten::mm", "add_kernel": "aten::add", "relu_kernel": "aten::relu"}


def test_a_replay_whose_graph_was_captured_outside_the_profile_is_said_under_recorded(tmp_path):
    unnamed = tuple((o, d, t, f"k{i}", us) for i, (o, d, t, _, us) in enumerate(STEP))   # no bound by name either
    path = write(tmp_path / "r.json.gz", document(replay_events(1000 * US, 10, 5000, step=unnamed)))
    a = analyze_file(path)
    cav = next(c for c in a.trace.caveats if c.kind == "graph_replay_unjoined")
    assert (cav.count, cav.total) == (30, 30)
    assert any("30 of 30 GPU activities replayed from CUDA graphs match no capture" in c
               for c in analysis_caveats(a))
    assert "graph_replay" in a.verdict.uncosted_why_us


def test_a_node_captured_outside_any_op_is_joined_and_charged_to_its_kernel_as_an_eager_launch_would_be(tmp_path):
    ev = [call("cudaStreamBeginCapture", 100 * US, 102 * US), call("cuLaunchKernel", 110 * US, 114 * US, 1000),
          call("cudaStreamEndCapture", 120 * US, 122 * US)]
    ev += [call("cudaGraphLaunch", 1000 * US, 1005 * US, 5000),
           gpu("triton_poi_fused_add_0", 1010 * US, 1020 * US, 5000)]
    a = analyze_file(write(tmp_path / "t.json.gz", document(ev)))
    assert not any(c.kind == "graph_replay_unjoined" for c in a.trace.caveats)
    assert a.hotspots[0].name == "triton_poi_fused_add_0"


def test_two_captures_of_other_shapes_leave_a_replay_unjoined_rather_than_charge_the_wrong_shapes(tmp_path):
    """vLLM captures a graph per batch size with the same kernels: which one a replay ran is not in the trace."""
    ev = capture_events(100 * US, 1, 1000) + capture_events(400 * US, 10, 2000, dims_scale=2)
    ev += replay_events(1000 * US, 2, 5000)
    tr = load(write(tmp_path / "t.json.gz", document(ev)), use_cache=False)
    assert (tr.graph_op_of == NONE).all()
    assert next(c for c in tr.caveats if c.kind == "graph_replay_unjoined").count == 6


def test_a_graph_captured_twice_with_the_same_shapes_is_one_capture(tmp_path):
    ev = capture_events(100 * US, 1, 1000) + capture_events(400 * US, 10, 2000) + replay_events(1000 * US, 2, 5000)
    tr = load(write(tmp_path / "t.json.gz", document(ev)), use_cache=False)
    k = np.flatnonzero(tr.ev.cat == 6)
    assert (tr.graph_op_of[k] != NONE).all()


def test_a_separate_capture_trace_charges_the_replays_to_its_ops(tmp_path, capsys):
    """vLLM and SGLang write the capture apart from the replays: --graph-capture joins them."""
    cap = write(tmp_path / "capture.json.gz", document(capture_events(100 * US, 1, 1000)))
    rep = write(tmp_path / "replay.json.gz", document(replay_events(1000 * US, 10, 5000, with_nodes=False)))
    alone = analyze_file(rep)
    joined = analyze_file(rep, graph_capture=cap)
    assert alone.hotspots[0].name.startswith("nvjet") and joined.hotspots[0].name == "aten::mm"
    assert not any(c.kind == "graph_replay_unjoined" for c in joined.trace.caveats)
    assert joined.span_ns == alone.span_ns and joined.idle_ns == alone.idle_ns   # the ops carried in take no time
    assert main(["report", str(rep), "--graph-capture", str(cap), "--json"]) == 0
    assert '"aten::mm"' in capsys.readouterr().out


def test_graph_capture_applies_to_one_file_not_a_directory(tmp_path, capsys):
    (tmp_path / "ranks").mkdir()
    assert main(["report", str(tmp_path / "ranks"), "--graph-capture", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert "--graph-capture" in err and "apply to one trace file" in err


def capture_profile(tmp_path: Path, ops: int = 40, every_us: int = 1000, op_us: int = 8,
                    name: str = "capture-profile") -> Path:
    """A profile of a capture: `ops` ops each launching into the graph `every_us` apart (a call that records a
    node and runs nothing), two eager kernels around it; by default 40 ops 1 ms apart."""
    ev = [op("aten::fill_", 0, 8 * US, 1), call("cudaLaunchKernel", 2 * US, 6 * US, 900, 1),
          gpu("fill_kernel", 10 * US, 12 * US, 900), call("cudaStreamBeginCapture", 20 * US, 22 * US)]
    for i in range(ops):
        t = 30 * US + i * every_us * US
        ev.append(op("aten::add", t, t + op_us * US, 10 + i, dims=ADD_DIMS, types=ADD_TYPES))
        ev.append(call("cudaLaunchKernel", t + 2 * US, t + 6 * US, 1000 + i, 10 + i))
    end = 30 * US + ops * every_us * US
    ev += [call("cudaStreamEndCapture", end, end + 2 * US), call("cudaGraphInstantiate", end + 5 * US, end + 800 * US)]
    t = end + 900 * US
    ev += [op("aten::fill_", t, t + 8 * US, 999), call("cudaLaunchKernel", t + 2 * US, t + 6 * US, 990, 999),
           gpu("fill_kernel", t + 10 * US, t + 12 * US, 990)]
    return write(tmp_path / f"{name}.json.gz", document(ev))


def test_a_profile_of_a_graph_capture_says_profile_the_replays_not_cut_launches(tmp_path):
    a = analyze_file(capture_profile(tmp_path))
    assert a.graph_capture.graphs == 1 and a.graph_capture.recorded == 40
    assert a.graph_capture.share > 0.9
    assert a.next_experiment.kind is Experiment.PROFILE_REPLAYS
    nxt = five_lines(a)[4]
    assert nxt.startswith("Next: profile the replays, not the capture") and "CUDA graphs (mode=" not in nxt
    assert any("the trace captures 1 CUDA graph (40 launches recorded into graphs, not run" in c
               for c in analysis_caveats(a))
    assert serialize.report(a)["next_experiment"]["kind"] == "profile_replays"


def test_cuda_graphs_predicts_nothing_from_calls_that_are_being_captured(tmp_path):
    """Before: collapsing the capture's 40 launch calls into one graph launch 'saved' the capture itself."""
    w = whatif.predict(load(capture_profile(tmp_path)), ["cuda_graphs"])
    assert w.levers[0].predicted_ratio > 0.97


def test_graph_node_ids_and_collective_groups_survive_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    from tracetriage.analyzers.loading import cache

    path = graph_trace(tmp_path)
    fresh = load(path, use_cache=False)
    cache.put(path, fresh)
    hit = cache.get(path)
    assert hit is not None
    assert (hit.ev.graph_node == fresh.ev.graph_node).all() and (hit.graph_op_of == fresh.graph_op_of).all()
    assert sorted(set(hit.ev.graph_node.tolist()) - {NONE}) == [11, 12, 13]


def test_the_lenient_decoder_reads_graph_node_ids_too(tmp_path):
    """A file the strict decoder refuses (a string ts somewhere) still joins its replays."""
    ev = capture_events(100 * US, 1, 1000) + replay_events(1000 * US, 2, 5000)
    ev.append({"ph": "X", "cat": "cpu_op", "name": "odd", "pid": 1, "tid": 1, "ts": "soon", "dur": 1})
    tr = load(write(tmp_path / "t.json.gz", document(ev)), use_cache=False)
    k = np.flatnonzero(tr.ev.cat == 6)
    assert (tr.graph_op_of[k] != NONE).all() and set(tr.ev.graph_node[k].tolist()) == {11, 12, 13}


# --- the bundled H200 traces --------------------------------------------------------------------

def test_gpt_graphs_replays_are_said_under_recorded_its_graphs_were_captured_before_the_profile():
    a = analyze_file(TRACES / "gpt-graphs.json.gz")
    cav = next(c for c in a.trace.caveats if c.kind == "graph_replay_unjoined")
    assert (cav.count, cav.total) == (6080, 6080)
    assert a.graph_capture is None


def test_eager_and_graph_decode_agree_on_the_kernels_regime():
    """The same 1B-parameter decode, eager and replayed from CUDA graphs: its kernels are memory-bound both ways
    (eager decode idles most of its span on launches, so its span is overhead-bound; its kernels are not)."""
    eager, graphs = analyze_file(TRACES / "gpt-eager.json.gz"), analyze_file(TRACES / "gpt-graphs.json.gz")
    for a in (eager, graphs):
        v = a.phases.decode.verdict
        assert v.memory_us > 3 * v.compute_us, a.trace.path
    assert graphs.phases.decode.regime is Regime.MEMORY and eager.phases.decode.regime is Regime.OVERHEAD


# --- graph-captured decode on the H200 (traces/graphs: the capture inside the profiled window) ------------

GRAPHS = TRACES / "graphs"


@pytest.mark.parametrize("name, graph_launches, nodes", [("decode-cudagraph", 16, 227),
                                                          ("decode-reduce-overhead", 16, 60)])
def test_every_replayed_kernel_of_a_graph_captured_in_the_profile_is_joined(name, graph_launches, nodes):
    tr = load(GRAPHS / f"{name}.json.gz")
    assert not any(c.kind == "graph_replay_unjoined" for c in tr.caveats)
    assert int(np.sum(tr.graph_op_of != NONE)) == graph_launches * nodes


@pytest.mark.parametrize("name", ["decode-cudagraph", "decode-reduce-overhead"])
def test_graph_decode_charges_its_matmuls_to_aten_mm_as_eager_decode_does(name):
    eager, graphs = analyze_file(GRAPHS / "decode-eager.json.gz"), analyze_file(GRAPHS / f"{name}.json.gz")
    mm = {a.trace.path: next(h for h in a.hotspots if h.name == "aten::mm") for a in (eager, graphs)}
    assert mm[str(GRAPHS / f"{name}.json.gz")].calls == mm[str(GRAPHS / "decode-eager.json.gz")].calls == 336
    bound = {a.trace.path: {p.bound for p in a.roof.points if p.name == "aten::mm"} for a in (eager, graphs)}
    assert len(set(map(frozenset, bound.values()))) == 1


@pytest.mark.parametrize("name", ["decode-cudagraph", "decode-reduce-overhead"])
def test_eager_and_graph_captured_decode_agree_on_the_kernels_regime(name):
    for path in (GRAPHS / "decode-eager.json.gz", GRAPHS / f"{name}.json.gz"):
        v = analyze_file(path).verdict
        assert v.memory_us > 10 * v.compute_us and v.unknown_us < 0.05 * v.kernel_us, path.name


def test_a_profile_mostly_of_the_capture_says_profile_the_replays():
    a = analyze_file(GRAPHS / "decode-cudagraph.json.gz")
    assert a.graph_capture.graphs == 1 and a.graph_capture.recorded == 227
    assert a.next_experiment.kind is Experiment.PROFILE_REPLAYS


def test_cuda_graphs_proposes_nothing_for_work_the_trace_already_replays_in_graphs():
    """M01.08-c's after trace replays its multiply and add in CUDA graphs (100 cudaGraphLaunch, 2 kernels each):
    main priced CUDA graphs there at +26% (each graph launch re-graphed at the reference cost). A graph replayed
    stays as it is: the lever finds nothing to graph and predicts the replay unchanged."""
    w = whatif.predict(load(TRACES / "fixes/mid_ops--cuda_graphs.json.gz"))
    lv = w.lever("cuda_graphs")
    assert lv.assumption.count == 0
    assert lv.predicted_ns == w.baseline_ns
    report = serialize.report(analyze_file(TRACES / "fixes/mid_ops--cuda_graphs.json.gz"))["lines"][4]
    assert "CUDA graphs" not in report


def test_cuda_graphs_moves_only_the_launches_left_outside_the_graphs():
    """gpt-graphs replays each decode step in one graph launch and runs prefill and the sampling eagerly: the lever
    counts the eager launches' activities it graphs (the replays it takes into a stretch's graph with them counted
    apart), and its saving is the Next's 'cut the launches left outside'."""
    from tracetriage.analyzers.model.runtime_calls import is_graph_launch
    from tracetriage.analyzers.model.trace import GPU_CATS

    t = load(TRACES / "gpt-graphs.json.gz")
    lv = whatif.predict(t).lever("cuda_graphs")
    calls = t.launch_of[np.flatnonzero(np.isin(t.ev.cat, GPU_CATS))]
    graphed = sum(1 for c in calls.tolist() if c != NONE and is_graph_launch(t.names[t.ev.name[c]]))
    assert graphed > 6000
    assert 0 < lv.assumption.count <= len(calls) - graphed
    assert 0 < lv.assumption.replays <= 64
    assert lv.saving_ns > 0


def test_a_trace_whose_every_kernel_is_replayed_from_graphs_is_not_told_to_cut_launches_left_outside():
    """rmsnorm_swiglu_small--cuda_graphs: 2,000 of 2,000 kernels come from 200 cudaGraphLaunch calls. main said
    'cut the launches left outside the CUDA graphs' where none is left outside: the device waits between replays."""
    a = analyze_file(TRACES / "realworld/rmsnorm_swiglu_small--cuda_graphs.json.gz")
    line = five_lines(a)[4]
    assert "left outside" not in line
    assert line.startswith("Next: put more work in each graph replay: every kernel here runs inside the CUDA graphs "
                           "the trace replays (200 graph launches)")
    # its launch calls are graph launches of 10 kernels each: the Idle line says what one costs
    # (and the gaps inside the replays are their own spacing, not launch gaps: heldout-user16 pi0_h200)
    assert "2,000 of the 2,000 kernels come from 200 graph launches (each call 21.2 µs, median)" in five_lines(a)[2]
    assert "the other 8.47 ms is in 199 gaps between replays (the longest 74.2 µs)" in five_lines(a)[2]
    # gpt-graphs runs prefill and sampling eagerly beside its replays: those launches are left outside
    assert "cut the launches left outside" in five_lines(analyze_file(TRACES / "gpt-graphs.json.gz"))[4]


def dense_capture_profile(tmp_path: Path) -> Path:
    """A capture whose host records back to back (vLLM's capture_32_FULL: ~430 launch calls recorded in 56 ms):
    400 ops of 9 µs, 10 µs apart, each with a launch call that records a node and runs nothing."""
    return capture_profile(tmp_path, ops=400, every_us=10, op_us=9, name="dense-capture")


def test_the_idle_behind_a_host_recording_a_graph_is_host_work_not_launch_overhead(tmp_path):
    """Launch calls under stream capture run nothing: the host recording issues no GPU work, so the device's idle
    meanwhile is set-up on the host (before: 'launch overhead 100%' on the public vLLM capture trace)."""
    a = analyze_file(dense_capture_profile(tmp_path))
    by_cause = a.by_cause_ns
    assert by_cause[Cause.HOST_WORK] > 0.9 * a.idle_ns
    assert by_cause[Cause.LAUNCH_OVERHEAD] < 0.05 * a.idle_ns
    assert a.next_experiment.kind is Experiment.PROFILE_REPLAYS
