"""What `tracetriage predict` can predict: each quantity's unit, valid range and meaning, in one table.

`predict --help`, predict's errors, `predictions --json` and the dashboard all read QUANTITIES; the
what-if ratios are made by lever_quantities() from the lever registry (tracetriage.analyzers.whatif.levers), so a
lever added there is a quantity everywhere. Light: the command line builds its help from it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from tracetriage.analyzers.whatif.levers import LEVERS


class QuantityError(ValueError):
    """An unknown quantity or a value outside its range: one line for the user."""


@dataclass(frozen=True)
class Quantity:
    name: str
    unit: str                  # "" for a share or a ratio
    doc: str
    high: float | None = None  # inclusive upper bound; None: none. Every value is > 0 (the calibration divides by it)

    def range_words(self) -> str:
        return "more than 0" if self.high is None else f"more than 0, at most {self.high:g}"


BASE = (
    Quantity("span_ms", "ms", "the GPU span of the trace (first to last GPU activity)"),
    Quantity("idle_share", "", "the share of the span with no kernel running", high=1.0),
    Quantity("kernel_busy_ms", "ms", "time with at least one kernel running"),
    Quantity("gbps", "GB/s", "what the memory-bound kernels achieve"),
    Quantity("tflops", "TFLOP/s", "what the compute-bound kernels achieve"),
    Quantity("intensity", "FLOP/byte", "arithmetic intensity of the costed kernels"),
    Quantity("ttft_ms", "ms", "time to first token (a `prefill` range)"),
    Quantity("per_token_ms", "ms", "decode time per token (a `decode_step` range)"),
    Quantity("speedup", "×", "span of --baseline BEFORE over the span of --trace AFTER (a lever or a diff)"),
)

def lever_quantities(levers) -> tuple[Quantity, ...]:
    """One ratio per what-if lever (each spec's `quantity`, `<lever>_ratio`). A lever may also slow a trace
    down, so a ratio has no upper bound."""
    return tuple(Quantity(spec.quantity, "", f"the traced span with {spec.name} over without it, as tracetriage "
                                             "whatif replays --trace") for spec in levers)


# The levers are the what-if lever registry's: a lever added there is a quantity here.
QUANTITIES: dict[str, Quantity] = {q.name: q for q in (*BASE, *lever_quantities(LEVERS.values()))}


def table_lines() -> list[str]:
    """The table as `predict --help` prints it: name, unit, valid values, meaning."""
    rows = [("QUANTITY", "UNIT", "VALID", "WHAT IT IS")]
    rows += [(q.name, q.unit or "-", q.range_words(), q.doc) for q in QUANTITIES.values()]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3] for r in rows]


def checked(name: str, text: str) -> tuple[Quantity, float]:
    """The quantity and the predicted value, or QuantityError saying what is valid."""
    q = QUANTITIES.get(name)
    if q is None:
        raise QuantityError(f"unknown quantity {name!r}; one of: {', '.join(QUANTITIES)} "
                            "(tracetriage predict --help gives each one's unit and valid values)")
    try:
        v = float(text)
    except ValueError:
        raise QuantityError(f"the predicted value must be a number, got {text!r}") from None
    if not math.isfinite(v) or v <= 0 or (q.high is not None and v > q.high):
        unit = f" ({q.unit})" if q.unit else ""
        slip = (f": a share is a fraction of 1, did you mean {v / 100:g} ({v:g}%)?"
                if q.high == 1.0 and 2.0 <= v <= 100.0 else "")   # 19 for 0.19; 1.5 could be anything
        raise QuantityError(f"{name} takes a value {q.range_words()}{unit}; got {text} ({name}: {q.doc}){slip}")
    return q, v
