"""What the sdpa and inference_mode levers recognise, on CPU traces of the knobs3 workloads (traces/knobs3-cpu:
capture/realworld_knobs3.py at its CPU sizes, one rep): the hand-written attention and its backward, the backward
nodes an eval forward with grad on makes; and none of either once the knob is turned."""
from pathlib import Path

import pytest

from kineto_factory import document, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif.levers import inference_mode, sdpa
from tracetriage.analyzers.whatif.levers.spec import Context

CPU = Path(__file__).resolve().parent.parent / "traces" / "knobs3-cpu"


def _context(name: str) -> Context:
    return Context(load(CPU / f"{name}.json.gz"), None)      # the recognisers read ops only: no graph needed


def test_the_nanogpt_attention_by_hand_is_found_causal_with_its_backward():
    c = _context("sdpa_gpt_train--before")
    found = sdpa.find(c)
    assert len(found) == 6                     # 2 blocks x 3 steps (CPU sizes: batch 2, 4 heads, 32 tokens, 64 wide)
    assert {(a.heads, a.queries, a.keys, a.dim, a.value_dim, a.causal) for a in found} == {(8, 32, 32, 16, 16, True)}
    assert len(sdpa.backward_windows(c)) == 6 and all(s < e for s, e, _, _ in sdpa.backward_windows(c))


def test_the_vit_attention_by_hand_is_found_not_causal_and_without_backward():
    c = _context("sdpa_vit_infer--before")
    found = sdpa.find(c)
    assert len(found) == 8 and not any(a.causal for a in found) and {a.keys for a in found} == {17}
    assert sdpa.backward_windows(c) == []


@pytest.mark.parametrize("name", ["sdpa_gpt_train--sdpa", "sdpa_vit_infer--sdpa", "inference_mode_encoder--before"])
def test_attention_already_fused_is_not_found(name):
    assert sdpa.find(_context(name)) == []


def test_a_causal_flops_count_keeps_the_triangle():
    a = sdpa.Attention(0, 1, 0, heads=96, queries=1024, keys=1024, dim=64, value_dim=64, causal=False,
                       precision="bf16")
    assert a.flops == 2 * 96 * 1024 * 1024 * 128
    half = sdpa.Attention(**{**a.__dict__, "causal": True}).flops / a.flops
    assert half == pytest.approx(0.5, abs=0.001)


def test_an_eval_forward_with_grad_on_makes_backward_nodes_and_none_under_inference_mode():
    assert len(inference_mode.node_ops(_context("inference_mode_encoder--before"))) > 100
    assert len(inference_mode.node_ops(_context("inference_mode_encoder--inference_mode"))) == 0


def test_a_training_step_needs_its_nodes():
    assert len(inference_mode.node_ops(_context("sdpa_gpt_train--before"))) == 0


def test_grad_on_over_frozen_weights_makes_no_node(tmp_path):
    """The sequence number stays put where no input requires grad: nothing for inference_mode to give back."""
    ev = [op(f"aten::op{i}", i * 1_000, i * 1_000 + 500, i + 1, **{"Sequence number": 7}) for i in range(20)]
    c = Context(load(write(tmp_path / "frozen.json.gz", document(ev)), use_cache=False), None)
    assert len(inference_mode.node_ops(c)) == 0
    ev = [op(f"aten::op{i}", i * 1_000, i * 1_000 + 500, i + 1, **{"Sequence number": 7 + i}) for i in range(20)]
    c = Context(load(write(tmp_path / "nodes.json.gz", document(ev)), use_cache=False), None)
    assert len(inference_mode.node_ops(c)) == 19          # the last number's node is not made yet


@pytest.mark.parametrize("backward", ["CudnnConvolutionBackward", "ReluBackward1", "torch::autograd::AccumulateGrad",
                                      "aten::cudnn_convolution_backward_weight",
                                      "autograd::engine::evaluate_function: AddmmBackward0"])
def test_a_backward_recorded_the_torch_1_9_way_is_a_training_step(tmp_path, backward):
    """torch 1.9 records backward nodes under their own names, with no evaluate_function around them (kineto's 2021
    ResNet-50 samples): the forward's nodes are needed there, not bookkeeping to give back."""
    ev = [op(f"aten::op{i}", i * 1_000, i * 1_000 + 500, i + 1, **{"Sequence number": 7 + i}) for i in range(20)]
    ev.append(op(backward, 30_000, 31_000, 99))
    c = Context(load(write(tmp_path / "train.json.gz", document(ev)), use_cache=False), None)
    assert len(inference_mode.node_ops(c)) == 0


@pytest.mark.parametrize("shape, volumetric", [([16, 128, 8, 28, 28], True), ([16, 128, 28, 28], False)])
def test_channels_last_names_the_3d_format_for_convolutions_on_5d_inputs(tmp_path, shape, volumetric):
    """fresh4's R3D-18 (Conv3d, 5-D clips) was told `torch.channels_last`, which raises on a 5-D tensor ("required
    rank 4 tensor"); its format is torch.channels_last_3d."""
    from tracetriage.analyzers.whatif.levers import channels_last

    weight = [128, 128, 3, 3, 3][:len(shape)]
    ev = [op("aten::cudnn_convolution", i * 1_000, i * 1_000 + 500, i + 1, dims=[shape, weight],
             types=["c10::BFloat16", "c10::BFloat16"]) for i in range(6)]
    c = Context(load(write(tmp_path / "conv.json.gz", document(ev)), use_cache=False), None)
    assert channels_last._volumetric(c) is volumetric
    a = channels_last.ChannelsLast("channels_last", 3, volumetric=channels_last._volumetric(c))
    line = channels_last.SPEC.knob.change_for(a)
    assert ("channels_last_3d" in line) is volumetric and "torch.channels_last)" in channels_last.CHANGE_2D


@pytest.mark.parametrize("kernel, eval_first", [
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>(cudnnTensorStruct)", True),
    ("void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1>(float, float, cudnnTensorStruct)", False)])
def test_an_eval_forward_whose_batch_norm_runs_in_training_mode_is_told_model_eval_first(tmp_path, kernel, eval_first):
    """heldout-user3 andrewlala_resnet50_t4 (public, not committed): a forward with grad on and no backward whose
    cuDNN batch norm runs its training kernels (bn_fw_tr): the model was never put in eval(), and inference_mode alone
    leaves BatchNorm normalising by each batch's statistics."""
    from kineto_factory import events_for
    from other_peoples_traces import US, steady
    from tracetriage.analyzers.whatif import predict as whatif

    ev = events_for(steady(20, 100 * US, kernel=kernel))
    seq = 7
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"]["Sequence number"] = seq
            seq += 1
    lever = whatif.predict(load(write(tmp_path / "bn.json.gz", document(ev)), use_cache=False),
                           ["inference_mode"]).lever("inference_mode")
    assert lever.assumption.count > 0
    line = inference_mode.SPEC.knob.change_for(lever.assumption)
    assert line.startswith("model.eval() and ") == eval_first, line
