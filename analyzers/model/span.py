"""The span of a trace: what its traced work took, first start to last end.

One definition for the what-if replay (its baseline) and for the fix workloads that measure what a
fix bought (capture/fixes.py computes it from the exported JSON on a GPU machine): host ops, named
ranges, Python frames, runtime and driver calls, and GPU activity; never the profiler's own
ProfilerStep# ranges, which wrap the user's work with the profiler's step bookkeeping.
"""
from __future__ import annotations

SPAN_CATEGORIES = ("cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver",
                   "kernel", "gpu_memcpy", "gpu_memset")
PROFILER_STEP_RANGE = "ProfilerStep"          # the profiler's own range around a scheduled step: not the user's work
PROFILER_STEP = PROFILER_STEP_RANGE + "#"     # ... named ProfilerStep#N


def counts_in_span(category: str, name: str) -> bool:
    """Whether an event of this category and name is part of the span (category as the JSON spells it)."""
    return category.lower() in SPAN_CATEGORIES and not name.startswith(PROFILER_STEP)


def span_of_events(events) -> float:
    """The span, in the JSON's µs, of an exported trace's complete events (dicts as json.load gives them)."""
    lo, hi = float("inf"), float("-inf")
    for e in events:
        if e.get("ph") != "X" or not counts_in_span(str(e.get("cat", "")), str(e.get("name", ""))):
            continue
        ts, dur = float(e["ts"]), float(e.get("dur", 0))
        lo, hi = min(lo, ts), max(hi, ts + dur)
    return hi - lo if hi > lo else 0.0
