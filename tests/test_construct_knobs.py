"""The fix a trace's construct names: SDPA forced onto its math backend (sdpa_math), a broadcast product reduced by a
sum (broadcast_matmul: a matmul), a LayerNorm written by hand (layer_norm), a per-item Python loop of elementwise ops
gathered by torch.stack (batch_items' loop over slices: do it batched), each found on a small synthetic trace that
shows it, and not where a look-alike shows something else (attention on a fused kernel, a real matmul, a broadcast
scaled sum, nn.LayerNorm, an RMSNorm, an augment already batched)."""
import pytest

from test_loop_knobs import Timeline, _context
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import (
    AUTOCAST_BF16,
    BATCH_ITEMS,
    BROADCAST_MATMUL,
    LAYER_NORM,
    SDPA,
    SDPA_MATH,
    batch_items,
    broadcast_matmul,
    layer_norm,
    sdpa_math,
    slice_loops,
)

BF16 = "c10::BFloat16"
Q = [16, 12, 1500, 64]
FP32_GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute"


class Attention(Timeline):
    """Timeline with an op that holds others (the math backend's aten ops inside its SDPA op)."""

    def around(self, name: str, dims: list, types: list, body) -> None:
        from kineto_factory import op
        start = self.t
        body()
        self.ev.append(op(name, start - 500, self.t - 500, self.ext, dims=dims, types=types))
        self.ext += 1

    def gemm(self, dims: list, kernel_ns: int) -> None:
        keep, self.kernel = self.kernel, kernel_ns
        self.op("aten::bmm", dims)
        self.ev[-1]["name"] = FP32_GEMM
        self.kernel = keep


def _math_attention(tl: Attention) -> None:
    def inner():
        for _ in range(3):
            tl.op("aten::to", [Q])
        tl.gemm([[192, 1500, 64], [192, 64, 1500]], 2_000_000)
        tl.op("aten::_softmax", [[16, 12, 1500, 1500], [], []])
        tl.gemm([[192, 1500, 1500], [192, 1500, 64]], 2_000_000)
    tl.around("aten::_scaled_dot_product_attention_math", [Q, Q, Q, [], []], [BF16, BF16, BF16, "", "Scalar"], inner)


def _flash_attention(tl: Attention) -> None:
    tl.around("aten::scaled_dot_product_attention", [Q, Q, Q], [BF16] * 3,
              lambda: tl.op("aten::_scaled_dot_product_flash_attention", [Q, Q, Q]))


def test_sdpa_on_its_math_backend_is_found_priced_at_flash_and_keeps_autocast_off_its_gemms(tmp_path):
    tl = Attention()
    tl.step(lambda: [_math_attention(tl) for _ in range(4)])
    tr = tl.trace(tmp_path)
    (a, *_) = found = sdpa_math.find(_context(tr))
    assert len(found) == 4 and (a.heads, a.queries, a.keys, a.dim, a.precision) == (192, 1500, 1500, 64, "bf16")
    assert a.score_bytes == 192 * 1500 * 1500 * 4        # 1.73 GB of fp32 scores an attention
    lv = whatif.predict(tr, [SDPA_MATH, SDPA, AUTOCAST_BF16])
    m = lv.lever(SDPA_MATH)
    assert m.assumption.count == 4 and m.assumption.precision == "bf16"
    assert m.predicted_ns < 0.2 * lv.baseline_ns           # 16 ms of fp32 GEMMs -> ~1.5 ms of flash kernels
    assert lv.lever(SDPA).assumption.count == 0           # its softmax is the backend's, not written by hand
    assert lv.lever(AUTOCAST_BF16).assumption.count == 0  # the fp32 GEMMs are the backend's own upcast


def test_the_report_names_the_math_backend_and_its_claims_hold(tmp_path):
    tl = Attention()
    tl.step(lambda: [_math_attention(tl) for _ in range(4)])
    out = serialize.report(analyze_trace(tl.trace(tmp_path)))
    nxt = out["lines"][4]
    assert out["next_experiment"]["whatif_lever"] == SDPA_MATH
    assert "sdpa_kernel(SDPBackend.MATH)" in nxt and "autocast" not in nxt
    assert claims.check(out) == []


def test_attention_on_a_fused_kernel_is_not_the_math_backend(tmp_path):
    tl = Attention()
    tl.step(lambda: [_flash_attention(tl) for _ in range(4)])
    assert sdpa_math.find(_context(tl.trace(tmp_path))) == []


def _broadcast_score(tl: Timeline, a: list, b: list, summed: str | None = "[-1]", kernel_ns: int = 1_500_000) -> None:
    keep, tl.kernel = tl.kernel, kernel_ns
    tl.op("aten::mul", [a, b])
    tl.op("aten::sum", [[max(x, y) for x, y in zip(a, b)], [], [], []])
    tl.kernel = keep
    if summed is not None:
        tl.ev[-3]["args"]["Concrete Inputs"] = ["", summed, "False", ""]


