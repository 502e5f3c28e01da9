"""The levers replayed in a forked child (tracetriage.analyzers.whatif.aside) give the report the parent's own
replay gives, byte for byte, and a child that fails leaves the replay to the parent (the fork and the pipe
themselves: tests/test_forked.py)."""
import json
from pathlib import Path

import pytest

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
