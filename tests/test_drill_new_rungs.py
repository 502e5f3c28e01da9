"""The course's rungs added with the fusion ledger (M00.01, M00.03, M01.03, M01.04, M01.07): keys from the
analyses, checked against what the captures measured."""
from __future__ import annotations

import json

import pytest

from tracetriage.drills import bank, evidence, grader
from tracetriage.drills.keys import measured_pair

ELEMENTS_64M = 64 * 1024 * 1024


def test_the_sigmoid_chain_moves_36_bytes_per_element_eagerly_and_8_fused():
    # the chain the ledger was built on (its pair now serves M01.08-b, whose "bytes or launches" a ledger answers)
    led = evidence.ledger(bank.REPO_ROOT / "traces" / "chain-eager-large.json.gz")
    assert led.eager_bytes / ELEMENTS_64M == pytest.approx(36, abs=0.01)
    assert led.fused_bytes / ELEMENTS_64M == pytest.approx(8, abs=0.01)
    assert led.ops == 4 and led.passes == 1


@pytest.mark.parametrize("drill_id", ["M01.07-b", "M01.07-c", "M01.07-d"])
def test_the_ledger_key_agrees_with_the_captures_own_byte_count(drill_id):
    d = bank.get(drill_id)
    k, m = bank.key_of(d), measured_pair(d)
    counted = m["variants"]["before"]["record"]["ledger"]
    assert k["eager_gb"] * 1e9 == pytest.approx(counted["eager_bytes"], rel=0.001)
    # the lever counts a reduction the chain uses again as a second pass over the inputs; the capture, the minimum
    assert counted["fused_bytes"] * 0.999 <= k["fused_gb"] * 1e9 <= counted["fused_bytes"] * k["passes"] * 1.001
    # the key is the pair's spans as `drill show` prints them; the repeats' median (never shown) is accepted too
    assert k["speedup"] == pytest.approx(d and evidence.diff_facts(d.trace_path(), d.after_path()).speedup)
    assert k["speedup_measured"] == pytest.approx(1 / m["ratio"]["fuse"]["median"], rel=0.001)


def test_the_ledger_speedup_is_keyed_on_the_spans_show_prints_and_the_fuse_levers_prediction_is_quoted():
    d = bank.get("M01.07-b")
    k = bank.key_of(d)
    p = grader.grade_part(d, "speedup", f"{k['speedup']:.2f}x")
    assert p.score == 1.0
    assert "the fuse lever's replay predicted" in p.feedback and "The pair's spans as shown give" in p.feedback
    assert grader.grade_part(d, "speedup", f"{k['speedup_measured']:.2f}").score == 1.0


def test_the_decode_floor_is_the_declared_bytes_per_token_over_the_hbm_peak():
    for i in ("a", "b", "c"):
        k = bank.key_of(bank.get(f"M00.03-{i}"))
        assert k["floor_ms"] == pytest.approx(k["gb_per_token"] / k["peak_gbps"] * 1e3, rel=0.001)
        assert k["per_token_ms"] > k["floor_ms"]
    over = [bank.key_of(bank.get(f"M00.03-{i}"))["over_floor"] for i in "abc"]
    assert over == sorted(over, reverse=True)      # eager, compiled, graphs: each closer to the floor


def test_the_timer_verdict_is_real_only_when_the_repeats_do_not_overlap():
    m = json.loads((bank.REPO_ROOT / "traces" / "realworld" / "measured.json").read_text())["scenarios"]
    for d in (x for x in bank.all_drills() if x.kind == "timer"):
        a, b = (m[d.scenario]["wall_ms"][v]["runs"] for v in d.variants)
        overlap = max(a) >= min(b) and max(b) >= min(a)
        assert bank.key_of(d)["verdict"] == ("noise" if overlap else "real"), d.id
    assert {bank.key_of(d)["verdict"] for d in bank.all_drills() if d.kind == "timer"} == {"real", "noise"}


def test_a_kernel_has_no_single_speed_the_small_shape_is_far_below_both_roofs_or_under_the_memory_roof():
    small = {}
    for d in (x for x in bank.all_drills() if x.kind == "shapes"):
        k = bank.key_of(d)
        assert k["tflops_large"] > 5 * k["tflops_small"] and k["large_regime"] == "compute"
        small[d.id] = k["small_regime"]
    # 256³ at 1.3% of the compute roof and 2.9% of the memory roof, 512³ at 8% / 9%: latency, the course's overhead;
    # the 1x8192x8192 GEMV reads its weights at 87% of the HBM peak: memory
    assert small == {"M01.04-a": "overhead", "M01.04-b": "overhead", "M01.04-c": "memory"}
    d = bank.get("M01.04-a")
    assert grader.grade_part(d, "small_regime", "memory, because intensity is below the ridge").score == 0
    assert grader.grade_part(d, "small_regime", "latency-bound: far below both roofs").score == 1


def test_naming_the_fix_as_the_waste_scores_nothing_and_says_which_is_which():
    d = bank.get("M00.01-d")                     # the sync loop: remove the syncs; CUDA graphs would waste the week
    p = grader.grade_part(d, "waste", "remove the syncs")
    assert p.score == 0 and p.feedback.startswith("That is the fix, not the waste")
    assert grader.grade_part(d, "waste", "CUDA graphs").score == 1.0
