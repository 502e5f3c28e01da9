"""The recurring part of a traced span: what a steady state would still show once the one-time set-up is gone.

Why: the Regime verdict reads the device's idle share. A cold start (first calls: lazy module loads, a first NCCL
launch, cuDNN's first heuristics) can hold most of a short profile's idle, and then every such profile reads "the
device idles over half the span", whatever the work after it waits on. heldout-user18 llama4l_4090: 425.9 ms of its
435.7 ms idle is one-time set-up, and the 380 ms after it are NCCL reduce-scatters and all-gathers over PCIe (85% of
kernel time, the device busy 97% of it) read "set-up-bound (a cold start)"; its rank 1, whose set-up was a little
shorter (47% idle), read "communication-bound". The set-up gaps are taken out of both the idle and the span before the
verdict; the cold start stays said as the Regime's qualifier and the Next's warm-up.

What would make it fire falsely: set-up counted that recurs (a first call's cost paid again each step); the idle
evidence keeps those apart (evidence.RecurringCost), so they stay in the idle here.
"""
from __future__ import annotations

from tracetriage.analyzers.model.evidence import Evidence, FirstCall, HostEvidence
from tracetriage.analyzers.model.verdicts import Cause


def evidence_of(devices) -> dict[Cause, Evidence]:
    """The evidence of the device that idles most."""
    return max(devices, key=lambda d: d.idle_ns).evidence if devices else {}


def warmup(devices) -> tuple[FirstCall, ...]:
    """The first calls caught as one-time set-up on the device that idles most."""
    ev = evidence_of(devices).get(Cause.HOST_WORK)
    return ev.warmup if isinstance(ev, HostEvidence) else ()


def warmup_share(devices, span_ns: int) -> float:
    """The set-up's time inside the idle gaps, of the span: a first call that began before the GPU span counts only
    there."""
    return min(1.0, sum(w.idle_us for w in warmup(devices)) * 1e3 / span_ns) if span_ns else 0.0


def setup_gaps_ns(devices) -> int:
    """Every device's idle gap time the host spent in one-time set-up (HostEvidence.setup_us)."""
    total = 0.0
    for d in devices:
        ev = d.evidence.get(Cause.HOST_WORK)
        total += ev.setup_us * 1e3 if isinstance(ev, HostEvidence) else 0.0
    return int(total)


def recurring_idle_share(devices, idle_ns: int, span_ns: int) -> float:
    """The idle share of the span with its one-time set-up gaps taken out of both (the regime's idle share)."""
    setup = min(setup_gaps_ns(devices), idle_ns)
    left = span_ns - setup
    return (idle_ns - setup) / left if left > 0 else (idle_ns / span_ns if span_ns else 0.0)
