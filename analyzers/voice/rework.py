"""The words of a Next led by re-done work (analyses.rework, triage.rework_first): the construct the shapes prove,
the one-line change, and its bound or estimate, said as such; what the trace does not prove said as a reading."""
from __future__ import annotations

from tracetriage.analyzers.model.rework import GROWING_CAT, LAUNCH_KINDS, LOW_RANK, WEIGHT_NORM, Rework
from tracetriage.analyzers.model.units import count, integer, saving_pct, share
from tracetriage.analyzers.voice.knob_beside import knob_clause
from tracetriage.analyzers.voice.said import claim


def _shape(dims: tuple) -> str:
    return "[" + ", ".join(integer(d) for d in dims) + "]"


def _merge_estimate(r: Rework, held: str, up_to: str) -> str:
    """A merge removes the adapters' kernels, and their launches and Python with them: their kernel time is no bound
    on its saving where it removes launches (fresh12 llama_lora_unmerged_scoring: 'a bound ... up to −18% of the span'
    by kernel time alone, measured −26% without the profiler, −41% traced, its ~450 launches a step gone too)."""
    if not r.launches:
        return f"a bound, not a prediction: those kernels hold {held} of kernel time: up to {up_to} of the span"
    return (f"an estimate, not a prediction: those kernels hold {held} of kernel time: ~{up_to} of the span by their "
            f"time alone, more where their {integer(r.launches)} launches and the adapters' Python go too")


def lever_words(r: Rework, kernels: int) -> str:
    held = claim("next.rework.kernel_share", r.kernel_share, share(r.kernel_share))
    up_to = claim("next.rework.span_bound", r.span_bound, saving_pct(r.span_bound, 1))
    if r.kind == GROWING_CAT:
        return (f"stop regrowing one tensor by concatenation: {count(r.calls, f'{r.op} call')} "
                f"({count(r.chains, 'chain')}) each take as input a tensor of the shape the call before returned and "
                f"append a piece ({_shape(r.first_shape)} → {_shape(r.last_shape)}), so each call copies again "
                "everything gathered so far; collect the pieces in a list and concatenate once after the loop "
                f"(a bound, not a prediction: those copies hold {held} of kernel time, and one concatenation per "
                f"chain would copy a small part of their bytes: up to {up_to} of the span)")
    if r.kind == LOW_RANK:
        return (f"merge the low-rank adapters into their weights (W + scale·B·A, once, e.g. peft's "
                f"merge_and_unload()): beside {count(r.chains, 'full product')} (M×K by K×N) run a rank-"
                f"{integer(r.rank)} pair of the same M, K and N (M×K by K×{integer(r.rank)}, then M×{integer(r.rank)} "
                f"by {integer(r.rank)}×N) and a scale and an add over the product's output "
                f"({_merge_estimate(r, held, up_to)}); the trace has no backward pass, so the adapters read as frozen "
                "here: a reading, not proven by the trace")
    launched = claim("next.rework.launch_share", r.launch_share, share(r.launch_share))
    estimate = (f"(an estimate, not a prediction: {integer(r.launches)} of the {integer(kernels)} kernels ({launched}) "
                f"are launched inside them and hold {held} of kernel time: ~{up_to} of the span by their share of "
                "the launch overhead")
    if r.kind == WEIGHT_NORM:
        return (f"first compute the weights once: {r.op} recomputes a weight from g and v {integer(r.calls)} times "
                "in a trace with no backward pass; remove the weight norm for inference "
                "(torch.nn.utils.remove_weight_norm(m), or torch.nn.utils.parametrize.remove_parametrizations(m, "
                f"'weight'), on each module once) {estimate}, more where its Python goes too)")
    return (f"first drop the squares taken of many tensors each step: aten::pow(x, 2) runs {integer(r.calls)} times "
            f"over {integer(r.shapes)} distinct shapes, with PowBackward0 for each in the backward: a sum of squares "
            "over many tensors, which reads as an L2 penalty over the parameters written into the loss (a reading, "
            "not proven by the trace); the optimizer's weight_decay applies it inside its own pass "
            f"{estimate}, more where the sums and adds beside them go too)")


def lead(out: dict[str, str], r: Rework, busy_share: float, healthy: bool, kernels: int = 0,
         knob=None) -> dict[str, str]:
    """The Next with the re-done work first: a healthy Next's "no one-line lever" gives way to it (the one line is
    there); any other Next's lever is said after it, as the next experiment once the work is gone, with the knob in
    hand beside it."""
    lever = lever_words(r, kernels)
    knob_words = knob_clause(knob, first=False) if knob is not None else ""
    if r.kind in LAUNCH_KINDS:
        return {"lever": f"{lever}; after it, {out['lever']}", "why": out["why"] + knob_words, "waste": out["waste"]}
    busy = claim("next.rework.busy_share", busy_share, share(busy_share))
    why = (f"the GPU is busy {busy} of the span and the op table's top work is work the step re-does: the launch and "
           "host fixes the replay prices do not remove kernels")
    if healthy:
        return {"lever": lever, "why": why, "waste": out["waste"]}
    return {"lever": f"{lever}; after it, {out['lever']}", "why": f"{why}; {out['why']}{knob_words}",
            "waste": out["waste"]}
