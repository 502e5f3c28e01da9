"""Repeats of one op sequence that each work on one-element tensors are a loop over elements, not layers
(tracetriage.analyzers.analyses.element_loops).

heldout-user19 gp_d2h_sync sums 4,096 elements one at a time three times (`total += t[i].cpu()`, `total += t[i]`);
the Measured line said 'no repeated steps: one pass (its 12,286 repeats of one op sequence, from aten::add_, are
layers of it, not steps)': the loop the engineer has to delete, said as the model's structure.
"""
from __future__ import annotations

from test_steps import US, Timeline
from tracetriage.analyzers.analyses.steps import NoSteps
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import five_lines


def _loop(tl: Timeline, element: list[int], n: int = 200):
    """n iterations of `total += t[i]`: a select of one row of a [4096, ...] tensor, then an in-place add of it;
    then one sum over the whole tensor and a sync."""
    for _ in range(n):
        tl.op("aten::select", 2 * US, dims=[[4096] + element[1:], [], []])
        tl.op("aten::add_", 2 * US, dims=[element, element, []])
    tl.op("aten::sum", 9 * US, dims=[[4096] + element[1:], []])
    tl.sync()


def test_a_loop_over_single_elements_is_said_as_one_not_as_layers(tmp_path):
    tl = Timeline()
    _loop(tl, [1])
    a = analyze_trace(tl.write(tmp_path / "elements.json"))
    assert a.steps.why_none is NoSteps.ONE_PASS and a.steps.per_element
    measured = five_lines(a)[0]
    assert "layers" not in measured or "not layers" in measured
    assert "each work on one-element tensors: a loop over single elements, one per iteration" in measured, measured


def test_a_loop_over_rows_of_many_elements_keeps_its_reading(tmp_path):
    tl = Timeline()
    _loop(tl, [1, 512])
    a = analyze_trace(tl.write(tmp_path / "rows.json"))
    assert a.steps.why_none is NoSteps.ONE_PASS and not a.steps.per_element
    assert "are layers of it, not steps" in five_lines(a)[0]


def test_the_json_says_a_loop_over_single_elements_is_one_not_layers(tmp_path):
    """`why_none: "one_pass"` alone reads as layers of one pass (docs/json.md): `per_element` says which."""
    tl = Timeline()
    _loop(tl, [1])
    st = serialize.report(analyze_trace(tl.write(tmp_path / "elements.json")))["steps"]
    assert st["why_none"] == "one_pass" and st["per_element"] is True
    tl = Timeline()
    _loop(tl, [1, 512])
    st = serialize.report(analyze_trace(tl.write(tmp_path / "rows.json")))["steps"]
    assert st["why_none"] == "one_pass" and st["per_element"] is False
