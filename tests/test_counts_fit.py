"""What a report counts fits what the trace holds (issue 33): steps that fit the span, an optimizer's calls that are
its steps, a kernel under one Time item, a Regime whose intensity sits on its verdict's side of the ridge. Each on a
small synthetic trace that shows the pattern, with the case where the rule must not fire beside it."""
import dataclasses

import numpy as np

from kineto_factory import annotation, document, events_for, gpu, write
from other_peoples_traces import MS, US, steady
from other_peoples_traces import call as plain_call
from tracetriage.analyzers.analyses import hotspots
from tracetriage.analyzers.analyses.roofline import Bound, Regime, RooflinePoint, _bound_intensity
from tracetriage.analyzers.analyses.step_runs import one_per_run
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Construct
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.output.claims_counts import (
    optimizer_calls_are_its_steps,
    regime_intensity_on_its_side,
    steps_fit_the_span,
)
from tracetriage.analyzers.triage.report import analyze_file


def _decode_with_double_syncs(iterations: int = 10, second_sync: bool = True) -> dict:
    """A decode loop as vLLM runs it: each iteration launches its kernels, waits in one cudaEventSynchronize until
    the GPU is done, then calls a second cudaEventSynchronize that returns at once."""
    ev, t = [], 100 * US
    for i in range(iterations):
        launches = steady(8, t, first_id=i * 8, kernel_ns=200 * US)
        ev += events_for(launches, first_id=1 + i * 8)
        end = launches[-1].gpu_end
        ev.append(plain_call("cudaEventSynchronize", launches[-1].call_end + 2 * US, end + 3 * US))
        if second_sync:
            ev.append(plain_call("cudaEventSynchronize", end + 6 * US, end + 10 * US))
        t = end + 20 * US
    return document(ev)


def test_back_to_back_syncs_end_one_step_not_two(tmp_path):
    a = analyze_file(write(tmp_path / "decode.json", _decode_with_double_syncs()))
    out = serialize.report(a)
    assert out["steps"]["count"] == 10           # not 19: every other "step" an empty window between the syncs
    assert out["steps"]["boundary"] == "after_sync"
    assert min(out["steps"]["per_step"]["wall_us"]) > 0
    assert steps_fit_the_span(out) == []
    assert claims.check(out) == []


def test_one_sync_per_iteration_still_ends_each_step(tmp_path):
    a = analyze_file(write(tmp_path / "decode1.json", _decode_with_double_syncs(second_sync=False)))
    assert serialize.report(a)["steps"]["count"] == 10


def test_a_run_of_marks_starts_one_step():
    pos = np.array([5, 9, 10, 20, 21, 22, 30])
    silent = np.ones(40, bool)
    assert one_per_run(pos, True, silent).tolist() == [5, 10, 22, 30]    # after a sync: after the run's last
    assert one_per_run(pos, False, silent).tolist() == [5, 9, 20, 30]    # at an op: at the run's first
    # marks that launch work back to back (a graph replay per step) are steps each
    assert one_per_run(pos, False, np.zeros(40, bool)).tolist() == pos.tolist()


def test_steps_that_do_not_fit_the_span_are_caught():
    cols = {"start_us": [0.0, 700_000.0], "wall_us": [77_000.0, 77_000.0]}
    out = {"span_us": 774_500.0, "steps": {"count": 19, "summary": {"median_us": 77_000.0}, "per_step": cols}}
    assert steps_fit_the_span(out)
    out["steps"]["count"] = 10
    assert steps_fit_the_span(out) == []


def _training_loop_with_zero_grad(iterations: int = 6) -> dict:
    """Each iteration: Optimizer.zero_grad (launches nothing), a forward's launches, then Optimizer.step whose
    launches are its own."""
    ev, t, n = [], 100 * US, 1
    for i in range(iterations):
        ev.append(annotation("Optimizer.zero_grad#Adam.zero_grad", t, t + 30 * US))
        fwd = steady(6, t + 40 * US, first_id=n)
        ev += events_for(fwd, first_id=n)
        n += 6
        s0 = fwd[-1].gpu_end + 5 * US
        opt = steady(4, s0, first_id=n)
        ev += events_for(opt, first_id=n)
        n += 4
        ev.append(annotation("Optimizer.step#Adam.step", s0, opt[-1].op_end + 2 * US))
        t = opt[-1].gpu_end + 50 * US
    return document(ev)


def test_the_optimizers_calls_are_its_steps_not_its_zero_grads(tmp_path):
    a = analyze_file(write(tmp_path / "train.json", _training_loop_with_zero_grad()))
    opt = next(x for x in a.framework.constructs if x.construct is Construct.OPTIMIZER)
    assert opt.ranges == 6 and opt.launches == 24      # "24 launches in 6 calls", not in 12
    out = serialize.report(a)
    assert optimizer_calls_are_its_steps(out) == []
    assert claims.check(out) == []


def test_an_optimizer_said_to_run_twice_its_steps_is_caught():
    out = {"ranges": [{"name": "Optimizer.step#Adam.step", "count": 10}],
           "framework": [{"construct": "optimizer", "calls": 20}]}
    assert optimizer_calls_are_its_steps(out)


