"""Who sets the pace, in words (tracetriage.analyzers.triage.pace decides; these only say it): the host's window
around the GPU span, the launch queue that ran dry or stayed full, a GPU-bound span without a cost model, a memory
rate no GPU is that slow at. Each figure is a claim of its line."""
from __future__ import annotations

from typing import Any

from tracetriage.analyzers.model.units import duration_ns, gbps, integer, share, small_share
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.voice.said import claim
from tracetriage.analyzers.whatif.levers import DATALOADER_WORKERS


def idle_window(pace: Any) -> str:
    """'; outside the GPU span the traced window holds 2.67 s more of host time (780.1 ms of it inside the
    DataLoader's __next__): over the whole 2.69 s kernels are busy 0.6%'."""
    w = pace.window if pace is not None else None
    if w is None:
        return ""
    loader = (f" ({claim('idle.window.loader_us', w.loader_ns / 1e3, duration_ns(w.loader_ns))} of it inside the "
              "DataLoader's __next__)" if w.loader_ns else "")
    return (f"; outside the GPU span the traced window holds "
            f"{claim('idle.window.outside_us', w.outside_ns / 1e3, duration_ns(w.outside_ns))} more of host time"
            f"{loader}: over the whole {claim('idle.window.traced_us', w.traced_ns / 1e3, duration_ns(w.traced_ns))}"
            f" kernels are busy {claim('idle.window.busy_share', w.busy_share, small_share(w.busy_share))}")


def regime_window(pace: Any) -> str:
    """'; the traced window is host-bound: kernels are busy 0.6% of its 2.69 s'."""
    w = pace.window if pace is not None else None
    if w is None:
        return ""
    return (f"; the traced window is host-bound: kernels are busy "
            f"{claim('regime.window.busy_share', w.busy_share, small_share(w.busy_share))} of its "
            f"{claim('regime.window.traced_us', w.traced_ns / 1e3, duration_ns(w.traced_ns))}")


QUEUED_MOSTLY = 0.5   # launch-overhead gaps with the next kernel queued already in over half of them: GPU-side bubbles


def queued_bubbles(pace: Any, launch_leads: bool) -> bool:
    """Launch overhead leads, but the next kernel was queued already in most of its gaps and the dry ones fill too
    little of the span for a launch cut: the gaps are the device's own spacing between queued kernels (a graph
    replay's kernel boundaries), not launches it waited on (heldout-user9 vllm_h100: 'mostly launch overhead' of
    0.5 µs gaps, the queue dry in 116 of 13,655). A host-bound loop whose queue runs dry keeps the label."""
    dq = pace.dry if pace is not None else None
    return bool(launch_leads and dq is not None and dq.fills_little and dq.gaps
                and dq.dry_gaps < QUEUED_MOSTLY * dq.gaps)


def mostly_queued(most: str) -> str:
    """The Idle line's 'mostly launch overhead: ...' said as what the gaps are where the next kernel was queued."""
    return most.replace("launch overhead:", "gaps between kernels queued already (counted as launch overhead, but "
                        "GPU-side bubbles at kernel boundaries, no launch the device waited on):", 1)


def idle_dry(pace: Any, launch_leads: bool) -> str:
    """Where launch overhead leads and the queue ran dry in too little of the span for a launch cut to fill:
    '; the queue ran dry in only 1 of them (230.0 µs), the next kernel queued already in the rest'."""
    dq = pace.dry if pace is not None else None
    if not launch_leads or dq is None or not dq.fills_little:
        return ""
    if not dq.dry_gaps:
        return "; in every one the next kernel was queued already (the device's own spacing: the host kept ahead)"
    return (f"; the queue ran dry in only {claim('idle.dry_gaps', dq.dry_gaps, integer(dq.dry_gaps))} of them "
            f"({claim('idle.dry_us', dq.dry_ns / 1e3, duration_ns(dq.dry_ns))}), the next kernel queued already in "
            "the rest")


def because_dry(pace: Any, queued_gaps: int) -> str:
    """In a launch-bound because, the gaps where the queue did run dry, where some had their next kernel queued
    already: ', 25 of them (3.60 ms)'."""
    dq = pace.dry if pace is not None else None
    if dq is None or not queued_gaps:
        return ""
    return (f", {claim('next.because.dry_gaps', dq.dry_gaps, integer(dq.dry_gaps))} of them "
            f"({claim('next.because.dry_us', dq.dry_ns / 1e3, duration_ns(dq.dry_ns))})")


def because_loader_wait(a: Any) -> str:
    """A DataLoader Next's because that cites the wait its prediction rests on, where that wait lies mostly outside
    the GPU's idle the Idle line splits (a first batch's 780 ms __next__ beside a 22.9 ms GPU span was cited as "the
    GPU idles 9% of the span"); "" where the host work's idle holds it."""
    lv = a.next_experiment.lever
    waited = getattr(lv.assumption, "waited_ns", 0) if lv is not None and lv.lever == DATALOADER_WORKERS else 0
    if waited <= a.by_cause_ns.get(Cause.HOST_WORK, 0):
        return ""
    only = " for the trace's only batch" if getattr(lv.assumption, "lone", False) else ""
    return (f"the loop waited {claim('next.because.dataloader_wait_us', waited / 1e3, duration_ns(waited))} "
            f"inside _MultiProcessingDataLoaderIter.__next__{only}, where the GPU's whole span is "
            f"{duration_ns(a.span_ns)}")


def gpu_bound(pace: Any) -> str:
    """A span its kernels fill, said GPU-bound where no cost model tells which roof holds them."""
    b = pace.gpu_bound_share if pace is not None else None
    if b is None and pace is not None and pace.steps_busy_share is not None:
        x = pace.steps_busy_share
        return (f"each steady step's GPU is busy {claim('regime.steps_busy_share', x, share(x))} of its wall (median "
                f"over {pace.steady_steps} steps), so the steps are GPU-bound (their kernels set their length, not the "
                "host); which roof holds them, arithmetic or bytes, is what the shapes would tell")
    if b is None:
        return ""
    return (f"the GPU is busy {claim('regime.busy_share', b, share(b))} of the span, so the span is GPU-bound (its "
            "kernels set its length, not the host); which roof holds them, arithmetic or bytes, is what the shapes "
            "would tell")


def slow_rate_regime(pace: Any) -> str:
    s = pace.slowest_gpu_gbps if pace is not None else None
    if s is None:
        return ""
    return (f", below any GPU's memory bandwidth (the slowest, a GeForce GT 1030, moves {gbps(s)}): not "
            "bandwidth-limited, but held by cold or throttled clocks or small kernels' latency")


def slow_rate_because(pace: Any) -> str:
    if pace is None or pace.slowest_gpu_gbps is None:
        return ""
    return (", a rate below any GPU's memory bandwidth: check the clocks first (nvidia-smi -q -d CLOCK while it runs) "
            "and profile a warm call, since cold or throttled clocks hold these kernels")


def memory_waste(pace: Any) -> str:
    """The week's waste beside a fewer-bytes Next: tensor cores are none where compute-bound kernels hold a third of
    the kernel time."""
    if pace is not None and pace.arithmetic_matters:
        return "CUDA graphs or tuning launches: the kernels' own time is the limit"
    return "more FLOP-efficient kernels or tensor-core tuning: arithmetic is not the limit"
