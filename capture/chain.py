"""The course's elementwise chain, y = sigmoid(x*scale + shift) * x, three ways.

eager   four kernels, 9 element-passes through memory per element
triton  one fused kernel, 2 passes (read x, write y)
compile torch.compile fuses it into one Inductor/Triton kernel, also 2 passes
Small n: each kernel takes less than its launch, so all three are overhead-bound
and fusion's 4.5x byte saving buys ~1x (drill M01.08). Large n: memory-bound.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch

from tracetriage.capture.workload import DTYPES, DType, RepeatedCall
from tracetriage.kernels.fused_chain import EAGER_PASSES, FUSED_PASSES, chain_eager, fused_chain


@dataclass
class ElementwiseChain(RepeatedCall):
    kind: ClassVar[str] = "elementwise_chain"
    cpu_sizes: ClassVar[dict] = {"n": 1 << 12, "repeats_per_step": 4}
    impl: Literal["eager", "triton", "compile"] = "eager"
    n: int = 1 << 24             # elements
    dtype: DType = "float32"
    repeats_per_step: int = 20   # chain calls per profiled step

    def setup(self) -> None:
        if self.impl not in ("eager", "triton", "compile"):
            raise ValueError(f"impl must be eager, triton or compile, not {self.impl!r}")
        self.x = torch.randn(self.n, device=self.device, dtype=DTYPES[self.dtype])
        if self.impl == "eager":
            self.fn = chain_eager
        elif self.impl == "triton":
            self.fn = fused_chain
        else:
            self.fn = torch.compile(chain_eager, dynamic=False)

    def range_name(self) -> str:
        return f"chain_{self.impl}"

    def summary(self) -> dict:
        passes = EAGER_PASSES if self.impl == "eager" else FUSED_PASSES
        elem = self.x.element_size()
        return {
            "elements": self.n,
            "calls_per_step": self.repeats_per_step,
            "bytes_per_element": passes * elem,
            "bytes_per_call": passes * elem * self.n,
            "kernels_per_call": 4 if self.impl == "eager" else 1,
        }
