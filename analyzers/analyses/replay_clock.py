"""Graph replays whose kernel timestamps the profiler laid end to end, and what the host's clock says instead.

Some profilers stamp the kernels of one CUDA/HIP graph replay as if each began the instant the one before it ended
(heldout-user16 pi0_mi350, ROCm: 1,520 replayed kernels, every gap between two of them 1.5 ns or less). No device
starts a kernel within a few ns of the last one's end, even inside a graph (pi0_h200's CUDA-graph replays: 0.4 µs
median between kernels), so such a replay reads "busy 100%, never idles" because its clock cannot show idle, not
because there is none. The host's clock still bounds it: the stream sync after the launch returns only once the
replay is done (pi0_mi350: hipStreamSynchronize returns 22.7 ms after hipGraphLaunch does, for 15.0 ms of kernels).

What would make it fire falsely: a replay whose kernels truly ran back to back within SERIAL_GAP_NS (none has been
seen: a kernel's launch inside a graph costs the device hundreds of ns); a sync that waits for other work as well
(eager kernels launched between the replay and the sync count in `kernel_ns`, so they are not taken for idle).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.runtime_calls import is_graph_launch, is_sync
from tracetriage.analyzers.model.trace import CLOCK_TOL_NS, DRIVER, KERNEL, MEMCPY, MEMSET, NONE, RUNTIME, Trace

SERIAL_GAP_NS = 10        # a gap between two kernels of one replay this short or shorter is the profiler's stamp
SERIAL_SHARE = 0.95       # ... in this share of a replay's gaps, or more: its timestamps are laid end to end
MIN_KERNELS = 16          # a replay of fewer kernels says too little about its clock to override the timeline
MAX_WINDOWS = 256         # replays whose host window is read, at most (`windows` says how many were)
GPU_ACTIVITY = (KERNEL, MEMCPY, MEMSET)
INFLATED_LAUNCH_NS = 100_000   # a graph launch call this long: the profiler's per-node records inflate it (an
                               # unprofiled launch of a few hundred nodes takes tens of µs; pi0_h200: 548 µs profiled)
BUSY_UNMEASURED = 0.5     # replays laid end to end holding this share of the kernels, or more: the busy share is theirs


@dataclass(frozen=True)
class ReplayClock:
    replays: int              # graph replays whose kernels are laid end to end
    kernels: int              # their kernels
    max_gap_ns: int           # the largest gap between two kernels of one of them
    launch: str               # the graph launch call (hipGraphLaunch, cudaGraphLaunch)
    sync: str | None = None   # the host's sync that waited for them; None: no sync after them closes the window
    host_ns: int = 0          # from the launch calls' return to the syncs' return: the host's clock on the replays
    windows: int = 0          # the replays those windows cover (the first MAX_WINDOWS)
    kernel_ns: int = 0        # the kernel time the devices ran inside those windows (by their own durations)
    busy_unmeasured: bool = False   # they hold most kernels: the trace's busy share is their stamps', not measured

    @property
    def unseen_ns(self) -> int:
        """What the host's clock holds beyond the kernels' own time: idle and dispatch between kernels that the
        laid-end-to-end timestamps cannot show (0: no sync closes the window, or it holds no more)."""
        return max(0, self.host_ns - self.kernel_ns)


def _replayed(trace: Trace) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray] | None:
    """The graph launch calls' name ids, every kernel's row, its launch call's row and whether that call is a
    graph launch; None where the trace holds no graph launch."""
    ev = trace.ev
    graph_ids = [i for i, n in enumerate(trace.names) if is_graph_launch(n)]
    if not graph_ids:
        return None
    kernels = np.flatnonzero(ev.cat == KERNEL)
    call = trace.launch_of[kernels]
    replayed = call != NONE
    replayed[replayed] = np.isin(ev.name[call[replayed]], graph_ids)
    return graph_ids, kernels, call, replayed


def replay_clock(trace: Trace) -> ReplayClock | None:
    """The replays whose kernels are laid end to end, with the host's own clock on them; None where no replay is."""
    ev = trace.ev
    found = _replayed(trace)
    if found is None:
        return None
    _, all_kernels, call, replayed = found
    kernels, call = all_kernels[replayed], call[replayed]
    serial, max_gap = [], 0
    # each replay's kernels, by its launch call then start: one sort, not a pass over every kernel per replay
    order = np.lexsort((ev.start[kernels], call))
    kernels, call = kernels[order], call[order]
    cuts = np.flatnonzero(np.diff(call)) + 1
    for k in np.split(kernels, cuts):
        if len(k) < MIN_KERNELS:
            continue
        launch = int(trace.launch_of[k[0]])
        gaps = ev.start[k[1:]] - ev.end[k[:-1]]
        if np.mean(gaps <= SERIAL_GAP_NS) >= SERIAL_SHARE:
            serial.append((launch, k))
            max_gap = max(max_gap, int(np.max(gaps)))
    if not serial:
        return None
    launch_name = trace.name_of(serial[0][0])
    sync, host_ns, kernel_ns = _host_clock(trace, serial)
    windows = min(len(serial), MAX_WINDOWS) if sync is not None else 0
    laid = sum(len(k) for _, k in serial)
    return ReplayClock(replays=len(serial), kernels=laid, max_gap_ns=max_gap, launch=launch_name, sync=sync,
                       host_ns=host_ns, kernel_ns=kernel_ns, windows=windows,
                       busy_unmeasured=laid >= BUSY_UNMEASURED * len(all_kernels))


