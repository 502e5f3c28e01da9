"""Phrases that state a claim the claim checker verifies (tracetriage.analyzers.output.claims): each figure
comes from one field of the analysis, and the phrase says what the figure is (a saving, a slow-down, nothing)
so that the sentence never claims more than the number does.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import saving_pct
from tracetriage.analyzers.voice.common import cheaper_precisions

# The share of the idle inside torch.compile's code (compiled regions, compiled functions' backward) from which a
# trace is "compiled already": its launch-overhead Next is CUDA graphs, never "torch.compile to fuse" (issue 32).
COMPILED_IDLE_SHARE = 0.25


def waste_prediction(saving_ns: float, baseline_ns: float) -> str:
    """The "would waste the week" lever's prediction: 'predicted −7%' when it saves, 'predicted to slow the run
    (+3%)' when the replay says it costs time, never a '+3%' that reads as one more saving."""
    pct = saving_pct(saving_ns, baseline_ns)
    return f"predicted to slow the run ({pct})" if pct.startswith("+") else f"predicted {pct}"


def only_predicts(saving_ns: float, baseline_ns: float) -> str:
    """A lever that holds more of the idle but predicts less: 'predicts only −4%', or 'predicts no saving (+3%)'."""
    pct = saving_pct(saving_ns, baseline_ns)
    return f"predicts no saving ({pct})" if pct.startswith("+") or pct == "0%" else f"predicts only {pct}"


def has_fp8(pk) -> bool:
    """Whether the device's tensor cores run fp8 faster than half precision (Hopper, Ada, MI300): advice names
    fp8 only there (issue 33: "fp8 on tensor cores" was a fixed phrase, on GPUs with no fp8)."""
    return "fp8" in (cheaper_precisions(pk, "bf16") or [])
