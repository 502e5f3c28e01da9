"""Per-stream GPU time: what ran on each (device, stream), its span and its idle.

For each CUDA stream we report

    kernel_ns    sum of the durations of the stream's *kernels* (cat KERNEL) only:
                 our notion of "kernel time", the one the report and hotspots use.
    memcpy_ns, memset_ns   the same sums for the stream's copies and memsets.
    activity_ns  kernel_ns + memcpy_ns + memset_ns: every GPU activity on the stream.
                 This is the HTA-comparable number: HTA 0.5.0's idle breakdown calls
                 kernels, memcpys and memsets alike "kernels" (cuda_sync and
                 gpu_user_annotation events are not activities, here or there).
    start_ns, end_ns   first activity start, last activity end; span_ns = end - start.
    busy_ns      the union of the stream's activity intervals (all three categories).
    idle_ns      span_ns - busy_ns: time inside the stream's span when nothing of that
                 stream ran. The same definition as HTA's per-stream idle (first
                 "kernel" start to last "kernel" end, minus the kernels), which HTA
                 computes as the sum of gaps between consecutive activities by start.
    overlap_ns   activity_ns - busy_ns: time where two activities of one stream
                 overlap. Work on one stream is ordered, yet not always disjoint: with
                 programmatic dependent launch (PDL, Hopper) the next kernel may start
                 before the previous one ends. cuBLASLt launches its splitKreduce_kernel
                 that way (cudaLaunchKernelExC) right behind the split-K nvjet GEMM, and
                 CUDA graphs keep the attribute: ~0.1 µs per pair on the H200 samples
                 (gpt-eager 38.5 µs over 400 pairs). Duplicated events would show here
                 too (none in the samples).
    hta_idle_ns  span_ns - activity_ns: HTA 0.5.0's per-stream idle. HTA sums the gaps
                 ts[i] - end[i-1] of the activities sorted by start, so an overlap is a
                 negative gap that cancels real idle elsewhere: its idle is ours minus
                 overlap_ns (exactly, when the last activity to start is also the last to
                 end). Ours (idle_ns) is the time nothing of the stream ran; HTA's is
                 smaller by the PDL overlaps, 0.02 % of gpt-compile's stream idle.

Why per-stream idle does not add up to device idle
--------------------------------------------------
Each stream's idle is measured on its own clock: a gap on the compute stream while a
copy runs on a side stream is idle for the compute stream, yet the device is busy;
and a device-wide gap counts once per stream whose span covers it. With two streams
that overlap (a copy stream feeding a compute stream), the sum of per-stream idle can
exceed the device's idle, or fall short of it (a stream whose span is short sees none
of the device idle outside its span). The sum means nothing. The report therefore uses
*device* idle (tracetriage.analyzers.analyses.idle: no activity on any stream of the device), and this
module exists to compare stream by stream with HTA and to show which stream waited.

All times are int64 ns from tracetriage.analyzers.model.trace; pure numpy (no pandas, no torch).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.trace import GPU_CATS, KERNEL, MEMCPY, MEMSET, Trace


@dataclass(frozen=True)
class StreamStats:
    """One (device, stream): counts and times in integer ns."""
    device: int
    stream: int
    kernels: int        # activities of cat KERNEL
    activities: int     # KERNEL + MEMCPY + MEMSET
    kernel_ns: int      # kernels only (our kernel time)
    memcpy_ns: int
    memset_ns: int
    start_ns: int       # first activity start
    end_ns: int         # last activity end
    busy_ns: int        # union of the activity intervals

    @property
    def activity_ns(self) -> int:
        """Kernels + memcpys + memsets: HTA's per-stream "kernel" time."""
        return self.kernel_ns + self.memcpy_ns + self.memset_ns

    @property
    def span_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def idle_ns(self) -> int:
        """Span minus the union of the stream's activities (kernels, copies, memsets)."""
        return self.span_ns - self.busy_ns

    @property
    def overlap_ns(self) -> int:
        """Time where two activities of this stream overlap (PDL, duplicates)."""
        return self.activity_ns - self.busy_ns

    @property
    def hta_idle_ns(self) -> int:
        """HTA's per-stream idle: span minus the sum of durations (overlaps subtract)."""
        return self.span_ns - self.activity_ns


def _sum_where(dur: np.ndarray, mask: np.ndarray) -> int:
    return int(dur[mask].sum()) if mask.any() else 0


def per_stream(trace: Trace) -> list[StreamStats]:
    """Every (device, stream) with GPU activity, sorted by device then stream.

    Activities are the rows of cat KERNEL, MEMCPY or MEMSET (not cuda_sync, not
    gpu_user_annotation). Rows are counted as they are in the trace: duplicates are
    not dropped (they would show as overlap_ns > 0).
    """
    ev = trace.ev
    rows = trace.idx(*GPU_CATS)
    if len(rows) == 0:
        return []
    dev, stream = ev.device[rows].astype(np.int64), ev.stream[rows]
    start, end, cat = ev.start[rows], ev.end[rows], ev.cat[rows]
    # group by (device, stream), each group in start order (stable: ev is sorted by start)
    order = np.lexsort((start, stream, dev))
    dev, stream, start, end, cat = dev[order], stream[order], start[order], end[order], cat[order]
    dur = end - start
    new = np.ones(len(order), dtype=bool)
    new[1:] = (dev[1:] != dev[:-1]) | (stream[1:] != stream[:-1])
    bounds = np.append(np.flatnonzero(new), len(order))
    out: list[StreamStats] = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        s, e, c, d = start[a:b], end[a:b], cat[a:b], dur[a:b]
        us, ue = iv.union(s, e)
        out.append(StreamStats(
            device=int(dev[a]), stream=int(stream[a]),
            kernels=int(np.count_nonzero(c == KERNEL)), activities=int(b - a),
            kernel_ns=_sum_where(d, c == KERNEL), memcpy_ns=_sum_where(d, c == MEMCPY),
            memset_ns=_sum_where(d, c == MEMSET),
            start_ns=int(s.min()), end_ns=int(e.max()), busy_ns=iv.total(us, ue)))
    return out


def kernel_time_ns(trace: Trace, *, include_copies: bool = False) -> dict[int, int]:
    """Sum of kernel durations per device (ns), over all its streams.

    include_copies=False (default): kernels only, our kernel time.
    include_copies=True: kernels + memcpys + memsets, the total of HTA 0.5.0's idle
    breakdown "kernels". HTA's get_gpu_kernel_breakdown total is not this: it takes
    every event with an args.stream, so it also counts Inductor's triton cpu_ops
    (CPU time; "stream": 0) and cuda_sync "Stream Wait Event" rows (+79 % on
    gpt-compile, +0.18 % on healthy-overlap), and leaves out names that contain
    "Sync" or a non-leading "Memcpy".
    A sum of durations, not a union: kernels on two streams that overlap both count.
    """
    totals: dict[int, int] = {}
    for st in per_stream(trace):
        value = st.activity_ns if include_copies else st.kernel_ns
        totals[st.device] = totals.get(st.device, 0) + value
    return totals
