"""Levers that price the host work around the construct they remove, not only its device work: what a fix takes
away on the host (the dispatch of the ops that go, the staging of pageable copies, a walk over a module's tensors)
goes in the replay too. Small synthetic traces, each built so the host work is most of what the fix saves."""
from __future__ import annotations

from pathlib import Path

from tests.kineto_factory import TID, annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif

US = 1_000


class Host:
    """One host thread's ops (with the calls inside them) and one stream's activities after them, in order."""

    def __init__(self):
        self.ev, self.t, self.gpu_t, self.id = [], 100 * US, 100 * US, 1

    def op(self, name: str, body=lambda h, ext: None, gap_us: float = 5) -> None:
        ext = self.id
        self.id += 1
        self.t += int(gap_us * US)          # the Python between two ops
        s = self.t
        self.t += 1 * US
        body(self, ext)
        self.t += 1 * US
        self.ev.append(op(name, s, self.t, ext))

    def launch(self, name: str, ext: int, dur_us: float, *, call_us: float = 4, cat: str = "kernel",
               api: str = "cudaLaunchKernel", nbytes: int | None = None, blocking: bool = False) -> None:
        corr = 100_000 + self.id
        self.id += 1
        s = self.t
        g0 = max(self.gpu_t, s + 3 * US)
        g1 = g0 + int(dur_us * US)
        end = max(s + int(call_us * US), g1 + 1 * US) if blocking else s + int(call_us * US)
        self.ev.append(call(api, s, end, corr, ext))
        extra = {"bytes": nbytes} if nbytes is not None else {}
        self.ev.append(gpu(name, g0, g1, corr, cat=cat, **extra))
        self.gpu_t = g1 + 1 * US
        self.t = end + 1 * US

    def sync(self, ext: int) -> None:
        s = self.t
        self.t = max(self.t, self.gpu_t) + 2 * US
        self.ev.append(call("cudaStreamSynchronize", s, self.t, ext=ext))

    def write(self, tmp_path, name: str):
        return load(write(tmp_path / name, document(self.ev)))


# --- module_round_trip: the aten::to walks that nn.Module.to makes ---------------------------------------------

def _pageable_round_trips(tmp_path, *, requests: int = 3, params: int = 8, buffers: int = 4, staging_us: float = 90):
    """Requests served as model.to("cuda"); forward; model.to("cpu"), with pageable host memory: each parameter's and
    buffer's aten::to stages its 4 MB through the driver's bounce buffer in cudaMemcpyAsync (`staging_us` on the host,
    20 us on the copy engine) and syncs; nn.Module._apply follows a parameter's copy (not a buffer's) with
    _has_compatible_shallow_copy_type."""
    h = Host()

    def move(kind: str):
        def copy(h, e):
            h.launch(f"Memcpy {kind}", e, 20, call_us=staging_us, cat="gpu_memcpy", api="cudaMemcpyAsync",
                     nbytes=4 << 20)
            h.sync(e)
        for _ in range(params):
            h.op("aten::to", copy)
            h.op("aten::_has_compatible_shallow_copy_type", gap_us=3)
        for _ in range(buffers):
            h.op("aten::to", copy)

    for _ in range(requests):
        move("HtoD (Pageable -> Device)")
        for _ in range(20):
            h.op("aten::mm", lambda h, e: h.launch("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", e, 30))
        move("DtoH (Device -> Pageable)")
    return h.write(tmp_path, "round_trips.json.gz")


def test_a_module_round_trip_takes_its_pageable_staging_and_the_walk_to_the_host_with_it(tmp_path):
    """The fix drops model.to("cpu"): that walk goes whole, and model.to("cuda") on a module already there returns
    from each aten::to at once. Most of each request here is the host staging pageable copies (12 x ~95 us a walk)
    beside 0.6 ms of products: keeping it, as the replay did (and the buffers' copies, which no
    _has_compatible_shallow_copy_type follows), predicted 0.48 for a fix that leaves the products and a walk of no-op
    ops (0.21 now)."""
    p = whatif.predict(_pageable_round_trips(tmp_path), ["module_round_trip"]).lever("module_round_trip")
    a = p.assumption
    assert a.count == 3 * 2 * 12 and a.to_host == 3 * 12     # the BatchNorm-like buffers' copies are the module's too
    assert a.host_ns > 3 * 2 * 12 * 80 * US                   # each copy's staging, and the walk to the host
    assert p.predicted_ratio < 0.3, p.predicted_ratio


