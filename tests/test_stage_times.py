"""tools.stage_times, the benchmark's stage table: every function it wraps exists and runs on a report.

A stage wraps a function by its module and name; when loading or an analysis is refactored (a function
renamed, moved, or called through another module's global), the wrapper either crashes the benchmark or
silently times nothing. Both fail here, in the fast suite, before anyone runs the benchmark.
"""
import importlib
import json
import subprocess
import sys
from pathlib import Path

from tools import stage_times

ROOT = Path(__file__).resolve().parents[1]

# stages a `report --json` does not run on this trace, and why
NOT_IN_A_JSON_REPORT = {"words: five lines": "the text report's words; --json serialises instead"}


def test_every_function_the_benchmark_wraps_exists_on_its_module():
    missing = [f"{module}.{attr}" for module, attr, _ in stage_times.STAGES
               if not hasattr(importlib.import_module(module), attr)]
    assert missing == []


def test_every_stage_and_every_lever_runs_on_a_report_of_a_real_trace():
    from tracetriage.analyzers.whatif.levers import LEVERS

    out = subprocess.run([sys.executable, "-m", "tools.stage_times", "traces/smell-sync-item.json.gz", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=True).stdout
    ran = json.loads(out)
    expected = {label for _, _, label in stage_times.STAGES} - set(NOT_IN_A_JSON_REPORT)
    expected |= {f"lever {name}: edit" for name in LEVERS}
    assert sorted(expected - set(ran)) == []
    # the stages hold the whole: what no named stage holds ("other") is a small part of it
    assert ran["other"][0] < 0.25 * ran["total"][0]


def test_the_levers_are_timed_in_this_process_even_where_the_report_would_replay_them_aside():
    # the report forks a large trace's levers into a child (whatif.aside): forced on here, on a small trace,
    # every lever's stage must still show
    from tracetriage.analyzers.whatif.levers import LEVERS

    code = ("import sys; from tracetriage.analyzers.whatif import aside; aside.MIN_EVENTS = 0; "
            "from tools import stage_times; sys.exit(stage_times.main(sys.argv[1:]))")
    out = subprocess.run([sys.executable, "-c", code, "traces/smell-sync-item.json.gz", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=True).stdout
    ran = json.loads(out)
    assert {f"lever {name}: edit" for name in LEVERS} | {"what-if: dependency graph"} <= set(ran)


def test_the_guard_flags_each_analysis_or_lever_over_its_share_of_the_report_and_never_the_fixed_costs():
    t = {"imports": [0.5, 0.5], "load: read (and gunzip)": [1.0, 1.0], "roofline": [0.05, 0.04],
         "lever drop_float64: edit": [0.3, 0.3], "what-if: dependency graph": [0.1, 0.1], "words: --json": [0.2, 0.2],
         "other": [0.2, 0.2], "total": [2.0, 2.0]}
    flagged = stage_times.over_share(t, 0.04)
    assert [line.split(": ")[0] for line in flagged] == ["lever drop_float64", "what-if"]
    assert "15.0% of the report's 2.00 s" in flagged[0]
    assert stage_times.over_share(t, 0.2) == []   # (15% is under a 20% guard)