def _op_with_unlaunched_twins(second_op: bool = False) -> dict:
    """aten::gather launches 12 gather kernels the trace correlates; 12 more of the same kernel ran queued from
    before the profiled window (no launch call). With `second_op`, aten::take launches that kernel too."""
    kern = "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int)"
    launches = steady(12, 100 * US, kernel=kern)
    launches = [dataclasses.replace(x, op="aten::gather") for x in launches]
    if second_op:
        more = steady(4, launches[-1].gpu_end + 10 * US, kernel=kern, first_id=12)
        launches += [dataclasses.replace(x, op="aten::take") for x in more]
    ev = events_for(launches)
    t = launches[-1].gpu_end + 10 * US
    for i in range(12):    # queued before the window: a correlation no launch call in the trace carries
        ev.append(gpu(kern, t + i * 20 * US, t + i * 20 * US + 10 * US, 800_000 + i))
    return document(ev)


def test_a_kernel_whose_launch_is_missing_is_its_ops(tmp_path):
    tr = load(write(tmp_path / "gather.json", _op_with_unlaunched_twins()), use_cache=False)
    hot = hotspots.by_op(tr, hotspots.gpu_rows(tr))
    assert [h.name for h in hot] == ["aten::gather"]
    assert hot[0].kernels == 24 and hot[0].calls == 24 and hot[0].share == 1.0


def test_a_kernel_two_ops_launch_stays_under_its_own_name(tmp_path):
    tr = load(write(tmp_path / "gather2.json", _op_with_unlaunched_twins(second_op=True)), use_cache=False)
    names = [h.name for h in hotspots.by_op(tr, hotspots.gpu_rows(tr))]
    assert "aten::gather" in names and "aten::take" in names
    assert any("vectorized_gather_kernel" in n for n in names)     # which op ran the unlaunched ones is unknown


def _point(bound: Bound, flops: float, moved: float, dtype: str = "fp32") -> RooflinePoint:
    return RooflinePoint("aten::x", "", dtype, "matmul", 1, flops, moved, 1.0, flops / moved, 0.0, 0.0, bound,
                         20.0, 60.0, 3000.0, 0.5)


def test_a_memory_bound_regimes_intensity_is_its_memory_bound_ops():
    roof = type("Roof", (), {"points": [_point(Bound.COMPUTE, 8e12, 1e10),        # a GEMM: 800 FLOP/byte
                                        _point(Bound.MEMORY, 1e9, 4e9),           # elementwise: 0.25 FLOP/byte
                                        _point(Bound.MEMORY, 1e9, 1e9, "bf16")]})()  # another precision's ridge
    assert _bound_intensity(roof, Bound.MEMORY, "fp32") == 0.25
    assert _bound_intensity(roof, Bound.COMPUTE, "fp32") == 800.0
    assert _bound_intensity(roof, Bound.LATENCY, "fp32") is None


def test_a_memory_bound_regime_above_its_ridge_is_caught():
    said = claims.Said([{"key": "regime.intensity", "value": 80.0, "said": "80"}])
    assert regime_intensity_on_its_side(said, {"regime_detail": {"regime": "memory", "ridge": 19.9}})
    assert regime_intensity_on_its_side(said, {"regime_detail": {"regime": "compute", "ridge": 19.9}}) == []
    assert regime_intensity_on_its_side(said, {"regime_detail": {"regime": "overhead", "ridge": 19.9}}) == []
    assert Regime.MEMORY.value == "memory"


def _one_profiled_step_that_builds_its_model(with_stack: bool = True) -> dict:
    """A tutorial's train function profiled whole as one ProfilerStep: 3 ms building two Linear layers and moving
    them to the device (Python frames of torch.nn's constructors and Module.to), then ten tiny iterations."""
    ev = [annotation("ProfilerStep#2", 0, 12 * MS)]
    if with_stack:
        for name, s, e in (("torch/nn/modules/linear.py(96): __init__", 100 * US, 1500 * US),
                           ("torch/nn/modules/linear.py(96): __init__", 1600 * US, 2800 * US),
                           ("torch/nn/modules/module.py(1244): to", 2900 * US, 3300 * US)):
            ev.append(python_frame(name, s, e))
    launches = steady(60, 3400 * US, gap=100 * US)
    ev += events_for(launches)
    return document(ev)


def python_frame(name: str, start: int, end: int) -> dict:
    ev = annotation(name, start, end)
    return {**ev, "cat": "python_function"}


def test_the_only_steps_model_build_is_said_as_set_up(tmp_path):
    a = analyze_file(write(tmp_path / "build.json", _one_profiled_step_that_builds_its_model()))
    assert a.steps.model_build_ns == 3_000 * US           # the frames' union: 1.4 + 1.2 + 0.4 ms
    line = serialize.report(a)["lines"][0]
    assert "3.00 ms of it (25%) building the model" in line
    assert claims.check(serialize.report(a)) == []


def test_no_model_build_is_said_without_python_frames(tmp_path):
    a = analyze_file(write(tmp_path / "nobuild.json", _one_profiled_step_that_builds_its_model(with_stack=False)))
    assert a.steps.model_build_ns == 0
    assert "building the model" not in serialize.report(a)["lines"][0]
