"""nn.MultiheadAttention called with need_weights=True (its default) writes the [B, H, T, S] weights and averages them
over the heads (an aten::mean after the values' GEMM): the sdpa lever names need_weights=False, not attention
"written by hand"; and a fused kernel is priced at the precision of the scores' GEMM's operands (bf16 under
autocast), not of baddbmm's first input, the mask it adds (fp32)."""
from kineto_factory import call, gpu, op
from test_loop_knobs import Timeline, _context
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import LEVERS, SDPA, sdpa

BF16, FLOAT = "c10::BFloat16", "float"
B, H, T, D = 256, 4, 200, 32


class Layer(Timeline):
    def typed(self, name: str, dims: list, types: list, kernel_ns: int = 400_000, concrete: list | None = None) -> None:
        start, ext = self.t, self.ext
        extra = {"Concrete Inputs": concrete} if concrete else {}
        self.ev.append(op(name, start, start + self.gap - 1_000, ext, dims=dims, types=types, **extra))
        at = start + self.gap // 2
        self.ev.append(call("cudaLaunchKernel", at, at + 5_000, ext, ext))
        self.ev.append(gpu(f"{name.split('::')[-1]}_kernel", at + 6_000, at + 6_000 + kernel_ns, ext))
        self.t, self.ext = self.t + max(self.gap, kernel_ns + 10_000), self.ext + 1


def _mha(tl: Layer, need_weights: bool = True) -> None:
    """One nn.MultiheadAttention forward under autocast: baddbmm adds the fp32 mask to bf16 q @ k^T, softmax, the
    values' bmm, the output projection, then (need_weights=True) the weights' mean over the heads."""
    bh = B * H
    tl.typed("aten::baddbmm", [[1, T, T], [bh, T, D], [bh, D, T], [], []], [FLOAT, BF16, BF16, "Scalar", "Scalar"])
    tl.typed("aten::softmax", [[bh, T, T], [], []], [BF16, "Scalar", ""])
    tl.typed("aten::bmm", [[bh, T, T], [bh, T, D]], [BF16, BF16])
    tl.typed("aten::linear", [[T * B, H * D], [H * D, H * D], [H * D]], [BF16] * 3, kernel_ns=50_000)
    if need_weights:
        tl.typed("aten::mean", [[B, H, T, T], [], [], []], [FLOAT, "ScalarList", "Scalar", ""],
                 concrete=["", "[1]", "False", ""])


def _trace(tmp_path, name: str = "t.json.gz", need_weights: bool = True):
    tl = Layer()
    for _ in range(3):
        tl.step(lambda: [_mha(tl, need_weights) for _ in range(2)])
    return tl.trace(tmp_path, name)


def test_mha_with_need_weights_is_told_need_weights_false_not_hand_written_attention(tmp_path):
    tr = _trace(tmp_path)
    found = sdpa.find(_context(tr))
    assert len(found) == 6 and all(a.need_weights for a in found)
    a = whatif.predict(tr, [SDPA]).lever(SDPA).assumption
    assert a.need_weights == 6
    line = LEVERS[SDPA].knob.change_for(a)
    assert "need_weights=False" in line and "in place of softmax" not in line
    words = sdpa.says(a)
    assert "nn.MultiheadAttention called with need_weights=True" in words and "hand-written" not in words


def test_the_heads_mean_goes_with_need_weights_false(tmp_path):
    # the 6 means' kernels (400 µs each) go beside the fused attention: the kernels taken out exceed the same
    # attentions' without the mean by their time, and so does the saving
    with_mean = whatif.predict(_trace(tmp_path), [SDPA]).lever(SDPA)
    without = whatif.predict(_trace(tmp_path, name="plain.json.gz", need_weights=False), [SDPA]).lever(SDPA)
    assert with_mean.assumption.kernel_ns - without.assumption.kernel_ns == 6 * 400_000
    assert with_mean.saving_ns > without.saving_ns


def test_attention_without_the_heads_mean_keeps_the_hand_written_words(tmp_path):
    a = whatif.predict(_trace(tmp_path, need_weights=False), [SDPA]).lever(SDPA).assumption
    assert a.count == 6 and a.need_weights == 0
    assert "scaled_dot_product_attention(q, k, v" in LEVERS[SDPA].knob.change_for(a)
    assert "hand-written" in sdpa.says(a)


def test_the_fused_kernel_is_priced_at_the_operands_precision_not_the_masks(tmp_path):
    # baddbmm's first input is the fp32 mask it adds; q and k are bf16 (autocast): the bf16 peak prices it
    tr = _trace(tmp_path)
    assert {a.precision for a in sdpa.find(_context(tr))} == {"bf16"}
    assert whatif.predict(tr, [SDPA]).lever(SDPA).assumption.precision == "bf16"
