"""Every drill's lever key is the report's Next on the drill's own trace: the same kind, the same lever, the
same lever that would waste the week; a right answer's feedback quotes the report's Next line, a wrong one its
waste line. When the report's choice changes (the lever registry, choose_next), the keys follow."""
from __future__ import annotations

import pytest

from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.drills import bank, grader
from tracetriage.drills.levers import class_of_lever
from tracetriage.drills.textmatch import phrases

LEVER_PART = {"idle_cause": "experiment", "triage": "experiment", "roofline": "lever", "collapse": "lever",
              "waste": "fix", "floor": "lever"}
DRILLS = [d for d in bank.all_drills() if d.kind in LEVER_PART]


@pytest.fixture(scope="module")
def analyses():
    cache = {}

    def of(d):
        # the report on the bundled trace itself, not the drill's copy under a neutral name
        p = str(bank.REPO_ROOT / d.trace) if d.trace and not d.strip_ranges else str(d.trace_path())
        if p not in cache:
            cache[p] = analyze_file(p)
        return cache[p]
    return of


@pytest.mark.parametrize("drill", DRILLS, ids=[d.id for d in DRILLS])
def test_the_lever_key_is_the_reports_next_and_waste_on_the_drills_trace(drill, analyses):
    a = analyses(drill)
    n, k = a.next_experiment, bank.key_of(drill)
    assert k["next"] == n.kind.value
    assert k.get("lever") == (n.lever.lever if n.lever else None)
    assert k.get("waste") == (n.waste.lever if n.waste else None)
    if k.get("waste_class"):
        assert k["waste_class"] == class_of_lever(n.waste.lever) and k["waste_class"] not in k["accept"]


@pytest.mark.parametrize("drill", DRILLS, ids=[d.id for d in DRILLS])
def test_feedback_quotes_the_reports_next_line_and_names_the_waste(drill, analyses):
    a = analyses(drill)
    line = five_lines(a)[4]
    k = bank.key_of(drill)
    part = LEVER_PART[drill.kind]
    right = grader.grade(drill, {part: phrases("lever", k["accept"][0], "say")[0]})
    fb = next(p for p in right.parts if p.part == part)
    assert fb.score == 1.0, fb.feedback
    fix, waste = line.removeprefix("Next: ").split(", because ")[0], line.split("Would waste the week: ")[1]
    assert fix in fb.feedback and waste.rstrip(".") in fb.feedback
    if k.get("waste_class"):
        shared = {p for c in k["accept"] for p in phrases("lever", c, "say")}
        own = next(p for p in phrases("lever", k["waste_class"], "say") if p not in shared)   # the waste's own words
        wrong = grader.grade(drill, {part: own})
        wp = next(p for p in wrong.parts if p.part == part)
        assert wp.score == 0 and "would waste the week here" in wp.feedback, wp.feedback
