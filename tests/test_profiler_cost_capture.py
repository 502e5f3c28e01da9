"""capture/profiler_cost.py runs on the CPU, and the committed H200 figures say what the profiler adds per op."""
import json
from pathlib import Path

import torch

from tracetriage.capture.profiler_cost import measure

MEASURED = Path(__file__).resolve().parent.parent / "traces" / "overhead" / "profiler_cost.json"


def test_each_loop_is_timed_both_ways_and_its_recorded_events_counted():
    torch.set_num_threads(1)
    out = measure("cpu", reps=1, ops=50)
    assert set(out) == {"add_tiny", "linear_small", "view_only"}
    for r in out.values():
        assert all(len(runs) == 1 and runs[0] > 0 for runs in r["runs_s"].values())
        assert r["recorded_per_call"]["cpu_op"] >= 1          # every call leaves at least its own op in the trace


def test_on_the_h200_the_profiler_adds_microseconds_per_op_and_more_per_launch():
    loops = json.loads(MEASURED.read_text())["loops"]
    assert json.loads(MEASURED.read_text())["device"]["name"] == "NVIDIA H200"
    for r in loops.values():
        assert r["added_ns_per_call"] > 0 and r["slowdown"] > 1
    # a recorded launch (CUPTI's callback and activity record) costs more than a CPU op without one
    assert loops["add_tiny"]["added_ns_per_call"] > 2 * loops["view_only"]["added_ns_per_call"]
