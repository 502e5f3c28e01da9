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
    assert regime.startswith("Regime: compute-bound") and "CUDA cores" not in regime and "tensor-core roof" not in regime
    assert claims.check(out) == []
