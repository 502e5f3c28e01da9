"""The graded-answer bank (tests/answer_bank/*.toml): answers a student writes, per class (right, wrong,
paraphrased, negated, hedged, unit_shifted), each with the score a teacher gives. The grader must be within
0.1 of the teacher on every one, each class must hold at least 200 graded answers, and no string crashes it."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracetriage.drills import bank, grader
from tracetriage.drills.tomlread import tomllib

BANK = Path(__file__).with_name("answer_bank")
CLASSES = ("right", "wrong", "paraphrased", "negated", "hedged", "unit_shifted")
TOLERANCE = 0.1
PER_CLASS = 200


def cases() -> list[tuple[str, str, str, str, float]]:
    """(class, drill, part, answer, teacher's score) for every answer of every group, on each of its drills."""
    out = []
    for f in sorted(BANK.glob("*.toml")):
        with open(f, "rb") as fh:
            doc = tomllib.load(fh)
        for g in doc["group"]:
            for d in g["drills"]:
                out += [(g["class"], d, g["part"], a, float(s)) for a, s in g["answers"].items()]
    return out


CASES = cases()


def test_every_class_holds_at_least_200_graded_answers():
    n = Counter(c for c, *_ in CASES)
    assert set(n) == set(CLASSES), n
    assert all(n[c] >= PER_CLASS for c in CLASSES), n


@pytest.mark.slow      # a sweep of every graded answer
def test_the_grader_is_within_0_1_of_the_teacher_on_every_answer():
    drills = {d.id: d for d in bank.all_drills()}
    off = []
    for cls, d, part, answer, teacher in CASES:
        got = grader.grade_part(drills[d], part, answer)
        if abs(got.score - teacher) > TOLERANCE:
            off.append(f"{cls:12s} {d} {part}: {answer!r}: teacher {teacher}, grader {got.score} "
                       f"({got.feedback[:120]})")
    assert not off, f"{len(off)} of {len(CASES)} off:\n" + "\n".join(off)


TEXT_PARTS = [(d, p) for d in bank.all_drills() for p in d.rubric]


@pytest.mark.slow      # 300 generated strings; the grader's own tests in test_drills stand for it
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TEXT_PARTS), st.text(max_size=80))
def test_no_string_crashes_the_grader(dp, text):
    d, part = dp
    p = grader.grade_part(d, part, text)
    assert 0.0 <= p.score <= 1.0 and isinstance(p.feedback, str)
