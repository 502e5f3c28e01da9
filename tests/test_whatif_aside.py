"""The levers replayed in a forked child (tracetriage.analyzers.whatif.aside) give the report the parent's own
replay gives, byte for byte, and a child that fails leaves the replay to the parent (the fork and the pipe
themselves: tests/test_forked.py)."""
import json
from pathlib import Path

import pytest

from tracetriage.analyzers.analyses import roofline as roof_mod
from tracetriage.analyzers.loading import forked
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage import report
from tracetriage.analyzers.whatif import aside

TRACES = Path(__file__).resolve().parent.parent / "traces"


def _report_json(trace) -> str:
    return json.dumps(serialize.report(report.analyze_trace(trace)), sort_keys=True)


# a sync whose Next names the top sync op (its unprofiled ratio answered in the child), a real H200 decode loop,
# a trace whose Next is no replayed lever's, and one with no GPU timeline (the child's levers are not asked for)
@pytest.mark.parametrize("name", ["smell-sync-item", "gpt-eager", "smell-launch-tiny-ops", "smell-host-numpy"])
def test_levers_replayed_in_a_child_give_the_report_the_parent_replay_gives(name, monkeypatch):
    trace = load(TRACES / f"{name}.json.gz", use_cache=False)
    monkeypatch.setattr(aside, "MIN_EVENTS", 1 << 62)
    here = _report_json(trace)
    started = []
    real_start = aside.start
    monkeypatch.setattr(aside, "MIN_EVENTS", 0)
    monkeypatch.setattr(aside, "start", lambda *a: started.append(real_start(*a)) or started[-1])
    assert _report_json(trace) == here
    assert started and started[0] is not None and started[0].fd == -1   # a child ran, and was read or ended


def test_a_child_that_fails_leaves_the_replay_to_the_parent(monkeypatch):
    trace = load(TRACES / "smell-sync-item.json.gz", use_cache=False)
    monkeypatch.setattr(aside, "MIN_EVENTS", 1 << 62)
    here = _report_json(trace)
    monkeypatch.setattr(aside, "start", lambda trace, replay: forked.start(lambda: 1 / 0))
    assert _report_json(trace) == here


def test_a_small_trace_is_replayed_in_process():
    trace = load(TRACES / "smell-sync-item.json.gz", use_cache=False)
    assert len(trace.ev) < aside.MIN_EVENTS and aside.start(trace, report._levers) is None


def test_the_child_is_forked_before_the_roofline_which_the_parent_then_hands_it(monkeypatch):
    # the child builds its dependency graph while the parent finds the roofline and the steps' search (at x5 0.09 s
    # of the child's tail when found before the fork); its levers are the parent's own (the test above)
    trace = load(TRACES / "gpt-eager.json.gz", use_cache=False)
    monkeypatch.setattr(aside, "MIN_EVENTS", 0)
    order, real_start, real_roof = [], aside.start, roof_mod.analyze
    monkeypatch.setattr(aside, "start", lambda *a: order.append("fork") or real_start(*a))
    monkeypatch.setattr(roof_mod, "analyze", lambda t: order.append("roofline") or real_roof(t))
    report.analyze_trace(trace)
    assert order[:2] == ["fork", "roofline"]


def test_what_reads_no_lever_is_found_before_the_report_waits_for_the_child(monkeypatch):
    trace = load(TRACES / "gpt-eager.json.gz", use_cache=False)
    order = []
    for name in ("_levers_of", "library_syncs", "replay_clock", "replay_gaps", "pace", "weight_streaming"):
        real = getattr(report, name)
        monkeypatch.setattr(report, name, lambda *a, _n=name, _f=real, **k: order.append(_n) or _f(*a, **k))
    report.analyze_trace(trace)
    assert order[-1] == "_levers_of" and len(order) == 6
