"""Every word a user reads: sentences, number formats, cause names and advice.

The analyses return typed results (numbers, enums, names from the trace); this module
turns them into the report's five lines, the diff's and the multi-rank report's lines,
the caveats, and the phrases the drills' feedback and the dashboard show. No other module
composes a sentence for a user, and no module reads another's sentences.
"""
from __future__ import annotations

from analyzers.trace import STREAM_OVERLAP_NS, Caveat


# --- numbers ---------------------------------------------------------------------------

def count(n: int, one: str, many: str | None = None) -> str:
    """'1 event', '1,024 events'."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


# --- the trace's own caveats ---------------------------------------------------------------

def caveat(c: Caveat) -> str:
    if c.kind == "dropped_events":
        return (f"{count(c.count, 'complete event')} had a missing, negative, non-numeric or out-of-range ts/dur and "
                f"{'was' if c.count == 1 else 'were'} dropped")
    if c.kind == "duplicate_events":
        return (f"{count(c.count, 'event')} repeated an earlier one exactly (same category, name, times, thread and "
                "ids) and counted once")
    if c.kind == "no_gpu_activity":
        return ("no GPU activity in the trace (no kernels, copies or memsets: a CPU-only capture, or CUDA activity was "
                "not recorded): there is no GPU span, idle time or regime to report")
    if c.kind == "unlinked_gpu":
        return (f"{c.count:,} of {count(c.total, 'GPU activity', 'GPU activities')} have no launch call in the trace "
                "(missing correlation, or launched before profiling started): the idle before them counts as other")
    if c.kind == "dangling_external_id":
        verb = "carries" if c.count == 1 else "carry"
        return (f"{count(c.count, 'launch call')} {verb} an External id that no cpu_op in the trace has: their GPU "
                "time is listed under the kernel's name, not the op's")
    if c.kind == "stream_overlap":
        verb = "starts" if c.count == 1 else "start"
        return (f"{count(c.count, 'GPU activity', 'GPU activities')} {verb} more than {STREAM_OVERLAP_NS / 1e3:.0f} µs "
                "before the previous one on their stream ends, though a stream runs in order (a merged or edited "
                "trace?): busy and idle time count the overlapped time once")
    raise ValueError(f"unknown caveat kind {c.kind!r}")
