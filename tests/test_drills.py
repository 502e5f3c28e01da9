"""The drill bank and its grader: keys agree with the analyzers, right answers pass, wrong causes fail,
the vocabulary is the course's, and feedback quotes the trace's own evidence."""
from __future__ import annotations

import re

import pytest

from ladder_answers import answer_for as ladder_answer_for
from sweep import sweep
from tracetriage.drills import bank, grader, keys, numbers
from tracetriage.drills.ladder.parts import KINDS as LADDER_KINDS
from tracetriage.drills.textmatch import phrases, reading, tables

DRILLS = bank.all_drills()
IDS = [d.id for d in DRILLS]
CAUSES = ("launch_overhead", "host_work", "synchronization", "data_transfer")
REGIMES = ("compute", "memory", "overhead")


def test_the_bank_covers_the_ladder_with_several_variants_each():
    assert len(DRILLS) >= 16
    rungs = {}
    for d in DRILLS:
        assert re.fullmatch(r"M0[0123]\.0\d-[a-z]", d.id), d.id
        rungs.setdefault(d.id.split("-")[0], []).append(d)
    ladder = {"M00.02", "M01.01", "M01.02", "M01.06", "M03.01", "M03.02"}     # issue 37: two drills each at least
    assert set(rungs) == {"M00.01", "M00.03", "M00.04", "M01.03", "M01.04", "M01.05", "M01.07", "M01.08", "M02.01",
                          "M02.02", "M02.03", "M02.04"} | ladder
    assert all(len(v) >= (2 if k in ladder else 3) for k, v in rungs.items()), {k: len(v) for k, v in rungs.items()}
    assert any(d.generate for d in DRILLS) and any(d.trace for d in DRILLS)


# The fast suite derives one drill's key of each kind (each kind's own derivation), the one on the smallest trace (a
# 1.5B GPT's decode took 14 s); the slow step derives the other ~50, and `python -m tracetriage.drills.keys` all.
def _trace_bytes(d) -> int:
    path = bank.REPO_ROOT / d.trace if d.trace else None
    return path.stat().st_size if path is not None and path.is_file() else 0


ONE_OF_EACH_KIND = list({d.kind: d for d in sorted(DRILLS, key=_trace_bytes, reverse=True)}.values())


@pytest.mark.parametrize("drill", sweep(DRILLS, ONE_OF_EACH_KIND, ids=IDS))
def test_stored_key_agrees_with_the_analyzers(drill):
    assert bank.stored_keys()[drill.id] == keys.derive(drill), \
        (f"{drill.id}: stored key drifted from the analyzers; run python -m tracetriage.drills.keys "
         f"and review the change")


LADDER_DRILLS = [d for d in DRILLS if d.kind in LADDER_KINDS]


@pytest.mark.parametrize("drill", LADDER_DRILLS, ids=[d.id for d in LADDER_DRILLS])
def test_a_ladder_drill_shows_its_code_and_keeps_its_key_when_run_outside_the_checkout(drill, tmp_path,
                                                                                        monkeypatch):
    """A student runs `drill show` and `drill grade` from their own folder: the capture's facts (the code each
    range runs, the bytes a kernel moves) are read from the repository, not from the current directory."""
    from tracetriage.drills.ladder import show

    monkeypatch.chdir(tmp_path)
    assert keys.derive(drill) == bank.stored_keys()[drill.id], f"{drill.id}: another key outside the checkout"
    shown = "\n".join(show.lines(drill))
    if drill.kind in ("view_copy", "bytes_ledger"):
        assert "`" in shown.split("the code each", 1)[1], f"{drill.id}: no code under its heading:\n{shown}"
    if drill.kind == "occupancy":
        assert " 0 GFLOP and 0.0 kB" not in shown, shown


# --- answers built from a class of the vocabulary ----------------------------------------------

def _say(group: str, cls: str, field: str) -> str:
    return phrases(group, cls, field)[0]


def _lever(key: dict, right: bool) -> str:
    """The key's own lever class when right; when wrong, the class of the lever that would waste the week."""
    if right:
        return _say("lever", key["accept"][0], "say")
    wrong = key.get("waste_class") or next(c for c in ("faster_kernels", "pin_memory") if c not in key["accept"])
    return _say("lever", wrong, "say")


