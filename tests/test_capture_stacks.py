"""Python stacks in a capture: on where they cost little (measured first), off where they would
change what the trace says about the host; a script gets them on, and the sidecar says which."""
from __future__ import annotations

import json

import torch

from tracetriage.capture import stacks
from tracetriage.capture.harness import capture_workload, profiler
from tracetriage.capture.presets import get


def test_auto_keeps_stacks_on_only_within_the_allowed_cost():
    cheap = stacks.choose("auto", lambda: 0.08)
    dear = stacks.choose("auto", lambda: 0.46)
    assert cheap.on and cheap.why == "they cost +8% of profiled step time here, at most the 25% allowed"
    assert not dear.on and dear.why.endswith("more than the 25% allowed; --stacks on to record them")
    assert stacks.choose("auto", lambda: stacks.STACKS_ALLOWED).on


def test_asked_for_stacks_are_not_measured_and_a_script_gets_them_on():
    assert stacks.choose("on", lambda: 9.0).on and stacks.choose("on").cost is None
    assert not stacks.choose("off", lambda: 0.0).on
    script = stacks.choose("auto")
    assert script.on and script.cost is None and "a script runs once" in script.why


def test_the_cost_is_measured_on_the_workload_itself_with_the_profiler_on():
    calls = []
    cost = stacks.measure_cost(lambda: calls.append(1), lambda: None, lambda ws: profiler("cpu", ws), steps=2)
    assert len(calls) == 2 * 2 * stacks.PROBE_ROUNDS and cost > -1.0


def test_a_cpu_capture_records_the_choice_in_its_sidecar_and_the_trace_has_stacks_when_on(tmp_path):
    preset = get("smell-sync-item")
    wl = preset.build("cpu", steps=2)
    meta = capture_workload(wl, tmp_path / "on", name="on", time_repeats=2, stacks="on")
    side = json.loads((tmp_path / "on.meta.json").read_text())
    assert side["stacks"] == meta["stacks"] and side["stacks"]["recorded"] is True
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.model.trace import PYTHON

    assert (load(tmp_path / "on.json.gz").ev.cat == PYTHON).sum() > 0
    off = capture_workload(preset.build("cpu", steps=2), tmp_path / "off", name="off", time_repeats=2, stacks="off")
    assert off["stacks"]["recorded"] is False
    assert (load(tmp_path / "off.json.gz").ev.cat == PYTHON).sum() == 0
    assert torch.__version__
