"""A copies Next in the words of what the trace shows applied already (analyses.copies_async): pinned, asynchronous
copies leave the link's rate, so fewer bytes; a trace that runs no kernel has no compute for copies to overlap."""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns, integer, size
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
    u = c.same_upload
    if u is not None and c.kernels:
        # the same shape uploaded every step: a loop-invariant tensor is kept on the device, which removes the copy;
        # pinning only shortens it (fresh10 ctr_id_remap_table_not_buffer: a 64 MB [8388608] int64 table a step)
        each = "once" if u.per_step == 1 else f"{integer(u.per_step)} times"
        return (f"keep the {u.shape} tensor on the device if it holds the same values each step (a lookup table, a "
                "mask, constants): move it there once before the loop or register it as a module buffer "
                f"(self.register_buffer), and its {size(u.nbytes)} upload ({u.op}, {each} in each of the "
                f"{integer(u.steps)} profiled steps) goes; only if it changes each step, pin host memory and copy "
                "with non_blocking=True on a side stream")
    if c.kernels == 0:
        return ADVICE[Cause.DATA_TRANSFER].replace(
            OVERLAP_COMPUTE, "so the copies to and from the device overlap each other and the host runs ahead") \
            + f" ({NO_KERNELS})"
    return None
