"""The words of a Next led by re-done work (analyses.rework, triage.rework_first): the construct the shapes prove,
the one-line change, and its bound, said as a bound; what the shapes do not prove said as a reading."""
from __future__ import annotations

from tracetriage.analyzers.model.rework import GROWING_CAT, Rework
from tracetriage.analyzers.model.units import count, integer, saving_pct, share
from tracetriage.analyzers.voice.said import claim


def _shape(dims: tuple) -> str:
    return "[" + ", ".join(integer(d) for d in dims) + "]"


def lever_words(r: Rework) -> str:
    held = claim("next.rework.kernel_share", r.kernel_share, share(r.kernel_share))
    bound = r.span_bound
    up_to = claim("next.rework.span_bound", bound, saving_pct(bound, 1))
    if r.kind == GROWING_CAT:
        return (f"stop regrowing one tensor by concatenation: {count(r.calls, f'{r.op} call')} "
                f"({count(r.chains, 'chain')}) each take as input a tensor of the shape the call before returned and "
                f"append a piece ({_shape(r.first_shape)} → {_shape(r.last_shape)}), so each call copies again "
                "everything gathered so far; collect the pieces in a list and concatenate once after the loop "
                f"(a bound, not a prediction: those copies hold {held} of kernel time, and one concatenation per "
                f"chain would copy a small part of their bytes: up to {up_to} of the span)")
    return (f"merge the low-rank adapters into their weights (W + scale·B·A, once, e.g. peft's merge_and_unload()): "
            f"beside {count(r.chains, 'full product')} (M×K by K×N) run a rank-{integer(r.rank)} pair of the same M, K "
            f"and N (M×K by K×{integer(r.rank)}, then M×{integer(r.rank)} by {integer(r.rank)}×N) and a scale and an "
            f"add over the product's output (a bound, not a prediction: those kernels hold {held} of kernel time: up "
            f"to {up_to} of the span); the trace has no backward pass, so the adapters read as frozen here: a reading, "
            "not proven by the trace")


def lead(out: dict[str, str], r: Rework, busy_share: float, healthy: bool) -> dict[str, str]:
    """The Next with the re-done work first: a healthy Next's "no one-line lever" gives way to it (the one line is
    there); any other Next's lever is said after it, as the next experiment once the work is gone."""
    lever = lever_words(r)
    busy = claim("next.rework.busy_share", busy_share, share(busy_share))
    why = (f"the GPU is busy {busy} of the span and the op table's top work is work the step re-does: the launch and "
           "host fixes the replay prices do not remove kernels")
    if healthy:
        return {"lever": lever, "why": why, "waste": out["waste"]}
    return {"lever": f"{lever}; after it, {out['lever']}", "why": f"{why}; {out['why']}", "waste": out["waste"]}
