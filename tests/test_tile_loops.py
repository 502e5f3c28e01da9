"""Repeats of one op sequence that slice, multiply the slices and add the product into one output in place are a loop
over tiles of one matrix product, not layers (tracetriage.analyzers.analyses.tile_loops).

CS521-mp2's im2col convolution on an A10G (`for k0 in range(0, K, 64): out += cols[:, :, k0:k1] @ W[:, k0:k1].T`):
the Measured line said 'no repeated steps: one pass (its 4 repeats of one op sequence, from aten::slice, are layers of
it, not steps)'.
"""
from __future__ import annotations

from test_steps import US, Timeline
from tracetriage.analyzers.analyses.steps import NoSteps
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import five_lines


def _k_tiles(tl: Timeline, accumulate: str, n: int = 4):
    """n tiles of `out += a[:, k0:k1] @ b[:, k0:k1].T` (or `out = out + ...` with accumulate="aten::add")."""
    for _ in range(n):
        tl.op("aten::slice", 2 * US, dims=[[8192, 256], [], [], [], []])
        tl.op("aten::slice", 2 * US, dims=[[16, 256], [], [], [], []])
        tl.op("aten::mm", 9 * US, dims=[[8192, 64], [64, 16]])
        tl.op(accumulate, 3 * US, dims=[[8192, 16], [8192, 16], []])
    tl.sync()


def test_a_loop_over_tiles_of_one_product_is_said_as_one_not_as_layers(tmp_path):
    tl = Timeline()
    _k_tiles(tl, "aten::add_")
    a = analyze_trace(tl.write(tmp_path / "tiles.json"))
    assert a.steps.why_none is NoSteps.ONE_PASS and a.steps.tiles
    measured = five_lines(a)[0]
    assert "a loop over tiles of one matrix product, not layers of a model" in measured, measured


def test_repeats_that_add_out_of_place_keep_their_reading(tmp_path):
    """A residual block's `x = x + f(x)` adds out of place: layers, as before."""
    tl = Timeline()
    _k_tiles(tl, "aten::add")
    a = analyze_trace(tl.write(tmp_path / "layers.json"))
    assert a.steps.why_none is NoSteps.ONE_PASS and not a.steps.tiles
    assert "are layers of it, not steps" in five_lines(a)[0]
