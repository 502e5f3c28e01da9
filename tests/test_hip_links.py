"""A ROCm/HIP trace links its runtime calls to their kernels by an External id the call and its kernel share (and an
ac2g flow), with no correlation key: read by correlation alone its kernels had no launch call, every launch looked
dropped by a full activity buffer, and a cold backward's 19 ms first hipLaunchKernel (a lazy code-object load) was
"idle whose cause was not recorded". A CUDA trace whose kernels lost their correlation still gets the caveat where
nothing pairs them."""
import kineto_factory as kf
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import NONE
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file

US, MS = 1_000, 1_000_000


def _ts(ns: int) -> float:
    """A time as the factory's ops have it (µs from its base)."""
    return kf._us(ns, "torch2")


def _hip_call(name, start, end, ext, *, kernel=None):
    """A hip* runtime call as roctracer writes it under Kineto: cat cuda_runtime, its own id as External id, no
    correlation (and an ac2g flow start with that id)."""
    args = {"External id": ext}
    if kernel is not None:
        args.update({"stream": "0x0", "Kernel": kernel})
    e = {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": kf.PID, "tid": kf.TID, "ts": _ts(start),
         "dur": _ts(end) - _ts(start), "args": args}
    flow = {"ph": "s", "id": ext, "pid": kf.PID, "tid": kf.TID, "ts": _ts(start), "cat": "ac2g", "name": "ac2g"}
    return [e, flow]


def _hip_kernel(name, start, end, ext):
    e = {"ph": "X", "cat": "kernel", "name": name, "pid": 2, "tid": 0, "ts": _ts(start), "dur": _ts(end) - _ts(start),
         "args": {"External id": ext}}
    flow = {"ph": "f", "id": ext, "pid": 2, "tid": 0, "ts": _ts(start), "cat": "ac2g", "name": "ac2g", "bp": "e"}
    return [e, flow]


def hip_cold_backward() -> dict:
    """A first backward on ROCm: three ops each launching one small kernel; the first hipLaunchKernel of the second
    op holds the host 19 ms (its code object loaded on first launch), the third op loads modules first
    (hipModuleLoadData) and launches through hipExtModuleLaunchKernel. The ops' External ids (500+) name no call."""
    ev = []
    t = 0
    plan = [("aten::fill_", "hipLaunchKernel", 30 * US, "void at::native::vectorized_elementwise_kernel<4, fill>"),
            ("aten::mse_loss_backward", "hipLaunchKernel", 19 * MS, "void at::native::elementwise_kernel<128, mse>"),
            ("aten::add_", "hipLaunchKernel", 30 * US, "void at::native::vectorized_elementwise_kernel<4, add>"),
            ("aten::convolution_backward", "hipExtModuleLaunchKernel", 12 * US, "igemm_wrw_gtcx3_nhwc_fp32"),
            ("aten::sum", "hipLaunchKernel", 30 * US, "void at::native::reduce_kernel<512, 1>"),
            ("aten::mul_", "hipLaunchKernel", 30 * US, "void at::native::vectorized_elementwise_kernel<4, mul>")]
    for i, (op, call, call_ns, kernel) in enumerate(plan):
        ext = i + 1
        op_start = t
        t += 20 * US
        if op == "aten::convolution_backward":
            for j in range(3):
                ev += _hip_call("hipModuleLoadData", t, t + 1500 * US, 100 + j)
                t += 1600 * US
        ev += _hip_call(call, t, t + call_ns, ext, kernel=kernel)
        ev += _hip_kernel(kernel, t + call_ns + 5 * US, t + call_ns + 9 * US, ext)
        t += call_ns + 20 * US
        ev.append(kf.op(op, op_start, t, 500 + i))
        t += 30 * US
    ev += _hip_call("hipDeviceSynchronize", t, t + 80 * US, 200)
    return kf.document(ev)


def test_hip_kernels_link_to_their_calls_by_external_id(tmp_path):
    trace = load(kf.write(tmp_path / "hip.json", hip_cold_backward()), use_cache=False)
    names = trace.names
    linked = {names[int(trace.ev.name[r])]: names[int(trace.ev.name[trace.launch_of[r]])]
              for r in range(len(trace.ev)) if trace.launch_of[r] != NONE}
    assert len(linked) == 6
    assert linked["igemm_wrw_gtcx3_nhwc_fp32"] == "hipExtModuleLaunchKernel"
    assert not any(c.kind == "unlinked_gpu" for c in trace.caveats)


def test_a_cold_hip_backward_is_read_as_set_up_and_warmed_up(tmp_path):
    out = serialize.report(analyze_file(kf.write(tmp_path / "hip.json", hip_cold_backward())))
    text = "\n".join(out["lines"])
    nx = next(line for line in out["lines"] if line.startswith("Next:"))
    assert nx.startswith("Next: warm up first")
    assert "HIP_ENABLE_DEFERRED_LOADING=0" in nx and "CUDA_MODULE_LOADING" not in nx
    assert "capture again" not in text and "activity buffer" not in text
    assert "no launch call in the trace" not in text
    assert claims.check(out) == []


def _cuda_with_lost_correlation() -> dict:
    """A CUDA trace: four ops, each one cudaLaunchKernel (correlation 1-4, External id of its op) and one kernel.
    The kernels of ops 2 and 3 lost their correlation; op 3's kernel carries an External id nobody holds; op 4
    launches two kernels with one External id, one of them without correlation."""
    ev = []
    for i in range(4):
        t = i * 200 * US
        ext = 10 + i
        ev.append(kf.op("aten::add", t, t + 40 * US, ext))
        ev.append(kf.call("cudaLaunchKernel", t + 10 * US, t + 20 * US, corr=i + 1, ext=ext))
        k = kf.gpu("void add_kernel", t + 30 * US, t + 60 * US, corr=i + 1)
        k["args"]["External id"] = ext
        if i in (1, 2):
            del k["args"]["correlation"]
        if i == 2:
            k["args"]["External id"] = 999
        ev.append(k)
    t = 4 * 200 * US
    ev.append(kf.op("aten::mul", t, t + 40 * US, 20))
    ev.append(kf.call("cudaLaunchKernel", t + 10 * US, t + 15 * US, corr=5, ext=20))
    ev.append(kf.call("cudaLaunchKernel", t + 20 * US, t + 25 * US, corr=6, ext=20))
    a = kf.gpu("void mul_kernel", t + 30 * US, t + 60 * US, corr=5)
    b = kf.gpu("void mul_kernel", t + 70 * US, t + 90 * US, corr=6)
    a["args"]["External id"] = b["args"]["External id"] = 20
    del a["args"]["correlation"], b["args"]["correlation"]
    ev += [a, b]
    return kf.document(ev)


def test_a_cuda_kernel_without_correlation_keeps_the_caveat_where_nothing_pairs_it(tmp_path):
    trace = load(kf.write(tmp_path / "cuda.json", _cuda_with_lost_correlation()), use_cache=False)
    ev, names = trace.ev, trace.names
    kernels = [r for r in range(len(ev)) if names[int(ev.name[r])] in ("void add_kernel", "void mul_kernel")]
    launched = [trace.launch_of[r] != NONE for r in kernels]
    # op 1 and 4 by correlation; op 2's by the External id its one call and its one kernel share; op 3's names
    # nothing; op 5's two kernels share one External id with two calls: nothing tells which launched which
    assert launched == [True, True, False, True, False, False]
    caveat = next(c for c in trace.caveats if c.kind == "unlinked_gpu")
    assert (caveat.count, caveat.total) == (3, 6)
