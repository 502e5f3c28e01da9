"""What each test file costs in the fast suite, for pytest-xdist to hand out the longest first (conftest.py).

Two workers on two cores: the run ends when the later worker finishes, so a file of seconds handed out last keeps one
core busy while the other idles. Handing out the costliest file first (the longest-processing-time rule) leaves
the short files for the end, where they even the two workers out. A stale or missing figure only changes the order,
never what runs: a file not listed counts as its number of tests times PER_TEST_S.
"""
from __future__ import annotations

# CPU-s of each file's fast tests (its process's and its children's), the files of 1 CPU-s or more, from one whole
# fast run (`python -m pytest -q` with a per-test getrusage plugin, 2 cores under load, Dec 2026), rounded.
CPU_S = {
    "test_dashboard_app.py": 34.4, "test_drill_show_gives_inputs.py": 16.8, "test_bad_inputs.py": 11.1,
    "test_grader_reading.py": 11.1, "test_knobs.py": 9.9, "test_claims.py": 9.6, "test_steps.py": 8.6,
    "test_docs.py": 8.4, "test_dashboard_findings.py": 7.4, "test_imports.py": 7.0, "test_drills.py": 7.0,
    "test_whatif.py": 6.7, "test_health.py": 6.3, "test_hta_reference.py": 6.3, "test_drill_keys.py": 5.8,
    "test_try.py": 5.8, "test_streamed_scan.py": 5.7, "test_ranks.py": 5.7, "test_realworld_capture.py": 5.5,
    "test_drill_cli.py": 5.4, "test_generation_and_item_knobs.py": 5.3, "test_golden.py": 5.0,
    "test_native_scan.py": 4.3, "test_unprofiled.py": 4.3, "test_capture.py": 3.8, "test_hta_agreement.py": 3.8,
    "test_cache.py": 3.5, "test_corpus_runner.py": 3.3, "test_report.py": 3.2, "test_cli_exit.py": 3.2,
    "test_drill_show.py": 3.1, "test_report_levers.py": 2.9, "test_number_format.py": 2.9,
    "test_fresh_captures.py": 2.8, "test_dataloader_workers.py": 2.7, "test_whatif_aside.py": 2.7,
    "test_diff.py": 2.7, "test_json_array_format.py": 2.7, "test_install_extras.py": 2.7,
    "test_ladder_analysis.py": 2.5, "test_other_peoples_traces.py": 2.5, "test_claims_symptoms.py": 2.4,
    "test_occupancy.py": 2.4, "test_shares_add_up.py": 2.1, "test_schema.py": 2.0, "test_communication.py": 1.9,
    "test_stage_times.py": 1.8, "test_annotate.py": 1.7, "test_markdown.py": 1.7, "test_capture_scripts.py": 1.7,
    "test_gate.py": 1.6, "test_physics.py": 1.6, "test_graph_replay.py": 1.5, "test_forked.py": 1.3,
    "test_first_batch_and_busy_gpu.py": 1.2, "test_host_and_input_claims.py": 1.2, "test_cli_conventions.py": 1.1,
}
PER_TEST_S = 0.06     # the median file's CPU-s per test in that run


def cost(files: list[str], n_tests: int) -> float:
    """A unit of work's estimated CPU-s: its files' figures, or its number of tests where none is listed."""
    known = [CPU_S[f] for f in files if f in CPU_S]
    return sum(known) if known else n_tests * PER_TEST_S
