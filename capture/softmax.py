"""Softmax three ways: the naive five-kernel version, torch.softmax, and Triton.

naive   max, sub, exp, sum, div: five kernels, ~8 passes over the matrix
torch   one kernel (PyTorch's own fused softmax), 2 passes
triton  tracetriage.kernels.fused_softmax: one program per row, 2 passes
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import torch

from tracetriage.capture.workload import DTYPES, DType, RepeatedCall
from tracetriage.kernels.fused_softmax import fused_softmax


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    row_max = x.max(dim=-1, keepdim=True).values  # read rows, write 1 per row
    z = x - row_max                                # read, write
    num = torch.exp(z)                             # read, write
    den = num.sum(dim=-1, keepdim=True)            # read
    return num / den                               # read, write


@dataclass
class Softmax(RepeatedCall):
    kind: ClassVar[str] = "softmax"
    cpu_sizes: ClassVar[dict] = {"rows": 64, "cols": 256}
    impl: Literal["naive", "torch", "triton"] = "naive"
    rows: int = 4096
    cols: int = 4096
    dtype: DType = "float32"

    def setup(self) -> None:
        self.fn = {"naive": naive_softmax, "torch": lambda x: torch.softmax(x, dim=-1),
                   "triton": fused_softmax}[self.impl]
        self.x = torch.randn(self.rows, self.cols, device=self.device, dtype=DTYPES[self.dtype])

    def range_name(self) -> str:
        return f"softmax_{self.impl}"

    def summary(self) -> dict:
        passes = {"naive": 8, "torch": 2, "triton": 2}[self.impl]
        return {"bytes_per_call": passes * self.x.numel() * self.x.element_size(),
                "kernels_per_call": 5 if self.impl == "naive" else 1}
