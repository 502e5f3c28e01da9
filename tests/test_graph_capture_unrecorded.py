"""A CUDA graph captured inside the profiled window whose launch calls the profiler did not record
(loading.graphs: the graph_capture_unrecorded caveat).

heldout-user19 gp_cudagraph captures its graph in the trace (cudaStreamBeginCapture, 11 aten::mm, EndCapture,
cudaGraphInstantiate), but that torch's profiler wrote none of the launch calls made under the capture, so its 20
replays join no capture. The report said both '220 of 220 GPU activities replayed from CUDA graphs match no
capture in the trace: the graphs were captured outside the profiled window ...; profile the capture too' and 'the
trace captures 1 CUDA graph (0 launches recorded into graphs, not run ...)'.
"""
from tests.kineto_factory import call, document, op, write
from tests.test_graph_replay import STEP, US, replay_events
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import analysis_caveats


def capture_without_launches(t0: int) -> list[dict]:
    """torch.cuda.graph's capture as that profiler wrote it: the ops, no launch call inside them."""
    ev = [call("cudaStreamBeginCapture", t0, t0 + 2 * US)]
    t = t0 + 10 * US
    for i, (name, dims, types, _, _) in enumerate(STEP):
        ev.append(op(name, t, t + 8 * US, 1 + i, dims=dims, types=types))
        t += 10 * US
    ev.append(call("cudaStreamEndCapture", t, t + 2 * US))
    ev.append(call("cudaGraphInstantiate", t + 5 * US, t + 50 * US))
    return ev


def test_a_capture_in_the_trace_with_no_recorded_launches_is_not_said_to_be_outside_the_window(tmp_path):
    path = write(tmp_path / "c.json.gz", document(capture_without_launches(100 * US)
                                                  + replay_events(1000 * US, 10, 5000)))
    a = analyze_file(path)
    kinds = {c.kind: c for c in a.trace.caveats}
    assert "graph_replay_unjoined" not in kinds and (kinds["graph_capture_unrecorded"].count,
                                                     kinds["graph_capture_unrecorded"].total) == (30, 30)
    text = " ".join(analysis_caveats(a))
    assert "outside the profiled window" not in text and "profile the capture too" not in text, text
    assert "the trace holds the graphs' capture, but the profiler recorded none of the launch calls made under it" \
        in text
    assert "0 launches recorded" not in text and "the profiler recorded none of the launches made under it" in text
