"""A copies Next in the words of what the trace shows applied already (analyses.copies_async): pinned, asynchronous
copies leave the link's rate, so fewer bytes; a trace that runs no kernel has no compute for copies to overlap."""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns, integer
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.common import ADVICE

OVERLAP_COMPUTE = "so copies overlap compute"
NO_KERNELS = "no kernel runs here: the copies are the workload, with no compute to overlap"


def copies_advice(a: Analysis) -> str | None:
    """The copies Next's change where the trace decides it (None: the cause's own advice holds)."""
    c = getattr(a, "copies_async", None)
    if c is None:
        return None
    if c.already:
        beside = (f", on {integer(c.streams)} streams with {duration_ns(c.overlap_ns)} of copies beside each other"
                  if c.streams > 1 and c.overlap_ns > 0 else "")
        beside += ", on streams no kernel runs on" if c.kernels else ""
        return ("move fewer bytes over the link: the copies are pinned and asynchronous already (their calls return "
                f"in {duration_ns(c.call_median_ns)}, median, while the copy engines move the bytes{beside}), so the "
                "link's rate sets their time: send a smaller dtype (uint8 or bf16 instead of fp32, cast on the "
                "device) or keep the data resident on the device" + (f"; {NO_KERNELS}" if c.kernels == 0 else ""))
    if c.kernels == 0:
        return ADVICE[Cause.DATA_TRANSFER].replace(
            OVERLAP_COMPUTE, "so the copies to and from the device overlap each other and the host runs ahead") \
            + f" ({NO_KERNELS})"
    return None
