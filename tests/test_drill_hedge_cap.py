"""A hedge in the part that decides a drill is half an answer: it caps the score between the wrong answer's cap and
none; a verdict next to the key's, and a conditional verdict that says the key of the trace's case, read likewise."""
from __future__ import annotations

import pytest

from tracetriage.drills import bank, grader
from tracetriage.drills.bank import key_of


def _regime(text: str) -> grader.Result:
    d = bank.get("M01.04-a")
    k = key_of(d)
    return grader.grade(d, {"tflops_small": f"{k['tflops_small']} TFLOP/s", "tflops_large":
                            f"{k['tflops_large']} TFLOP/s", "small_regime": text})


def test_a_decisive_hedge_holding_the_key_caps_at_0_6_a_wrong_answer_at_0_4_a_committed_one_not_at_all():
    committed, hedged, wrong = _regime("overhead"), _regime("overhead or memory"), _regime("memory")
    assert committed.score == pytest.approx(1.0) and not committed.capped
    assert hedged.capped and hedged.score == pytest.approx(0.6)
    assert "only partly right" in hedged.notes[0] and "0.6" in hedged.notes[0]
    assert wrong.capped and wrong.score == pytest.approx(0.4) and "is wrong" in wrong.notes[0]


def test_a_hedge_without_the_key_caps_as_a_wrong_answer():
    r = _regime("memory or compute")
    assert r.parts[-1].score == 0 and r.score == pytest.approx(0.4)


def test_the_key_first_of_three_set_off_as_lesser_earns_a_list_s_credit_and_every_option_nothing():
    d = bank.get("M02.03-b")
    cause = key_of(d)["cause"]
    others = [c for c in grader.CAUSES if c != cause]
    three = grader.grade_part(d, "cause", f"{cause}, or possibly {others[0]} or {others[1]}")
    every = grader.grade_part(d, "cause", " or ".join([cause, *others]))
    assert three.score == pytest.approx(0.3) and every.score == 0


def test_sideshow_where_raising_occupancy_does_harm_is_half_an_answer_and_caps_half_way():
    d = bank.get("M03.01-d")
    k = key_of(d)
    assert k["verdict"] == "harm"
    near = grader.grade(d, {"occupancy_pct": f"{k['occupancy_pct']}%", "achieved": f"{k['achieved']} TFLOP/s",
                            "verdict": "sideshow"})
    lever = grader.grade(d, {"occupancy_pct": f"{k['occupancy_pct']}%", "achieved": f"{k['achieved']} TFLOP/s",
                             "verdict": "lever"})
    assert near.parts[-1].score == pytest.approx(0.4) and near.score == pytest.approx(0.6)
    assert lever.parts[-1].score == 0 and lever.score == pytest.approx(0.4)


def test_a_conditional_verdict_that_says_the_key_of_the_traces_case_is_the_key_held_in_doubt():
    d = bank.get("M03.02-a")
    assert key_of(d)["verdict"] == "not_worth"
    part = grader.grade_part(d, "verdict", "worth it when the copy feeds many consumers, not worth it for one add")
    other_only = grader.grade_part(d, "verdict", "worth it if the copy feeds many consumers")
    assert part.score == pytest.approx(0.6) and other_only.score == 0
