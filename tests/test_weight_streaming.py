"""A decode step whose matrix products multiply a few rows by big weights is bound by the weights' bytes: its Next is
fewer weight bytes (weight-only quantization) or more rows per read, not "fuse elementwise chains"."""
from __future__ import annotations

from pathlib import Path

from tracetriage.analyzers.analyses.weight_streaming import weight_streaming
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

TRACES = Path(__file__).resolve().parent.parent / "traces"
DECODE_MLP = TRACES / "fresh5" / "decode_mlp_compile_roof-before.json.gz"   # 4 rows x [8192 x 28672] bf16, H100


def _next(a) -> str:
    return next(line for line in five_lines(a) if line.startswith("Next:"))


def test_a_decode_mlp_at_the_memory_roof_is_told_to_read_fewer_weight_bytes():
    a = analyze_file(DECODE_MLP)
    w = weight_streaming(a.roof.points)
    assert w is not None and (w.rows, w.k, w.n) == (4, 8192, 28672) and w.share > 0.9
    line = _next(a)
    assert "weight-only quantization" in line and "int8 or fp8" in line      # an H100 runs fp8
    assert "4 rows against 8,192×28,672 weights" in line and "fuse elementwise chains" not in line
    # priced (weight_only_int8): the two products' 22.2 ms of kernels at half their bytes, beating fusion's -5.9%
    assert a.next_experiment.lever.lever == "weight_only_int8" and "predicted −38%" in line


def test_memory_bound_elementwise_work_keeps_fusion_as_its_lever():
    a = analyze_file(TRACES / "chain-eager-large.json.gz")
    assert weight_streaming(a.roof.points) is None


def test_a_compute_bound_sweep_keeps_cheaper_arithmetic_though_its_small_products_stream_weights():
    # matmul-sweep-bf16: its memory-bound time is the 1-row products, but the big square ones bound the kernels
    a = analyze_file(TRACES / "matmul-sweep-bf16.json.gz")
    assert weight_streaming(a.roof.points) is not None
    assert a.next_experiment.kind.value == "cheaper_arithmetic" and "weight-only" not in _next(a)


def _weight_lever(a):
    return next(lv for lv in a.levers.all.levers if lv.lever == "weight_only_int8")


def test_int8_weights_halve_the_bf16_products_kernel_time_and_nothing_else():
    # 4 x [8192 x 28672] bf16: 470 MB of weights a call against 0.3 MB of activations and output, so at int8 the
    # products' bytes (and, memory-bound, their time) fall to just over half
    a = analyze_file(DECODE_MLP)
    w = _weight_lever(a).assumption
    assert w.count == 2 and (w.rows, w.k, w.n, w.dtype) == (4, 8192, 28672, "bf16")
    assert 0.5 < w.quantized_ns / w.products_ns < 0.51
    # the 312 queued products' kernels before the window shrink too, and are in what the edit is said to take out
    assert w.products_ns > 30e6 and claims.check(serialize.report(a)) == []
    fuse = next(lv for lv in a.levers.all.levers if lv.lever == "fuse")
    assert _weight_lever(a).saving_ns > 5 * fuse.saving_ns


def test_elementwise_memory_work_prices_no_weight_bytes():
    a = analyze_file(TRACES / "chain-eager-large.json.gz")
    lv = _weight_lever(a)
    assert lv.assumption.count == 0 and lv.saving_ns == 0
