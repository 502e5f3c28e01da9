"""A compute-bound Next says only what fits the ops and the device: unpadded batches where the span runs attention, the
precision a step down from what the GEMMs run by their names, fp8 only where the device is known to run it faster
(public trace_with_manual_capture: an MLP's TF32 CUTLASS GEMMs on an RTX 5080, a card the peak table does not hold,
was told "lower precision on tensor cores (bf16/fp8), skip work (causal masks, smaller shapes)")."""
from __future__ import annotations

from tracetriage.analyzers.analyses.peaks import lookup
from tracetriage.analyzers.model.kernels import is_attention
from tracetriage.analyzers.voice.common import cheaper_arithmetic


def test_an_mlp_is_not_told_to_mask_attention_it_does_not_run():
    said = cheaper_arithmetic(None, None, named="tf32")
    assert "padded positions" not in said and "skip work (smaller shapes)" in said
    assert "padded positions" in cheaper_arithmetic(None, None, named="tf32", attention=True)


def test_attention_is_offered_unpadded_batches_never_causal_masks():
    """Was: fresh11 reranker_compiled_bf16_healthy, a bidirectional BERT cross-encoder, told "skip work (causal masks,
    smaller shapes)": a causal mask changes what an encoder computes, and the trace cannot tell an encoder from a
    decoder. Padded positions are work any attention model may skip."""
    h100 = lookup("NVIDIA H100 80GB HBM3")
    for said in (cheaper_arithmetic(None, None, named="tf32", attention=True),
                 cheaper_arithmetic(h100, "bf16", attention=True), cheaper_arithmetic(None, "bf16", attention=True)):
        assert "causal" not in said and "variable-length attention in place of padded batches" in said, said


def test_tf32_gemms_on_an_unknown_device_are_told_bf16_autocast_and_never_fp8():
    said = cheaper_arithmetic(None, None, named="tf32")
    assert "bf16 on tensor cores (torch.autocast('cuda', dtype=torch.bfloat16)" in said
    assert "fp8" not in said and "TF32 or" not in said
    # bf16 already, on a device the table does not hold: no cheaper precision is named
    said = cheaper_arithmetic(None, "bf16")
    assert "fp8" not in said and said.startswith("do less arithmetic (bf16 already")


def test_the_gemms_precision_by_name_is_the_step_down_point_on_a_known_device():
    h100 = lookup("NVIDIA H100 80GB HBM3")
    # fp32 data on TF32 tensor cores (cutlass s1688gemm): TF32 is no step down from there
    said = cheaper_arithmetic(h100, "fp32", named="tf32")
    assert "(bf16)" in said and "TF32" not in said


def test_attention_is_known_by_its_ops_and_kernels():
    assert is_attention("aten::scaled_dot_product_attention") and is_attention("flash_fwd_kernel<Flash_fwd_traits>")
    assert is_attention("fmha_cutlassF_f16_aligned_64x64_rf_sm80")
    assert not is_attention("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_nt_align4>")


def test_kernels_replayed_from_graphs_are_changed_where_the_graph_is_captured():
    said = cheaper_arithmetic(None, None, named="tf32", replayed=True)
    assert "around the forward and the loss inside the graph's capture" in said
    assert "inside the graph's capture" not in cheaper_arithmetic(None, None, named="tf32")
