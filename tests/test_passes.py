"""A trace that runs one forward twice (once bare, once under a record_function range) holds two passes, not one
pass whose repeated projections are its layers (analyses.passes): the Measured line's count agrees with the Time
line's range, which holds half the GPU time once. One forward alone stays one pass."""
import kineto_factory as kf
from kineto_factory import Launch, annotation, call, document, events_for, op
from other_peoples_traces import MS, US
from tracetriage.analyzers.analyses import steps
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file

# one attention forward: three projections, a scores matmul, div, softmax, a values matmul, an output projection
_FORWARD = (("aten::linear", 3 * MS), ("aten::linear", 3 * MS), ("aten::linear", 3 * MS), ("aten::view", 0),
            ("aten::transpose", 0), ("aten::matmul", 8 * MS), ("aten::div", 5 * MS), ("aten::softmax", 6 * MS),
            ("aten::matmul", 7 * MS), ("aten::transpose", 0), ("aten::contiguous", 100 * US), ("aten::linear", 3 * MS))


def _forwards(n: int, ranged: bool = True) -> dict:
    """n forwards launched back to back by a host far ahead of the GPU, the last under `model_inference` (where
    ranged and n > 1), then one torch.cuda.synchronize()."""
    launches, plain, t, g = [], [], 100 * US, 200 * US
    first_id = 1
    starts = []
    for _ in range(n):
        starts.append(t)
        for name, kernel_ns in _FORWARD:
            if kernel_ns:
                launches.append(Launch(op_start=t, op_end=t + 60 * US, call_start=t + 20 * US,
                                       call_end=t + 30 * US, gpu_start=g, gpu_end=g + kernel_ns, op=name,
                                       kernel=f"void {name[6:]}_kernel<float>(float*)"))
                g += kernel_ns + 2 * US
            else:
                plain.append(op(name, t, t + 5 * US, 50_000 + first_id))
                first_id += 1
            t += 80 * US
    ev = events_for(launches) + plain
    if ranged and n > 1:
        ev.append(annotation("model_inference", starts[-1] - 10 * US, t))
    ev.append(call("cudaDeviceSynchronize", t + 10 * US, g + 20 * US, corr=999_999))
    return document(ev)


def test_a_forward_run_twice_is_two_passes_one_under_its_range(tmp_path):
    path = kf.write(tmp_path / "t.json", _forwards(2))
    st = steps.find(load(path, use_cache=False))
    out = serialize.report(analyze_file(path))
    measured = out["lines"][0]
    assert "no repeated steps: 2 passes of one op sequence, one under model_inference, too few to read as steps" \
        in measured, measured
    assert "layers" not in measured
    assert claims.check(out) == []
    assert (st.passes.count, st.passes.range_name) == (2, "model_inference")


def test_a_forward_run_once_stays_one_pass(tmp_path):
    out = serialize.report(analyze_file(kf.write(tmp_path / "t.json", _forwards(1))))
    assert "no repeated steps: one pass (its 4 repeats of one op sequence, from aten::linear, are layers of it" \
        in out["lines"][0]


def test_two_unranged_forwards_are_two_passes_with_no_range_named(tmp_path):
    out = serialize.report(analyze_file(kf.write(tmp_path / "t.json", _forwards(2, ranged=False))))
    assert "2 passes of one op sequence, too few to read as steps" in out["lines"][0]


def test_the_headroom_says_the_span_it_is_a_share_of_and_stays_within_half_the_kernels(tmp_path):
    out = serialize.report(analyze_file(kf.write(tmp_path / "t.json", _forwards(2))))
    nx = out["lines"][4]
    assert "if every kernel took half as long the traced span (host and GPU) would fall 50%, 76.4 ms → 38.3 ms" in nx
    assert claims.check(out) == []
    out["kernel_busy_us"] = 40_000.0     # halving 40 ms of kernels cannot save 38 ms
    assert claims.check(out) == ["halving every kernel is said to save 38.1 ms, more than half the kernels' 40.0 ms"]


def test_three_copies_of_one_sequence_are_left_to_the_step_search(tmp_path):
    """As often as a loop's unit, the copies were weighed by the step search, which found no step's mark in them: the
    pass-of-layers word stands (a model of nothing but identical layers)."""
    out = serialize.report(analyze_file(kf.write(tmp_path / "t.json", _forwards(3, ranged=False))))
    assert "passes" not in out["lines"][0]
