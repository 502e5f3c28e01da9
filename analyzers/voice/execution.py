"""The Regime line's words for the GPU's execution model (tracetriage.analyzers.triage.execution): the top kernel's
occupancy where it is low and decides nothing or everything, and a transposed copy costed both ways."""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_us, num, share, size

LIMITER = {"threads": "its threads", "blocks": "the SM's block limit", "registers": "its registers",
           "shared memory": "its shared memory"}


def _kernel(name: str, width: int = 48) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _resident(s) -> str:
    """'1 block of 12 warps per SM, capped by its shared memory' or '0.97 blocks of 2 warps per SM: the grid's 128'."""
    warps = f"{s.warps_per_block} warp{'s' if s.warps_per_block != 1 else ''}"
    if s.grid_limited:
        return (f"{num(s.blocks_per_sm)} block{'' if s.blocks_per_sm == 1 else 's'} of {warps} per SM: the grid's "
                f"{s.blocks:,} over the SMs")
    blocks = f"{s.resident_blocks} block{'s' if s.resident_blocks != 1 else ''}"
    return f"{blocks} of {warps} per SM, capped by {LIMITER.get(s.limiter, s.limiter)}"


def occupancy_clause(o) -> str:
    """'; its top kernel (nvjet_…, 92% of kernel time) reaches 98% of the compute roof at 18.8% occupancy (1 block of
    12 warps per SM, capped by its registers): occupancy is not its lever, and raising it would shrink its tiles'."""
    s, v = o.shape, o.verdict
    head = f"; its top kernel ({_kernel(o.kernel)}, {share(o.device_share)} of kernel time)"
    occ = f"{num(s.achieved_pct)}% occupancy ({_resident(s)})"
    if v.verdict.value == "lever":
        return (f"{head} sits at {share(v.roof_share)} of the nearer roof with {occ}: too few warps in flight to hide "
                "memory latency, so more of them is its lever")
    why = ", and raising it would shrink its tiles (less reuse)" if v.verdict.value == "harm" else ""
    return f"{head} reaches {share(v.roof_share)} of the {v.roof} roof at {occ}: occupancy is not its lever{why}"


def _break_even(n: int | None, here: int) -> str:
    read = f"{here} consumer{'s' if here != 1 else ''} read{'s' if here == 1 else ''} it here"
    if n is None:
        return f": the view's read would cost nothing more, so the copy never pays ({read})"
    verdict = "it pays" if here >= n else "it does not pay"
    return f": the copy pays from {n} consumer{'s' if n != 1 else ''} on, and {read}: {verdict}"


def transpose_clause(t) -> str:
    c = t.costing
    if c is not None:
        src = c.copy.strided_reads[0]
        return (f"; {c.copy.op} copies a transposed source so that {c.consumer.op} reads it coalesced: "
                f"{duration_us(c.copy_us)} for the copy and {duration_us(c.consumer_us)} for the consumer, against up "
                f"to {duration_us(c.through_view_us)} for the consumer reading through the view (its "
                f"{size(src.useful_bytes)} operand would ask for up to {size(src.sector_bytes)} of 32-byte sectors)"
                + _break_even(c.break_even_consumers, c.consumers))
    o = t.strided
    useful = sum(r.useful_bytes for r in o.strided_reads)
    sectors = sum(r.sector_bytes for r in o.strided_reads)
    return (f"; {o.op} ({duration_us(o.kernel_us)}) reads {size(useful)} against its layout, asking for up to "
            f"{size(sectors)} of 32-byte sectors; a .contiguous() copy first would read and write {size(2 * useful)} "
            "more")


def regime_clauses(notes) -> str:
    """Both clauses, as the Regime line appends them ('' when the analysis found nothing worth saying)."""
    if notes is None:
        return ""
    return (occupancy_clause(notes.occupancy) if notes.occupancy else "") + \
        (transpose_clause(notes.transpose) if notes.transpose else "")