def test_a_module_moved_once_keeps_its_host_work(tmp_path):
    """One direction is a model loaded once (set-up): nothing goes, host or device."""
    h = Host()
    for _ in range(8):
        h.op("aten::to", lambda h, e: (h.launch("Memcpy HtoD (Pageable -> Device)", e, 20, call_us=90,
                                                cat="gpu_memcpy", api="cudaMemcpyAsync", nbytes=4 << 20), h.sync(e)))
        h.op("aten::_has_compatible_shallow_copy_type", gap_us=3)
    for _ in range(20):
        h.op("aten::mm", lambda h, e: h.launch("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", e, 30))
    p = whatif.predict(h.write(tmp_path, "load.json.gz"), ["module_round_trip"]).lever("module_round_trip")
    assert p.assumption.count == 0 and p.predicted_ratio == 1.0


# --- freeze_unoptimized: the backward's engine between the nodes that go -------------------------------------------

AUTOGRAD = 9                # autograd's device thread (the main thread is kineto_factory's TID)
HEAD = [[200, 768], [200]]


def _host_paced_probe(tmp_path, *, layers: int = 30, engine_us: float = 12):
    """A linear probe whose backbone's backward is host-paced: after the head's node and its two AccumulateGrads,
    `layers` nodes on autograd's thread, each three small launches (15 us of host, 5 us kernels) and one
    AccumulateGrad of a backbone weight, with `engine_us` of the engine's own time (its ready queue, hooks) between
    nodes; then AdamW's foreach step over the head alone, on the main thread once the backward is done."""
    ev, corr = [], [1000]
    t = [100 * US]
    g = [0]

    def launch(tid: int, ext: int) -> None:
        s = t[0]
        ev.append(call("cudaLaunchKernel", s + 2 * US, s + 7 * US, corr[0], ext, tid=tid))
        g0 = max(g[0], s + 9 * US)
        ev.append(gpu("void k_small<float>()", g0, g0 + 5 * US, corr[0]))
        g[0], corr[0], t[0] = g0 + 5 * US, corr[0] + 1, s + 15 * US

    def mm(tid: int, ext: int) -> None:
        s = t[0]
        launch(tid, ext)
        ev.append(op("aten::mm", s, t[0], ext, tid=tid))
        t[0] += 1 * US

    ext = 1
    for _ in range(6):                                        # the forward
        mm(TID, ext)
        ext += 1

    def node(grads: list, launches: int) -> None:
        nonlocal ext
        t[0] += int(engine_us * US)
        s = t[0]
        for _ in range(launches):
            mm(AUTOGRAD, ext)
            ext += 1
        for shape in grads:
            a = t[0]
            ev.append(op("torch::autograd::AccumulateGrad", a, a + 3 * US, dims=[shape], types=["float"],
                         tid=AUTOGRAD))
            t[0] = a + 4 * US
        ev.append(op("autograd::engine::evaluate_function: AddmmBackward0", s, t[0], tid=AUTOGRAD))

    node(HEAD, 1)
    for _ in range(layers):
        node([[768, 768]], 3)
    t[0] += 20 * US
    s = t[0]
    for name in ("aten::_foreach_lerp_", "aten::_foreach_addcdiv_"):
        a = t[0]
        launch(TID, ext)
        ev.append(op(name, a, t[0], ext, dims=[HEAD, HEAD, []], types=["TensorList", "TensorList", "Scalar"]))
        ext += 1
    ev.append(annotation("Optimizer.step#AdamW.step", s - 1 * US, t[0] + 1 * US))
    return load(write(tmp_path / "probe.json.gz", document(ev)))


def test_a_frozen_backbone_takes_the_backwards_launches_and_the_engine_between_its_nodes(tmp_path):
    """Frozen, the backbone's nodes are never scheduled: their launch calls and the engine's time between them go
    with their kernels. Keeping a launch's cost per call and the engine's 12 us a node, as the replay did, predicted
    0.48 for a step that keeps only the forward, the head's node and the optimizer's step (~0.2 ms of 2.1; 0.10 now)."""
    p = whatif.predict(_host_paced_probe(tmp_path), ["freeze_unoptimized"]).lever("freeze_unoptimized")
    a = p.assumption
    assert a.count == 30 and a.unread == 30 and a.kernels == 90
    assert p.predicted_ratio < 0.25, p.predicted_ratio


