"""A step whose host blocks on the device many times is no CUDA-graph step: the Next names what blocks it. Autograd's
anomaly mode (an aten::isnan -> aten::any -> aten::item check inside every backward node's evaluation) gets its own
switch, a reduction made on the host of a tensor copied off the device each token (`.cpu().argmax().to(device)`)
gets "argmax on the GPU", and neither is told CUDA graphs; a launch-bound step without a sync still is. Each on a
small synthetic trace that shows the construct, and the look-alikes where it must not fire."""
from pathlib import Path

from kineto_factory import ORIGIN_NS, annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, REDUCE_ON_GPU, VALUE_CHECKS, reduce_on_gpu, value_checks
from tracetriage.analyzers.whatif.levers.spec import Context

FLOAT = "float"
NODE = "autograd::engine::evaluate_function: "


class Host:
    """One host thread laying ops one after another; each launching op issues one short kernel (an eager loop)."""

    def __init__(self, kernel_ns: int = 3_000):
        self.ev: list[dict] = []
        self.t, self.corr, self.kernel = 10_000, 1, kernel_ns

    def _id(self) -> int:
        self.corr += 1
        return self.corr

    def kernel_op(self, name: str, dims: list, dur: int = 20_000) -> None:
        s, i = self.t, self._id()
        self.ev.append(op(name, s, s + dur - 1_000, i, dims=dims, types=[FLOAT] * len(dims)))
        at = s + dur // 2
        self.ev.append(call("cudaLaunchKernel", at, at + 5_000, i, i))
        self.ev.append(gpu(f"{name.split('::')[-1]}_kernel", at + 6_000, at + 6_000 + self.kernel, i))
        self.t += dur

    def host_op(self, name: str, dims: list, dur: int = 200_000) -> None:
        s = self.t
        self.ev.append(op(name, s, s + dur - 1_000, self._id(), dims=dims, types=[FLOAT] * len(dims)))
        self.t += dur

    def copy_op(self, direction: str, dims: list, dur: int = 60_000, copy_ns: int = 20_000) -> None:
        """aten::to moving a tensor across the link: a memcpy and the synchronize that waits for it."""
        s, i = self.t, self._id()
        self.ev.append(op("aten::to", s, s + dur - 1_000, i, dims=dims, types=[FLOAT] * len(dims)))
        self.ev.append(call("cudaMemcpyAsync", s + 5_000, s + 10_000, i, i))
        kind = "Memcpy DtoH (Device -> Pageable)" if direction == "DtoH" else "Memcpy HtoD (Pageable -> Device)"
        self.ev.append(gpu(kind, s + 12_000, s + 12_000 + copy_ns, i, cat="gpu_memcpy"))
        self.ev.append(call("cudaStreamSynchronize", s + 11_000, s + 14_000 + copy_ns, None, i))
        self.t += dur

    def check_read(self) -> None:
        """aten::item of a one-element predicate: the read blocks until the device drains."""
        s, i = self.t, self._id()
        self.ev.append(op("aten::item", s, s + 30_000, i, dims=[[]], types=[FLOAT]))
        self.ev.append(op("aten::_local_scalar_dense", s + 1_000, s + 29_000, i, dims=[[]], types=[FLOAT]))
        self.ev.append(call("cudaMemcpyAsync", s + 3_000, s + 6_000, i, i))
        self.ev.append(gpu("Memcpy DtoH (Device -> Pageable)", s + 7_000, s + 9_000, i, cat="gpu_memcpy"))
        self.ev.append(call("cudaStreamSynchronize", s + 7_000, s + 20_000, None, i))
        self.t += 31_000

    def backward_node(self, node: str, dims: list) -> None:
        """An autograd node's evaluation under anomaly mode: the node's op, then its gradient checked for NaN."""
        s = self.t
        self.kernel_op(node, dims)
        self.kernel_op("aten::isnan", dims)
        self.kernel_op("aten::_is_any_true", dims)
        self.check_read()
        self.ev.append(op(NODE + node, s - 500, self.t + 500, None))
        self.t += 2_000

    def step(self, body) -> None:
        start = self.t
        body()
        self.ev.append(annotation(f"ProfilerStep#{len(self.ev)}", start - 1_000, self.t + 1_000))
        self.t += 5_000

    def trace(self, tmp_path: Path, name: str = "t.json.gz"):
        return load(write(tmp_path / name, document(self.ev)), use_cache=False)


def _backward(h: Host, nodes: int) -> None:
    for i in range(nodes):
        h.backward_node("AddmmBackward0" if i % 2 else "GeluBackward0", [[64, 197, 384]])


