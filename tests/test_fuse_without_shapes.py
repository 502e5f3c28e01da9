"""The fuse lever on a trace recorded without shapes: a decoder loop's RMSNorm, SiLU * mul and residual adds between
its matmuls are chains by their ops' names, priced by their launches; Inductor's kernels are never told to fuse."""
from __future__ import annotations

from kineto_factory import Launch, document, events_for, write
from tracetriage.analyzers.analyses.fusion import chain_table
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers.fuse import says

# one layer of a decode step, as eager PyTorch launches it: a residual add, RMSNorm (pow, mean, add, rsqrt, mul, mul),
# the MLP's two matmuls with SiLU * mul between them
LAYER = ("aten::mm", "aten::add", "aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::mul",
         "aten::mm", "aten::silu", "aten::mul", "aten::mm")
INDUCTOR = ("aten::mm", "triton_red_fused_add_mean_pow_rsqrt_0", "aten::mm", "triton_poi_fused_mul_silu_1",
            "aten::mm")


def _loop(tmp_path, names, layers: int = 40):
    """A launch-bound loop: each op's kernel runs 2 µs, each launch costs the host 15 µs; no op records its shapes."""
    launches, t = [], 100_000
    for _ in range(layers):
        for name in names:
            launches.append(Launch(op_start=t, op_end=t + 15_000, call_start=t + 5_000, call_end=t + 12_000,
                                   gpu_start=t + 14_000, gpu_end=t + 16_000, op=name,
                                   kernel=f"void {name.split('::')[-1]}_kernel<float>(float*)"))
            t += 16_000
    events = events_for(launches)
    for e in events:
        e.get("args", {}).pop("Input Dims", None)
        e.get("args", {}).pop("Input type", None)
    return load(write(tmp_path / "loop.json", document(events)))


def test_a_shapeless_rmsnorm_between_matmuls_is_one_chain_of_two_passes(tmp_path):
    trace = _loop(tmp_path, LAYER, layers=3)
    found = chain_table(trace, shapeless=True)
    names = [[trace.names[trace.ev.name[r]] for r in ch.ops] for ch in found.chains()]
    assert names[0] == ["aten::add", "aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul", "aten::mul"]
    assert found.chains()[0].passes == 2            # the mean is used again: Inductor's reduction, then a pointwise
    assert names[1] == ["aten::silu", "aten::mul"]
    assert len(found) == 6 and not found.eager_bytes.any()
    assert len(chain_table(trace)) == 0             # asked for byte ledgers only, as the report's fusion findings are


def test_the_fuse_lever_prices_a_shapeless_loops_launches_and_says_its_bytes_are_unknown(tmp_path):
    w = whatif.predict(_loop(tmp_path, LAYER))
    fuse = w.lever("fuse")
    # each layer's RMSNorm (seven kernels) becomes one compiled call; SiLU * mul stays eager, its two ops' dispatch
    # costing the host less than a compiled call does
    assert fuse.assumption.count == 40 and fuse.assumption.kernels == 40 * 7
    assert fuse.predicted_ratio < 1.0               # launches and dispatch go; no kernel is made faster
    said = says(fuse.assumption)
    assert "no shapes recorded" in said and "only its launches go" in said


def test_inductor_kernels_are_not_told_to_fuse_again(tmp_path):
    w = whatif.predict(_loop(tmp_path, INDUCTOR))
    assert w.lever("fuse").assumption.count == 0
