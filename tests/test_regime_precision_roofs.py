"""The Regime line's roof follows the arithmetic the kernels do: fp32 GEMMs on CUDA cores (sgemm) compute-bound
against the SIMT fp32 peak say the tensor-core roof above them (heldout-user15 switch_moe_8k: 'compute-bound ops reach
13.8 TFLOP/s of the 19.5 TFLOP/s peak (71%)' on ampere_sgemm_* kernels, read as little headroom where TF32 tensor
cores run 156 TFLOP/s)."""
from __future__ import annotations

import kineto_factory as kf
from other_peoples_traces import MS, US, with_device
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file


def _gemms(kernel: str, dtype: str, device: str, n: int = 12, kernel_ns: int = 12 * MS) -> dict:
    """n back-to-back aten::mm of two 4096x4096 matrices (137 GFLOP each), each one kernel of kernel_ns."""
    ev, t = [], 100 * US
    g = t + 50 * US
    for i in range(1, n + 1):
        ev += [kf.op("aten::mm", t, t + 30 * US, i, dims=[[4096, 4096], [4096, 4096]], types=[dtype, dtype]),
               kf.call("cudaLaunchKernel", t + 10 * US, t + 20 * US, i, i),
               kf.gpu(kernel, g, g + kernel_ns, i)]
        t += 40 * US
        g += kernel_ns + 2 * US
    ev.append(kf.call("cudaDeviceSynchronize", t, g + 5 * US, n + 1, None))
    return with_device(kf.document(ev), device)


def test_fp32_gemms_on_cuda_cores_name_the_tensor_core_roof_above_them(tmp_path):
    out = serialize.report(analyze_file(kf.write(tmp_path / "t.json", _gemms(
        "ampere_sgemm_128x64_nn", "float", "NVIDIA A100 80GB PCIe"))))
    regime = out["lines"][3]
    assert regime.startswith("Regime: compute-bound")
    assert ("of the 19.5 TFLOP/s peak (59%) on CUDA cores (fp32 GEMMs, by name: ampere_sgemm_128x64_nn): the TF32 "
            "tensor-core roof is 156 TFLOP/s, 14× what they reach") in regime
    assert claims.check(out) == []


def test_tf32_tensor_core_gemms_are_judged_against_their_own_roof_with_no_roof_above_named(tmp_path):
    out = serialize.report(analyze_file(kf.write(tmp_path / "t.json", _gemms(
        "ampere_tf32_s1688gemm_128x128_nn", "float", "NVIDIA A100 80GB PCIe", kernel_ns=2 * MS))))
    regime = out["lines"][3]
    assert regime.startswith("Regime: compute-bound")
    assert "CUDA cores" not in regime and "tensor-core roof" not in regime
    assert claims.check(out) == []


def _amp_step_on_a_t4(steps: int = 6) -> dict:
    """Each step: two fp16 GEMMs on tensor cores (aten::mm of 512x1024 by 1024x2048 halves, turing_fp16_s1688gemm,
    300 µs) and an fp32 optimizer pass (aten::add_ over 2M floats, 800 µs), then 5 ms of host work: an autocast
    training loop, its kernels mostly the fp32 step, the device mostly idle."""
    ev, t, i = [], 100 * US, 0
    for _ in range(steps):
        for name, dims, types, kernel, ns in (
                ("aten::mm", [[512, 1024], [1024, 2048]], ["c10::Half", "c10::Half"],
                 "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", 300 * US),
                ("aten::mm", [[512, 1024], [1024, 2048]], ["c10::Half", "c10::Half"],
                 "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", 300 * US),
                ("aten::add_", [[2097152], [2097152], []], ["float", "float", "Scalar"],
                 "void at::native::vectorized_elementwise_kernel<4, float>", 800 * US)):
            i += 1
            ev += [kf.op(name, t, t + 30 * US, i, dims=dims, types=types),
                   kf.call("cudaLaunchKernel", t + 10 * US, t + 20 * US, i, i),
                   kf.gpu(kernel, t + 25 * US, t + 25 * US + ns, i)]
            t += ns + 40 * US
        t += 5 * MS
    return with_device(kf.document(ev), "Tesla T4")


def test_an_amp_span_states_each_precisions_ops_against_their_own_ridge(tmp_path):
    # (heldout-user15 fmnist_amp: fp16 tensor-core GEMMs and an fp32 Adam step read 'its ops average 26.1 FLOP/byte
    # against a fp32 ridge of 25.3', one average across both precisions against the fp32 roof alone)
    a = analyze_file(kf.write(tmp_path / "t.json", _amp_step_on_a_t4()))
    out = serialize.report(a)
    regime = out["lines"][3]
    v = a.verdict
    assert v.dtype == "fp32" and [d for d, _, _ in v.other_precisions] == ["fp16"]
    fp16 = [p for p in a.roof.points if p.dtype == "fp16"]
    assert v.other_precisions[0][1] == sum(p.flops for p in fp16) / sum(p.bytes for p in fp16)
    assert v.intensity < 1 < 100 < v.other_precisions[0][1]       # each precision's own average, not one across both
    assert "its fp32 ops average 0.0" in regime and "against a fp32 ridge of 25.3, its fp16 ones " in regime
    assert "against a fp16 ridge of 203" in regime
    assert claims.check(out) == []


def test_a_gemm_recorded_in_fp32_whose_kernel_computes_fp16_is_costed_and_roofed_in_fp16(tmp_path):
    # (the brief's autocast case: the op's recorded input type says float while its kernel, by name, is an fp16
    # tensor-core GEMM: bytes and the ridge follow the kernel's precision, not the recorded type)
    def roof(kernel):
        doc = _gemms(kernel, "float", "Tesla T4", n=4, kernel_ns=25 * MS)
        (p,) = analyze_file(kf.write(tmp_path / f"{kernel[:12]}.json", doc)).roof.points
        return p
    fp16, fp32 = roof("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn"), roof("volta_sgemm_128x64_nn")
    assert (fp16.dtype, fp32.dtype) == ("fp16", "fp32")
    assert fp16.flops == fp32.flops and fp16.bytes == fp32.bytes / 2
