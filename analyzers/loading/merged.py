"""Merged multi-rank files: several ranks' traces in one file, told apart and split back per rank.

Trace-fusion tools (TraceLens's TraceFusion, for Perfetto) write every rank's events into one
`{"traceEvents": [...]}`: pids, flow ids and correlation ids offset by rank (rank x 10^k), each event
tagged `args.rank`, the per-rank metadata (deviceProperties, distributedInfo) dropped. Read as one
trace it is nonsense: one "device" whose span runs from the first rank's first kernel to the last
rank's last (on clocks that differ between hosts), busy time and kernel counts of several GPUs added
up, and External ids that collide across ranks (the tools do not offset them). So loading records
which pid belongs to which rank (tracetriage.analyzers.loading.decode reads each pid's first tag), the triage
refuses to analyse the whole (MergedRanks), and `rank_trace` gives each rank back as its own Trace,
linked on its own events: `tracetriage report FILE` reports the ranks like a directory.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tracetriage.analyzers.loading.link import link
from tracetriage.analyzers.model.trace import Tables, Trace, TraceError

_FILE_CAVEATS = ("dropped_events", "duplicate_events")   # the file's, not one rank's links


class MergedRanks(TraceError):
    """The trace merges several ranks: analyse each (rank_trace), never the whole. Carries the loaded
    trace so the caller can split it without loading it again."""

    def __init__(self, trace: Trace):
        ranks = ranks_of(trace)
        super().__init__(f"{trace.path} merges the traces of {len(ranks)} ranks ({', '.join(map(str, ranks))}; "
                         "tagged args.rank by a trace-fusion tool): `tracetriage report FILE` reports each rank and "
                         "the straggler, as for a directory of rank traces")
        self.trace = trace


def ranks_of(trace: Trace) -> tuple[int, ...]:
    """The ranks a merged file holds, in order; () for a trace of one rank."""
    return tuple(sorted(set(trace.merged_ranks.values())))


def member_label(path: str, rank: int) -> str:
    """How one rank of a merged file is named: 'run.json.gz#1' (a rank source's selector)."""
    return f"{path}#{rank}"


def rank_trace(trace: Trace, rank: int) -> Trace:
    """One rank of a merged file as a trace of its own: its processes' events, linked among themselves."""
    pids = [p for p, r in trace.merged_ranks.items() if r == rank]
    if not pids:
        raise TraceError(f"{trace.path} holds no rank {rank}; its ranks: {', '.join(map(str, ranks_of(trace)))}")
    rows = np.flatnonzero(np.isin(trace.ev.pid, np.array(pids, np.int64)))
    tables = Tables(path=member_label(trace.path, rank), names=trace.names, ev=trace.ev.take(rows),
                    device_names=trace.device_names, rank=rank, world_size=len(ranks_of(trace)),
                    base_time_ns=trace.base_time_ns, events_in_file=int(len(rows)), shapes_raw=trace.shapes_raw,
                    caveats=tuple(c for c in trace.caveats if c.kind in _FILE_CAVEATS), merged_ranks={})
    return replace(link(tables), side=trace.side)
