"""cuDNN's benchmark trials priced where a trace shows them paid in every step (the shapes change): benchmark off, or
shapes that repeat, takes out each call's trial stretch (the candidates' kernels, launches, event records, waits and
all but one of their plans) and keeps the chosen kernel. Trials in the first step only are set-up (warm_up's): the
knob stays unpriced there. And work queued before the window that a kernel starts a hair before its predecessor's
end still follows that predecessor when a lever shortens it."""
from __future__ import annotations

import kineto_factory as kf  # noqa: F401  (the factory's module, for its constants)
from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif import replay as rp
from tracetriage.analyzers.whatif.levers import spec_of
from tracetriage.analyzers.whatif.predict import predict

US = 1_000
STEP = 6_000 * US
PLANS = 1_000 * US          # the host builds every candidate's plan before timing the first one


def _launch(ev, t, corr, ext, name, dur_us):
    ev.append(call("cudaLaunchKernel", t, t + 4 * US, corr, ext))
    ev.append(gpu(name, t + 6 * US, t + 6 * US + dur_us * US, corr))


def _steps(tmp_path, steps: int = 4, trial_steps: int = 4):
    """Each profiled step one cuDNN convolution: in the first `trial_steps` steps (a new input shape each) its plans
    for five candidates (1 ms of host time), then each candidate between two event records and waited for, then the
    chosen kernel; in the others (a shape seen before) the chosen kernel only."""
    ev, corr, ext = [], 100, 1
    for s in range(steps):
        t = s * STEP
        ev.append(annotation(f"ProfilerStep#{s + 2}", t, t + STEP - 10 * US))
        ev.append(op("aten::relu", t + 10 * US, t + 30 * US, ext))
        _launch(ev, t + 15 * US, corr, ext, "void at::native::vectorized_elementwise_kernel<4>", 10)
        corr, ext = corr + 1, ext + 1
        start = t + 50 * US
        trials = s < trial_steps
        end = start + (PLANS + 3_200 * US if trials else 200 * US)
        ev.append(op("aten::conv1d", start, end))
        ev.append(op("aten::cudnn_convolution", start + 5 * US, end - 5 * US, ext))
        u = start + 10 * US
        if trials:
            ev.append(call("cudaMemGetInfo", u + PLANS, u + PLANS + 10 * US, None, ext))
            u += PLANS + 20 * US
            for k in range(5):
                ev.append(call("cudaEventRecord", u, u + 2 * US, None, ext))
                _launch(ev, u + 3 * US, corr, ext, f"void cudnn::conv{k}_kernel<float>", 500)
                ev.append(call("cudaEventRecord", u + 8 * US, u + 10 * US, None, ext))
                ev.append(call("cudaEventSynchronize", u + 12 * US, u + 520 * US, None, ext))
                u, corr = u + 600 * US, corr + 1
        _launch(ev, u, corr, ext, "void cudnn::conv2_kernel<float>", 100)
        corr, ext = corr + 1, ext + 1
    return load(write(tmp_path / "cudnn_steps.json", document(ev)), use_cache=False)


def test_trials_in_every_step_are_priced_benchmark_off_and_the_chosen_kernel_stays(tmp_path):
    trace = _steps(tmp_path)
    lever = predict(trace, levers=["cudnn_benchmark"]).lever("cudnn_benchmark")
    a = lever.assumption
    assert a.off and a.trial_calls == 4 and a.trial_kernels == 20 and a.trial_steps == 4
    # each step's 3.2 ms of trials and 0.8 ms of its 1 ms of plans go (one plan of five stays): about 0.3 of the span
    assert 0.2 < lever.predicted_ratio < 0.4, lever.predicted_ratio
    change = spec_of("cudnn_benchmark").knob.change_for(a)
    assert "benchmark = False" in change and "pad or bucket" in change
    nxt = [line for line in five_lines(analyze_trace(trace)) if line.startswith("Next:")][0]
    assert "torch.backends.cudnn.benchmark = False" in nxt and "benchmark = True" not in nxt


def test_trials_in_the_first_step_only_are_set_up_not_priced_by_the_knob(tmp_path):
    trace = _steps(tmp_path, trial_steps=1)
    lever = predict(trace, levers=["cudnn_benchmark"]).lever("cudnn_benchmark")
    assert lever.predicted_ratio == 1.0
    assert "benchmark = True" in spec_of("cudnn_benchmark").knob.change_for(lever.assumption)


def _backlog(tmp_path, overlap_ns: int):
    """Forty 1 ms kernels queued before the window (no launch call in the trace) that a cudaDeviceSynchronize at the
    window's start drains; the 21st starts `overlap_ns` before the 20th ends (a split-K reduce behind its GEMM)."""
    ev, end = [], -2 * US
    for k in range(40):
        start = end - overlap_ns if k == 20 else end + 2 * US
        ev.append(gpu("void cutlass::Kernel<float>", start, start + 1_000 * US, 1 + k))
        end = start + 1_000 * US
    t = end
    ev.append(call("cudaDeviceSynchronize", 50 * US, t + 5 * US))
    ev.append(op("aten::relu", t + 20 * US, t + 40 * US, 900))
    _launch(ev, t + 25 * US, 999, 900, "void at::native::vectorized_elementwise_kernel<4>", 10)
    return load(write(tmp_path / f"backlog{overlap_ns}.json", document(ev)), use_cache=False)


def test_pre_window_backlog_follows_its_queue_through_a_start_a_hair_before_the_previous_end(tmp_path):
    for overlap in (0, 128):
        trace = _backlog(tmp_path, overlap)
        g = dg.build(trace)
        p = rp.Plan.of(g).copy()
        queued = ~g.g_linked
        p.g_dur[queued] = p.g_dur[queued] // 2       # the backlog's kernels at half their time
        ratio = rp.replay(g, p).span_ns / rp.replay(g, rp.Plan.of(g)).span_ns
        # half the 40 ms backlog goes: the sync returns 20 ms sooner (a kernel pinned at its traced 20 ms offset kept
        # the second half where it ran: 0.75)
        assert ratio < 0.55, (overlap, ratio)
