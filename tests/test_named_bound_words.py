"""A split of kernel time placed by the kernels' names alone (no op recorded shapes) is said as a guess from names,
and a span without shapes whose kernel time is mostly memory-bound by its kernels' names says that bound as a guess
instead of "nothing else to decide by" (heldout-user18: swin_a4000_cold, a runtime-only capture, read "of kernel
time, 44% is compute-bound and 41% memory-bound" as if measured; dynavis_rtx6000, elementwise Gaussians on 131
M-element tensors recorded without shapes, named no bound). Hand-built traces."""
from __future__ import annotations

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Regime
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

US, MS = 1_000, 1_000_000
MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
       "at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, "
       "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
       "at::detail::Array<char*, 3>)")
SGEMM = "ampere_sgemm_128x64_tn"


def _trace(tmp_path, name, kernels, *, ops: bool):
    """Kernels back to back (each launched 20 µs before the last one ends: a busy device); `ops` False: a runtime-only
    capture, no CPU op around the launches."""
    ev, t = [], 0
    for k, (kernel, dur) in enumerate(kernels, start=1):
        host = max(t - 20 * US, 0) if k > 1 else 0
        if ops:   # (no dims: record_shapes was off)
            ev.append(op("aten::mul" if kernel == MUL else "aten::mm", host, host + 10 * US, ext=k))
        ev.append(call("cudaLaunchKernel", host + 2 * US, host + 8 * US, k, k if ops else None))
        start = max(t, host + 10 * US)
        ev.append(gpu(kernel, start, start + dur, k))
        t = start + dur + 2 * US
    return write(tmp_path / name, document(ev))


def test_elementwise_kernels_recorded_without_shapes_read_memory_bound_by_their_names(tmp_path):
    a = analyze_trace(load(_trace(tmp_path, "mul.json.gz", [(MUL, 2 * MS)] * 20, ops=True), use_cache=False))
    assert a.verdict.regime is Regime.UNKNOWN   # (the JSON regime stays unknown: no shapes, no roofline)
    out = serialize.report(a)
    assert out["lines"][3].startswith("Regime: memory-bound by the kernels' names, a guess: 100% of kernel time is in "
                                      "kernels whose names read memory-bound")
    assert out["regime_detail"]["bound"] == "memory_by_names"
    assert claims.check(out) == []


def test_a_split_placed_by_names_alone_says_it_is_a_guess(tmp_path):
    kernels = [(SGEMM, 1 * MS), (MUL, 1 * MS)] * 10
    a = analyze_trace(load(_trace(tmp_path, "rt.json.gz", kernels, ops=False), use_cache=False))
    line = serialize.report(a)["lines"][3]
    assert "of kernel time, by the kernels' names (a guess: no op's shapes cost them), 50% is compute-bound" in line


def test_gemm_kernels_recorded_without_shapes_read_compute_bound_by_their_names(tmp_path):
    """transformer_nuggets' qlora bench (its own NF4 dequantize, record_shapes off): 76% of its kernel time in
    ampere_bf16_s16816gemm_..._256x128 kernels read "unknown ... which roof holds them is what the shapes would
    tell"."""
    gemm = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
    a = analyze_trace(load(_trace(tmp_path, "gemm.json.gz", [(gemm, 2 * MS)] * 8 + [(MUL, 1 * MS)] * 2, ops=True),
                           use_cache=False))
    assert a.verdict.regime is Regime.UNKNOWN   # (the JSON regime stays unknown: no shapes, no roofline)
    out = serialize.report(a)
    assert out["lines"][3].startswith("Regime: compute-bound by the kernels' names, a guess: 89% of kernel time is in "
                                      "matrix kernels"), out["lines"][3]
    assert out["regime_detail"]["bound"] == "compute_by_names"
    assert claims.check(out) == []


def test_gemms_beside_memory_bound_kernels_recorded_without_shapes_read_as_a_split_by_names(tmp_path):
    """transformer_nuggets' qlora bench with bitsandbytes (record_shapes off): 45% of its kernel time bf16 GEMMs, 54%
    the weights' dequantize (kDequantizeBlockwise), its cast and elementwise ops, read "unknown ... which roof holds
    them is what the shapes would tell"."""
    gemm = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
    dequant = "void kDequantizeBlockwise<__half, 512, 64, 8, 2>(float*, unsigned char*, float*, __half*, int, int)"
    kernels = [(gemm, 900 * US), (dequant, 600 * US), (MUL, 500 * US)] * 6
    a = analyze_trace(load(_trace(tmp_path, "mixed.json.gz", kernels, ops=True), use_cache=False))
    assert a.verdict.regime is Regime.UNKNOWN
    out = serialize.report(a)
    assert out["lines"][3].startswith("Regime: split by the kernels' names, a guess: 45% of kernel time is in matrix "
                                      "kernels (GEMMs, convolutions) whose tile sizes read compute-bound and 55% in "
                                      "kernels whose names read memory-bound"), out["lines"][3]
    assert out["regime_detail"]["bound"] == "split_by_names"
    assert claims.check(out) == []
