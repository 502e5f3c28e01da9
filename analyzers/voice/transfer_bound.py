"""A span whose copies over the link hold the device longer than its kernels do: the Regime line's headline says
transfer-bound before the kernels' own bound.

An idle-bound span waiting on copies says transfer-bound already (voice.report's _idle_bound). Below the idle-bound
share the headline was the kernel mix alone: heldout-user19 gp_streams read "GPU-bound in fp32 math on CUDA cores
... the device is busy 51% of the span and 100% of kernel time is fp32 GEMMs", where 400 pageable 4 MB copies held
the device 269.9 ms against the GEMMs' 261.7 ms, the span's last 176 ms was copies alone, and its own Idle line said
data transfer first. Where the copies' time (the Measured line's "ms of copies") exceeds the kernels' busy time, the
copies are what the device spends the span on: the headline is "transfer-bound", the kernels' bound said after it
("its kernels: ..."), and --json's regime_detail.bound is "transfer" (the regime field keeps the kernels' verdict).

What would make it fire falsely: copies that overlap the kernels on their own engines (pinned, on a side stream)
occupy the copy engine, not the SMs; the span then ends when the kernels do, not the copies. Those copies are
async already (CopiesAsync.already), and the headline is left to the kernels.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns
from tracetriage.analyzers.model.verdicts import Regime
from tracetriage.analyzers.voice.said import claim


def transfer_bound(a) -> bool:
    """The copies over the link hold the device longer than its kernels, in a span that is not idle-bound."""
    c = a.copies_async
    return (a.verdict.regime is not Regime.OVERHEAD and c is not None and not c.already and c.kernels > 0
            and a.kernel_busy_ns > 0 and a.copy_ns > a.kernel_busy_ns)


def lead(a, line: str) -> str:
    """'Regime: transfer-bound: copies over the link hold the device 269.9 ms, more than its kernels' 261.7 ms, and the
    span runs 176.0 ms past its last kernel, copies 121.3 ms of it; its kernels (fp32 math on CUDA cores, ...): the
    device is busy ...'."""
    if not transfer_bound(a) or not line.startswith("Regime: "):
        return line
    head, sep, rest = line[len("Regime: "):].partition(": ")
    if not sep:
        return line
    c = a.copies_async
    tail = claim("regime.transfer.tail_us", c.tail_ns / 1e3, duration_ns(c.tail_ns))
    alone = claim("regime.transfer.after_kernels_us", c.after_kernels_ns / 1e3, duration_ns(c.after_kernels_ns))
    ends = f", and the span runs {tail} past its last kernel, copies {alone} of it" if c.after_kernels_ns > 0 else ""
    return (f"Regime: transfer-bound: copies over the link hold the device "
            f"{claim('regime.transfer.copy_us', a.copy_ns / 1e3, duration_ns(a.copy_ns))}, more than its kernels' "
            f"{claim('regime.transfer.kernel_us', a.kernel_busy_ns / 1e3, duration_ns(a.kernel_busy_ns))}{ends}; "
            f"its kernels ({head.removeprefix('GPU-bound in ')}): {rest}")
