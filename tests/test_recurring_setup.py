"""A first call's cost that every profiled step pays again (a new input shape each step) is a per-shape cost, never
"one-time set-up ... warm up before profiling"; a cold first step followed by warm ones keeps its set-up caveat."""
from __future__ import annotations

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import analysis_caveats

US, MS = 1_000, 1_000_000


def _steps(tmp_path, cold_every_step: bool, steps: int = 3):
    """`steps` ProfilerSteps of six aten::conv2d calls each (a 1 ms kernel apiece); the first conv2d of the first
    step (of every step: `cold_every_step`) holds the host 40 ms before it launches, as a new shape's set-up does."""
    ev, t, corr, ext = [], 0, 100, 1
    for k in range(steps):
        start = t
        ev.append(op("aten::relu", t, t + 20 * US, ext))     # the step's first GPU work, before the convolutions
        ev.append(call("cudaLaunchKernel", t + 5 * US, t + 10 * US, corr, ext))
        ev.append(gpu("void at::native::vectorized_elementwise_kernel<4>", t + 12 * US, t + 112 * US, corr))
        t, corr, ext = t + 150 * US, corr + 1, ext + 1
        for i in range(6):
            cold = i == 0 and (k == 0 or cold_every_step)
            host = 40 * MS if cold else 50 * US
            ev.append(op("aten::conv2d", t, t + host + 10 * US, ext))
            ev.append(call("cudaLaunchKernel", t + host, t + host + 5 * US, corr, ext))
            ev.append(gpu("void cudnn::conv_kernel<float>", t + host + 8 * US, t + host + 1_008 * US, corr))
            t, corr, ext = t + host + 1_100 * US, corr + 1, ext + 1
        ev.append(annotation(f"ProfilerStep#{k + 1}", start, t + 100 * US))
        t += 200 * US
    return load(write(tmp_path / f"steps{int(cold_every_step)}.json", document(ev)), use_cache=False)


def test_a_first_call_cost_every_step_pays_again_is_named_per_shape_not_one_time(tmp_path):
    a = analyze_trace(_steps(tmp_path, cold_every_step=True))
    said = "\n".join(analysis_caveats(a))
    assert "one-time set-up: first calls" not in said and "warm up before profiling" not in said
    assert "a cost that looks like one-time set-up recurs: aten::conv2d" in said
    assert "3 of the 3 profiled steps pay it" in said and "warming up does not remove it" in said
    # no dimensions recorded (an autograd node's evaluate_function records none): nothing says the shapes repeat
    assert "a per-shape cost" in said and "same input shapes" not in said
    assert not a.warmup


def test_a_cost_every_step_pays_with_the_same_shapes_is_the_steps_own_work_not_a_per_shape_cost(tmp_path):
    """fresh10 ctr_id_remap_table_not_buffer: a 64 MB table uploaded from pageable memory every step (aten::to
    [8388608] int64, 6.8 and 8.6 ms), the op's warm figure from a scalar .to of another shape, was called "a per-shape
    cost (each new input shape pays its set-up again ...) ... pad or bucket the inputs": no shape changes there."""
    ev, t, corr, ext = [], 0, 100, 1
    for k in range(3):
        start = t
        ev.append(op("aten::relu", t, t + 20 * US, ext))       # the step's first GPU work, before the upload
        _launch(ev, t + 5 * US, corr, ext)
        t, corr, ext = t + 150 * US, corr + 1, ext + 1
        ev.append(op("aten::to", t, t + 8 * MS, ext, dims=[[8388608]], types=["long int"]))
        _launch(ev, t + 8 * MS - 10 * US, corr, ext)
        t, corr, ext = t + 8 * MS + 200 * US, corr + 1, ext + 1
        for i in range(5):       # the scalar .to of another shape, warm
            ev.append(op("aten::to", t, t + 2 * US, ext, dims=[[]], types=["float"]))
            ev.append(op("aten::mul", t + 10 * US, t + 30 * US, ext + 1))
            _launch(ev, t + 15 * US, corr, ext + 1)
            t, corr, ext = t + 200 * US, corr + 1, ext + 2
        ev.append(annotation(f"ProfilerStep#{k + 1}", start, t + 50 * US))
        t += 100 * US
    a = analyze_trace(load(write(tmp_path / "upload.json", document(ev)), use_cache=False))
    said = "\n".join(analysis_caveats(a))
    assert "recurs: aten::to" in said and "with the same input shapes: work each step does again" in said
    assert "per-shape" not in said and "pad or bucket" not in said and "warm)" not in said


