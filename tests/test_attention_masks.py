"""Padded positions are offered only where the attention takes a mask: "skip work (padded positions: variable-length
attention in place of padded batches)" is a text batch's advice; a ViT's patches pad nothing (fresh12
dinov2_compiled_embed_healthy, 257 patches an image, was offered "causal masks", then padded positions, from a
template written for text models). The fused attention's fourth input (attn_mask / attn_bias) tells."""
from types import SimpleNamespace

import kineto_factory as kf
from kineto_factory import call, document, gpu, op
from other_peoples_traces import US
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.attention_masks import attention_masked
from tracetriage.analyzers.voice.common import attends

ATTN = "aten::_scaled_dot_product_efficient_attention"


def _attention(tmp_path, mask) -> object:
    q = [8, 12, 257, 64]
    dims = [q, q, q, mask if mask is not None else [], []]
    ev = [op(ATTN, 100 * US, 150 * US, 1, dims=dims, types=["c10::BFloat16"] * 3 + ["", "Scalar"]),
          call("cudaLaunchKernel", 110 * US, 120 * US, 900, 1),
          gpu("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", 125 * US, 400 * US, 900)]
    return load(kf.write(tmp_path / f"a{mask is not None}.json", document(ev)))


def _analysis(trace):
    hot = [SimpleNamespace(name=ATTN)]
    return SimpleNamespace(hotspots=hot, top_kernels=[], roof=SimpleNamespace(points=[]), lever_choices=[], trace=trace)


def test_attention_without_a_mask_offers_no_padded_positions(tmp_path):
    t = _attention(tmp_path, None)
    assert not attention_masked(t) and not attends(_analysis(t))


def test_attention_with_a_padding_mask_may_skip_padded_positions(tmp_path):
    t = _attention(tmp_path, [8, 1, 1, 257])
    assert attention_masked(t) and attends(_analysis(t))
