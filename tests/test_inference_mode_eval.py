"""inference_mode on the GPU: a forward with no backward whose model was left in train mode runs BatchNorm on batch
statistics and clones in-place ops' inputs for autograd; model.eval() and torch.inference_mode() take those kernels
away (traces/fresh5 effnet_eval_no_grad, H100: EfficientNet-B0 bf16 at batch 256, 42.5 -> 21.8 ms a step unprofiled,
1.95x; its after trace runs the same batch_norm_transform_input_kernel, 5.86 ms a step against 5.80)."""
import dataclasses
from pathlib import Path

import pytest

from kineto_factory import document, events_for, write
from other_peoples_traces import US, steady
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import INFERENCE_MODE, LEVERS
from tracetriage.analyzers.whatif.levers.inference_mode import CHANGE_EVAL, EVAL_PASSES

ROOT = Path(__file__).resolve().parent.parent
EFFNET = ROOT / "traces" / "fresh5" / "effnet_eval_no_grad-{}.json.gz"


def _lever(path, unprofiled=False):
    return whatif.predict(load(path), levers=[INFERENCE_MODE], unprofiled=unprofiled).lever(INFERENCE_MODE)


def test_a_train_mode_forward_loses_its_batch_statistics_and_autograds_copies():
    p = _lever(str(EFFNET).format("before"), unprofiled=True)
    a = p.assumption
    assert a.nodes == 1_212 and a.bn_training == a.bn_stats == 193          # 49 BatchNorms a step, and the queued
    assert a.clones == 193 and a.counts == 147                               # silu_'s clones; num_batches_tracked
    assert 65_000_000 < a.bn_ns < 66_500_000 and a.bn_eval_ns == 0           # the statistics go, the transform stays
    # measured 0.529 profiled (43.1 -> 22.8 ms a step), 0.513 unprofiled (1.949x): the host the profiled replay
    # keeps (Python of the train-mode forward, 5 ms a step fewer untraced in the after trace) makes it a floor
    assert 0.58 <= p.predicted_ratio <= 0.68 and 0.50 <= p.unprofiled_ratio <= 0.58
    assert p.saving_ns <= LEVERS[INFERENCE_MODE].most_saved(a)


def test_the_eval_after_trace_has_nothing_left_to_take():
    p = _lever(str(EFFNET).format("after"))
    assert p.assumption.count == 0 and p.predicted_ratio == 1.0


def test_a_training_step_keeps_its_batch_norm():
    p = _lever(ROOT / "traces" / "fresh5" / "fcn_empty_cache-before.json.gz")
    assert p.assumption.count == 0 and p.predicted_ratio == 1.0


def test_the_next_is_model_eval_with_inference_mode_and_its_because_gives_the_kernels_it_removes():
    a = analyze_file(str(EFFNET).format("before"))
    nx = a.next_experiment
    assert nx.lever.lever == INFERENCE_MODE
    others = [c for c in a.lever_choices if LEVERS[c.lever].one_line and c.lever != INFERENCE_MODE]
    assert all(c.saving_ns < nx.lever.saving_ns for c in others)             # the biggest one-line saving
    line = five_lines(a)[4]
    assert CHANGE_EVAL in line and "the 193 batch-statistics kernels of training-mode BatchNorm (65.6 ms) go" in line
    assert claims.check(serialize.report(a)) == []


def _cudnn_bn_forward(tmp_path) -> Path:
    """A forward with grad off and the model in train mode: 10 cuDNN training batch norms of 200 µs over a
    [64, 256, 56, 56] bf16 activation (102.8 MB), beside 10 elementwise adds over the same shape that stream it at
    their own rate (3 passes in 100 µs)."""
    shape, types = [64, 256, 56, 56], ["c10::BFloat16", "c10::BFloat16"]
    bn = steady(10, 100 * US, kernel="void cudnn::bn_fw_tr_1C11_kernel_NHWC<__nv_bfloat16, float, int, 512, true, 1, "
                                     "true>(cudnnTensorStruct)", kernel_ns=200 * US)
    bn = [dataclasses.replace(launch, op="aten::cudnn_batch_norm") for launch in bn]
    add = steady(10, bn[-1].gpu_end + 20 * US, kernel="void at::native::vectorized_elementwise_kernel<8, "
                 "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::"
                 "CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)", kernel_ns=100 * US)
    ev = events_for(bn) + events_for(add, first_id=100)
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"]["Input Dims"], e["args"]["Input type"] = [shape, shape], types
    return write(tmp_path / "bn.json.gz", document(ev))


def test_cudnns_training_batch_norm_becomes_one_read_and_one_write_at_the_traces_elementwise_rate(tmp_path):
    p = _lever(_cudnn_bn_forward(tmp_path))
    a = p.assumption
    assert a.bn_training == 10 and a.bn_stats == 0 and a.bn_ns == 10 * 200 * US
    # the adds stream 3 x 102.8 MB in 100 µs; eval's pass moves 2 x 102.8 MB: 2/3 of 100 µs each
    assert a.bn_eval_ns == pytest.approx(10 * EVAL_PASSES * 100 * US / 3, rel=0.02)
    assert "run as eval's" in LEVERS[INFERENCE_MODE].says(a)
