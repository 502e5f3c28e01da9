"""The what-if's words: `tracetriage whatif`'s table and each lever's assumptions in one line."""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns, saving_pct, signed
from tracetriage.analyzers.whatif.levers import LEVERS


def assumption(a) -> str:
    """A lever's assumptions in one line, in its own spec's words (tracetriage.analyzers.whatif.levers)."""
    return LEVERS[a.lever].says(a)


def whatif_table(w) -> str:
    """`tracetriage whatif`: one row per lever, best first, and each lever's assumption below it."""
    err = (w.replay_ns - w.baseline_ns) / w.baseline_ns * 100 if w.baseline_ns else 0.0
    width = max([14] + [len(p.lever) + 2 for p in w.levers])
    unprof = w.unprofiled_ns is not None
    # the span says what it holds: host work before the first kernel and after the last too (the report's Measured
    # line gives the GPU span, which is shorter)
    lines = [f"{w.path}: traced span, host and GPU, {duration_ns(w.baseline_ns)} (the unchanged replay gives "
             f"{duration_ns(w.replay_ns)}, {signed(err, '.1f', '%')})"
             + (f"; without the profiler ~{duration_ns(w.unprofiled_ns)} (its per-event cost "
                f"{w.profiler.source}, not measured in this trace)" if unprof else ""), "",
             f"  {'lever':<{width}}{'predicted':>11}{'ratio':>8}{'saving':>9}"
             + (f"{'unprofiled ratio':>18}" if unprof else "")]
    for p in w.levers:
        lines.append(f"  {p.lever:<{width}}{duration_ns(p.predicted_ns):>11}{p.predicted_ratio:>8.2f}"
                     f"{saving_pct(p.saving_ns, w.baseline_ns):>9}"
                     + (f"{p.unprofiled_ratio:>18.2f}" if p.unprofiled_ratio is not None else ""))
    lines.append("")
    lines += [f"  {p.lever}: {assumption(p.assumption)}" for p in w.levers]
    return "\n".join(lines)
