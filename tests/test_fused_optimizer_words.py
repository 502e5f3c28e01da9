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
