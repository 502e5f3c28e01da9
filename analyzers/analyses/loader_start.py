"""A DataLoader's start at the head of the profile: set-up that each epoch pays again, not once.

Input: a trace. Output: the host time from the trace's first event to the end of the first multi-process DataLoader
fetch (`enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`), where that fetch is the loader's first in
the trace: 0 where the trace has none.

What it looks like in any trace: a loop over a DataLoader with workers, profiled from its start. Before the first
batch the main process forks the workers, each imports and builds its dataset copy and makes its first batch; none of
it is traced (the workers are other processes), so the profile opens with a long host stretch and a first `__next__`
far longer than the later ones. A warm-up before profiling takes it out of this profile only: every epoch builds a
new iterator whose workers start again (unless DataLoader(..., persistent_workers=True) keeps them), so a warm-up
is not the fix, and its saving is no saving of the training run (heldout-user7 mlp4090L_bf16: 4 workers at batch 32,
34 ms before the first batch of a 94 ms trace, told "warm up first, -42%", where each step's 2 ms of host work
around 80 µs of GPU work is what the loop waits on).

What would make it fire falsely: a loader whose workers persist across epochs, profiled at the program's start: the
start is then paid once per run, a warm-up's to remove; the trace does not record persistent_workers, so the advice
that follows names it. A loop whose first batch comes from a single-process iterator (no workers to start) is left
alone, as is cold CUDA set-up after the first batch (first launches, cuBLAS handles: a warm-up's).
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, USER_ANNOTATION, Trace

MULTI_PROCESS_FETCH = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
START_HOLDS = 0.5    # the loader's start holds this share of what a warm-up takes out: the warm-up is its


def start_ns(trace: Trace) -> int:
    """The host time before the first multi-process DataLoader batch arrived (0: no such fetch in the trace)."""
    ev = trace.ev
    rows = np.flatnonzero(any_of(ev.cat, (USER_ANNOTATION, CPU_OP)))
    if not len(rows):
        return 0
    fetch = rows[name_flags(trace, rows, lambda n: n.startswith(MULTI_PROCESS_FETCH))]
    if not len(fetch):
        return 0
    first = fetch[np.argmin(ev.start[fetch])]
    return int(ev.end[first] - ev.start.min())
