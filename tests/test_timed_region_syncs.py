"""A benchmark's timing loop: each iteration a named range (record_function) around the measured call, closed by a
torch.cuda.synchronize() so the range's wall time is the GPU's. The host issues an iteration in a fraction of its GPU
time and waits in the sync for the rest; after the sync returns, the loop's Python (the range's exit and entry, the
call's own Python) runs before the next iteration's first launch, while the device idles.

That idle is the sync's: without it the host would have been ahead by the time it waited, and the Python would have
overlapped the queued kernels (transformer_nuggets' qlora benchmark: 4 gaps of ~160 µs after each iteration's sync read
'host work 7%, synchronization <1%'). And the sync is the measurement's, not the workload's: removing it changes what
the benchmark times, not the code it times (the same trace was told 'remove or defer the syncs ... −9%' beside a
dequantize that held half its kernel time). Hand-built traces."""
from __future__ import annotations

from pathlib import Path

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.analyses import idle
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.whatif import predict as whatif

ROOT = Path(__file__).resolve().parent.parent
US = 1_000
ITERS, LAUNCHES = 5, 6
KERNEL = 300 * US          # GPU-bound: 6 x 300 µs of kernels per iteration, issued in ~60 µs
PYTHON_AFTER_SYNC = 150 * US
# an iteration's program: a weight's dequantize, then the product that reads it
KERNELS = ("void kDequantizeBlockwise<__half, 512, 64, 8, 2>(float*, unsigned char*, float*, __half*, int, int)",
           "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn")


def _timed_loop(tmp_path, *, ranged: bool = True, sync_every_launch: bool = False,
               python_after_sync: int = PYTHON_AFTER_SYNC, events: str = "", quantized: bool = False):
    """ITERS iterations of LAUNCHES launches (each an op, its call, its kernel), each iteration closed by a
    cudaDeviceSynchronize called straight from Python (inside the iteration's named range when `ranged`; after every
    launch too with `sync_every_launch`), then `python_after_sync` of untraced Python before the next iteration.
    events="pair": the iteration timed by CUDA events instead (a start record, the launches, an end record, its
    cudaEventSynchronize); events="wait": one record after the launches, waited on (probe-sync-event). quantized:
    each dequantize and the product after it inside one op (bitsandbytes' MatMul4Bit)."""
    ev, k, t = [], 1, 0
    for _ in range(ITERS):
        t0, host, gpu_t = t, t, t + 20 * US
        if events == "pair":
            ev.append(call("cudaEventRecord", host, host + 2 * US))
            host += 3 * US
        for i in range(LAUNCHES):
            ev += [op("aten::mm", host, host + 8 * US, ext=k),
                   call("cudaLaunchKernel", host + 2 * US, host + 7 * US, k, k),
                   gpu(KERNELS[i % 2], max(gpu_t, host + 12 * US),
                       max(gpu_t, host + 12 * US) + KERNEL, k)]
            gpu_t = max(gpu_t, host + 12 * US) + KERNEL
            if quantized and i % 2:
                ev.append(op("MatMul4Bit", host - 11 * US, host + 9 * US))
            k += 1
            host += 10 * US
            if sync_every_launch:
                ev.append(call("cudaDeviceSynchronize", host, gpu_t + 2 * US))
                host = gpu_t + 30 * US
        if events:
            ev.append(call("cudaEventRecord", host, host + 2 * US))
            host += 3 * US
        ev.append(call("cudaEventSynchronize" if events else "cudaDeviceSynchronize", host,
                       max(host + 3 * US, gpu_t + 2 * US)))
        end = max(host + 3 * US, gpu_t + 2 * US)
        if ranged:
            ev.append(annotation("bench_iteration", t0 - 5 * US, end + 2 * US))
        t = end + python_after_sync
    return write(tmp_path / "timed.json.gz", document(ev))


def test_python_after_a_sync_the_host_waited_longer_than_is_synchronization(tmp_path):
    dev = idle.analyze(load(_timed_loop(tmp_path)))[0]
    sync_ns, host_ns = dev.by_cause_ns[Cause.SYNCHRONIZATION], dev.by_cause_ns[Cause.HOST_WORK]
    # before: 4 x ~150 µs of host work, synchronization a few µs (the drain until the sync returned)
    assert sync_ns >= (ITERS - 1) * PYTHON_AFTER_SYNC
    assert host_ns == 0


