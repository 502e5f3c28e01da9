"""tools.corpus: the table of other people's traces, checked against what was read on them."""

import other_peoples_traces as opt
from kineto_factory import write
from tools import corpus


def test_readings_file_names_a_source_and_a_verdict_for_every_trace():
    readings = corpus.load_readings()
    assert len(readings) >= 25
    for name, r in readings.items():
        assert r["source"] and r["path"].count("@") == 1, name     # repository@commit:path, no contents
        assert r["reading"] and r["expected_dominant"] and r["expected_regime"], name
        assert r["expected_next_kind"], name      # the Next is judged, not only the idle cause and the regime


def test_runner_reports_each_trace_and_says_where_the_verdict_differs_from_the_reading(tmp_path):
    write(tmp_path / "setup.json", opt.setup_in_a_launch_call())
    write(tmp_path / "uncosted.json", opt.uncosted_kernels())
    readings = {
        "setup.json": {"source": "test", "expected_dominant": "host_work", "expected_regime": "overhead"},
        "uncosted.json": {"source": "test", "expected_dominant": "negligible", "expected_regime": "memory",
                          "why_not": "read wrong on purpose"},
    }
    rows = {r.file: r for r in corpus.run(tmp_path, readings)}
    assert rows["setup.json"].matches == "yes" and rows["setup.json"].events > 0
    assert rows["uncosted.json"].matches == "no"
    assert rows["uncosted.json"].why_not == "regime unknown, read memory (read wrong on purpose)"
    table = corpus.markdown(list(rows.values()))
    assert "1 of 2 verdicts match the reading (idle cause, regime and Next); the Next is right on 0 of 2; " \
           "the invariants hold on 2 of 2 reports; the claim checker is clean on 2 of 2" in table


def test_runner_judges_the_next_experiment_and_the_invariants_too(tmp_path):
    write(tmp_path / "setup.json", opt.setup_in_a_launch_call())
    readings = {"setup.json": {"source": "test", "expected_dominant": "host_work", "expected_regime": "overhead",
                               "expected_next_kind": "cut_launches|remove_syncs"}}
    row = corpus.run(tmp_path, readings)[0]
    assert row.next_kind == "warm_up" and row.physics == ()
    assert row.matches == "no" and row.why_not == "Next warm_up, read cut_launches|remove_syncs"
    assert "| warm_up | no: Next warm_up" in corpus.markdown([row]) and "| hold |" in corpus.markdown([row])


def test_runner_reports_a_merged_file_per_rank(tmp_path):
    import physics_traces as pt

    write(tmp_path / "merged.json", pt.merged_two_ranks())
    readings = {"merged.json": {"source": "test", "expected_dominant": "launch_overhead",
                                "expected_regime": "overhead", "expected_ranks": 2}}
    row = corpus.run(tmp_path, readings)[0]
    assert row.dominant == "2 ranks: launch_overhead/launch_overhead" and row.regime == "overhead/overhead"
    assert row.matches == "yes" and row.physics == ()
    row = corpus.run(tmp_path, {"merged.json": {**readings["merged.json"], "expected_ranks": 4}})[0]
    assert row.matches == "no" and row.why_not.startswith("2 ranks, read 4")


def test_a_reading_of_communication_accepts_either_communication_lever():
    reading = {"expected_dominant": "host_work", "expected_regime": "communication",
               "expected_next_kind": "communication"}
    for kind in ("overlap_comm", "find_straggler"):
        assert corpus._verdict_matches("host_work", "communication", 0.3, reading, kind) == ("yes", "")
    assert corpus._verdict_matches("host_work", "communication", 0.3, reading, "cut_launches")[0] == "no"


def test_a_reading_of_warm_up_or_fewer_bytes_accepts_the_kind_that_is_its_member_and_nothing_else():
    """profile_replays is a graph capture's warm-up, fuse the fewer-bytes experiment of an eager chain: the
    readings' vocabulary predates both (the vLLM capture and the Qwen forward were judged wrong for them)."""
    warm = {"expected_dominant": "host_work", "expected_regime": "overhead", "expected_next_kind": "warm_up"}
    assert corpus._verdict_matches("host_work", "overhead", 0.9, warm, "profile_replays") == ("yes", "")
    assert corpus._verdict_matches("host_work", "overhead", 0.9, warm, "fuse")[0] == "no"
    mem = {"expected_dominant": "launch_overhead", "expected_regime": "memory", "expected_next_kind": "fewer_bytes"}
    assert corpus._verdict_matches("launch_overhead", "memory", 0.1, mem, "fuse") == ("yes", "")
    assert corpus._verdict_matches("launch_overhead", "memory", 0.1, mem, "profile_replays")[0] == "no"
