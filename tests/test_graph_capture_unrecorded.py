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
from tracetriage.analyzers.voice.health import health_line
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines


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


def _without_shapes(events: list[dict]) -> list[dict]:
    """The same events as a profiler without record_shapes writes them."""
    for e in events:
        for k in ("Input Dims", "Input type", "Concrete Inputs"):
            e.get("args", {}).pop(k, None)
    return events


def _regime(a) -> str:
    return next(line for line in five_lines(a) if line.startswith("Regime:"))


def test_an_unrecorded_capture_is_not_told_to_profile_the_capture_it_already_holds(tmp_path):
    """record_shapes off: the Health line's fix was 'profile the capture too or pass its trace with --graph-capture',
    though the capture is in the trace and the profiler records no launch under one; and the Regime line said the
    replays have 'no op of their own', though their ops are in the capture."""
    path = write(tmp_path / "c.json.gz", document(_without_shapes(capture_without_launches(100 * US)
                                                                  + replay_events(1000 * US, 10, 5000))))
    a = analyze_file(path)
    health = health_line(a.health)
    assert "profile the capture too" not in health and "--graph-capture" not in health, health
    assert "the trace holds without the launch calls made under it, so profile one eager step (no CUDA graphs) " \
           "with record_shapes=True" in health, health
    regime = _regime(a)
    assert "no op of their own" not in regime and "which op each kernel is, and its shapes, are not known" in regime


def test_replayed_kernels_shapes_are_said_unknown_not_unrecorded(tmp_path):
    """Recorded with shapes: the replays' shapes are not known (their ops ran at a capture the trace lacks, or holds
    without its launches), never 'no op recorded their shapes', which reads as record_shapes off."""
    outside = write(tmp_path / "o.json.gz", document(replay_events(1000 * US, 10, 5000)))
    regime = _regime(analyze_file(outside))
    assert "no op recorded their shapes" not in regime, regime
    assert "whose capture is not in the trace, so their ops and shapes are not known" in regime, regime
    unrecorded = write(tmp_path / "u.json.gz", document(capture_without_launches(100 * US)
                                                        + replay_events(1000 * US, 10, 5000)))
    regime = _regime(analyze_file(unrecorded))
    assert "capture is not in the trace" not in regime and "no op recorded their shapes" not in regime, regime
    assert "whose capture the trace holds without the launch calls made under it, so which op each kernel is, and " \
           "its shapes, are not known" in regime, regime
