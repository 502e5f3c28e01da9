"""A kernel that started only once its launch call returned, its queue drained before that, waited for the call (a
first launch loading its kernel's module), not for the device: the idle is set-up, and warming up takes that wait out
with the call. Before, the Idle line called it "other" and the replay kept it as a device-side gap after the busy
queue the call began behind (heldout-user15 switch_moe_128tok: 81 ms of such gaps kept under warm_up, 617.5 -> 142.3
ms predicted where ~69 ms remain). Hand-built cold loop."""
from __future__ import annotations

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.whatif import predict as whatif

US, MS = 1_000, 1_000_000
STEPS, LOAD = 8, 5 * MS


def _cold_loop(tmp_path):
    """STEPS steps: aten::mm (a 300 µs kernel), then aten::add and aten::relu (20 µs kernels), launched 30 µs apart.
    In the first step the add's and the relu's launch calls each load their kernel's module (LOAD): the kernel starts
    when the call returns, long after the mm's kernel ended."""
    ev, t, k = [], 0, 1
    for s in range(STEPS):
        for name, kernel_ns in (("aten::mm", 300 * US), ("aten::add", 20 * US), ("aten::relu", 20 * US)):
            load_ns = LOAD if s == 0 and name != "aten::mm" else 0
            end = t + 10 * US + load_ns
            ev += [op(name, t, end + 5 * US, ext=k), call("cudaLaunchKernel", t + 2 * US, end, k, k)]
            ev.append(gpu(f"{name[6:]}_kernel", end + 5 * US, end + 5 * US + kernel_ns, k))
            t, k = end + 30 * US, k + 1
        t += 400 * US
    return write(tmp_path / "cold.json.gz", document(ev))


def test_warming_up_takes_out_the_wait_for_a_first_launch_with_the_call(tmp_path):
    lever = whatif.predict_file(_cold_loop(tmp_path), levers=["warm_up"]).lever("warm_up")
    # both loads go (10.0 ms of a 14.0 ms span); before, the relu's kernel kept its wait behind the add's: 8.1 ms
    assert lever.saving_ns >= 0.95 * 2 * LOAD


def test_the_device_waiting_for_a_first_launch_still_in_its_call_is_set_up_not_other(tmp_path):
    # (switch_moe_128tok: 'other 35%: work already launched started late with nothing to wait on', 81 ms of it the
    # first launches' own module loads)
    a = analyze_trace(load(_cold_loop(tmp_path), use_cache=False))
    assert a.by_cause_ns[Cause.OTHER] < 0.05 * 2 * LOAD
    assert a.by_cause_ns[Cause.HOST_WORK] >= 0.95 * 2 * LOAD
