"""Roofline words for kernels of a few µs on data a cache holds (heldout-user19's false class 11).

Without the device's peaks, an op of under 10 µs a call on a working set the smallest listed GPU's L2 holds is
latency-bound, not memory-bound (gp_fusion: [1024, 128] fp32 layer_norm kernels of 8 µs on 1 MB, 0.13 TB/s, read
'memory-bound'). Past the memory's peak on a working set an L2 holds, the cache most likely served a correctly charged
op: said so first, not 'an attribution error' (h100_tflayer: a ReLU's 33.5 MB a call at 1.25x the HBM peak)."""
from kineto_factory import Launch, document, events_for, write
from other_peoples_traces import steady, with_device
from physics_traces import _shapes
from tracetriage.analyzers.model.verdicts import Bound
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import analysis_caveats

US = 1_000


def _ops(op: str, dims: list, types: list, kernel_ns: int, device: str | None) -> dict:
    launches = steady(10, 100 * US, kernel="vectorized_elementwise_kernel", kernel_ns=kernel_ns, gap=20 * US)
    ev = events_for([Launch(**{**launch.__dict__, "op": op}) for launch in launches])
    _shapes(ev, op, dims, types)
    doc = document(ev)
    if device is None:
        del doc["deviceProperties"]
        return doc
    return with_device(doc, device)


def test_an_8_us_kernel_on_a_cached_megabyte_is_latency_bound_on_an_unnamed_device(tmp_path):
    doc = _ops("aten::tanh", [[1024, 128]], ["float"], 8 * US, None)      # 1 MB a call in 8 µs: 0.13 TB/s
    a = analyze_file(write(tmp_path / "t.json", doc))
    kb = a.roof.kernel_bound
    assert set(kb[kb > 0].tolist()) == {list(Bound).index(Bound.LATENCY)}


def test_a_long_kernel_on_many_megabytes_stays_memory_bound_on_an_unnamed_device(tmp_path):
    doc = _ops("aten::tanh", [[16384, 1024]], ["float"], 80 * US, None)   # 134 MB a call in 80 µs
    a = analyze_file(write(tmp_path / "t.json", doc))
    kb = a.roof.kernel_bound
    assert set(kb[kb > 0].tolist()) == {list(Bound).index(Bound.MEMORY)}


def test_an_op_past_the_memory_peak_on_a_cache_sized_working_set_reads_as_the_cache(tmp_path):
    doc = _ops("aten::clamp_min", [[16, 128, 2048], []], ["float", "Scalar"], 8 * US, "NVIDIA H100 80GB HBM3")
    a = analyze_file(write(tmp_path / "t.json", doc))
    assert a.above_peak and a.above_peak[0].cache_sized
    said = [c for c in analysis_caveats(a) if "above the device's peak" in c]
    assert said and "most likely data the cache served" in said[0]
    assert "33.6 MB a call are few enough that the L2" in said[0]
    assert "an attribution error" not in said[0]
