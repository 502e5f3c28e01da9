"""The Next of a step already at the compute roof: no one-line lever, the heavy options named as such.

A compute-bound step whose compute-bound kernels reach AT_THE_ROOF of the device's peak for their dtype, with the
GPU idle under ROOF_IDLE of the span, has no knob left that the trace can show: launches, syncs and host work hold
nothing (the idle is that small), and the GEMMs already run near what the datasheet allows. What remains changes the
model or its recipe (fp8 matmuls where the device runs them faster, fewer FLOPs: a smaller model, shorter
sequences), and the Next says so rather than presenting those as a quick experiment. A sync the step makes (a loss
read with .item()) waits on nothing here: the idle it could leave is inside the share said.

The idle weighed is what a host-side fix could win: where launch overhead's gaps mostly had their next kernel queued
already (the device's own spacing between kernels, which no launch, sync or host-work fix shortens: triage.launch_queue)
only the gaps where the queue ran dry count with the other causes' idle. A compiled LM step at 77% of the bf16 peak
whose GPU idles 5.2% of the span, 1.5% of it between kernels queued back to back, has 3.7% a fix could reach.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import a_or_an, share, tflops
from tracetriage.analyzers.voice.common import cheaper_precisions
from tracetriage.analyzers.voice.said import claim

# cuBLAS's best bf16 GEMMs on an H100/H200 reach 75-85% of the datasheet's dense peak; at 70% of it the kernels have
# little left that a knob can give (traces/matmul-sweep-bf16: the largest shapes at 0.7-0.8 of the peak)
AT_THE_ROOF = 0.7
ROOF_IDLE = 0.05       # the GPU idles under this share of the span: the idle causes' levers hold less than this


def reachable_idle(a) -> float:
    """The share of the span a host-side fix could reach (module docstring): the idle, less the launch-overhead
    gaps whose next kernel was queued already where those are most of them."""
    from tracetriage.analyzers.model.verdicts import Cause

    dq = a.pace.dry if a.pace is not None else None
    if dq is None or not dq.fills_little or not a.span_ns:
        return a.verdict.idle_share
    queued = max(a.by_cause_ns.get(Cause.LAUNCH_OVERHEAD, 0) - dq.dry_ns, 0)
    return max(a.idle_ns - queued, 0) / a.span_ns


def at_the_roof(v, peaks, reachable: float | None = None) -> float | None:
    """The compute-bound kernels' share of the peak where the step is at the roof (module docstring), else None."""
    top = peaks.flops(v.dtype) / 1e12 if peaks and v.dtype else None
    idle = v.idle_share if reachable is None else min(reachable, v.idle_share)
    if not top or not v.achieved_tflops or idle >= ROOF_IDLE:
        return None
    reach = v.achieved_tflops / top
    return reach if reach >= AT_THE_ROOF else None


def next_words(v, peaks, reach: float, reachable: float | None = None) -> dict:
    top = peaks.flops(v.dtype) / 1e12
    lower = cheaper_precisions(peaks, v.dtype) or []
    heavy = (f"{' or '.join(claim(f'next.precision.{x.lower()}', 1, x) for x in lower)} matmuls (a change of the "
             "training recipe, not a flag) or less arithmetic (a smaller model, shorter sequences)" if lower else
             "less arithmetic (a smaller model, shorter sequences)")
    return {"lever": "no one-line lever: the step is already at the roof, and what is left is heavy: " + heavy,
            "why": (f"its compute-bound kernels run at "
                    f"{claim('next.achieved_tflops', v.achieved_tflops, tflops(v.achieved_tflops))}"
                    f" of {a_or_an(claim('next.peak_tflops', top, tflops(top)))} peak "
                    f"({claim('next.roof.reach', reach, share(reach))}) and the GPU idles "
                    f"{claim('next.roof.idle_share', v.idle_share, share(v.idle_share))} of the span"
                    f"{_queued_clause(v, reachable)}, so no launch, "
                    "sync or host-work fix has time to win"),
            "waste": "fusing elementwise ops or CUDA graphs: launches and bytes are not the limit"}


def _queued_clause(v, reachable: float | None) -> str:
    """Where the idle a fix could reach is less than the idle said: how much of the span that is."""
    if reachable is None or reachable >= v.idle_share or v.idle_share < ROOF_IDLE:
        return ""
    said = claim("next.roof.reachable_share", reachable, share(reachable))
    return (f", only {said} of it once the gaps whose next kernel was queued already are left out (the device's own "
            "spacing)")
