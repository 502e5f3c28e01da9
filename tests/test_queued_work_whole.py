"""Work queued before the profiled window belongs to the step that drains it, whole, wherever the host was
meanwhile: a loop of CUDA-graph replays whose host runs every step ahead of the GPU (leimao's manual capture on an
RTX 5080: seven replays issued in 1.7 ms while the GPU drained 2.0 ms of work the warm-up steps queued) read
"ProfilerStep#3 ... first ran 26 kernels (1.99 ms) queued before the profiled window", where 69 were: the queued
kernels that started after the host had moved on to ProfilerStep#4 and #5 were counted as theirs. Nor is the
profiler's own synchronize after the last step the first step's wait ("the host waiting 7.12 ms in
cudaDeviceSynchronize" for ProfilerStep#3, a call made after ProfilerStep#9)."""
from kineto_factory import Launch, annotation, call, document, events_for, gpu, write
from tracetriage.analyzers.analyses.steps import OutlierWhy
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

US = 1_000
QUEUED = 40            # kernels the unrecorded warm-up steps left on the stream, 50 µs each: 2 ms
PER_STEP = 5           # kernels each step launches, 170 µs each
STEPS = 7


def host_ahead() -> dict:
    """ProfilerStep#3 to #9, each 200 µs of host time issuing 5 kernels; the GPU first drains the queued work, then
    runs each step's kernels back to back; the profiler's stop synchronizes after the last step."""
    ev = [gpu(f"queued_{k % 4}", k * 50 * US, (k + 1) * 50 * US, 900_000 + k) for k in range(QUEUED)]
    launches, g = [], QUEUED * 50 * US
    for step in range(STEPS):
        h = 20 * US + step * 200 * US
        ev.append(annotation(f"ProfilerStep#{3 + step}", h, h + 190 * US))
        for i in range(PER_STEP):
            c = h + 10 * US + 35 * US * i
            launches.append(Launch(op_start=c, op_end=c + 30 * US, call_start=c + 5 * US, call_end=c + 25 * US,
                                   gpu_start=g, gpu_end=g + 170 * US, kernel=f"step_kernel_{i}"))
            g += 170 * US
    last_host = 20 * US + STEPS * 200 * US
    ev.append(call("cudaDeviceSynchronize", last_host, g + 5 * US))
    return document(ev + events_for(launches))


def test_the_first_step_owns_every_kernel_queued_before_the_window(tmp_path):
    a = analyze_file(write(tmp_path / "ahead.json", host_ahead()))
    steps = a.steps.steps
    assert [s.queued_kernels for s in steps] == [QUEUED] + [0] * (STEPS - 1)
    assert all(s.own_kernels == PER_STEP for s in steps)
    o = a.steps.summary.outlier
    assert o is not None and o.why is OutlierWhy.QUEUED and o.queued_kernels == QUEUED
    # (1.98 ms: the step's range opens 20 µs into the queued 2 ms)
    assert "it first ran 40 kernels (1.98 ms) queued before the profiled window" in five_lines(a)[0]
    assert claims.check(serialize.report(a)) == []


def test_the_profilers_stop_sync_after_the_last_step_is_not_the_first_steps_wait(tmp_path):
    a = analyze_file(write(tmp_path / "ahead.json", host_ahead()))
    o = a.steps.summary.outlier
    assert o.waited_in is None and o.waited_ns == 0
    assert "in cudaDeviceSynchronize" not in five_lines(a)[0]
