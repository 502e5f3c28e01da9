"""autocast to fp16 where the tensor cores run fp16 but not bf16 (Volta, Turing), and never where bf16 runs fast.

A GeForce RTX 2080 Ti forward of fp32 convolutions (cuDNN's volta_scudnn_* kernels, as a public trace shows them)
got "bf16 no faster than fp32: nothing to gain" and no precision knob at all; the card's fp16 tensor cores run 4x its
fp32 rate. The same kernels on an H200 keep bf16 as the knob, and fp16 counts nothing there.
"""
from __future__ import annotations

from kineto_factory import Launch, document, events_for, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers.knob import is_half_matrix_kernel, matrix_precision

FP32_CONV = "volta_scudnn_128x128_relu_small_nn_v1"
HALF_CONV = "turing_h1688cudnn_256x64_sliced1x2_ldg8_relu_exp_small_nhwc_tn_v1"


def _convs(tmp_path, device: str, major: int, minor: int, n: int = 12):
    """n fp32 convolutions of 400 us each, queued back to back (a GPU-bound forward, no backward)."""
    launches = [Launch(op_start=10_000 + 30_000 * i, op_end=10_000 + 30_000 * i + 20_000,
                       call_start=10_000 + 30_000 * i + 5_000, call_end=10_000 + 30_000 * i + 15_000,
                       gpu_start=50_000 + 400_000 * i, gpu_end=50_000 + 400_000 * i + 395_000,
                       kernel=FP32_CONV, op="aten::cudnn_convolution") for i in range(n)]
    doc = document(events_for(launches))
    doc["deviceProperties"][0].update(name=device, computeMajor=major, computeMinor=minor)
    return write(tmp_path / "convs.json", doc)


def test_cudnn_volta_and_turing_kernels_read_as_fp32_and_half_convolutions():
    assert matrix_precision(FP32_CONV) == "fp32"
    assert matrix_precision(HALF_CONV) is None and is_half_matrix_kernel(HALF_CONV)
    assert not is_half_matrix_kernel("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 32, true, 1>(...)")


def test_fp32_convolutions_on_a_turing_card_are_priced_in_fp16_not_bf16(tmp_path):
    t = load(_convs(tmp_path, "NVIDIA GeForce RTX 2080 Ti", 7, 5))
    r = whatif.predict(t, ["autocast_bf16", "autocast_fp16"])
    by = {lv.lever: lv for lv in r.levers}
    bf16, fp16 = by["autocast_bf16"].assumption, by["autocast_fp16"].assumption
    assert bf16.count == 0 and bf16.unpriced == "no_tensor_cores"
    assert fp16.count == 12 and fp16.bf16_tflops == 53.8
    assert by["autocast_fp16"].predicted_ratio < 0.5      # 4.7 ms of fp32 convolutions at a 4x faster rate


def test_on_a_device_with_fast_bf16_the_fp16_knob_counts_nothing(tmp_path):
    t = load(_convs(tmp_path, "NVIDIA H200", 9, 0))
    r = whatif.predict(t, ["autocast_bf16", "autocast_fp16"])
    by = {lv.lever: lv for lv in r.levers}
    bf16, fp16 = by["autocast_bf16"].assumption, by["autocast_fp16"].assumption
    assert bf16.count == 12 and fp16.count == 0
    assert by["autocast_fp16"].predicted_ratio == 1.0


def test_the_next_on_a_forward_only_turing_trace_names_fp16_without_a_grad_scaler(tmp_path):
    from tracetriage.analyzers.triage.report import analyze_file
    from tracetriage.analyzers.voice.report import five_lines

    line = five_lines(analyze_file(_convs(tmp_path, "NVIDIA GeForce RTX 2080 Ti", 7, 5)))[4]
    assert "dtype=torch.float16" in line and "GradScaler" not in line and "bfloat16" not in line
