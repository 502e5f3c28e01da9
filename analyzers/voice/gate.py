"""The gates' one line: why a CI job failed (or passed), printed on stderr."""
from __future__ import annotations

from pathlib import Path

from tracetriage.analyzers.model.units import duration_us, num, signed_us
from tracetriage.analyzers.voice.common import CAUSE_WORDS


def slower_line(g) -> str:
    what = "mean profiled step" if g.per_step else "GPU span"
    pct = g.slower_pct
    # "77.5% faster" would mean a speed-up of 1.775×: a shorter span is said as its speed-up and the time it saves
    faster = f"{g.before_span_us / g.after_span_us:.2f}× faster" if g.after_span_us > 0 else "faster"
    change = (f"{pct:.1f}% slower" if pct > 0 else f"{faster}" if pct < 0 else "as fast")
    saved = f", {-pct:.1f}% less time" if pct < 0 else ""
    head = (f"{g.after} is {change} than {g.before} ({what} {duration_us(g.before_span_us)} → "
            f"{duration_us(g.after_span_us)}{saved})")
    if not g.failed:
        return f"gate passed: {head}, within the {num(g.limit_pct)}% allowed"
    moved = ", ".join(f"{CAUSE_WORDS[c]} {signed_us(x)}" for c, x in [cx for cx in g.idle_moved if cx[1] > 0][:2])
    why = f"kernel busy {signed_us(g.busy_change_us)}" + (f", idle {moved}" if moved else "")
    return f"gate failed: {head}, more than the {num(g.limit_pct)}% allowed: {why}"


def idle_line(g) -> str:
    head = (f"the GPU is idle {g.idle_pct:.1f}% of the span in {Path(g.trace).name} "
            f"({duration_us(g.idle_us)} of {duration_us(g.span_us)})")
    if not g.failed:
        return f"gate passed: {head}, within the {num(g.limit_pct)}% allowed"
    dom = f"; mostly {CAUSE_WORDS[g.dominant]} ({g.dominant_pct:.1f}% of the span)" if g.dominant else ""
    return f"gate failed: {head}, above the {num(g.limit_pct)}% allowed{dom}"
