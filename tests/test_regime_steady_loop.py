"""The Regime describes the steady loop; a cold start before it is a lead-in, not the verdict, wherever the steps
after it idle most of their time too (heldout-user3 wenlu_train_opt_4090m: 'set-up-bound (a cold start), not launch
overhead' where the loop's 688 kernels of 1.6 µs idle 95% of each step and the Idle line said launch overhead 42%:
a warmed-up profile would still be overhead-bound). On the real script-toy-train capture: a 261 ms first step of
set-up, then 20 steps whose device idles 85% of each."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def toy() -> dict:
    return serialize.report(analyze_trace(load(ROOT / "traces" / "script-toy-train.json.gz")))


def test_a_cold_start_before_an_idle_bound_loop_is_a_lead_in_to_the_loops_bound(toy):
    assert toy["next_experiment"]["kind"] == "warm_up"
    regime = toy["lines"][3]
    assert regime.startswith("Regime: overhead-bound: the device idles 97% of the span, a steady step idles 85% of "
                             "its time (median), and a cold start before the loop and in the loop's first profiled "
                             "steps holds 88% of the traced span "
                             "(host and GPU)")
    assert toy["regime_detail"]["bound"] == "overhead"
    assert claims.check(toy) == []


def test_the_checker_catches_a_set_up_bound_regime_over_an_idle_bound_loop(toy):
    bad = copy.deepcopy(toy)
    bad["lines"][3] = ("Regime: set-up-bound (a cold start), not launch overhead: the device idles 97% of the span, "
                       "and one-time set-up holds 88% of it, which the steady state never pays.")
    bad["regime_detail"]["bound"] = "set_up"
    found = claims.check(bad)
    assert ("the Regime line says set-up-bound, but the steady steps idle 85% of their time: the loop is idle-bound "
            "after the cold start too") in found


def test_the_checker_catches_not_launch_overhead_beside_a_launch_overhead_idle_line(toy):
    bad = copy.deepcopy(toy)
    bad["idle"]["dominant"] = "launch_overhead"
    bad["lines"][3] = bad["lines"][3].replace("overhead-bound:", "set-up-bound (a cold start), not launch overhead:")
    found = claims.check(bad)
    assert "the Regime line says 'not launch overhead' where the Idle line's dominant cause is launch overhead" in found
