"""Kernels launched through an API the capture does not record (Triton's and Inductor's cuLaunchKernel) are no
dropped records: their correlation ids fall between the recorded calls' and no kernel of their names links anywhere.
The idle before them is read from what the host ran in it, where it read 'other', 'dropped records, activity buffer
filled' and 'capture again with CPU and CUDA' (heldout-user19 gp_fusion, a trace with both recorded)."""
from tests.kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.analyses import health, idle
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause

US = 1_000


def compiled_calls(tmp_path, name: str = "triton_per_fused_layer_norm_tanh_0", also_linked: bool = False):
    """Ten rounds of: an eager aten::add (recorded launch), then a compiled call whose wrappers run 200 µs of Python
    before its Triton kernel starts; the kernel's correlation id sits between the eager launches' and has no call.
    also_linked: one more kernel of that name has a recorded launch (a dropped record, not an unrecorded API)."""
    ev, t, corr = [], 0, 1
    for i in range(10):
        ev += [op("aten::add", t, t + 20 * US, corr), call("cudaLaunchKernel", t + 10 * US, t + 16 * US, corr, corr),
               gpu("add_kernel", t + 18 * US, t + 23 * US, corr)]
        t += 30 * US
        corr += 1
        ev.append(op("Torch-Compiled Region: 0/0", t, t + 210 * US, 5000 + i))
        ev.append(gpu(name, t + 212 * US, t + 217 * US, corr))   # its cuLaunchKernel is not in the trace
        corr += 1
        t += 230 * US
    if also_linked:
        ev += [op("aten::add", t, t + 20 * US, corr), call("cudaLaunchKernel", t + 10 * US, t + 16 * US, corr, corr),
               gpu(name, t + 18 * US, t + 23 * US, corr)]
        t += 30 * US
        corr += 1
    ev += [op("aten::add", t, t + 20 * US, corr), call("cudaLaunchKernel", t + 10 * US, t + 16 * US, corr, corr),
           gpu("add_kernel", t + 18 * US, t + 23 * US, corr)]
    return write(tmp_path / f"compiled-{also_linked}.json.gz", document(ev))


def test_unrecorded_launches_are_read_from_the_host_not_as_other(tmp_path):
    t = load(compiled_calls(tmp_path))
    d = idle.analyze(t)[0]
    by = d.by_cause_ns
    assert by[Cause.OTHER] < 0.05 * d.idle_ns
    assert by[Cause.HOST_WORK] + by[Cause.LAUNCH_OVERHEAD] > 0.9 * d.idle_ns
    kinds = [c.kind for c in t.caveats]
    assert "unrecorded_launches" in kinds and "unlinked_gpu" not in kinds


def test_unrecorded_launches_are_no_dropped_records(tmp_path):
    problems = [f.problem for f in health.check(load(compiled_calls(tmp_path))).findings]
    assert health.Problem.KERNELS_WITHOUT_LAUNCH not in problems


def test_a_kernel_name_linked_elsewhere_is_a_dropped_record_still(tmp_path):
    t = load(compiled_calls(tmp_path, also_linked=True))
    kinds = [c.kind for c in t.caveats]
    assert "unlinked_gpu" in kinds and "unrecorded_launches" not in kinds