def test_a_broadcast_product_reduced_by_a_sum_is_a_matmul(tmp_path):
    tl = Timeline()
    tl.step(lambda: [_broadcast_score(tl, [256, 1, 128], [1, 32768, 128]) for _ in range(3)])
    tr = tl.trace(tmp_path)
    (p, *_) = found = broadcast_matmul.find(_context(tr))
    assert len(found) == 3 and (p.m, p.n, p.k, p.batch) == (256, 32768, 128, 1)
    assert p.product_bytes(4) == 256 * 32768 * 128 * 4    # 4.29 GB materialised
    lv = whatif.predict(tr, [BROADCAST_MATMUL])
    assert lv.lever(BROADCAST_MATMUL).predicted_ns < 0.3 * lv.baseline_ns
    out = serialize.report(analyze_trace(tr))
    assert out["next_experiment"]["whatif_lever"] == BROADCAST_MATMUL
    assert "q @ k.T" in out["lines"][4] and claims.check(out) == []


def test_without_concrete_inputs_the_last_dimension_is_taken_as_the_sum(tmp_path):
    tl = Timeline()
    tl.step(lambda: [_broadcast_score(tl, [256, 1, 128], [1, 32768, 128], summed=None) for _ in range(3)])
    assert len(broadcast_matmul.find(_context(tl.trace(tmp_path)))) == 3


@pytest.mark.parametrize("why, a, b, summed", [
    # a real matmul's inputs do not broadcast from both sides; an elementwise product of equal shapes is no GEMM
    ("equal shapes", [256, 32768, 128], [256, 32768, 128], "[-1]"),
    # a scale broadcast from one side only (x * w[None]): an elementwise op, no contraction of two operands
    ("one side", [256, 32768, 128], [1, 32768, 128], "[-1]"),
    # the sum runs over a broadcast dimension: a scaled sum, not a product of the two
    ("summed over M", [256, 1, 128], [1, 32768, 128], "[0]"),
    # no shapes recorded: a multiply and a sum are any elementwise op and reduction
    ("no shapes", None, None, None),
])
def test_no_broadcast_matmul_where_the_trace_shows_something_else(tmp_path, why, a, b, summed):
    tl = Timeline()
    if a is None:
        tl.step(lambda: [(tl.op("aten::mul", []), tl.op("aten::sum", [])) for _ in range(3)])
    else:
        tl.step(lambda: [_broadcast_score(tl, a, b, summed) for _ in range(3)])
    assert broadcast_matmul.find(_context(tl.trace(tmp_path))) == [], why


def test_a_real_matmul_is_not_a_broadcast_product(tmp_path):
    tl = Timeline()
    tl.step(lambda: [tl.op("aten::mm", [[256, 128], [128, 32768]]) for _ in range(3)])
    assert broadcast_matmul.find(_context(tl.trace(tmp_path))) == []


def _augment_per_image(tl: Timeline, n: int, flips=lambda i: i % 3 == 0) -> None:
    tl.op("aten::unbind", [[n, 3, 40, 40], []], launches=False)
    for i in range(n):
        tl.op("aten::slice", [[3, 40, 40], [], [], [], []], launches=False)
        tl.op("aten::slice", [[3, 32, 40], [], [], [], []], launches=False)
        if flips(i):                                     # a random flip: some images only
            tl.op("aten::flip", [[3, 32, 32], []])
        tl.op("aten::mul", [[3, 32, 32], []])
        tl.op("aten::sub", [[3, 32, 32], [3, 1, 1]])
        tl.op("aten::div", [[3, 32, 32], [3, 1, 1]])
    tl.op("aten::stack", [[]])
    tl.op("aten::conv2d", [[n, 3, 32, 32], [64, 3, 3, 3]])


def test_a_per_image_loop_with_a_random_flip_is_found_and_named_batched(tmp_path):
    tl = Timeline()
    tl.step(lambda: _augment_per_image(tl, 64))
    tr = tl.trace(tmp_path)
    (loop,) = slice_loops.find(_context(tr))
    assert (loop.iterations, loop.family, loop.source_shape) == (64, "elementwise", (3, 40, 40))
    out = serialize.report(analyze_trace(tr))
    nxt = out["lines"][4]
    assert out["next_experiment"]["whatif_lever"] == BATCH_ITEMS
    assert "batched on the whole tensor" in nxt and "a Python loop runs 64 iterations" in nxt
    assert "bigger batch" not in " ".join(out["lines"])  # each image of a bigger batch is one more iteration
    assert claims.check(out) == []
    a = whatif.predict(tr, [BATCH_ITEMS]).lever(BATCH_ITEMS).assumption
    assert "torch.stack" in batch_items.change_for(a)


