"""The recompile Next's because states the replay's assumption as one: the compilations are in the profile, and
would run a single time before the profiled steps (realworld recompile_gpt2 read 'the 2 compilations in the profile
... happen once, before it', a fact about a trace whose compilations are inside it)."""
from pathlib import Path

from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

TRACE = Path(__file__).resolve().parent.parent / "traces" / "realworld" / "recompile_gpt2--before.json.gz"


def test_the_recompile_because_says_what_would_happen_not_what_did():
    nxt = five_lines(analyze_file(TRACE))[4]
    assert "because the 2 compilations in the profile (1.07 s of host time in dynamo and Inductor) would run a " \
           "single time, before the profiled steps, with shapes that no longer change" in nxt
    assert "happen once, before it" not in nxt
