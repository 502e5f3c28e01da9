"""Number formats: one format per kind of number, for every layer that writes one.

Durations ('89.3 µs', '6.52 ms', '52.2 ms', '1.16 s'), counts with thousands separators, bytes, shares,
ratios and speedups. The words around them are the voice layer's; these are only the numbers.
"""
from __future__ import annotations


def count(n: int, one: str, many: str | None = None) -> str:
    """'1 event', '1,024 events'."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def duration_us(us: float) -> str:
    """One format for every duration: '89.3 µs', '6.52 ms', '52.2 ms', '3.21 s'."""
    us = abs(us)
    if us < 1000:
        return f"{us:.1f} µs"
    if us < 10_000:
        return f"{us / 1e3:.2f} ms"
    if us < 1_000_000:
        return f"{us / 1e3:.1f} ms"
    return f"{us / 1e6:.2f} s"


def duration_ns(ns: float) -> str:
    return duration_us(ns / 1e3)


def signed_us(us: float) -> str:
    return ("−" if us < 0 else "+") + duration_us(us)


def size(n: float) -> str:
    """Bytes: '1.07 GB', '4.2 MB', '16.0 kB'."""
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.1f} kB"


def share(x: float) -> str:
    """A fraction as a whole percentage: '19%'."""
    return f"{100 * x:.0f}%"


def small_share(x: float) -> str:
    """A share that may be a tiny fraction of a percent: '0.06%', '0.8%', '3%'."""
    return f"{100 * x:.2f}%" if x < 0.001 else (f"{100 * x:.1f}%" if x < 0.01 else share(x))


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def pct_of(achieved: float, peak: float) -> str:
    """A share of a peak; measured copy ceilings can sit a hair under what kernels reach."""
    return "at the ceiling" if achieved >= peak else f"{100 * achieved / peak:.0f}%"


def ratio(r: float, same: bool) -> str:
    """A ratio before/after as 'N× fewer', 'N× more', or 'about the same' (`same`: the caller's verdict)."""
    if same:
        return "about the same"
    return f"{r:.2f}× fewer" if r >= 1 else f"{1 / r:.2f}× more"


def speed(s: float) -> str:
    return f"{s:.2f}× speedup" if s >= 1 else f"{1 / s:.2f}× slowdown"


def saving_pct(saving_ns: float, baseline_ns: float) -> str:
    """A predicted change of the span: '−24%' for a saving, '+3%' for a loss, '0%'."""
    pct = round(saving_ns / baseline_ns * 100) if baseline_ns else 0
    return "0%" if pct == 0 else (f"−{pct}%" if pct > 0 else f"+{-pct}%")


def num(x: float | None) -> str:
    if x is None:
        return "none"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"
