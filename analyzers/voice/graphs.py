"""The words for CUDA/HIP-graph captures in a profile: the caveat that names them, and the Next experiment
when the profile is mostly a capture (profile the replays).
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import count, duration_ns, share
from tracetriage.analyzers.voice.said import claim


def capture_caveat(c) -> str:
    return (f"the trace captures {count(c.graphs, 'CUDA graph')} ({count(c.recorded, 'launch', 'launches')} "
            f"recorded into graphs, not run; {duration_ns(c.window_ns)} of capture and instantiation): the "
            f"{duration_ns(c.idle_ns)} the device idles meanwhile ({share(c.share)} of the span) is one-time "
            "set-up that the replays never pay")


def capture_next(c) -> dict[str, str]:
    return {"lever": "profile the replays, not the capture: start the profiler once the graphs are captured (vLLM "
                     "and SGLang capture at start-up; torch.compile's reduce-overhead on the first calls), then "
                     "triage again, passing this capture's trace with --graph-capture to charge the replayed "
                     "kernels to their ops",
            "why": f"{claim('next.because.capture_share', c.share, share(c.share))} of the span is the device idling "
                   "while the host captures "
                   f"{count(c.graphs, 'CUDA graph')} ({count(c.recorded, 'launch', 'launches')} recorded, not run)",
            "waste": "cutting launches or adding CUDA graphs: these launches are the graph capture itself"}
