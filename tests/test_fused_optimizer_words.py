"""The fused-optimizer Next names a flag only where the optimizer has it: torch.optim's foreach optimizers take
foreach=True, four of them fused=True, and another class (Shampoo, a user's own) neither (hta-sampled-rank0 was told
"torch.optim.Shampoo(..., fused=True)", an API that does not exist)."""
import dataclasses
from pathlib import Path

import pytest

from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.optimizer_advice import fused_optimizer_advice

TRACE = Path(__file__).resolve().parent.parent / "traces" / "smell-launch-per-param.json.gz"


@pytest.fixture(scope="module")
def analysis():
    return analyze_file(TRACE)


def _with_optimizer(a, name):
    return dataclasses.replace(a, framework=dataclasses.replace(a.framework, optimizer=name))


def test_an_optimizer_outside_torch_optim_is_told_to_write_its_step_multi_tensor_not_given_a_flag(analysis):
    words = fused_optimizer_advice(_with_optimizer(analysis, "Shampoo"))
    assert "fused=True" not in words and "foreach=True" not in words and "torch.optim.Shampoo" not in words
    assert "Shampoo is not one of torch.optim's" in words and "torch._foreach_" in words


def test_adamw_is_offered_fused_and_rmsprop_only_foreach(analysis):
    assert "torch.optim.AdamW(..., fused=True (or foreach=True))" in fused_optimizer_advice(
        _with_optimizer(analysis, "AdamW"))
    rms = fused_optimizer_advice(_with_optimizer(analysis, "RMSprop"))
    assert "torch.optim.RMSprop(..., foreach=True)" in rms and "fused" not in rms


def test_a_fused_flag_is_in_hand_only_for_a_class_of_torch_optim_that_takes_it():
    """hta-sampled-rank0 (Optimizer.step#EMAOptimizer.step around Optimizer.step#Shampoo.step) was told 'a one-line
    knob is in hand first: torch.optim's fused=True ...': neither class has the flag, so no knob is said."""
    from tracetriage.analyzers.voice.optimizer_advice import in_hand_change
    from tracetriage.analyzers.whatif.levers import LEVERS
    from tracetriage.analyzers.whatif.levers.foreach_fused import ForeachSteps
    from tracetriage.analyzers.whatif.levers.fused_optimizer import StepFused

    spec = LEVERS["fused_optimizer"]
    shampoo = StepFused("fused_optimizer", 40, steps=2, kernels_per_step=20, optimizers=("EMAOptimizer", "Shampoo"))
    assert not shampoo.api_in_hand and not spec.one_line_for(shampoo)
    adamw = StepFused("fused_optimizer", 40, steps=2, kernels_per_step=20, optimizers=("AdamW",))
    assert adamw.api_in_hand and spec.one_line_for(adamw)
    assert in_hand_change(adamw) == "torch.optim.AdamW(..., fused=True (or foreach=True)) in place of its " \
                                    "per-parameter kernels"
    # a foreach RMSprop step: fused=True is what it would need, and RMSprop has no such flag
    rms = StepFused("fused_optimizer", 14, steps=2, foreach=ForeachSteps(optimizer="RMSprop", steps=2),
                    optimizers=("RMSprop",))
    assert not rms.api_in_hand
    sgd = StepFused("fused_optimizer", 14, steps=2, foreach=ForeachSteps(optimizer="SGD", steps=2), optimizers=("SGD",))
    assert sgd.api_in_hand and in_hand_change(sgd) == "torch.optim.SGD(..., fused=True) in place of its foreach passes"
