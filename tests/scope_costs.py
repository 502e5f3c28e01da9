"""What each test file costs in the fast suite, for pytest-xdist to hand out the longest first (conftest.py).

Two workers on two cores: the run ends when the later worker finishes, so a file of seconds handed out last keeps one
core busy while the other idles. Handing out the costliest file first (the longest-processing-time rule) leaves
the short files for the end, where they even the two workers out. A stale or missing figure only changes the order,
never what runs: a file not listed counts as its number of tests times PER_TEST_S.
"""
from __future__ import annotations

# CPU-s of each file's fast tests (its process's and its children's), the files of 1 CPU-s or more, from one whole
# fast run (`python -m pytest -q` with a per-test getrusage plugin, 2 cores under load ~10, at 5ff9303), rounded.
CPU_S = {
    "test_drill_show_gives_inputs.py": 20.8, "test_dashboard_app.py": 19.9, "test_bad_inputs.py": 11.0,
    "test_docs.py": 9.0, "test_knobs.py": 8.6, "test_steps.py": 8.3, "test_claims.py": 8.0, "test_imports.py": 7.0,
    "test_hta_reference.py": 5.5, "test_drills.py": 5.4, "test_generation_and_item_knobs.py": 5.2,
    "test_whatif.py": 5.1, "test_try.py": 5.0, "test_native_scan.py": 5.0, "test_drill_cli.py": 4.9,
    "test_schema.py": 4.9, "test_realworld_capture.py": 4.6, "test_ranks.py": 4.5, "test_dashboard_findings.py": 4.2,
    "test_streamed_scan.py": 4.2, "test_hta_agreement.py": 4.1, "test_unprofiled.py": 4.0,
    "test_grader_reading.py": 3.6, "test_report.py": 3.3, "test_capture.py": 3.2, "test_shares_add_up.py": 3.1,
    "test_golden.py": 3.1, "test_corpus_runner.py": 3.1, "test_ladder_analysis.py": 2.9, "test_drill_keys.py": 2.9,
    "test_cache.py": 2.8, "test_install_extras.py": 2.8, "test_diff.py": 2.6, "test_fresh_captures.py": 2.6,
    "test_drill_show.py": 2.5, "test_other_peoples_traces.py": 2.4, "test_cli_exit.py": 2.4, "test_occupancy.py": 2.3,
    "test_whatif_aside.py": 2.2, "test_report_levers.py": 2.2, "test_json_array_format.py": 2.2,
    "test_dataloader_workers.py": 2.2, "test_communication.py": 2.1, "test_claims_symptoms.py": 2.0,
    "test_markdown.py": 2.0, "test_physics.py": 1.8, "test_gate.py": 1.6, "test_annotate.py": 1.6,
    "test_health.py": 1.5, "test_capture_scripts.py": 1.5, "test_stage_times.py": 1.5, "test_number_format.py": 1.5,
    "test_graph_replay.py": 1.2, "test_forked.py": 1.2, "test_rank_dask.py": 1.2,
    "test_first_batch_and_busy_gpu.py": 1.1, "test_host_and_input_claims.py": 1.0,
}
PER_TEST_S = 0.06     # the median file's CPU-s per test in that run (0.059)


def cost(files: list[str], n_tests: int) -> float:
    """A unit of work's estimated CPU-s: its files' figures, or its number of tests where none is listed."""
    known = [CPU_S[f] for f in files if f in CPU_S]
    return sum(known) if known else n_tests * PER_TEST_S
