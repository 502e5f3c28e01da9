"""tools.timeline, the benchmark's as-shipped step marks: every step it marks exists and shows, the read-ahead
thread and the levers' forked child included.

Like tools.stage_times it wraps functions by module and name, so a refactor that renames or moves one would leave
a step unmarked (or crash the benchmark); that fails here first.
"""
import importlib
import json
import subprocess
import sys
from pathlib import Path

from tools import timeline

ROOT = Path(__file__).resolve().parents[1]
TRACE = "traces/smell-sync-item.json.gz"


def test_every_function_the_timeline_marks_exists_on_its_module():
    missing = [f"{module}.{attr}" for module, attr, _ in timeline.STEPS
               if not hasattr(importlib.import_module(module), attr)]
    assert missing == []


def test_every_step_is_marked_in_time_order_with_the_thread_and_the_child_beside_them():
    # the report forks a large trace's levers (whatif.aside): forced on here, on a small trace
    code = ("import sys; from tracetriage.analyzers.whatif import aside; aside.MIN_EVENTS = 0; "
            "from tools import timeline; sys.exit(timeline.main(sys.argv[1:]))")
    out = subprocess.run([sys.executable, "-c", code, TRACE, "--json"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    t = json.loads(out)
    labels = [k for k, _, _ in t["marks"]]
    for _, _, step in timeline.STEPS:
        assert labels.count(f"{step} >") == 1 and labels.count(f"{step} <") == 1, step
        assert labels.index(f"{step} >") < labels.index(f"{step} <")
    walls = [w for _, w, _ in t["marks"]]
    assert walls == sorted(walls) and walls[0] >= 0         # (since the process started: its start-up before)
    assert t["thread"]["start"] <= t["thread"]["end"] <= dict((k, w) for k, w, _ in t["marks"])[
        "read (waits for the read-ahead) <"]
    assert t["child"]["forked"] <= t["child"]["done"] <= walls[-1]
    assert 0 < t["child"]["cpu"]                              # (the child's own CPU clock, from its fork)
    assert any(line.startswith("the parent waited ") for line in timeline.lines(t))
