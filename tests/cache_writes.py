"""A test process writes the trace cache's entries itself, not from a child forked for each one.

`load` hands a trace it decoded afresh to tracetriage.analyzers.loading.cache.put_in_background, which forks a child
to write the entry so that a command returns before Parquet and the disk do. A test process is no user's command: it
holds a GB of address space (the heap tests/freed_memory.py keeps), so each fork copied its page tables and then
made each page the process wrote while the child lived fault and be copied again, and a fast run loads ~620 traces
afresh (most of them synthetic, a few kB, written in a millisecond). The children, never waited for, also did their
work outside every CPU figure of the run, on the same two cores. Measured side by side (`-n0`, load ~10): five fast
files (test_claims, test_whatif, test_knobs, test_other_peoples_traces, test_communication), twice each way,
14.2/16.5 s user and 4.6/6.1 s system with the forks, 13.6/14.2 and 1.8/1.8 without; 1.39/1.50 M minor faults
against 0.26/0.27 M; and test_claims with test_whatif forked 124 writers that used 3.5 CPU-s between them (138 and
48 CPU-s before the writer stopped importing pandas). The processes a test starts (a CLI, a spawned worker) fork
their writes as a user's do: every CLI test, and test_cache's processes racing on one trace.
"""
from __future__ import annotations


def write_in_this_process() -> None:
    from tracetriage.analyzers.loading import cache

    cache.put_in_background = cache.put
