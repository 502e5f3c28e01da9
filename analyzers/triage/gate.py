"""The regression gates for CI: `diff --fail-if-slower PCT` and `report --fail-if-idle-above PCT`.

A gate compares one measured percentage with the limit the user set and fails when the measurement
is over it; the CLI then exits 1 (a user error is 2) with the one line tracetriage.analyzers.voice.gate says.
The slowdown is the diff's own: the GPU span after over before (per profiled step when the traces
hold different numbers of steps), so a gate and the diff it prints never disagree.
"""
from __future__ import annotations

from dataclasses import dataclass

from tracetriage.analyzers.model.trace import TraceError
from tracetriage.analyzers.model.verdicts import Cause


class GateError(TraceError):
    """The gate cannot be decided on these traces (no GPU timeline): a user error, not a failure."""


@dataclass(frozen=True)
class SlowerGate:
    """diff --fail-if-slower PCT."""
    before: str
    after: str
    before_span_us: float
    after_span_us: float
    limit_pct: float
    per_step: bool
    busy_change_us: float            # what moved, for the line that says why
    idle_moved: tuple[tuple[Cause, float], ...]

    @property
    def slower_pct(self) -> float:
        """How much longer AFTER's span is than BEFORE's, in percent (negative: faster)."""
        return 100.0 * (self.after_span_us / self.before_span_us - 1.0)

    @property
    def failed(self) -> bool:
        return self.slower_pct > self.limit_pct


@dataclass(frozen=True)
class IdleGate:
    """report --fail-if-idle-above PCT."""
    trace: str
    idle_pct: float
    idle_us: float
    span_us: float
    limit_pct: float
    dominant: Cause | None
    dominant_pct: float

    @property
    def failed(self) -> bool:
        return self.idle_pct > self.limit_pct


def check_limit(pct: float, flag: str) -> float:
    if not pct >= 0 or pct == float("inf"):
        raise GateError(f"{flag} takes a percentage of 0 or more, got {pct:g}")
    return pct


def slower(d, limit_pct: float) -> SlowerGate:
    """The slowdown gate on a diff.Diff."""
    check_limit(limit_pct, "--fail-if-slower")
    span_b, span_a = d.span_us
    if d.speedup is None or span_b <= 0 or span_a <= 0:
        side = d.after.name if span_a <= 0 else d.before.name
        raise GateError(f"--fail-if-slower needs a GPU span on both sides; {side} has no GPU activity")
    return SlowerGate(d.before.name, d.after.name, span_b, span_a, limit_pct, d.per_step, d.busy_change_us,
                      tuple(d.idle_moved))


def idle_above(a, limit_pct: float) -> IdleGate:
    """The idle gate on a report.Analysis."""
    check_limit(limit_pct, "--fail-if-idle-above")
    if not a.devices:
        raise GateError(f"--fail-if-idle-above needs a GPU timeline; {a.trace.path} has no GPU activity")
    dom = a.dominant
    return IdleGate(a.trace.path, 100.0 * a.idle_share, a.idle_ns / 1e3, a.span_ns / 1e3, limit_pct, dom,
                    100.0 * a.by_cause_ns[dom] / a.span_ns if dom is not None and a.span_ns else 0.0)
