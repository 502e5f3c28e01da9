"""A GPU-bound fp32 trace recorded without shapes: the kernels' names say fp32 GEMMs and convolutions on CUDA cores,
so the report says so and its Next is mixed precision on the device's tensor cores, not "capture again"
(heldout-user3 hpdl_vgg16_t4: a T4 99% busy in volta_sgemm_* and cudnn_volta_scudnn_* kernels read "Regime:
unknown ... nothing else to decide by" and "Next: capture again with record_shapes=True"). Built here: the public
trace is not committed."""
from __future__ import annotations

import copy

import pytest

import kineto_factory as kf
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.kernels import is_fp32_cuda_core_math, matrix_precision_by_name
from tracetriage.analyzers.output import claims, invariants, serialize
from tracetriage.analyzers.triage.report import analyze_trace

_FP32 = ("volta_sgemm_128x64_nt", "cudnn_volta_scudnn_128x32_sliced1x4_ldg4_relu_exp_medium_nhwc_tn_v1",
         "void cudnn::cnn::wgrad_alg1_engine<float, float, 512, 6, 5, 3, 3, 3, false, false>(int, int, int)")
_TENSOR_CORE = ("volta_h884gemm_64x64_nn", "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn",
                "volta_s884cudnn_fp16_128x128_ldg8_dgrad_idx3_nt")


def _busy_trace(tmp_path, device: str, kernels: tuple[str, ...], name: str):
    """60 kernels queued back to back (the device busy), their ops recorded without shapes."""
    launches = [kf.Launch(op_start=100_000 + 8_000 * i, op_end=105_000 + 8_000 * i, call_start=101_000 + 8_000 * i,
                          call_end=104_000 + 8_000 * i, gpu_start=110_000 + 300_000 * i,
                          gpu_end=110_000 + 300_000 * i + 298_000, op="aten::convolution",
                          kernel=kernels[i % len(kernels)]) for i in range(60)]
    events = kf.events_for(launches)
    for e in events:
        e.get("args", {}).pop("Input Dims", None)
        e.get("args", {}).pop("Input type", None)
    doc = kf.document(events)
    doc["deviceProperties"][0].update(name=device, computeMajor=7, computeMinor=5, numSms=40,
                                      totalGlobalMem=15_835_398_144)
    return analyze_trace(load(kf.write(tmp_path / name, doc), use_cache=False))


def test_fp32_gemm_and_convolution_kernels_on_cuda_cores_are_told_apart_by_name():
    assert all(is_fp32_cuda_core_math(k) for k in _FP32)
    assert not any(is_fp32_cuda_core_math(k) for k in _TENSOR_CORE)
    assert not is_fp32_cuda_core_math("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float)")


@pytest.fixture(scope="module")
def t4_fp32(tmp_path_factory):
    return serialize.report(_busy_trace(tmp_path_factory.mktemp("fp32"), "Tesla T4", _FP32, "t4.json"))


def test_a_busy_fp32_trace_without_shapes_is_gpu_bound_in_fp32_math_and_its_next_is_fp16_autocast(t4_fp32):
    out = t4_fp32
    assert out["regime"] == "unknown"      # the roof is still unmeasured: the JSON regime says so
    assert out["regime_detail"]["fp32_cuda_core_us"] == pytest.approx(out["kernel_busy_us"], rel=0.01)
    assert out["lines"][3].startswith("Regime: GPU-bound in fp32 math on CUDA cores, its roof unmeasured: the device "
                                      "is busy ")
    assert "100% of kernel time is fp32 GEMMs and convolutions on CUDA cores (by name: " in out["lines"][3]
    # a T4 has fp16 tensor cores and no bf16 ones: the autocast_fp16 knob prices it (the datasheet's 65 TFLOP/s);
    # the trace holds weight-gradient kernels (a backward), so loss scaling comes with it
    assert out["next_experiment"]["kind"] == "turn_knob" and out["next_experiment"]["whatif_lever"] == "autocast_fp16"
    nxt = out["lines"][4]
    assert 'torch.autocast("cuda", dtype=torch.float16)' in nxt and "GradScaler" in nxt and "bfloat16" not in nxt
    assert "at the 65 TFLOP/s peak" in nxt and "(predicted −" in nxt
    assert "capture again" not in nxt
    assert claims.check(out) == [] and invariants.check(out) == []