def answer_for(drill, key: dict, right: bool) -> dict:
    """A consistent answer: the key's class when right, another class (and its lever) when wrong."""
    k = drill.kind
    if k in LADDER_KINDS:
        return ladder_answer_for(k, key, right)
    if k == "idle_cause":
        c = key["cause"] if right else next(x for x in CAUSES if x != key["cause"])
        return {"pattern": _say("cause", c, "pattern"), "cause": c, "experiment": _lever(key, right)}
    if k == "triage":
        b = key["bound"] if right else next(x for x in CAUSES + REGIMES if x != key["bound"]
                                            and (x in CAUSES) == (key["bound"] in CAUSES))
        group = "cause" if b in CAUSES else "regime"
        return {"suspects": key["suspects"], "bound": b,
                "evidence": f"{key['numbers'][0]['value']}% of device time; {_say(group, b, 'name')}",
                "experiment": _lever(key, right)}
    if k == "ranges":
        r = key["prefill_regime"] if right else next(x for x in REGIMES if x != key["prefill_regime"])
        return {"ranges": [key["prefill_range"], key["decode_range"]], "ttft_ms": key["ttft_ms"],
                "prefill_regime": r}
    if k == "incident":
        phase = key["phase"] if right else key["refuse"]
        other = key["refuse"] if right else key["phase"]
        return {"ttft_ms": key["ttft_ms"], "per_token_ms": key["per_token_ms"], "phase": phase,
                "refuse": _say("phase", other, "fix")}
    if k == "roofline":
        r = key["regime"] if right else next(x for x in REGIMES if x != key["regime"])
        return {"regime": r, "achieved": key["achieved"], "lever": _lever(key, right)}
    if k == "waste":
        r = key["regime"] if right else next(x for x in REGIMES if x != key["regime"])
        waste = key["waste_class"] if right else key["accept"][0]    # wrong: naming the fix as the waste
        return {"regime": r, "fix": _lever(key, right), "waste": _say("lever", waste, "say")}
    if k == "ledger":
        f = 1 if right else 3
        return {"eager_bytes": f"{key['eager_gb'] * f} GB", "fused_bytes": f"{key['fused_gb'] * f * f} GB",
                "speedup": key["speedup"] * f}
    if k == "shapes":
        r = key["small_regime"] if right else next(x for x in REGIMES if x != key["small_regime"])
        return {"tflops_small": key["tflops_small"], "tflops_large": key["tflops_large"], "small_regime": r}
    if k == "floor":
        f = 1 if right else 5
        return {"floor_ms": key["floor_ms"] * f, "per_token_ms": key["per_token_ms"], "lever": _lever(key, right)}
    if k == "timer":
        v = key["verdict"] if right else ("noise" if key["verdict"] == "real" else "real")
        return {"median_ms": key["median_ms"], "spread_pct": key["spread_pct"], "verdict": v}
    if k == "collapse":
        how = key["explained_by"] if right else ("bytes" if key["explained_by"] == "launches" else "launches")
        return {"speedup": key["speedup"], "explained_by": how, "lever": _lever(key, right)}
    raise AssertionError(k)


# Grading a drill on a sample trace first writes its shown copy (a 4.5 MB trace decoded and written again: ~4 s of a
# core for each drill on gpt-eager): the fast suite grades one drill of each kind, the slow step every other one.
@pytest.mark.parametrize("drill", sweep(DRILLS, ONE_OF_EACH_KIND, ids=IDS))
def test_right_answer_scores_at_least_0_8_and_a_wrong_cause_at_most_0_4(drill):
    key = bank.key_of(drill)
    right = grader.grade(drill, answer_for(drill, key, right=True))
    assert right.score >= 0.8, right.to_dict()
    wrong = grader.grade(drill, answer_for(drill, key, right=False))
    assert wrong.score <= 0.4, wrong.to_dict()
    assert wrong.capped or wrong.score <= 0.4


