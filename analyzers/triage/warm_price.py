"""A warm-up's price where its replay finds less than the device idled while the host paid set-up."""
from __future__ import annotations

import dataclasses

from tracetriage.analyzers.model.evidence import HostEvidence
from tracetriage.analyzers.model.verdicts import Cause

SAID_POINT = 0.01         # a share said in whole percents: a point of the span


def _evidence_of(devices) -> dict:
    return max(devices, key=lambda d: d.idle_ns).evidence if devices else {}


def setup_idle_ns(devices) -> int:
    """The device's idle while the host paid one-time set-up (the Idle line's set-up figure: host-work gaps the host
    spent in first calls, module loading, allocator growth), on the device that idles most."""
    ev = _evidence_of(devices).get(Cause.HOST_WORK)
    return int(ev.setup_us * 1e3) if isinstance(ev, HostEvidence) else 0


def priced_by_setup_idle(lever, devices):   # (a triage.report.LeverChoice or None, returned re-priced or as is)
    """A warm-up saves at least the idle the device spent waiting on the host's set-up: those gaps sit on the
    critical path (the device had nothing to run), and a warm process does not pay them. The replay can find less
    where it keeps later work at its traced time (a collective waiting for a peer that paid the same cold start):
    heldout-user7 tp2x4090, a 372 ms first launch loading its module while the GPU idled, was priced at -8% beside a
    because of 52% set-up; a warm forward of the same model takes ~60% less. Then the set-up idle is the price, and
    the because gives that same share."""
    idle = setup_idle_ns(devices)
    # (within a point of the span the replay's figure is the one said: nothing a reader would see changes)
    if lever is None or lever.assumption is None or idle - lever.saving_ns < SAID_POINT * lever.baseline_ns:
        return lever
    idle = min(idle, lever.baseline_ns)
    return dataclasses.replace(lever, predicted_ns=lever.baseline_ns - idle,
                               assumption=dataclasses.replace(lever.assumption, idle_ns=idle))
