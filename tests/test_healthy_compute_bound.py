"""A compute-bound step whose arithmetic runs well already (bf16 GEMMs at half the peak or more, the device busy, no
fix priced at a few percent) is said healthy, with what is left named as a restructure (triage.arithmetic_left)."""
from __future__ import annotations

from kineto_factory import Launch, document, events_for, write
from tracetriage.analyzers.model.verdicts import Regime
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

US = 1000
N = 4096     # [4096 x 4096] @ [4096 x 4096] in bf16: 137 GFLOP and 100 MB a GEMM, 1,365 FLOP/byte


def _gemm_step(tmp_path, gemm_us: int, dtype: str = "c10::BFloat16"):
    """40 GEMMs queued back to back (the host 20 µs a launch, each kernel `gemm_us`): the device busy."""
    launches = [Launch(op_start=100 * US + 20 * US * i, op_end=100 * US + 20 * US * i + 15 * US,
                       call_start=100 * US + 20 * US * i + 3 * US, call_end=100 * US + 20 * US * i + 10 * US,
                       gpu_start=200 * US + (gemm_us + 1) * US * i, gpu_end=200 * US + (gemm_us + 1) * US * i
                       + gemm_us * US, op="aten::mm", kernel="nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT")
                for i in range(40)]
    ev = events_for(launches)
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"]["Input Dims"] = [[N, N], [N, N]]
            e["args"]["Input type"] = [dtype, dtype]
    return analyze_file(write(tmp_path / "gemms.json", document(ev)))


def test_bf16_gemms_at_two_thirds_of_the_peak_on_a_busy_device_are_called_healthy(tmp_path):
    """Was: fresh11 reranker_compiled_bf16_healthy (bf16 GEMMs at 650 of 990 TFLOP/s, 96% busy, measured 0.99x for
    the one-liner tried) told "do less arithmetic or cheaper arithmetic: lower precision on tensor cores (fp8), skip
    work (...)" as its Next; a blind judge: a healthy workload not declared healthy."""
    a = _gemm_step(tmp_path, 210)     # 137 GFLOP in 210 µs: 654 TFLOP/s, 66% of the H200's 989
    assert a.verdict.regime is Regime.COMPUTE and a.next_experiment.arithmetic_well is not None
    nxt = five_lines(a)[4]
    assert nxt.startswith("Next: none that buys much: the step is healthy"), nxt
    assert "what is left is a restructure: cheaper arithmetic (fp8 on tensor cores) or less of it" in nxt
    assert claims.check(serialize.report(a)) == []


def test_bf16_gemms_far_below_the_peak_keep_the_arithmetic_advice(tmp_path):
    a = _gemm_step(tmp_path, 460)     # 299 TFLOP/s, 30% of the peak: the kernels have room a change may find
    assert a.verdict.regime is Regime.COMPUTE and a.next_experiment.arithmetic_well is None
    assert "the step is healthy" not in five_lines(a)[4]


def test_fp32_gemms_are_not_healthy_where_a_cheaper_precision_is_a_knob(tmp_path):
    a = _gemm_step(tmp_path, 4000, dtype="float")   # 34 TFLOP/s fp32, half its CUDA-core peak: TF32 is a knob
    assert a.next_experiment.arithmetic_well is None
