"""The Idle line's launch-overhead gaps 'with a median of X between kernels' are the gaps a reader measures between
kernels: where many of them are part another cause (host work before the launch), the whole gaps' median is said,
and the launch overhead's own part beside it. leimao's eager MLP (RTX 5080) read "250 gaps with a median of 15.1 µs
between kernels", the median of the launch-overhead pieces, where its gaps between kernels had a median of 24.5 µs
(34 of them part host work)."""
from kineto_factory import Launch, chain, document, events_for, write
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.common import evidence_phrase

US = 1_000


def split_gaps(n: int = 21) -> dict:
    """Kernels of 10 µs; before every other one the host runs 280 µs of untraced Python, then launches (a 4 µs call,
    the kernel 3 µs after it): those gaps are host work, then launch overhead; the rest are launch overhead alone."""
    out, end = [], 100 * US
    for i in range(n):
        c = end + (280 * US if i % 2 else 10 * US)
        g = c + 7 * US
        out.append(Launch(op_start=c - 2 * US, op_end=c + 5 * US, call_start=c, call_end=c + 4 * US, gpu_start=g,
                          gpu_end=g + 10 * US))
        end = g + 10 * US
    return document(events_for(out))


def test_the_median_between_kernels_is_the_whole_gaps(tmp_path):
    a = analyze_file(write(tmp_path / "split.json", split_gaps()))
    ev = a.evidence[Cause.LAUNCH_OVERHEAD]
    assert ev.shared_gaps == 10 and ev.whole_gaps == 20
    said = evidence_phrase(ev)
    assert said.startswith("20 gaps with a median of ")
    median = float(said.split("a median of ")[1].split(" µs")[0])
    assert median == ev.whole_gap_median_us and median > 100       # half the gaps are 287 µs, half 17 µs
    assert f"launch overhead a median {ev.part_median_us:.1f} µs of each (10 also part another cause)" in said


def test_gaps_that_are_launch_overhead_alone_keep_their_words(tmp_path):
    a = analyze_file(write(tmp_path / "chain.json", document(events_for(chain(20)))))
    ev = a.evidence[Cause.LAUNCH_OVERHEAD]
    assert ev.shared_gaps == 0
    assert evidence_phrase(ev).startswith(f"{ev.gaps} gaps with a median of {ev.median_gap_us:.1f} µs between kernels "
                                          "whose median run is 10.0 µs; a launch call takes")