def _decode(h: Host, tokens: int, argmax_on_gpu: bool = False) -> None:
    for _ in range(tokens):
        for name in ("aten::embedding", "aten::addmm", "aten::gelu", "aten::addmm", "aten::add", "aten::mm"):
            h.kernel_op(name, [[32, 1, 768]])
        if argmax_on_gpu:
            h.kernel_op("aten::argmax", [[32, 50257]])
        else:
            h.copy_op("DtoH", [[32, 50257]])
            h.host_op("aten::argmax", [[32, 50257]])
            h.copy_op("HtoD", [[32, 1]], dur=30_000, copy_ns=2_000)


def test_anomaly_modes_check_in_every_backward_node_is_found_and_named_not_cuda_graphs(tmp_path):
    h = Host()
    for _ in range(2):
        h.step(lambda: _backward(h, 8))
    tr = h.trace(tmp_path)
    checks = value_checks.find(Context(tr, None))
    assert len(checks) == 16 and all(c.in_backward_node for c in checks)
    a = whatif.predict(tr, [VALUE_CHECKS]).lever(VALUE_CHECKS).assumption
    assert a.anomaly_mode and a.per_step == 8 and value_checks.blocks_graphs(a)
    out = serialize.report(analyze_trace(tr))
    nxt = out["lines"][4]
    assert out["next_experiment"]["whatif_lever"] == VALUE_CHECKS
    assert "set_detect_anomaly(False)" in nxt and "reduce-overhead" not in nxt
    assert "CUDA graphs" not in nxt.split("Would waste")[0]
    assert claims.check(out) == []


def test_a_check_per_layer_in_the_forward_keeps_its_own_words_not_anomaly_mode(tmp_path):
    h = Host()
    for _ in range(6):
        h.kernel_op("aten::addmm", [[768], [4096, 768], [768, 768]])
        h.kernel_op("aten::isnan", [[16, 256, 768]])
        h.kernel_op("aten::any", [[16, 256, 768]])
        h.check_read()
    a = whatif.predict(h.trace(tmp_path), [VALUE_CHECKS]).lever(VALUE_CHECKS).assumption
    assert a.count == 6 and not a.anomaly_mode
    assert "torch.isnan(h)" in value_checks.change_for(a) and "anomaly" not in value_checks.change_for(a)


def test_an_argmax_made_on_the_host_each_token_is_told_argmax_on_the_gpu_not_cuda_graphs(tmp_path):
    h = Host()
    h.step(lambda: _decode(h, 12))
    tr = h.trace(tmp_path)
    trips = reduce_on_gpu.find(Context(tr, None))
    assert len(trips) == 12 and {t[3] for t in trips} == {"aten::argmax"}
    lv = whatif.predict(tr, [REDUCE_ON_GPU, CUDA_GRAPHS])
    a = lv.lever(REDUCE_ON_GPU).assumption
    assert a.count == 12 and reduce_on_gpu.blocks_graphs(a)
    # the host reduction (12 x 200 µs) and the copies' waits go: the prediction saves at least the host argmax
    assert lv.lever(REDUCE_ON_GPU).saving_ns >= 12 * 150_000
    out = serialize.report(analyze_trace(tr))
    nxt = out["lines"][4]
    assert out["next_experiment"]["whatif_lever"] == REDUCE_ON_GPU
    assert "argmax on the GPU" in nxt and "CUDA graphs" not in nxt.split("Would waste")[0]
    assert claims.check(out) == []


def test_an_argmax_that_launches_a_kernel_is_no_host_round_trip(tmp_path):
    h = Host()
    h.step(lambda: _decode(h, 12, argmax_on_gpu=True))
    assert reduce_on_gpu.find(Context(h.trace(tmp_path), None)) == []


def test_a_launch_bound_step_without_a_sync_is_still_told_cuda_graphs(tmp_path):
    h = Host()
    for _ in range(3):
        h.step(lambda: [h.kernel_op(n, [[32, 1, 768]]) for _ in range(40)
                        for n in ("aten::addmm", "aten::gelu", "aten::add")])
    tr = h.trace(tmp_path)
    assert reduce_on_gpu.find(Context(tr, None)) == [] and value_checks.find(Context(tr, None)) == []
    out = serialize.report(analyze_trace(tr))
    assert out["next_experiment"]["whatif_lever"] == CUDA_GRAPHS
    assert claims.check(out) == []


