"""The figures of the Next's "because", each claimed as next.because.<what> (moved out of voice.report)."""
from __future__ import annotations

from tracetriage.analyzers.model.units import small_share
from tracetriage.analyzers.voice.said import claim


def bound_because(x: float) -> str:
    """The share of kernel time under the Next's bound, claimed (never where the health check withholds it)."""
    return because("bound_share", x, f"{100 * x:.0f}%")


def latency_why(v, pk) -> str:
    what = f"{bound_because(v.latency_us / max(v.kernel_us, 1e-9))} of kernel time is in kernels far below both roofs"
    if v.latency_peak_share is not None:
        reach = small_share(v.latency_peak_share)
        what += f" (they reach {because('peak_share', v.latency_peak_share, reach)} of the nearer peak)"
    return what + ": occupancy, tiny grids or the library's algorithm choice limit them, not bytes or arithmetic"


def because(what: str, value: float, said: str) -> str:
    """A figure of the Next's because, claimed as next.because.<what> (checked against the prediction and Idle)."""
    return claim(f"next.because.{what}", value, said)
