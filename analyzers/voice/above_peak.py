"""The caveat of op signatures whose shapes would put them above the device's peak.

Past the FLOP/s peak no cache explains it: the shapes do not describe what the kernels computed (an attribution
error). Past the memory's peak on a working set an L2 holds, the cache most likely served a correctly charged op
(an elementwise op reading what the op before it wrote): said first, with the attribution error as the alternative.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import size


def above_peak_caveat(above) -> str:
    """One sentence for the op signatures above the peak (`above`: roofline.AbovePeak, the worst first)."""
    top = above[0]
    head = (f"{len(above)} op signature{'s' if len(above) > 1 else ''} would sit above the device's peak "
            f"({top.name} {f'[{top.shapes}] ' if top.shapes else ''}at {top.achieved:,.0f} {top.unit}, "
            f"{top.times_peak:.2f}× the {top.peak:,.0f} {top.unit} peak)")
    tail = "so they are left out of the roofline and the regime"
    if top.cache_sized:
        return (f"{head}: most likely data the cache served rather than memory, not a faster memory (its "
                f"{size(top.bytes_per_call)} a call are few enough that the L2, where the op before it just wrote "
                "them, serves much of them); else its shapes do not describe what its kernels moved (kernels charged "
                f"to the wrong op, an input only sliced), {tail}")
    return (f"{head}: an attribution error, not an achievement (the op's shapes do not describe what its kernels moved "
            "or computed: kernels charged to the wrong op, an input only sliced, a Winograd/FFT algorithm doing less "
            f"arithmetic than the shapes say, or data the cache served rather than memory), {tail}")
