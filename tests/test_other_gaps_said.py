"""The Idle line's 'other' says what its gaps are, in counts that agree with the Caveat: a gap before work with no
launch call in the trace (queued before the profiled window), apart from a gap in which work already launched
started late with nothing in the trace to wait on. leimao's make_graphed_callables trace (an RTX 5080) read "mostly
other: 8 gaps with no launch call in the trace" beside its own Caveat "2 of 282 GPU activities have no launch call":
7 of the 8 gaps end in an activity whose launch call is in the trace and returned 100-270 µs before it started."""
from kineto_factory import Launch, document, events_for, gpu, write
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.common import evidence_phrase
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines

US = 1_000


def late_starts() -> dict:
    """Two kernels queued before the window (no launch call), 190 µs apart; then four launched kernels, two of
    which start 300 µs after their launch call returned on an idle GPU, with no stream-wait, sync or copy call."""
    ev = [gpu("queued_a", 0, 10 * US, 900_001), gpu("queued_b", 200 * US, 210 * US, 900_002)]
    launches = []
    for call_s, gpu_s in ((220, 235), (250, 560), (570, 585), (600, 910)):
        c, g = call_s * US, gpu_s * US
        launches.append(Launch(op_start=c - 2 * US, op_end=c + 12 * US, call_start=c, call_end=c + 10 * US,
                               gpu_start=g, gpu_end=g + 10 * US))
    return document(ev + events_for(launches))


def test_other_gaps_are_counted_by_what_ended_them(tmp_path):
    a = analyze_file(write(tmp_path / "late.json", late_starts()))
    ev = a.evidence[Cause.OTHER]
    assert (ev.gaps, ev.unlinked_gaps) == (3, 1)
    said = evidence_phrase(ev)
    assert "3 gaps with no launch call" not in said
    assert said == ("2 gaps in which work already launched started late with nothing in the trace to wait on (no "
                    "stream-wait, sync or copy call around it), 1 before work with no launch call in the trace")
    idle = five_lines(a)[2]
    assert "mostly other: " + said in idle
    assert any(c.startswith("2 of 6 GPU activities have no launch call") for c in analysis_caveats(a))


def test_gaps_that_all_lack_a_launch_call_keep_their_words(tmp_path):
    doc = late_starts()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "queued" in e["name"]]
    a = analyze_file(write(tmp_path / "queued.json", doc))
    assert evidence_phrase(a.evidence[Cause.OTHER]) == "1 gap with no launch call in the trace"