def test_a_cold_first_step_keeps_its_one_time_set_up(tmp_path):
    a = analyze_trace(_steps(tmp_path, cold_every_step=False))
    said = "\n".join(analysis_caveats(a))
    assert "recurs" not in said and a.recurring_setup == ()
    assert any(w.name == "aten::conv2d" for w in a.warmup)


def _launch(ev, t, corr, ext, name="void at::native::vectorized_elementwise_kernel<4>", dur=100 * US, call_ns=5 * US):
    ev.append(call("cudaLaunchKernel", t, t + call_ns, corr, ext))
    ev.append(gpu(name, t + call_ns + 2 * US, t + call_ns + 2 * US + dur, corr))


def test_torchscript_compiling_recorded_as_no_event_is_one_time_set_up(tmp_path):
    """heldout-user15 partt_b512: 292 ms with no event on any thread, ending at the first delta_r2 whose first call runs
    TorchScript's profiling executor (fallback_function): its compile on first use, left in the steady state."""
    ev, t, corr, ext = [], 0, 100, 1
    ev.append(op("aten::relu", t, t + 20 * US, ext))
    _launch(ev, t + 5 * US, corr, ext)
    t, corr, ext = 100 * MS, corr + 1, ext + 1          # ~100 ms with no event at all
    for k in range(4):
        ev.append(op("delta_r2", t, t + 300 * US, ext))
        ev.append(op("fallback_function", t + 20 * US, t + 280 * US, ext + 1))
        ev.append(op("aten::sub", t + 30 * US, t + 80 * US, ext + 2))
        _launch(ev, t + 40 * US, corr, ext + 2)
        t, corr, ext = t + 400 * US, corr + 1, ext + 3
    a = analyze_trace(load(write(tmp_path / "script.json", document(ev)), use_cache=False))
    names = [w.name for w in a.warmup]
    assert any(n.startswith("TorchScript compiling before delta_r2's first call") for n in names)
    assert a.warmup_share > 0.9
    assert "TorchScript compiling before delta_r2's first call" in "\n".join(analysis_caveats(a))


def test_a_first_launch_before_the_gpu_span_is_named_among_the_set_up(tmp_path):
    """heldout-user15 switch_moe_8k: a 419.6 ms first cudaLaunchKernel inside aten::embedding before the first kernel,
    82% of the set-up the caveat's share counts, missing from its list of first calls."""
    ev, t, corr, ext = [], 0, 100, 1
    ev.append(op("aten::embedding", t, t + 300 * MS, ext))
    _launch(ev, t + 1 * MS, corr, ext, call_ns=298 * MS)     # the first launch loads the module
    t, corr, ext = 300 * MS + 200 * US, corr + 1, ext + 1
    for i in range(8):
        host = 20 * MS if i == 0 else 50 * US
        ev.append(op("aten::linear", t, t + host + 10 * US, ext))
        _launch(ev, t + host, corr, ext, dur=1 * MS)
        t, corr, ext = t + host + 1_100 * US, corr + 1, ext + 1
    a = analyze_trace(load(write(tmp_path / "lead.json", document(ev)), use_cache=False))
    said = next(c for c in analysis_caveats(a) if "one-time set-up: first calls of" in c)
    assert said.startswith("the profile includes one-time set-up: first calls of cudaLaunchKernel (in "
                           "aten::embedding) 298.0 ms (later 5.0 µs), aten::linear 20.0 ms")
