"""The syncs' fix where they are a loop reading one tensor to the host element by element (whatif.levers.element_reads):
read the tensor once, not each element: "keep values and decisions on the device, read them once every N steps"
leaves the loop and its per-element dispatch (heldout-user19 gp_d2h_sync: 4,096 `tensor[i].cpu()`)."""
from __future__ import annotations

from typing import Any

from tracetriage.analyzers.model.units import integer
from tracetriage.analyzers.voice.said import claim


def element_reads_advice(a: Any) -> str | None:
    """'read the [4096] tensor once, not element by element: ...'; None where the Next's syncs are no such loop."""
    lever = a.next_experiment.lever
    x = lever.assumption if lever is not None else None
    n = getattr(x, "element_reads", 0)
    if not n:
        return None
    shape = list(getattr(x, "element_shape", ()))
    return (f"read the {shape} tensor once, not element by element ({claim('next.element_reads', n, integer(n))} "
            "reads of one element each, every one a copy to the host and its wait): one `.cpu()` or `.tolist()` of "
            "the whole tensor before the loop, or the loop's work done on the device (a reduction such as "
            "torch.sum) and its one result read")
