"""The Next of a healthy step (triage.healthy): no one-line lever, because the fix the replay would offer saves
under the floor once the profiler's own cost is gone."""
from __future__ import annotations

from tracetriage.analyzers.model.units import about, duration_ns, saving_pct, share
from tracetriage.analyzers.voice.claims import saving
from tracetriage.analyzers.voice.common import COMPUTE_WASTE, attends, cheaper_arithmetic, matrix_precision
from tracetriage.analyzers.voice.said import claim
from tracetriage.analyzers.whatif.levers import LEVERS


def next_words(h) -> dict[str, str]:
    lv = h.offered
    words = LEVERS[lv.lever].words
    bare = 1 - lv.unprofiled_ratio
    idle = h.unprofiled_idle_share
    took = claim("next.healthy.unprofiled_us", h.unprofiled_ns / 1e3, duration_ns(h.unprofiled_ns))
    idles = claim("next.healthy.unprofiled_idle_share", idle, share(idle))
    unprofiled = (f"without it the work takes ~{took} and the GPU idles {about(share(idle))}{idles} of its span, "
                  "by the profiler-cost estimate, not measured")
    return {"lever": "no one-line lever: the savings this trace offers are mostly the profiler's own cost",
            "why": (f"{claim(f'next.healthy.lever.{lv.lever}', 1, words)}, the fix the replay prices best on the "
                    f"traced span ({saving('next.healthy.traced_saving', lv.saving_ns, lv.baseline_ns)}), saves "
                    f"{claim('next.healthy.unprofiled_saving', bare, saving_pct(bare, 1))} once the profiler's own "
                    f"host cost is gone ({unprofiled}), and no one-line change the trace calls for saves "
                    f"{claim('next.healthy.floor', h.floor, share(h.floor))} without the profiler" + _heavy(h)),
            "waste": f"{words}: its traced saving is mostly the profiler's own cost"}


def _heavy(h) -> str:
    """The restructure that still saves a little without the profiler, said as what is left (triage.healthy)."""
    if h.heavy is None:
        return ""
    bare = h.heavy_unprofiled
    return (f"; what is left is a restructure for a little: {LEVERS[h.heavy.lever].words}, "
            f"{claim('next.healthy.heavy_saving', bare, saving_pct(bare, 1))} without the profiler "
            f"({saving('next.healthy.heavy_traced_saving', h.heavy.saving_ns, h.heavy.baseline_ns)} traced)")


def moved_well_words(m, why: str, waste: str) -> dict[str, str]:
    """A memory-bound step that has taken every way "move fewer bytes" names (triage.bytes_left): healthy, said with
    what shows it, in place of advice that names fixes already made."""
    compiled = claim("next.moved_well.compiled_share", m.compiled_share, share(m.compiled_share))
    best = claim("next.moved_well.best_saving", m.best_saving, share(m.best_saving))
    return {"lever": (f"none that buys much: the step is healthy: its kernels are compiled already (Inductor's "
                      f"fused kernels hold {compiled} of kernel time), run in {m.dtype} and copy next to nothing, and "
                      f"no fix priced here saves more than a few percent of the span (the best {best}); what is left "
                      "is the kernels' own speed"),
            "why": why, "waste": waste}


def arithmetic_well_words(a, why: str) -> dict[str, str]:
    """A compute-bound step whose arithmetic runs well already (triage.arithmetic_left): healthy, said with what shows
    it; the restructure still open (a cheaper precision, less arithmetic) said as what is left."""
    w, v = a.next_experiment.arithmetic_well, a.verdict
    rest = cheaper_arithmetic(a.roof.peaks, v.dtype, headroom=True, attention=attends(a), named=matrix_precision(a))
    reach = claim("next.arithmetic_well.peak_share", w.peak_share, share(w.peak_share))
    busy = claim("next.arithmetic_well.busy_share", w.busy_share, share(w.busy_share))
    best = claim("next.arithmetic_well.best_saving", w.best_saving, share(w.best_saving))
    return {"lever": (f"none that buys much: the step is healthy: its compute-bound kernels run {w.dtype} at {reach} "
                      f"of the device's {w.dtype} peak with the GPU busy {busy} of the span, and no fix priced here "
                      f"saves more than a few percent of the span (the best {best}); what is left is a restructure: "
                      f"{rest}"),
            "why": why, "waste": COMPUTE_WASTE}