# --- weight_only_int8: the host work an int8 path adds, which no before trace shows -----------------------------

PENDING2 = Path(__file__).resolve().parent.parent / "traces" / "pending2"
DECODE_MLP = Path(__file__).resolve().parent.parent / "traces" / "fresh5" / "decode_mlp_compile_roof-before.json.gz"


def _int8_words(path: Path) -> str:
    from tracetriage.analyzers.whatif.levers import LEVERS

    p = whatif.predict(load(path), ["weight_only_int8"]).lever("weight_only_int8")
    return LEVERS["weight_only_int8"].says(p.assumption)


def test_int8_weights_on_a_host_paced_step_say_the_host_work_their_price_assumes_away():
    """mistral_decode_bf16_weights (the device busy 48% of the span, 15 products a step): the user's int8 path (a
    compiled per-Linear dequantize) halved the products' kernels yet ran 2.1x slower, its host calls on the critical
    path; the lever predicted 0.95 without a word of what it assumed about the host."""
    said = _int8_words(PENDING2 / "mistral_decode_bf16_weights-before.json.gz")
    assert "adds no host work a call" in said and "busy 48% of the span" in said and "15 products a step" in said
    assert "can make it slower" in said


def test_int8_weights_on_a_device_bound_decode_say_only_the_bytes():
    """decode_mlp_compile_roof: the device busy 94% of the span, the products at the memory roof: the bytes decide."""
    said = _int8_words(DECODE_MLP)
    assert "read fewer bytes" in said and "host paces" not in said


# --- activations_on_gpu: save_on_cpu's hooks around the copies -----------------------------------------------------

def _offloaded_activations(tmp_path, *, layers: int = 12, alloc_us: float = 40):
    """A forward of `layers` products, each saving its input through save_on_cpu's pack hook inside the op: a pinned
    buffer (aten::empty, `alloc_us` of the host allocator) and an aten::copy_ that copies the tensor to it and waits
    (Memcpy DtoH, a sync); then a backward whose nodes unpack it (aten::to -> _to_copy -> copy_: Memcpy HtoD) before
    their product."""
    h = Host()
    size = 8 << 20

    def product(h, e):
        h.launch("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", e, 10)

    def forward_op(h, e):
        product(h, e)
        h.op("aten::empty", lambda h, x: None, gap_us=3)
        h.t += int(alloc_us * US)
        h.ev[-1]["dur"] = round(h.ev[-1]["dur"] + alloc_us, 3)

        def pack(h, x):
            h.t += 10 * US                                   # copy_'s dispatch, then the capture check it makes
            h.ev.append(call("cudaStreamIsCapturing", h.t, h.t + 1 * US, ext=x))
            h.t += 2 * US
            h.launch("Memcpy DtoH (Device -> Pinned)", x, 20, cat="gpu_memcpy", api="cudaMemcpyAsync", nbytes=size)
            h.sync(x)
        h.op("aten::copy_", pack, gap_us=2)

    for _ in range(layers):
        h.op("aten::mm", forward_op)

    def node(h, e):
        def unpack(h, x):
            h.launch("Memcpy HtoD (Pinned -> Device)", x, 20, cat="gpu_memcpy", api="cudaMemcpyAsync", nbytes=size)
        h.op("aten::to", unpack, gap_us=2)
        product(h, e)

    for _ in range(layers):
        h.op("autograd::engine::evaluate_function: MmBackward0", node)
    return h.write(tmp_path, "offloaded.json.gz")


def test_activations_kept_on_the_gpu_take_the_pack_hooks_pinned_buffers_and_copy_ops_with_them(tmp_path):
    """Without save_on_cpu no pinned buffer is made and no copy op is called: the pack hook's aten::empty (40 us of
    the host allocator each here) and aten::copy_ (its dispatch and capture check), and the unpack hook's aten::to, go
    with the copies and their syncs. Keeping them, as the replay did, predicted 0.67 for a step that keeps only the
    products and their ops (0.20 now)."""
    p = whatif.predict(_offloaded_activations(tmp_path), ["activations_on_gpu"]).lever("activations_on_gpu")
    a = p.assumption
    assert a.count == 12 and a.syncs == 12
    assert a.host_ns > 12 * 40 * US
    assert p.predicted_ratio < 0.3, p.predicted_ratio
