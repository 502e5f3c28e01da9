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
    assert not a.warmup


def test_a_cold_first_step_keeps_its_one_time_set_up(tmp_path):
    a = analyze_trace(_steps(tmp_path, cold_every_step=False))
    said = "\n".join(analysis_caveats(a))
    assert "recurs" not in said and a.recurring_setup == ()
    assert any(w.name == "aten::conv2d" for w in a.warmup)
