"""The words for CUDA/HIP-graph captures in a profile: the caveat that names them, and the Next experiment
when the profile is mostly a capture (profile the replays).
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import count, duration_ns, integer, share
from tracetriage.analyzers.voice.said import claim


def _recorded(c) -> str:
    """'12 launches recorded into graphs, not run', or where the profiler recorded no launch made under the capture
    (heldout-user19 gp_cudagraph: '0 launches recorded into graphs' beside replays of 11 kernels) that it did not."""
    if not c.recorded:
        return "the profiler recorded none of the launches made under " + ("it" if c.graphs == 1 else "them")
    return f"{count(c.recorded, 'launch', 'launches')} recorded into graphs, not run"


def capture_caveat(c) -> str:
    return (f"the trace captures {count(c.graphs, 'CUDA graph')} ({_recorded(c)}; "
            f"{duration_ns(c.window_ns)} of capture and instantiation): the "
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


def _clock(r) -> str:
    """The host's clock on replays laid end to end: what its sync shows beyond the kernels' own time."""
    if r.sync is None or r.host_ns <= 0:
        return "; no sync after it returns on the host to bound it"
    unseen = r.unseen_ns / r.host_ns
    over = f" (summed over {integer(r.windows)} replays)" if r.windows > 1 else ""
    return (f"; the host's clock shows it: {r.sync} returned {duration_ns(r.host_ns)}{over} after {r.launch} did, for "
            f"{duration_ns(r.kernel_ns)} of kernel time, so about {duration_ns(r.unseen_ns)} ({share(unseen)} of "
            "that wait) is idle or dispatch between the kernels")


def _laid(r) -> str:
    replays = "the graph replay" if r.replays == 1 else f"the {r.replays} graph replays"
    return (f"the timestamps cannot show idle inside {replays}: the profiler laid its "
            f"{count(r.kernels, 'kernel')} end to end (gaps of {max(r.max_gap_ns, 1)} ns at most, where a "
            "device spends hundreds of ns between two kernels)")


def replay_measured(r) -> str:
    """The Measured line's busy clause where replays' stamps are laid end to end: no busy share is measured."""
    return "its kernels laid end to end by the profiler's stamps, not a measured busy share"


def replay_idle(r, idle_elsewhere: bool) -> str:
    """The Idle line's words on replays laid end to end: a whole line where no other idle is found, else a clause."""
    said = _laid(r) + _clock(r)
    return ("; " + said) if idle_elsewhere else f"Idle: {said}."


def replay_next(r, uncosted: str, waste: str) -> dict[str, str]:
    """The Next where the kernel time has no cost model and the replays' stamps hide what runs between kernels:
    the check the trace calls for (a tracer that stamps each kernel), not a re-capture to feed the cost model."""
    tracer = "rocprofv3 --kernel-trace" if r.launch.startswith("hip") else "nsys profile --cuda-graph-trace=node"
    per = r.unseen_ns / max(r.kernels, 1) / 1e3
    return {"lever": f"time the replay's kernels with a tracer that stamps each one ({tracer}), without "
                     "torch.profiler: where they stand apart, fewer and larger kernels (fusing, more work per launch) "
                     "is the lever",
            "why": f"the host's clock holds {duration_ns(r.unseen_ns)} of the replay beyond its "
                   f"{duration_ns(r.kernel_ns)} of kernels (about {per:.1f} µs per kernel of {integer(r.kernels)}), "
                   f"which the profiler's stamps laid end to end cannot place, and {uncosted}",
            "waste": waste}


def replay_gaps_mostly(g) -> str:
    """The Idle line's 'mostly ...' where graph replays hold most kernels: the replays' own spacing apart from the
    idle between them (no per-kernel launch cost: a replayed kernel has no launch call of its own)."""
    return (f"launch overhead, though the kernels replay from CUDA graphs: {integer(g.graphed)} of the "
            f"{count(g.kernels, 'kernel')} come from {count(g.replays, 'graph launch', 'graph launches')} (each call "
            f"{duration_ns(g.launch_median_ns)}, median), and the {count(g.inside, 'gap')} inside the replays (median "
            f"{duration_ns(g.inside_median_ns)}, {duration_ns(g.inside_ns)} in all) are the device's own spacing "
            f"between a graph's kernels, with no launch call of their own; the other {duration_ns(g.outside_ns)} is "
            f"in {count(g.outside, 'gap')} between replays"
            + (" and around the work launched one by one" if g.graphed < g.kernels else "")
            + f" (the longest {duration_ns(g.longest_ns)})")


def graphs_aside(sync_next: bool) -> str:
    """In place of pricing CUDA graphs beside a Next, where the kernels replay from graphs already."""
    return ("; launch overhead holds more of the idle, but the kernels replay from CUDA graphs already: that idle sits "
            "between replays" + (", where the host launches the next graph only once the sync before it returns"
                                 if sync_next else ""))


def inflated_launches(g, moves_host_time: bool) -> str:
    """After a prediction that overlaps or removes the host's time around the graph launches (`moves_host_time`: a
    sync's or host work's fix), where those calls are as long as the profiler makes them."""
    if g is None or not g.launch_inflated or not moves_host_time:
        return ""
    return (f"; less without the profiler: each graph launch call takes {duration_ns(g.launch_median_ns)} here "
            "(median), a cost the profiler's records of every replayed kernel inflate, so part of the host time this "
            "prices is the profiler's")
