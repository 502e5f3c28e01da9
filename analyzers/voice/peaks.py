"""Where a trace's peaks come from, in words: the datasheet, ceilings measured on the machine, and a measured
ceiling a kernel of the trace passed (then the figure judged against is the rate reached:
tracetriage.analyzers.analyses.peaks.DevicePeaks.judged_by). Every audience (report, roofline page, drills) says
it with these words, so one trace names one peak and one source for it."""
from __future__ import annotations

from tracetriage.analyzers.model.units import gbps, tflops


def _rate(what: str, x: float) -> str:
    return gbps(x / 1e9) if what == "bandwidth" else tflops(x / 1e12)


def _label(what: str) -> str:
    return "HBM" if what == "bandwidth" else what


def passed(pk) -> str:
    """'HBM 4,312 GB/s, the best a kernel here reached, past the measured 4,246 GB/s' for each ceiling the trace
    passed, joined; '' when none."""
    out = []
    for p in pk.passed:
        was = "measured" if pk.source != "datasheet" and (pk.datasheet is None or p.was != _sheet(pk, p.what)) \
            else "datasheet's"
        out.append(f"{_label(p.what)} {_rate(p.what, p.reached)}, the best a kernel here reached, past the {was} "
                   f"{_rate(p.what, p.was)}")
    return "; ".join(out)


def _sheet(pk, what: str) -> float:
    d = pk.datasheet
    return d.bytes_per_s if what == "bandwidth" else d.flops_per_s.get(what, 0.0)


def source(pk) -> str:
    """'peaks measured on this machine by tracetriage capture ceilings', with the ceilings a kernel passed; '' for
    datasheet peaks nothing passed."""
    head = "peaks measured on this machine by tracetriage capture ceilings" if pk.source != "datasheet" else \
        "datasheet peaks"
    if not pk.passed:
        return head if pk.source != "datasheet" else ""
    return f"{head}; {passed(pk)}"