def _device_randint_before_each_host_randn(doc: dict) -> dict:
    """A diffusion step's timesteps drawn on the device (`torch.randint(0, T, (B,), device=device)`: its op launches
    a kernel) just before the host `torch.randn(shape)` whose tensor is copied."""
    evs = doc["traceEvents"]
    extra, corr = [], 90_000
    for e in [e for e in evs if e.get("name") == "aten::randn"]:
        t = round(e["ts"] * 1000) - ORIGIN_NS       # back to the factory's nanoseconds
        extra += [op("aten::randint", t - 40_000, t - 10_000, corr), call("cudaLaunchKernel", t - 30_000,
                                                                          t - 25_000, corr, corr),
                  gpu("void at::native::random_from_to_kernel", t - 20_000, t - 18_000, corr)]
        corr += 1
    return {**doc, "traceEvents": evs + extra}


def test_a_factory_that_launched_a_kernel_is_not_named_as_made_on_the_host(tmp_path):
    from claim_traces import host_randn_then_copy

    tr = load(write(tmp_path / "noise.json.gz", _device_randint_before_each_host_randn(host_randn_then_copy())),
              use_cache=False)
    out = serialize.report(analyze_trace(tr))
    nxt = out["lines"][4]
    assert out["next_experiment"]["whatif_lever"] == "tensors_on_device"
    assert "by aten::randn" in nxt and "randint" not in nxt
    assert claims.check(out) == []


def _two_kernels(tmp_path, launch: str, first: str, overlap_ns: int):
    """Two kernels on one stream, the second starting overlap_ns before the first (60 µs) ends."""
    ev = [op("aten::convolution", 0, 20_000, 1), call("cudaLaunchKernelExC", 2_000, 6_000, 1, 1),
          gpu(first, 10_000, 70_000, 1),
          op("aten::add", 20_000, 40_000, 2), call(launch, 22_000, 26_000, 2, 2),
          gpu("void cask_plugin_cudnn::init_kernel", 70_000 - overlap_ns, 90_000, 2)]
    return load(write(tmp_path / f"{launch}-{overlap_ns}.json.gz", document(ev)), use_cache=False)


def test_programmatic_dependent_launch_is_no_sign_of_a_merged_trace(tmp_path):
    dgrad = "sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64"

    def overlaps(tr):
        return [c for c in tr.caveats if c.kind == "stream_overlap"]
    # an extended launch whose kernel starts in the previous kernel's tail: Hopper's PDL, a plain capture
    assert overlaps(_two_kernels(tmp_path, "cudaLaunchKernelExC", dgrad, 13_000)) == []
    # a plain launch has no PDL attribute; a kernel starting early in the previous one's run is no tail
    assert overlaps(_two_kernels(tmp_path, "cudaLaunchKernel", "volta_sgemm_128x64_nn", 13_000))
    assert overlaps(_two_kernels(tmp_path, "cudaLaunchKernelExC", dgrad, 45_000))


def test_a_round_trip_whose_host_time_is_a_product_names_the_product_not_only_the_reduction(tmp_path):
    # (fresh9 clip_retrieval_cpu_gallery: '2 round trips copy a tensor to the host and reduce it there (aten::topk on
    # the CPU, 135.7 ms of host time ...)', 75% of that window an aten::matmul of the queries against a gallery kept
    # on the host)
    h = Host()
    for _ in range(3):
        def search():
            h.kernel_op("aten::addmm", [[64, 512], [512, 512]])
            h.copy_op("DtoH", [[64, 512]])
            h.host_op("aten::matmul", [[64, 512], [512, 500000]], dur=3_000_000)
            h.host_op("aten::topk", [[64, 500000]], dur=1_000_000)
            h.copy_op("HtoD", [[64, 5]], dur=30_000, copy_ns=2_000)
        h.step(search)
    tr = h.trace(tmp_path)
    a = whatif.predict(tr, [REDUCE_ON_GPU]).lever(REDUCE_ON_GPU).assumption
    assert a.count == 3 and a.reduction == "aten::topk" and a.heaviest == "aten::matmul"
    assert [name for name, _ in a.host_ops] == ["aten::matmul", "aten::topk"]
    says = reduce_on_gpu.says(a)
    # the product's host operand is named (whatif.levers.reduce_on_gpu: a gallery the host keeps), and its time first
    assert "multiply it there with a [512x500000] host tensor" in says
    assert "(aten::matmul 9" in says and "aten::topk 3" in says
    out = serialize.report(analyze_trace(tr))
    assert claims.check(out) == []
