"""What a workload is: a dataclass of parameters with setup() and step().

The harness warms a workload up outside the profiled region, times step() with
the honest timer, then profiles `steps` calls of it. A workload names its
phases with `named_range` inside step(); it never synchronizes at the end of a
step unless the synchronization is the point (the smell workloads).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch

from tracetriage.capture.ranges import named_range

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DType = Literal["float32", "bfloat16", "float16"]   # the keys of DTYPES: what --set dtype=... accepts


class ParameterError(ValueError):
    """A workload's parameters that do not fit together (a user's --set): one line for the user."""


@dataclass
class Workload:
    kind: ClassVar[str] = "workload"
    # The field values this workload runs with on the CPU (--device cpu): the same code, CPU-sized.
    # They are fields, never a size chosen inside setup(), so that params() records what ran.
    cpu_sizes: ClassVar[dict] = {}
    device: str = "cuda"
    steps: int = 10      # profiled iterations
    warmup: int = 3      # untimed, unprofiled iterations first (compile, autotune, allocator)

    def setup(self) -> None:
        """Allocate inputs and weights on self.device."""

    def step(self) -> Any:
        raise NotImplementedError

    def inputs(self) -> list[torch.Tensor]:
        """Tensors the honest timer checks are on the device being timed."""
        return []

    def summary(self) -> dict:
        """Workload-specific figures for the sidecar (bytes per element, FLOPs, ...)."""
        return {}

    def params(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def sync(self) -> None:
        if torch.device(self.device).type == "cuda":
            torch.cuda.synchronize()


@dataclass
class RepeatedCall(Workload):
    """A workload that calls self.fn(self.x) `repeats_per_step` times per step, in one named range.

    Subclasses set self.fn and self.x in setup() and name the range with range_name().
    """
    repeats_per_step: int = 10

    def range_name(self) -> str:
        return self.kind

    def step(self):
        with named_range(self.range_name()):
            for _ in range(self.repeats_per_step):
                y = self.fn(self.x)
        return y

    def inputs(self):
        return [self.x]