@pytest.mark.parametrize("drill", DRILLS, ids=IDS)
def test_a_blank_answer_scores_zero(drill):
    r = grader.grade(drill, {})
    assert r.score == 0
    assert all(p.feedback == f"No answer for {p.part}." for p in r.parts)


# --- the vocabulary, read on meaning ------------------------------------------------------------------

def _lever_classes(text: str) -> set:
    from tracetriage.drills.grader import lever_tables

    table, removal = lever_tables()
    return set(reading(text, table, removal).asserted)


@pytest.mark.parametrize("text", ["CUDA graphs", "use reduce-overhead", "torch.compile the loop", "a bigger batch"])
def test_launch_overhead_levers_in_the_courses_words(text):
    assert "cut_launches" in _lever_classes(text)


@pytest.mark.parametrize("text", ["non_blocking=True on a side stream", "overlap the copy on a side stream",
                                  "keep the data resident on the device"])
def test_transfer_levers_in_the_courses_words(text):
    assert _lever_classes(text) == {"overlap_copies"}


def test_a_hedge_between_two_causes_earns_hedge_credit_and_a_list_of_them_nothing():
    t = tables("cause", "name")
    assert grader.score_name("either launch overhead or a sync", "synchronization", t)[0] == grader.HEDGE_CREDIT
    assert grader.score_name("either launch overhead or host work", "synchronization", t)[0] == 0.0
    assert grader.score_name("launch overhead, host work or a sync", "synchronization", t)[0] == 0.0


def test_a_word_inside_another_word_does_not_count():
    assert grader.score_name("items", "synchronization", tables("cause", "name"))[0] == 0.0
    assert grader.score_name("x.item() each step", "synchronization", tables("cause", "name"))[0] == 1.0


def test_partial_credit_for_a_number_within_2x():
    assert grader.score_number(1.0, 1.1) == 1.0
    assert grader.score_number(1.6, 1.0) == numbers.NEAR_CREDIT < grader.WRONG_BELOW
    assert grader.score_number(3.0, 1.0) == 0.0


# --- feedback quotes the trace ----------------------------------------------------------------------

def test_sync_feedback_quotes_the_drains_the_sync_call_and_its_caller():
    r = grader.grade(bank.get("M02.04-c"), {"cause": "launch_overhead"})
    fb = next(p for p in r.parts if p.part == "cause").feedback
    assert fb == ("You named launch overhead; the trace says synchronization: synchronization is 13% of the span: "
                  "79 drains with a median of 89.3 µs, after cudaStreamSynchronize ×79 called from aten::item.")


def test_transfer_feedback_quotes_the_copy_kind_and_its_rate():
    r = grader.grade(bank.get("M02.04-d"), {"cause": "data_transfer"})
    fb = next(p for p in r.parts if p.part == "cause").feedback
    assert fb.startswith("Right: data transfer. The trace: data transfer is ")
    assert "Memcpy HtoD (Pageable -> Device)" in fb and re.search(r"at \d+\.\d GB/s", fb)


def test_launch_feedback_quotes_gap_count_and_medians():
    r = grader.grade(bank.get("M02.04-a"), {"cause": "host work", "experiment": "py-spy"})
    fb = {p.part: p.feedback for p in r.parts}
    assert re.search(r"[\d,]+ gaps with a median of [\d.]+ µs between [\d,]+ kernels whose median run is", fb["cause"])
    # the report's own Next line on the trace; moving host work predicts 0%, as the report's waste (faster kernels)
    # does: it is in the week's waste too, and the feedback says what the replay predicts for it
    assert fb["experiment"].startswith("That is the lever that would waste the week here: faster kernels, predicted "
                                       "0%. The report's Next: cut launches: torch.compile to fuse, then CUDA graphs "
                                       "(mode='reduce-overhead')")
    assert fb["experiment"].endswith("What the replay predicts for yours: no_host_work 0%.")


def test_a_right_experiment_with_a_wrong_cause_is_capped():
    d = bank.get("M02.04-c")
    r = grader.grade(d, {"pattern": "a drain after each sync", "cause": "host_work",
                         "experiment": "remove the sync"})
    assert r.capped and r.score == d.cap_if_wrong
    assert r.notes[0] == "The cause is wrong, and the rest follows from it: the score is capped at 0.4."