def test_host_work_longer_than_the_hosts_lead_stays_host_work(tmp_path):
    """The same loop with 2 ms of Python after each sync: more than the ~1.7 ms the host waited in it, so even
    without the sync most of it would leave the device idle."""
    dev = idle.analyze(load(_timed_loop(tmp_path, python_after_sync=2_000 * US)))[0]
    assert dev.by_cause_ns[Cause.HOST_WORK] >= (ITERS - 1) * 1_500 * US


def test_the_sync_closing_each_timed_range_is_not_advised_removed(tmp_path):
    lever = whatif.predict_file(_timed_loop(tmp_path), levers=["remove_syncs"]).lever("remove_syncs")
    # before: 5 syncs removed, predicted −9%
    assert lever.detail["syncs"] == 0
    assert lever.predicted_ratio > 0.999


def test_a_sync_inside_the_loop_with_no_range_it_closes_is_still_removable(tmp_path):
    """The same loop without named ranges: a bare per-iteration synchronize is the workload's own (the sample
    library's probe-sync-stream), still priced."""
    lever = whatif.predict_file(_timed_loop(tmp_path, ranged=False), levers=["remove_syncs"]).lever("remove_syncs")
    assert lever.detail["syncs"] == ITERS
    assert lever.predicted_ratio < 0.99


def test_syncs_inside_a_timed_range_before_its_end_are_still_removable(tmp_path):
    """A sync after every launch inside the range: only the one closing it is the measurement's."""
    lever = whatif.predict_file(_timed_loop(tmp_path, sync_every_launch=True),
                                levers=["remove_syncs"]).lever("remove_syncs")
    assert lever.detail["syncs"] == ITERS * LAUNCHES


def test_an_event_pair_timing_each_iteration_is_not_advised_removed(tmp_path):
    """start.record(); fn(); end.record(); end.synchronize(): the elapsed_time() of two events."""
    loop = _timed_loop(tmp_path, ranged=False, events="pair")
    lever = whatif.predict_file(loop, levers=["remove_syncs"]).lever("remove_syncs")
    assert lever.detail["syncs"] == 0


def test_one_event_recorded_and_waited_on_each_iteration_is_still_removable(tmp_path):
    loop = _timed_loop(tmp_path, ranged=False, events="wait")
    lever = whatif.predict_file(loop, levers=["remove_syncs"]).lever("remove_syncs")
    assert lever.detail["syncs"] == ITERS


def test_per_op_timing_inside_each_profiler_step_is_the_workloads_to_remove():
    """The sample library's smell-sync-explicit: 24 'timed_op' ranges a ProfilerStep, each closed by
    torch.cuda.synchronize(): host-clock timing inside the training step, which the step pays every time."""
    lever = whatif.predict_file(ROOT / "traces" / "smell-sync-explicit.json.gz",
                                levers=["remove_syncs"]).lever("remove_syncs")
    assert lever.detail["syncs"] >= 200
    assert lever.predicted_ratio < 0.9


def test_the_timing_loops_python_after_its_sync_is_not_host_work_to_move(tmp_path):
    """The stretch between a timed iteration's sync and the next iteration's first launch is the benchmark's loop
    (its range's exit and entry), not the work it times (the qlora bench: "take the host work off the critical path
    −6%" for it)."""
    lever = whatif.predict_file(_timed_loop(tmp_path), levers=["no_host_work"]).lever("no_host_work")
    assert lever.detail["host_ns"] == 0


def test_the_next_says_the_syncs_beside_it_are_the_benchmarks_timer(tmp_path):
    """qlora_bnb: the Next turned the dequantize knob and said "synchronization holds more of the idle, but removing
    the syncs predicts no saving (0%)", as if the syncs were the workload's and removing them merely bought nothing."""
    from tracetriage.analyzers.output import claims, serialize
    from tracetriage.analyzers.triage.report import analyze_trace
    from tracetriage.analyzers.voice.report import five_lines

    a = analyze_trace(load(_timed_loop(tmp_path, quantized=True)))
    nxt = five_lines(a)[4]
    assert a.next_experiment.lever.lever == "dequantize_once", nxt
    assert "synchronization holds more of the idle, all of it after the benchmark's own timer syncs (5 closing its " \
           "timed regions)" in nxt, nxt
    assert claims.check(serialize.report(a)) == []
