"""A cause only the cold start pays (analyses.cold_cause): the first of a loop's steps holds nearly all of the Idle
line's dominant cause, so the Next warms up instead of fixing gaps that never recur; a cause that recurs every step
keeps its own fix."""
import claim_traces
import kineto_factory as kf
from tracetriage.analyzers.analyses.cold_cause import cold_causes
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file


def _report(tmp_path, doc, name="t.json"):
    a = analyze_file(kf.write(tmp_path / name, doc))
    return a, serialize.report(a)


def test_a_copy_wait_in_the_first_step_only_is_warmed_up_not_pinned(tmp_path):
    a, out = _report(tmp_path, claim_traces.first_step_copy_wait())
    assert Cause.DATA_TRANSFER in cold_causes(a.steps)
    nx = out["lines"][4]
    assert nx.startswith("Next: warm up first")
    assert "pin" not in nx and "non_blocking" not in nx
    assert "of the span is the first step's data transfer idle (200.0 ms), while the 3 later steps pay" in nx
    assert out["lines"][3].startswith("Regime: set-up-bound (a cold start)")
    assert claims.check(out) == []


def test_a_copy_wait_in_every_step_keeps_its_copies_fix(tmp_path):
    a, out = _report(tmp_path, claim_traces.first_step_copy_wait(every_step=True))
    assert cold_causes(a.steps) == {}
    assert out["next_experiment"]["kind"] == "overlap_copies"
    assert claims.check(out) == []


def test_two_steps_are_no_cold_start_to_tell(tmp_path):
    a, out = _report(tmp_path, claim_traces.first_step_copy_wait(steps=2))
    assert cold_causes(a.steps) == {}
    assert out["next_experiment"]["kind"] != "warm_up"


def test_the_checker_catches_a_fix_for_a_cold_cause(tmp_path):
    _, out = _report(tmp_path, claim_traces.first_step_copy_wait())
    out["next_experiment"]["kind"] = "overlap_copies"
    assert any("a cold start the steady steps never pay" in p for p in claims.check(out))
