"""Numbers with their units, read from an answer: '0.79 PFLOP/s', '4.2 TB/s', '89 µs', '19%', '1.7x'.

    amounts("the copy runs at 53.6 GB/s, 88% of the span")
        -> [Amount(53.6, "bandwidth", 53.6, "GB/s", ...), Amount(88.0, "share", 88.0, "%", ...)]
    in_unit(Amount(0.79, "flops", 790.0, "PFLOP/s", ...), "TFLOP/s")  -> 790.0

Every amount is held in its dimension's base unit (µs, GB/s, TFLOP/s, %, ×, bytes, a count): the drills' keys
are in those units. A unit slip by a factor of the unit ladder (1000: ms for µs, GB/s for TB/s; 100: a share
written as a fraction) is found by `slip`, so feedback can say "did you mean 1.23 ms?".
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# unit as written (lower case) -> (dimension, factor to the dimension's base unit)
UNITS: dict[str, tuple[str, float]] = {
    **{u: ("time", 1e-3) for u in ("ns", "nanosecond", "nanoseconds")},
    **{u: ("time", 1.0) for u in ("us", "µs", "μs", "usec", "microsecond", "microseconds")},
    **{u: ("time", 1e3) for u in ("ms", "msec", "millisecond", "milliseconds")},
    **{u: ("time", 1e6) for u in ("s", "sec", "secs", "second", "seconds")},
    "b/s": ("bandwidth", 1e-9), "kb/s": ("bandwidth", 1e-6), "mb/s": ("bandwidth", 1e-3), "gb/s": ("bandwidth", 1.0),
    "tb/s": ("bandwidth", 1e3), "gib/s": ("bandwidth", 1.073741824), "tib/s": ("bandwidth", 1099.511627776),
    "gbps": ("bandwidth", 1.0), "tbps": ("bandwidth", 1e3), "gb/sec": ("bandwidth", 1.0), "tb/sec": ("bandwidth", 1e3),
    "flop/s": ("flops", 1e-12), "flops": ("flops", 1e-12), "gflop/s": ("flops", 1e-3), "gflops": ("flops", 1e-3),
    "tflop/s": ("flops", 1.0), "tflops": ("flops", 1.0), "pflop/s": ("flops", 1e3), "pflops": ("flops", 1e3),
    "%": ("share", 1.0), "percent": ("share", 1.0), "pct": ("share", 1.0),
    "×": ("ratio", 1.0), "x": ("ratio", 1.0), "times": ("ratio", 1.0), "fold": ("ratio", 1.0),
    "b": ("bytes", 1.0), "byte": ("bytes", 1.0), "bytes": ("bytes", 1.0), "kb": ("bytes", 1e3), "mb": ("bytes", 1e6),
    "gb": ("bytes", 1e9), "tb": ("bytes", 1e12), "kib": ("bytes", 1024.0), "mib": ("bytes", 1024.0 ** 2),
    "gib": ("bytes", 1024.0 ** 3),
    "flop/byte": ("intensity", 1.0), "flop/b": ("intensity", 1.0), "flops/byte": ("intensity", 1.0),
}
BASE = {"time": "µs", "bandwidth": "GB/s", "flops": "TFLOP/s", "share": "%", "ratio": "×", "bytes": "B",
        "intensity": "FLOP/byte", "count": ""}
# each dimension's ladder step: a slip by it is a unit slip, not a wrong estimate
LADDER = {"time": 1000.0, "bandwidth": 1000.0, "flops": 1000.0, "bytes": 1000.0, "share": 100.0}
SLIP_TOLERANCE = 0.15

_UNIT_RE = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
NUMBER = re.compile(r"(?<![\w.])(?P<num>[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?|[-+]?\.\d+)"
                    rf"\s*(?P<unit>(?:{_UNIT_RE})(?![a-z0-9/]))?", re.IGNORECASE)
# "1.23 ms per token", "2x faster": a unit word right after the number, "x" glued or spaced


@dataclass(frozen=True)
class Amount:
    value: float           # as written
    dim: str | None        # None: a bare number
    base: float            # in BASE[dim] (a bare number: as written)
    unit: str              # as written ("" when bare)
    start: int
    end: int
    followed_by: str       # the word after it ("coffees" in "100 coffees"): a bare number's own noun


def amounts(text: str) -> list[Amount]:
    out = []
    for m in NUMBER.finditer(text):
        try:
            v = float(m.group("num").replace(",", ""))
        except ValueError:
            continue
        unit = (m.group("unit") or "")
        dim, f = UNITS.get(unit.lower(), (None, 1.0))
        nxt = re.match(r"\s*([A-Za-z]+)", text[m.end():])
        out.append(Amount(v, dim, v * f, unit, m.start(), m.end(), nxt.group(1).lower() if nxt and not unit else ""))
    return out


def in_unit(a: Amount, unit: str) -> float | None:
    """The amount in `unit` (a key's unit: "ms", "GB/s", "TFLOP/s", "×", "%"), None when the dimensions differ;
    a bare number is taken as written in that unit."""
    dim, f = UNITS[unit.lower()]
    if a.dim is None:
        return a.value
    return a.base / f if a.dim == dim else None


def dimension(unit: str) -> str | None:
    return UNITS.get(unit.lower(), (None, 1.0))[0]


def slip(said: float, key: float, dim: str | None) -> float | None:
    """The factor (1000, 1/1000, 100 ...) by which `said` misses `key` when that is the unit ladder's step."""
    step = LADDER.get(dim or "")
    if not step or not key or said <= 0:
        return None
    for factor in (step, 1 / step):
        if abs(said / (key * factor) - 1) <= SLIP_TOLERANCE:
            return factor
    return None
