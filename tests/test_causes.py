"""One record per idle cause (tracetriage.analyzers.voice.causes): its words, advice, waste, colour and mark,
read by every audience from there."""
import re

from golden import ROOT
from lazy_import import Lazy
from tracetriage.analyzers.analyses.idle import dominant_cause
from tracetriage.analyzers.model.verdicts import CAUSES, Cause
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice import common, notebook
from tracetriage.analyzers.voice.causes import CAUSE_SPECS, SPECS
from tracetriage.drills import render

charts = Lazy("tracetriage.dashboard.charts")    # (pandas: imported by the tests that read it, not at collection)


def test_every_cause_has_exactly_one_record():
    assert sorted(s.cause for s in SPECS) == sorted(Cause) and len(SPECS) == len(Cause)
    assert list(CAUSE_SPECS) == list(CAUSES)      # in the enum's order: the order of every legend


def test_each_record_says_and_shows_its_cause_its_own_way():
    for s in SPECS:
        assert s.words and s.stretch and s.advice and s.waste, s.cause
        assert re.fullmatch(r"#[0-9a-f]{6}", s.colour) and re.fullmatch(r"[A-Z]", s.mark) and s.mark_style, s.cause
    for field in ("words", "advice", "waste", "colour", "mark"):
        assert len({getattr(s, field) for s in SPECS}) == len(SPECS), f"two causes share a {field}"


def test_the_voice_the_dashboard_and_the_drills_read_the_record():
    for c, s in CAUSE_SPECS.items():
        assert (common.CAUSE_WORDS[c], common.ADVICE[c], common.WASTE[c]) == (s.words, s.advice, s.waste)
        assert charts.CAUSE_COLORS[c.value] == s.colour
        assert render.CAUSE_MARK[c.value] == (s.mark, s.mark_style)
    assert list(charts.CAUSE_COLORS) == [c.value for c in CAUSES] == list(render.CAUSE_MARK)


def test_the_notebooks_idle_bar_draws_each_cause_in_the_dashboards_colour():
    a = analyze_file(ROOT / "traces" / "smell-sync-item.json.gz")
    assert dominant_cause(a.by_cause_ns, a.idle_ns) is Cause.SYNCHRONIZATION
    bar = notebook.idle_bar_html(a)
    drawn = dict(re.findall(r'title="([a-z ]+) [\d.<%]+" style="width:[\d.]+%;background:(#[0-9a-f]{6})"', bar))
    assert drawn["synchronization"] == charts.CAUSE_COLORS["synchronization"] == "#b279a2"
    assert {w: col for w, col in drawn.items() if w != "busy"} == \
        {common.CAUSE_WORDS[c]: charts.CAUSE_COLORS[c.value] for c in CAUSES if a.by_cause_ns.get(c, 0) > 0}
