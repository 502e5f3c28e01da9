"""A compute- or memory-bound verdict placed by kernel names says why the kernels' FLOPs or bytes are not in the
trace, as the trace shows it, not 'no shapes recorded' whatever the cause: leimao's CUDA-graph captures (RTX 5080,
record_shapes on) read "(their FLOPs are not in the trace: no shapes recorded)" where the kernels were replayed from
graphs captured before the profiled window, as the trace's own Caveat says; the bundled chain-triton-large (shapes
recorded) read the same where its Triton kernels were launched outside any op."""
from pathlib import Path

from kineto_factory import Launch, document, events_for, write
from test_graph_replay import US, replay_events
from tracetriage.analyzers.model.verdicts import Regime
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines

ROOT = Path(__file__).resolve().parent.parent
GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4>(Params)"
STEP = (("aten::mm", [[640, 4096], [4096, 2048]], ["float", "float"], GEMM, 200 * US),
        ("aten::mm", [[640, 2048], [2048, 1024]], ["float", "float"], GEMM, 60 * US))


def replays_beside_an_eager_op() -> dict:
    """Ten replays of a graph captured before the window (no capture in the trace), and an eager add recorded with
    its shapes: record_shapes was on."""
    eager = [Launch(op_start=50 * US, op_end=70 * US, call_start=55 * US, call_end=65 * US, gpu_start=80 * US,
                    gpu_end=90 * US)]
    return document(events_for(eager) + replay_events(1000 * US, 10, 5000, step=STEP, with_nodes=False))


def test_graph_replays_say_their_capture_is_not_in_the_trace(tmp_path):
    a = analyze_file(write(tmp_path / "replays.json", replays_beside_an_eager_op()))
    assert a.verdict.regime is Regime.COMPUTE and a.verdict.achieved_tflops is None
    regime = five_lines(a)[3]
    assert "no shapes recorded" not in regime
    assert ("(their FLOPs are not in the trace: they were replayed from CUDA graphs whose capture is not in the trace, "
            "so their ops and shapes are not known)") in regime
    assert any("replayed from CUDA graphs match no capture in the trace" in c for c in analysis_caveats(a))
    out = serialize.report(a)
    assert "named_why_us" not in out["regime_detail"]      # the words' field only: the JSON keeps its keys
    assert claims.check(out) == []


def test_kernels_launched_outside_any_op_say_so():
    a = analyze_file(ROOT / "traces" / "chain-triton-large.json.gz")
    regime = five_lines(a)[3]
    assert "(their bytes are not in the trace: they were launched outside any recorded op" in regime
    assert "no shapes recorded" not in regime