def test_the_checker_catches_nothing_else_to_decide_by_and_find_the_bound_on_fp32_kernels(t4_fp32):
    old = copy.deepcopy(t4_fp32)
    old["lines"][3] = ("Regime: unknown: 100% of kernel time (collectives aside) has no cost model, because their "
                       "ops recorded no shapes (record_shapes was off); nothing else to decide by.")
    old["claims"] = [c for c in old["claims"] if not c["key"].startswith("regime.")]
    old["next_experiment"]["kind"] = "find_the_bound"
    bad = claims.check(old)
    assert any("nothing else decides" in p for p in bad)
    assert any("Next looks for the bound of fp32 CUDA-core kernels" in p for p in bad)
    wrong = copy.deepcopy(t4_fp32)
    for c in wrong["claims"]:
        if c["key"] == "regime.fp32_math_share":
            c["value"] -= 0.4
    assert any("of kernel time is fp32 on CUDA cores, its field is" in p for p in claims.check(wrong))


def test_tensor_core_kernels_without_shapes_still_find_the_bound(tmp_path):
    out = serialize.report(_busy_trace(tmp_path, "Tesla T4", _TENSOR_CORE, "tc.json"))
    assert out["regime_detail"]["fp32_cuda_core_us"] == 0
    assert out["next_experiment"]["kind"] == "find_the_bound"
    assert claims.check(out) == []


@pytest.mark.parametrize("name, precision", [
    ("nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", "bf16"),          # cuBLASLt: t = bf16 A/B
    ("nvjet_sm90_tss_64x128_64x8_1x2_h_bz_TNN", "bf16"),
    ("nvjet_hsh_128x256_64x4_2x1_v_bz_TNT", "fp16"),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize256x128x32_warpgroupsize2x1x1_execute_kernel__5x_cublas", "tf32"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4", None),
    ("volta_sgemm_128x64_nt", "fp32"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_nn_align2>(Params)", "bf16"),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_64x3_nn", "fp16"),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda>", None),
    ("triton_poi_fused_gelu_3", None),
])
def test_a_gemms_precision_is_read_from_its_name(name, precision):
    assert matrix_precision_by_name(name) == precision


def test_gemms_replayed_without_shapes_are_judged_in_the_precision_their_names_say(tmp_path):
    """fresh4 mlp_gemm_roof-after (not committed): compiled, graph-replayed bf16 GEMMs (nvjet_sm90_tst_*) hold the
    kernel time with no shapes, a few fp32 ops carry theirs; the Regime judged all of it against the fp32 ridge and
    the Next offered "TF32 or bf16" for GEMMs already in bf16."""
    gemm = "nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"
    add = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, float*)"
    launches = [kf.Launch(op_start=100_000 + 8_000 * i, op_end=105_000 + 8_000 * i, call_start=101_000 + 8_000 * i,
                          call_end=104_000 + 8_000 * i, gpu_start=110_000 + 300_000 * i,
                          gpu_end=110_000 + 300_000 * i + (298_000 if i % 4 else 20_000),
                          op="aten::addmm" if i % 4 else "aten::add",
                          kernel=gemm if i % 4 else add) for i in range(60)]
    events = kf.events_for(launches)
    for e in events:
        if e.get("name") == "aten::add":
            e["args"].update({"Input Dims": [[4096, 4096], [4096, 4096], []],
                              "Input type": ["float", "float", "Scalar"]})
        else:
            e.get("args", {}).pop("Input Dims", None)
            e.get("args", {}).pop("Input type", None)
    doc = kf.document(events)
    doc["deviceProperties"][0].update(name="NVIDIA H100 80GB HBM3")
    out = serialize.report(analyze_trace(load(kf.write(tmp_path / "replayed.json", doc), use_cache=False)))
    assert out["regime_detail"]["dtype"] == "bf16", out["lines"][3]
    assert "fp32 ridge" not in out["lines"][3] and "TF32" not in out["lines"][4]
    assert claims.check(out) == []


@pytest.mark.parametrize("name", [
    "void implicit_convolveNd_sgemm<__nv_bfloat16, 3, 1024, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int)",
    "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, "
    "(cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __nv_bfloat16 const*)"])
def test_bf16_data_and_layout_transposes_are_no_fp32_math(name):
    # fresh4 r3d_cudnn_benchmark (bf16 autocast Conv3d) read 50% fp32 on CUDA cores from these and lost its Next
    assert not is_fp32_cuda_core_math(name)