def test_a_short_phrase_inside_a_longer_one_of_another_class_does_not_count():
    assert grader.score_name("CPU-bound: the host is busy", "host_work", tables("cause", "name"))[0] == 1.0
    assert grader.score_name("a .cpu() every step", "synchronization", tables("cause", "name"))[0] == 1.0


# --- prefill or decode: the incident (M00.04) ----------------------------------------------------

def test_the_incident_tickets_show_traces_without_ranges_and_split_both_phases():
    tickets = [d for d in DRILLS if d.id.startswith("M00.04")]
    assert len(tickets) == 5 and all(d.ticket and d.slo for d in tickets)
    assert all(d.strip_ranges or "generate/" in d.trace for d in tickets)
    assert {bank.stored_keys()[d.id]["phase"] for d in tickets} == {"prefill", "decode"}
    assert all(bank.stored_keys()[d.id]["found_from"] == "shapes" for d in tickets)


def test_refusing_the_fix_for_the_tickets_own_phase_scores_nothing_and_says_which_to_refuse():
    d = bank.get("M00.04-a")        # decode misses its target: refuse a prefill fix
    k = bank.stored_keys()[d.id]
    assert k["phase"] == "decode"
    r = grader.grade(d, {"ttft_ms": k["ttft_ms"], "per_token_ms": k["per_token_ms"], "phase": "decode",
                         "refuse": "CUDA graphs for the decode step"})
    part = next(p for p in r.parts if p.part == "refuse")
    assert part.score == 0 and "the fix to refuse is a prefill fix" in part.feedback
    right = grader.grade(d, {"ttft_ms": k["ttft_ms"], "per_token_ms": k["per_token_ms"], "phase": "decode",
                             "refuse": "chunked prefill"})
    assert right.score == pytest.approx(1.0)


def test_naming_the_wrong_phase_is_capped_and_the_feedback_quotes_both_targets():
    d = bank.get("M00.04-b")        # prefill misses: TTFT 11.5 ms against an 8 ms target
    k = bank.stored_keys()[d.id]
    r = grader.grade(d, {"ttft_ms": k["ttft_ms"], "per_token_ms": k["per_token_ms"], "phase": "decode",
                         "refuse": "CUDA graphs"})
    assert r.capped and r.score <= d.cap_if_wrong
    fb = next(p for p in r.parts if p.part == "phase").feedback
    assert "against a 8 ms target" in fb and "prefill misses its target" in fb


def test_on_a_graphed_step_cuda_graphs_is_in_the_weeks_waste_and_its_prediction_is_quoted():
    r = grader.grade(bank.get("M00.01-c"), {"waste": "CUDA graphs"})
    p = next(p for p in r.parts if p.part == "waste")
    assert p.score == 1.0, p.feedback
    r = grader.grade(bank.get("M00.01-c"), {"fix": "wrap the step in a CUDA graph"})
    p = next(p for p in r.parts if p.part == "fix")
    assert p.score == 0.0 and re.search(r"What the replay predicts for yours: cuda_graphs −?\d+%\.$", p.feedback), \
        p.feedback


def test_fusion_as_the_fix_keeps_its_own_words_where_cuda_graphs_is_the_waste():
    # cut_launches' vocabulary borrows "fuse" (torch.compile to fuse, then CUDA graphs); where fusion is the Next
    # and CUDA graphs the waste (a six-op chain over 32M floats), "fuse" is the fix
    key = bank.key_of(bank.get("M01.05-b"))
    assert key["accept"] == ["fuse"] and key["waste_class"] == "cut_launches"
    r = grader.grade(bank.get("M01.05-b"), {"lever": "fuse the chain into one kernel with torch.compile"})
    assert next(p for p in r.parts if p.part == "lever").score == 1.0
    r = grader.grade(bank.get("M01.05-b"), {"lever": "CUDA graphs"})
    assert next(p for p in r.parts if p.part == "lever").score == 0.0
