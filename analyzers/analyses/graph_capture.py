"""A profile that holds CUDA/HIP-graph captures: what the device idled while the host recorded graphs.

While a stream is captured (cudaStreamBeginCapture ... EndCapture, then cudaGraphInstantiate) every
launch call records a node and runs nothing, so the device idles behind a host that looks like it is
launching as fast as it can: read as launch overhead, a capture would be told to use CUDA graphs.
It is one-time set-up (vLLM captures its graphs at start-up, torch.compile's reduce-overhead on the
first calls): the replays that follow never pay it. When it holds a large share of the span, the
profile is of the capture, and the experiment is to profile the replays.
"""
from __future__ import annotations

from dataclasses import dataclass

from tracetriage.analyzers.analyses.idle import DeviceIdle
from tracetriage.analyzers.loading.graphs import capture_windows, captures
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.trace import Trace

CAPTURE_IS_THE_PROFILE = 0.25    # device idle inside graph captures this large a share of the span: the
                                 # profile is of the capture (as one-time set-up is,
                                 # tracetriage.analyzers.triage.report)


@dataclass(frozen=True)
class GraphCapture:
    graphs: int          # captures in the trace
    recorded: int        # launch and copy calls that recorded a node instead of running
    window_ns: int       # the host's time capturing and instantiating (the windows' union)
    idle_ns: int         # device idle inside those windows: what the captures cost this profile
    span_ns: int

    @property
    def share(self) -> float:
        return self.idle_ns / self.span_ns if self.span_ns else 0.0

    @property
    def is_the_profile(self) -> bool:
        """The captures hold so much of the span that the profile shows set-up, not the replayed steady state."""
        return self.share >= CAPTURE_IS_THE_PROFILE


def analyze(trace: Trace, devices: tuple[DeviceIdle, ...]) -> GraphCapture | None:
    """The trace's graph captures against its devices' idle gaps; None when it captures no graph."""
    _, _, start, end = capture_windows(trace)
    if not len(start):
        return None
    ws, we = iv.union(start, end)
    idle = 0
    for d in devices:
        g = d.gaps
        gs, ge = iv.union(g.start, g.end)
        idle += iv.total(*iv.intersect(ws, we, gs, ge))
    recorded = sum(len(c.calls) for c in captures(trace))
    return GraphCapture(graphs=len(start), recorded=recorded, window_ns=iv.total(ws, we), idle_ns=int(idle),
                        span_ns=int(sum(d.span_ns for d in devices)))
