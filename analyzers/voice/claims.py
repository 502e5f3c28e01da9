"""Phrases that state a claim the claim checker verifies (tracetriage.analyzers.output.claims): each figure
comes from one field of the analysis, and the phrase says what the figure is (a saving, a slow-down, nothing)
so that the sentence never claims more than the number does.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import saving_pct


def waste_prediction(saving_ns: float, baseline_ns: float) -> str:
    """The "would waste the week" lever's prediction: 'predicted −7%' when it saves, 'predicted to slow the run
    (+3%)' when the replay says it costs time, never a '+3%' that reads as one more saving."""
    pct = saving_pct(saving_ns, baseline_ns)
    return f"predicted to slow the run ({pct})" if pct.startswith("+") else f"predicted {pct}"


def only_predicts(saving_ns: float, baseline_ns: float) -> str:
    """A lever that holds more of the idle but predicts less: 'predicts only −4%', or 'predicts no saving (+3%)'."""
    pct = saving_pct(saving_ns, baseline_ns)
    return f"predicts no saving ({pct})" if pct.startswith("+") or pct == "0%" else f"predicts only {pct}"


def tensor_core_precisions(pk, dtype: str | None = None) -> str:
    """The precisions below `dtype` that the device's tensor cores run faster (its peak table, DevicePeaks):
    'bf16/fp8' for fp32 work on a Hopper, 'fp8' for its bf16 work, 'bf16' for fp32 on an A100, 'fp16' on a V100 (no
    bf16 there); '' when there is none, or no peak table. Advice names only these (issue 33: "fp8 on tensor cores"
    was a fixed phrase, on GPUs with no fp8)."""
    if pk is None:
        return ""
    rate = pk.flops_per_s.get
    half = "bf16" if rate("bf16", 0) > 1.01 * rate("fp32", 0) else \
        "fp16" if rate("fp16", 0) > 1.01 * rate("fp32", 0) else ""
    fp8 = "fp8" if rate("fp8", 0) > 1.01 * max(rate("fp16", 0), rate("bf16", 0)) else ""
    if dtype in ("bf16", "fp16"):
        half = ""        # the work is in half precision already
    elif dtype in ("fp8", "int8", "fp4x2"):
        half = fp8 = ""
    return "/".join(x for x in (half, fp8) if x)


def cheaper_arithmetic(pk, dtype: str | None = None) -> str:
    """What kernels twice as fast would take in a compute-bound span, on this device."""
    on = tensor_core_precisions(pk, dtype)
    return f"cheaper arithmetic ({on} on tensor cores) or less of it" if on else "less arithmetic"


def compute_advice(pk, dtype: str | None = None) -> str:
    """The Next of a compute-bound span, on this device."""
    on = tensor_core_precisions(pk, dtype)
    cheaper = f" or cheaper arithmetic: lower precision on tensor cores ({on})," if on else ":"
    return f"do less arithmetic{cheaper} skip work (causal masks, smaller shapes)"