@pytest.mark.parametrize("why, lay", [
    # already batched: one op each on the whole [64, 3, 40, 40] batch
    ("batched", lambda tl: [tl.op(n, [[64, 3, 32, 32], [64, 1, 1, 1]]) for n in ("aten::mul", "aten::sub",
                                                                                    "aten::div")]),
    # the loop's results are not gathered by torch.stack (each item used apart): not one batch transformed
    ("no stack", lambda tl: [_augment_per_image(tl, 64), tl.ev.__setitem__(slice(None), [
        e for e in tl.ev if e["name"] != "aten::stack"])]),
    # a body that writes in place (x[i].mul_(...)): iterations may read what others wrote
    ("in place", lambda tl: [(tl.op("aten::select", [[64, 128], [], []], launches=False),
                              tl.op("aten::mul_", [[128], []]), tl.op("aten::add", [[128], []]))
                             for _ in range(32)] + [tl.op("aten::stack", [[]])]),
])
def test_no_batched_augment_where_the_trace_shows_something_else(tmp_path, why, lay):
    tl = Timeline()
    tl.step(lambda: lay(tl))
    assert slice_loops.find(_context(tl.trace(tmp_path))) == [], why


X = [2048, 65, 192]
STAT = [2048, 65, 1]


def _scratch_layer_norm(tl: Timeline, kernel_ns: int = 60_000) -> None:
    keep, tl.kernel = tl.kernel, kernel_ns
    for name, dims in (("aten::mean", [X, [], [], []]), ("aten::sub", [X, STAT, []]), ("aten::pow", [X, []]),
                       ("aten::mean", [X, [], [], []]), ("aten::sub", [X, STAT, []]), ("aten::add", [STAT, [], []]),
                       ("aten::sqrt", [STAT]), ("aten::div", [X, STAT]), ("aten::mul", [[192], X]),
                       ("aten::add", [X, [192], []])):
        tl.op(name, dims)
    tl.kernel = keep
    tl.op("aten::linear", [X, [576, 192], [576]])


def test_a_layer_norm_written_by_hand_is_found_and_named_nn_layernorm(tmp_path):
    tl = Timeline()
    tl.step(lambda: [_scratch_layer_norm(tl) for _ in range(6)])
    tr = tl.trace(tmp_path)
    found = layer_norm.find(_context(tr))
    assert len(found) == 6 and found[0].shape == tuple(X) and found[0].nbytes == 2048 * 65 * 192 * 4
    lv = whatif.predict(tr, [LAYER_NORM])
    a = lv.lever(LAYER_NORM).assumption
    assert a.count == 6 and a.kernel_ns == 6 * 10 * 60_000 and a.fused_ns < a.kernel_ns / 2
    out = serialize.report(analyze_trace(tr))
    assert out["next_experiment"]["whatif_lever"] == LAYER_NORM
    assert "nn.LayerNorm(d)" in out["lines"][4] and claims.check(out) == []


@pytest.mark.parametrize("why, ops", [
    # nn.LayerNorm already: one op
    ("nn.LayerNorm", (("aten::layer_norm", [X, [192], [192], [192]]),)),
    # an RMSNorm: one mean (its fix is nn.RMSNorm, not this one)
    ("rmsnorm", (("aten::pow", [X, []]), ("aten::mean", [X, [], [], []]), ("aten::add", [STAT, [], []]),
                 ("aten::rsqrt", [STAT]), ("aten::mul", [X, STAT]), ("aten::mul", [[192], X]))),
    # two means of one tensor, no normaliser: statistics logged, not a norm
    ("no sqrt", (("aten::mean", [X, [], [], []]), ("aten::pow", [X, []]), ("aten::mean", [X, [], [], []]))),
])
def test_no_layer_norm_where_the_trace_shows_something_else(tmp_path, why, ops):
    tl = Timeline()
    tl.step(lambda: [[tl.op(n, d) for n, d in ops] + [tl.op("aten::linear", [X, [576, 192], [576]])]
                     for _ in range(6)])
    assert layer_norm.find(_context(tl.trace(tmp_path))) == [], why


def test_the_checker_catches_a_bigger_batch_beside_a_loop_over_items(tmp_path):
    tl = Timeline()
    tl.step(lambda: _augment_per_image(tl, 64))
    out = serialize.report(analyze_trace(tl.trace(tmp_path)))
    assert claims.check(out) == []
    out["lines"][4] += "; or more work per launch (bigger batch)"
    assert any("bigger batch" in p for p in claims.check(out))
