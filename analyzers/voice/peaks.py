"""Where a trace's peaks come from, in words: the datasheet, ceilings measured on the machine, and a measured
ceiling a kernel of the trace passed (then the figure judged against is the rate reached:
tracetriage.analyzers.analyses.peaks.DevicePeaks.judged_by). Every audience (report, roofline page, drills) says
it with these words, so one trace names one peak and one source for it."""
from __future__ import annotations

import re

from tracetriage.analyzers.model.units import gbps, share, tflops


def _rate(what: str, x: float) -> str:
    return gbps(x / 1e9) if what == "bandwidth" else tflops(x / 1e12)


# Data-centre parts whose memory is HBM (A100, H100/H200/H800, B200, V100, P100, MI200/MI300); GeForce, T4, A10, L4
# and L40 carry GDDR: their bandwidth is said as "memory", never "HBM" (heldout-user3: "HBM" said of a GDDR6 card).
_HBM_PARTS = re.compile(r"\b(?:[AHB]\d00|[AH]800|GH200|GB200|V100S?|P100|MI\d{3}[A-Z]*)\b", re.I)


def _label(what: str, pk=None) -> str:
    if what != "bandwidth":
        return what
    return "HBM" if pk is not None and _HBM_PARTS.search(pk.name or "") else "memory"


def passed(pk) -> str:
    """'HBM 4,312 GB/s, the best a kernel here reached, past the measured 4,246 GB/s' for each ceiling the trace
    passed, joined; '' when none. A datasheet figure is no ceiling measured on the day: a kernel's rate above it is
    bytes the cache served or a short kernel's time the timer rounded, never a faster device, and the words say so
    with the margin (a T4 read 'HBM 323 GB/s ... past the datasheet's 320 GB/s' as if the memory ran faster)."""
    out = []
    for p in pk.passed:
        if pk.source != "datasheet" and (pk.datasheet is None or p.was != _sheet(pk, p.what)):
            out.append(f"{_label(p.what, pk)} {_rate(p.what, p.reached)}, the best a kernel here reached, past the "
                       f"measured {_rate(p.what, p.was)}")
            continue
        over = p.reached / p.was - 1 if p.was else 0.0
        margin = "under 1%" if over < 0.01 else share(over)
        faster = "a faster memory" if p.what == "bandwidth" else "faster arithmetic"
        out.append(f"{_label(p.what, pk)} judged at {_rate(p.what, p.reached)}, the best rate a kernel's counted "
                   f"{'bytes' if p.what == 'bandwidth' else 'FLOPs'} over its time give here, {margin} over the "
                   f"datasheet's {_rate(p.what, p.was)}: data the cache served or a short kernel's time rounded by "
                   f"the timer, not {faster}")
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
