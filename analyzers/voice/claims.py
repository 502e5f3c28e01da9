"""Phrases whose wording is itself a claim the claim checker verifies (tracetriage.analyzers.output.claims): each
figure comes from one field of the analysis, is recorded as a claim (tracetriage.analyzers.voice.said), and the
phrase says what the figure is (a saving, a slow-down, nothing) so that the sentence never claims more than the
number does.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import saving_pct
from tracetriage.analyzers.voice.common import cheaper_precisions
from tracetriage.analyzers.voice.said import claim

# The share of the idle inside torch.compile's code (compiled regions, compiled functions' backward) from which a
# trace is "compiled already": its launch-overhead Next is CUDA graphs, never "torch.compile to fuse" (issue 32).
COMPILED_IDLE_SHARE = 0.25

# The share of the idle inside the DataLoader (or torch.compile compiling) from which an idle-bound span is said to
# be input-bound (compile-bound), not overhead-bound: most of the device's wait is for batches (a reviewer of
# t4_fp32_train, 72% of its idle in DataLoader.__next__: "overhead-bound says CUDA graphs/compile to a PyTorch
# engineer; this is input starvation").
INPUT_BOUND_IDLE_SHARE = 0.5

# A cold start is set-up-bound only where the steady loop after it is not idle-bound itself: steady steps whose
# device idles more than half of each (the roofline's OVERHEAD_IDLE_SHARE) are what a warmed-up profile would still
# show (heldout-user3 wenlu_train_opt_4090m: 'set-up-bound (a cold start), not launch overhead' where the loop's
# 688 kernels of 1.6 µs idle 95% of each step and the Idle line said launch overhead 42%).
STEADY_IDLE_BOUND = 0.5


def steady_idle_share(steps: dict | None) -> float | None:
    """The steady steps' idle share (the median step's idle over its wall), from `report --json`'s steps (or the
    same figures of the analysis); None without a steady step."""
    summary = (steps or {}).get("summary") or {}
    wall, idle = summary.get("median_us"), summary.get("median_idle_us")
    return idle / wall if wall and idle is not None else None


def saving(key: str, saving_ns: float, baseline_ns: float) -> str:
    """A predicted change of the span ('−24%'), recorded as the share it saves (negative: it slows the run)."""
    return claim(key, saving_ns / baseline_ns if baseline_ns else 0.0, saving_pct(saving_ns, baseline_ns))


def waste_prediction(saving_ns: float, baseline_ns: float) -> str:
    """The "would waste the week" lever's prediction: 'predicted −7%' when it saves, 'predicted to slow the run
    (+3%)' when the replay says it costs time, never a '+3%' that reads as one more saving."""
    pct = saving("waste.saving", saving_ns, baseline_ns)
    return f"predicted to slow the run ({pct})" if pct.startswith("+") else f"predicted {pct}"


def only_predicts(saving_ns: float, baseline_ns: float) -> str:
    """A lever that holds more of the idle but predicts less: 'predicts only −4%', or 'predicts no saving (+3%)'."""
    pct = saving("next.dominant.saving", saving_ns, baseline_ns)
    return f"predicts no saving ({pct})" if pct.startswith("+") or pct == "0%" else f"predicts only {pct}"


def has_fp8(pk) -> bool:
    """Whether the device's tensor cores run fp8 faster than half precision (Hopper, Ada, MI300): advice names
    fp8 only there (issue 33: "fp8 on tensor cores" was a fixed phrase, on GPUs with no fp8)."""
    return "fp8" in (cheaper_precisions(pk, "bf16") or [])
