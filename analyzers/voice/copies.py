"""A copies Next in the words of what the trace shows applied already (analyses.copies_async): pinned, asynchronous
copies leave the link's rate, so fewer bytes; a trace that runs no kernel has no compute for copies to overlap."""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns, gbps, integer, size
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.common import ADVICE
from tracetriage.analyzers.voice.said import claim
from tracetriage.analyzers.whatif.levers import ASYNC_COPIES

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
    rate = _pinned_rate(a)
    return ADVICE[Cause.DATA_TRANSFER] + rate if rate else None


def _pinned_rate(a: Analysis) -> str:
    """' (this trace's own pinned copies from the device run 12.7 GB/s: the rate the replay gives its pageable copies
    pinned)', where the Next's pinning lever measured the pinned link in the trace; "" otherwise. The pageable rate is
    the because's (heldout-user19 gp_streams: pageable copies at 5.1 GB/s beside pinned ones at 12.5 GB/s, the pinned
    ones unsaid)."""
    lever = a.next_experiment.lever
    x = lever.assumption if lever is not None and lever.lever == ASYNC_COPIES else None
    if x is None:
        return ""
    ways = ((x.h2d_gbps, x.h2d_source, "to"), (x.d2h_gbps, x.d2h_source, "from"))
    measured = [(r, way) for r, source, way in ways if source == "trace" and r > 0]
    if not measured or any(source not in ("trace", "trace_other_way") for _, source, _ in ways):
        return ""     # (a direction priced at another figure: the sentence would say a rate the replay did not use)
    said = " and ".join(f"{claim(f'next.pinned_gbps.{way}', r, gbps(r))} {way} the device" for r, way in measured)
    return f" (this trace's own pinned copies run at {said}: the rate the replay gives its pageable copies pinned)"
