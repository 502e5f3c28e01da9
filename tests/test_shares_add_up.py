"""Shares add up as displayed: the causes the Idle line prints add up to the idle share it prints, and a share
that is there is never printed as 0%."""
from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tracetriage.analyzers.model.units import about, share, shares_of_a_whole

GOLDEN = Path(__file__).resolve().parent / "golden" / "report"
IDLE = re.compile(r"Idle: the GPU is idle (<1|\d+)% of the span \([^)]*\): (.*?); mostly")
CAUSE = re.compile(r"(?:^|, )[a-z ()-]+ (<1|\d+)%")   # (host work mostly set-up: "one-time set-up (host work)")


def _pct(text: str) -> int:
    return 0 if text == "<1" else int(text)


def test_every_golden_idle_line_adds_up_to_its_idle_share():
    lines = [m for f in sorted(GOLDEN.glob("*.txt")) for m in IDLE.finditer(f.read_text(encoding="utf-8"))]
    assert len(lines) > 20
    for m in lines:
        causes = [_pct(x) for x in CAUSE.findall(m.group(2).split(" (copies count")[0])]
        assert causes and sum(causes) == _pct(m.group(1)), m.group(0)


@given(st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), min_size=1, max_size=5))
def test_parts_printed_add_up_to_the_total_printed(weights):
    total_weight = sum(weights)
    if total_weight == 0:
        return
    idle = min(total_weight, 1.0) * 0.97
    parts = [idle * w / total_weight for w in weights]
    total_text, texts = shares_of_a_whole(idle, parts)
    assert total_text == share(idle)
    whole = [0 if t in ("<1%", "0%") else int(t.rstrip("%").replace(",", "")) for t in texts]
    assert sum(whole) == round(100 * idle)
    assert all(t != "0%" for t, p in zip(texts, parts) if p > 0)          # there is never printed as nothing


def test_a_share_that_is_there_is_never_zero_percent():
    assert [share(x) for x in (0, 0.004, 0.005, 0.0051, 0.19)] == ["0%", "<1%", "<1%", "1%", "19%"]
    assert shares_of_a_whole(0.19, [0.134, 0.037, 0.016, 0.003]) == ("19%", ["13%", "4%", "2%", "<1%"])
    # smell-sync-item: 12.5 + 3.8 + 2.2 + 0.85 = 19.35%: the largest keeps its own rounding (the Next says "13% of the
    # span" of the same drains); the launch overhead, rounded up furthest, gives the whole percent back
    assert shares_of_a_whole(0.1935, [0.1251, 0.0381, 0.0218, 0.0085]) == ("19%", ["13%", "3%", "2%", "1%"])


def test_an_estimated_share_that_rounds_to_nothing_reads_under_one_percent_not_about_under_one_percent():
    # "the GPU idles ~<1% of its span" (a healthy Next on a public H800 trace): the bound says the rounding already
    assert [about(share(x)) + share(x) for x in (0.003, 0.14)] == ["<1%", "~14%"]


def test_the_dashboards_idle_bars_give_each_cause_the_share_the_idle_line_prints():
    from tracetriage.analyzers.model.verdicts import Cause
    from tracetriage.analyzers.triage.report import analyze_file
    from tracetriage.analyzers.voice.common import CAUSE_WORDS
    from tracetriage.analyzers.voice.report import five_lines
    from tracetriage.dashboard.frames.report import idle_by_cause

    a = analyze_file(Path(__file__).resolve().parent.parent / "traces" / "smell-sync-item.json.gz")
    idle_line = five_lines(a)[2]
    shown = {r.cause: r.share_shown for r in idle_by_cause(a).itertuples() if r.idle_us > 0}
    assert len(shown) >= 3
    for cause, pct in shown.items():
        assert f"{CAUSE_WORDS[Cause(cause)]} {pct}" in idle_line, (cause, pct, idle_line)
