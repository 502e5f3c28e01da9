"""Copies over the link that are asynchronous already: pinned, their calls returning before the copy ends.

Input: a trace. Output: CopiesAsync, or None where the trace copies nothing over the link (host to device or back).

What it looks like in any trace: each `Memcpy HtoD (Pinned -> Device)` / `Memcpy DtoH (Device -> Pinned)` activity
has a launching call (cudaMemcpyAsync, hipMemcpyAsync) whose end comes before the copy's end: the host went on while
the copy engine moved the bytes; copies on several streams run beside each other (a host-to-device copy beside a
device-to-host one, each engine its own direction). Then pinned memory, non_blocking=True and a side stream are
applied already, and advising them again is advice the user took (heldout-user7 a100copy_pinned: pinned copies on
two streams, 483 ms of copies in 307 ms, calls of 6 µs, told "copy with non_blocking=True on a side stream"). What
is left is the link's rate: fewer bytes (a smaller dtype, data kept on the device).

Copies pinned and async on the stream the kernels run on still serialise with compute (traces/smell-transfer-pinned-
serial: each pinned copy queued between kernels): a side stream and a prefetch are the fix there, so those copies
do not count as done. What would make it fire falsely: a pageable copy (its call blocks until the copy ends: not
async; the name says Pageable); a pinned copy made with a blocking cudaMemcpy (the call ends with the copy: not
async); a trace whose copies lack their calls (a runtime-only trace without linked calls counts none async). A copy
counts as async only where its call returned ASYNC_RETURN of the copy's time before the copy ended.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import KERNEL, MEMCPY, NONE, Trace

ASYNC_RETURN = 0.5    # a copy is async where its call returned this share of the copy's time before the copy ended
ALL_ASYNC = 0.9       # ... and the copies are async already where this share of their time is such copies


@dataclass(frozen=True)
class CopiesAsync:
    copies: int              # copies over the link (host to device and back)
    copy_ns: int             # their summed time
    pinned_async_ns: int     # of it, pinned copies whose call returned before the copy ended
    call_median_ns: int      # the median launching call's time
    streams: int             # the streams they ran on
    overlap_ns: int          # their summed time less their union: copies running beside each other
    kernels: int             # kernels the trace runs (0: the copies are the workload)
    on_kernel_streams: bool = False   # some copy shares a stream with kernels: it waits for compute, and compute for it

    @property
    def already(self) -> bool:
        """Pinned, asynchronous and off the compute streams already (or nothing to compute): nothing left for
        pin_memory, non_blocking or a side stream to do."""
        return self.copy_ns > 0 and self.pinned_async_ns >= ALL_ASYNC * self.copy_ns and not self.on_kernel_streams


def copies_async(trace: Trace) -> CopiesAsync | None:
    ev = trace.ev
    cp = np.flatnonzero(ev.cat == MEMCPY)
    if not len(cp):
        return None
    link = cp[name_flags(trace, cp, lambda n: "HtoD" in n or "DtoH" in n)]
    if not len(link):
        return None
    dur = ev.end[link] - ev.start[link]
    call = trace.launch_of[link]
    has = call != NONE
    call_end = np.where(has, ev.end[np.where(has, call, 0)], ev.end[link])
    returned_early = has & (ev.end[link] - call_end >= ASYNC_RETURN * dur)
    pinned = name_flags(trace, link, lambda n: "Pinned" in n)
    call_dur = (ev.end[call[has]] - ev.start[call[has]]) if has.any() else np.zeros(1, np.int64)
    us, ue = iv.union(ev.start[link], ev.end[link])
    return CopiesAsync(copies=len(link), copy_ns=int(dur.sum()),
                       pinned_async_ns=int(dur[pinned & returned_early].sum()),
                       call_median_ns=int(np.median(call_dur)), streams=len(distinct(ev.stream[link])),
                       overlap_ns=int(dur.sum()) - int(iv.total(us, ue)),
                       kernels=int((ev.cat == KERNEL).sum()),
                       on_kernel_streams=bool(np.isin(ev.stream[link], ev.stream[ev.cat == KERNEL]).any()))
