"""Ranks that hold each other up in turn: in each collective some rank arrives last, but not the same one every time.
heldout-user21 moeep_after (2 A100 ranks, 12 all_to_alls of one MoE step): rank 0 arrived last at 4 calls (its peer
waited 18.0 ms), rank 1 at 4 others (14.9 ms). The per-step medians saw no straggler and said nothing of it, and the
rank section's Next, inside `report DIR`, told the user to run `report DIR` to find "the rank the others wait for"."""
from __future__ import annotations

from tests.kineto_factory import document, write
from tests.test_communication import MS, kernels
from tracetriage.analyzers.runs.pool import report_object
from tracetriage.analyzers.voice.ranks import ranks_lines

# (start, end) per all-reduce of 8 kB; each call ends together on both ranks, the rank that came first waits 4.9 ms
CALLS = {0: [(0, 5 * MS), (10 * MS, 10.1 * MS), (10.2 * MS, 15.2 * MS), (20 * MS, 20.1 * MS)],
         1: [(4.9 * MS, 5 * MS), (5.1 * MS, 10.1 * MS), (15.1 * MS, 15.2 * MS), (15.3 * MS, 20.1 * MS)]}


def _run(tmp_path, calls, queued=False):
    run = tmp_path / "run"
    run.mkdir()
    for r, spec in calls.items():
        write(run / f"rank{r}.json.gz",
              document(kernels([("ar", int(s), int(e), 7, 4096) for s, e in spec], queued=queued), rank=r))
    return report_object(run)


def test_ranks_that_wait_for_each_other_in_turn_are_said_to_and_no_one_rank_is_named(tmp_path):
    rr = _run(tmp_path, CALLS)
    assert rr.in_turn and {x.rank: x.calls for x in rr.late} == {0: (2, 4), 1: (1, 3)}
    lines = ranks_lines(rr)
    strag = next(x for x in lines if x.startswith("Straggler:"))
    assert "the ranks hold each other up in turn, so no one rank is the straggler: " in strag
    assert "rank 1 arrived last at calls #1, #3" in strag and "rank 0 arrived last at calls #2, #4" in strag


def test_a_ranks_next_inside_the_directory_report_does_not_send_the_user_to_the_directory_report(tmp_path):
    rr = _run(tmp_path, CALLS)
    nxt = next(x for x in ranks_lines(rr) if x.strip().startswith("Next:"))
    assert "tracetriage report DIR" not in nxt and "the rank the others wait for" not in nxt
    assert nxt.strip().startswith("Next: find what holds up the rank that arrives last at each call this rank "
                                  "waits in (the Straggler line names it, or the ranks that take turns)")


def test_one_rank_late_at_the_calls_its_peers_waited_longest_in_is_named_though_the_medians_see_no_straggler(
        tmp_path):
    """moeep_before: rank 0 arrived last at 3 of 12 calls, which held 9.48 ms of the run's 11.4 ms of waiting."""
    calls = {0: [(4.9 * MS, 5 * MS), (5.1 * MS, 5.2 * MS), (11.9 * MS, 12 * MS), (12.1 * MS, 12.2 * MS),
                 (12.3 * MS, 12.4 * MS)],
             1: [(0, 5 * MS), (5.1 * MS, 5.2 * MS), (7 * MS, 12 * MS), (12.1 * MS, 12.2 * MS), (12.3 * MS, 12.4 * MS)]}
    rr = _run(tmp_path, calls, queued=True)     # both hosts queue every call up front: no host is the slower
    assert not rr.in_turn and [x.rank for x in rr.late] == [0]
    strag = next(x for x in ranks_lines(rr) if x.startswith("Straggler:"))
    assert not rr.straggler.found
    assert "yet rank 0 arrived last at the calls its peers waited longest in (#1, #3: 9.80 ms" in strag
