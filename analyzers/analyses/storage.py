"""The byte ledger of each named range: the storage it leaves, its temporaries, its copies, and whether it is a view.

With profile_memory=True the allocator writes a [memory] event for every allocation (+bytes) and free (-bytes),
with its address. Inside one range instance (a `record_function` around one line of code, or one op):
- kept bytes: allocations made inside it whose address is not freed inside it: the new storage the line leaves
  (the tensor it returns; a line that rebinds a name frees the old tensor, which was allocated before, so a free
  of an older allocation is not this line's temporary);
- temporary bytes: allocations made and freed inside it (the mask of `x[x > 0]`, the quotient of `(x - m) / s`);
- GPU work launched from inside it (tracetriage.analyzers.analyses.ranges): kernels, copies and their bytes.
A range that leaves no new storage is a view (or the tensor itself: `x.contiguous()` of a contiguous `x`,
`x.to(x.dtype)`); one that does is a copy. Without [memory] events, a range that launches GPU work is a copy.

Input: the Trace, its RangeStats, the [memory] events (tracetriage.analyzers.model.launch_args.MemoryEvents).
Output: RangeLedger per range name, in the order the ranges first run.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.ranges import RangeStats
from tracetriage.analyzers.model.launch_args import MemoryEvents
from tracetriage.analyzers.model.trace import KERNEL, MEMCPY, NONE, Trace

HOST, CUDA = 0, 1   # torch's DeviceType codes in a [memory] event


@dataclass(frozen=True)
class RangeLedger:
    name: str
    kept_bytes: int            # new storage the range leaves behind
    kept_host_bytes: int       # ... of which on the host
    temp_bytes: int            # allocated and freed inside the range
    allocations: int           # allocations made inside the range (kept and temporary)
    kernels: int               # kernels launched from inside it
    copies: int                # memcpy activities launched from inside it
    copy_bytes: int            # their bytes (a host-to-device move of the line's tensor)
    kernel_us: float           # device time of its kernels
    copy_us: float             # device time of its copies
    host_us: float             # the range's own CPU interval
    wall_us: float             # from its start to the later of its end and its GPU work's end
    memory_recorded: bool      # the trace holds [memory] events (profile_memory=True)

    @property
    def view(self) -> bool:
        """No new storage: a view of an input, or the input itself."""
        if self.memory_recorded:
            return self.kept_bytes == 0
        return self.kernels == 0 and self.copies == 0

    @property
    def device_kept_bytes(self) -> int:
        return self.kept_bytes - self.kept_host_bytes


def ledger(trace: Trace, ranges: list[RangeStats], memory: MemoryEvents) -> tuple[RangeLedger, ...]:
    """Each range's first instance (a line runs once per window) as a byte ledger."""
    ev = trace.ev
    recorded = len(memory) > 0
    out = []
    for r in ranges:
        if r.instances is None or not len(r.instances):
            continue
        first = int(np.argmin(ev.start[r.instances]))
        row = r.instances[first]
        s, e, tid = int(ev.start[row]), int(ev.end[row]), int(ev.tid[row])
        kept, kept_host, temp, n = _allocations(memory, s, e, tid)
        # the GPU work of this instance: launched by a call inside [s, e) (RangeStats holds every instance's)
        g = r.gpu_rows
        calls = trace.launch_of[g]
        call_start = np.where(calls != NONE, ev.start[np.maximum(calls, 0)], -1)
        mine = g[(call_start >= s) & (call_start < e)]
        k = mine[ev.cat[mine] == KERNEL]
        c = mine[ev.cat[mine] == MEMCPY]
        nb = ev.nbytes[c]
        wall_end = max(e, int(ev.end[mine].max()) if len(mine) else e)
        out.append(RangeLedger(name=r.name, kept_bytes=kept, kept_host_bytes=kept_host, temp_bytes=temp,
                               allocations=n, kernels=len(k), copies=len(c), copy_bytes=int(nb[nb > 0].sum()),
                               kernel_us=float((ev.end[k] - ev.start[k]).sum()) / 1e3,
                               copy_us=float((ev.end[c] - ev.start[c]).sum()) / 1e3, host_us=(e - s) / 1e3,
                               wall_us=(wall_end - s) / 1e3, memory_recorded=recorded))
    return tuple(out)


def _allocations(m: MemoryEvents, start: int, end: int, tid: int) -> tuple[int, int, int, int]:
    """(kept bytes, of them on the host, temporary bytes, allocations) of the [memory] events in [start, end] on one
    thread: an allocation is temporary when a free of its address follows it inside the interval."""
    inside = np.flatnonzero((m.ts >= start) & (m.ts <= end) & (m.tid == tid))
    if not len(inside):
        return 0, 0, 0, 0
    inside = inside[np.argsort(m.ts[inside], kind="stable")]
    kept = kept_host = temp = n = 0
    live: dict[tuple[int, int], tuple[int, int]] = {}   # (device type, address) -> (bytes, device type)
    for i in inside.tolist():
        key = (int(m.device_type[i]), int(m.addr[i]))
        b = int(m.nbytes[i])
        if b > 0:
            live[key] = (b, key[0])
            n += 1
        elif b < 0 and key in live:
            temp += live.pop(key)[0]
    for b, dev in live.values():
        kept += b
        kept_host += b if dev == HOST else 0
    return kept, kept_host, temp, n
