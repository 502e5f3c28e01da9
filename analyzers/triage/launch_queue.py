"""Where the launch queue ran dry: the launch-overhead gaps a launch cut can fill.

Input: the devices' idle (analyses.idle: each gap with its cause and the launch call that ended it). Output: a
`DryQueue`: of the launch-overhead gaps, those where the queue ran dry (the next kernel's launch call began after
the gap did: the host was still dispatching when the device drained) and the idle they hold.

A launch-overhead gap is the device's idle between two kernels with no sync, copy or long host stretch to blame. In
any trace it is one of two things: the queue ran dry (the host issued the next kernel after the device finished the
last: dispatch and launch are the pace) or the next kernel was queued already (the device's own spacing between
queued kernels, ~1 µs). CUDA graphs and bigger launches fill the first kind; the second is no host cost at all. A
GPU 97% busy in 24 back-to-back 191 µs kernels, 22 of its 23 gaps queued and 1 µs long, was told to capture CUDA
graphs "where the queue ran dry" for −18% that the replay found in the host's cudaMalloc before the first kernel.

The launch levers (CUDA graphs) are not called for where the dry gaps hold under DRY_FLOOR of the span: inside the
GPU span no launch cut can give back more than they hold, and a replay that prices more finds it outside the span
(the host's lead-in: set-up). It would fire falsely on a trace whose host lead-in is itself a steady loop's
dispatch cut short by the profiler window (the first kernels of a window opened mid-loop): there the gaps inside the
span still show the dry queue, so the rule keeps the lever.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.trace import NONE, Trace
from tracetriage.analyzers.model.verdicts import CAUSES, Cause

# the share of the span the dry gaps must hold for a launch cut to be the experiment: the report's LEVER_FLOOR (a
# lever saving under 3% of the span is no experiment worth naming), applied to what a cut can fill inside the span
DRY_FLOOR = 0.03
_LAUNCH = CAUSES.index(Cause.LAUNCH_OVERHEAD)


@dataclass(frozen=True)
class DryQueue:
    gaps: int             # launch-overhead gaps (whole ones)
    dry_gaps: int         # of them, where the queue ran dry
    dry_ns: int           # the idle those hold
    span_ns: int

    @property
    def fills_little(self) -> bool:
        """The dry gaps hold under DRY_FLOOR of the span: no launch cut is the experiment."""
        return self.gaps > 0 and self.dry_ns < DRY_FLOOR * self.span_ns


def dry_queue(trace: Trace, devs) -> DryQueue | None:
    """On the device whose idle the report's evidence describes (the one that idles most), as its launch evidence."""
    if not devs:
        return None
    ev = trace.ev
    top = max(devs, key=lambda d: d.idle_ns)
    g = top.gaps
    m = g.cause == _LAUNCH
    host = g.host_row[m]
    ran_dry = (host == NONE) | (ev.start[np.maximum(host, 0)] > g.start[m])
    whole = g.whole(m)[m]
    gaps, dry = int(whole.sum()), int((ran_dry & whole).sum())
    dry_ns = int((g.end[m] - g.start[m])[ran_dry].sum())
    return DryQueue(gaps=gaps, dry_gaps=dry, dry_ns=dry_ns, span_ns=top.span_ns)
