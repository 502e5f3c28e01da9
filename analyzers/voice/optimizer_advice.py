"""The fused-optimizer Next's words: which flag of torch.optim's the user's optimizer takes."""
from __future__ import annotations

from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.whatif.levers.fused_optimizer import TORCH_FOREACH_OPTIMIZERS, multi_tensor_flags

# (which of torch.optim's classes take foreach=True and fused=True: the lever's, whatif/levers/fused_optimizer.py)


def fused_optimizer_advice(a: Analysis) -> str:
    """The optimizer knob as the user types it: fused=True where the step runs foreach passes already, a
    multi-tensor flag where it runs kernels per parameter, foreach ops written by hand for a class with neither."""
    opt = a.framework.optimizer if a.framework else None
    lv = a.next_experiment.lever
    step = lv.assumption if lv is not None and hasattr(lv.assumption, "foreach_already") else None
    if step is not None and step.foreach_already:                      # foreach already: one fused pass
        return (f"fuse the optimizer step: torch.optim.{step.foreach.optimizer}(..., fused=True), one pass over "
                "every parameter in place of its foreach passes")
    if opt is not None and opt not in TORCH_FOREACH_OPTIMIZERS:
        return (f"make the optimizer step multi-tensor: {opt} is not one of torch.optim's (no foreach or fused flag), "
                "so write its per-parameter update with torch._foreach_* ops (or torch.compile the step), one kernel "
                "over every parameter instead of a few per parameter")
    name = f"torch.optim.{opt}" if opt else "the optimizer"
    return (f"use a multi-tensor optimizer step: {name}(..., {multi_tensor_flags(opt)}), one kernel over every "
            "parameter instead of a few per parameter")


def in_hand_change(a) -> str:
    """A fused_optimizer lever said as the one-line knob in hand beside a bigger fix, in its class's own flag
    (`a`: its StepFused; only where the class has the flag: LeverSpec.one_line_for)."""
    cls = a.optimizer
    if a.foreach_already:
        return (f"torch.optim.{cls}(..., fused=True) in place of its foreach passes" if cls else
                "torch.optim's fused=True in place of its foreach passes")
    if not cls:
        return "torch.optim's foreach=True (or fused=True) in place of its per-parameter kernels"
    return f"torch.optim.{cls}(..., {multi_tensor_flags(cls)}) in place of its per-parameter kernels"