def _host_clock(trace: Trace, serial: list) -> tuple[str | None, int, int]:
    """Each replay's window on the host: from its launch call's return to the return of the first sync on that
    thread after it (before the thread's next graph launch), where the sync returns after the replay's last
    recorded kernel (else the clocks disagree and the window says nothing). A replay without one gives none."""
    ev = trace.ev
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    call_names = [trace.names[i] for i in ev.name[calls].tolist()]
    syncs = calls[np.array([is_sync(n) for n in call_names], bool)] if len(calls) else calls
    graphs = calls[np.array([is_graph_launch(n) for n in call_names], bool)] if len(calls) else calls
    gpu = np.flatnonzero(ev.cat == KERNEL)
    gpu = gpu[np.argsort(ev.start[gpu], kind="stable")]
    starts, longest = ev.start[gpu], int(np.max(ev.end[gpu] - ev.start[gpu]))
    sync_name, host_ns, kernel_ns = None, 0, 0
    for launch, k in serial[:MAX_WINDOWS]:
        same = syncs[(ev.tid[syncs] == ev.tid[launch]) & (ev.pid[syncs] == ev.pid[launch])
                     & (ev.start[syncs] >= ev.end[launch])]
        later = graphs[(ev.tid[graphs] == ev.tid[launch]) & (ev.start[graphs] > ev.start[launch])]
        if len(later):
            same = same[ev.start[same] < ev.start[later].min()]
        if not len(same):
            return None, 0, 0
        s = same[np.argmin(ev.start[same])]
        if ev.end[s] + CLOCK_TOL_NS < ev.end[k[-1]]:
            return None, 0, 0
        lo, hi = int(ev.end[launch]), int(ev.end[s])
        # the replay's kernels whole (their stamps place none of them: some may run before the launch returns),
        # and any other kernel inside the window by its part in it
        near = gpu[np.searchsorted(starts, lo - longest):np.searchsorted(starts, hi)]
        other = near[(ev.end[near] > lo) & ~np.isin(near, k)]
        sync_name = trace.name_of(int(s))
        host_ns += hi - lo
        kernel_ns += int(np.sum(ev.end[k] - ev.start[k]))
        kernel_ns += int(np.sum(np.minimum(ev.end[other], hi) - np.maximum(ev.start[other], lo)))
    return sync_name, host_ns, kernel_ns


@dataclass(frozen=True)
class ReplayGaps:
    """Where the device idles in a trace whose kernels mostly replay from graphs: inside a replay the device spaces
    a graph's kernels itself (no launch call of their own), so the idle a fix can reach sits between replays.
    heldout-user16 pi0_h200 (12 cudaGraphLaunch, 4,782 of 4,845 kernels): '4,379 gaps with a median of 0.4 µs
    between kernels ...; a launch call takes 5.9 µs' called the replays' own spacing launch overhead."""
    replays: int              # graph launches whose kernels ran
    graphed: int              # kernels they replayed
    kernels: int              # every kernel
    inside: int               # gaps between two activities of one replay
    inside_ns: int
    inside_median_ns: int
    outside: int              # the other gaps (between replays, or around work launched one by one)
    outside_ns: int
    longest_ns: int           # the longest of those
    launch_median_ns: int     # a graph launch call's median duration

    @property
    def launch_inflated(self) -> bool:
        """The graph launch calls are as long as the profiler makes them: host time a prediction overlaps or
        removes around them is partly the profiler's."""
        return self.launch_median_ns >= INFLATED_LAUNCH_NS


def replay_gaps(trace: Trace) -> ReplayGaps | None:
    """The gaps inside and between graph replays, where replays hold most of the kernels (BUSY_UNMEASURED) and their
    stamps are not laid end to end (replay_clock says those); None elsewhere."""
    ev = trace.ev
    found = _replayed(trace)
    if found is None:
        return None
    graph_ids, kernels, call, graphed = found
    if not len(kernels) or graphed.sum() < BUSY_UNMEASURED * len(kernels):
        return None
    gpu = np.flatnonzero(np.isin(ev.cat, GPU_ACTIVITY))
    inside: list[np.ndarray] = []
    outside: list[np.ndarray] = []
    for dev in distinct(ev.device[gpu]).tolist():
        rows = gpu[ev.device[gpu] == dev]
        rows = rows[np.argsort(ev.start[rows], kind="stable")]
        reach = np.maximum.accumulate(ev.end[rows])
        # the row whose end is the reach so far: the activity a gap follows
        last = np.maximum.accumulate(np.where(ev.end[rows] >= reach, np.arange(len(rows)), 0))
        at = np.flatnonzero(ev.start[rows[1:]] > reach[:-1])
        gap = ev.start[rows[at + 1]] - reach[at]
        before, after = trace.launch_of[rows[last[at]]], trace.launch_of[rows[at + 1]]
        same = (before == after) & (before != NONE)
        same[same] = np.isin(ev.name[before[same]], graph_ids)
        inside.append(gap[same])
        outside.append(gap[~same])
    ins, out = np.concatenate(inside), np.concatenate(outside)
    if not len(ins) or np.median(ins) <= SERIAL_GAP_NS:
        return None
    launches = distinct(call[graphed])
    dur = ev.end[launches] - ev.start[launches]
    return ReplayGaps(replays=len(launches), graphed=int(graphed.sum()), kernels=len(kernels), inside=len(ins),
                      inside_ns=int(ins.sum()), inside_median_ns=int(np.median(ins)), outside=len(out),
                      outside_ns=int(out.sum()), longest_ns=int(out.max()) if len(out) else 0,
                      launch_median_ns=int(np.median(dur)))
