"""Matmul sweep (drill M01.04): a kernel has no single speed.

Each step runs one matmul per shape inside a range named after the shape, so
the trace shows tiny shapes bound by launch and big ones by arithmetic; the
summary converts honest-timer medians into TFLOP/s per shape (2*M*N*K FLOPs).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch

from tracetriage.capture.ranges import named_range
from tracetriage.capture.timer import honest_time
from tracetriage.capture.workload import DTYPES, DType, Workload

# (M, N, K): square sizes from launch-bound to compute-bound, plus the skinny
# decode shape (M=1: a GEMV that streams the weight once, memory-bound).
DEFAULT_SHAPES = [
    (256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
    (4096, 4096, 4096), (8192, 8192, 8192), (1, 8192, 8192), (16, 8192, 8192),
]


@dataclass
class MatmulSweep(Workload):
    kind: ClassVar[str] = "matmul_sweep"
    cpu_sizes: ClassVar[dict] = {"shapes": [(64, 64, 64), (256, 256, 256), (1, 256, 256)], "dtype": "float32"}
    shapes: list[tuple[int, int, int]] = field(default_factory=lambda: list(DEFAULT_SHAPES))   # (M, N, K) each
    dtype: DType = "bfloat16"

    def setup(self) -> None:
        dt = DTYPES[self.dtype]
        self.operands = [
            (torch.randn(m, k, device=self.device, dtype=dt), torch.randn(k, n, device=self.device, dtype=dt))
            for m, n, k in self.shapes
        ]

    def step(self):
        out = None
        for (m, n, k), (a, b) in zip(self.shapes, self.operands):
            with named_range(f"mm_{m}x{n}x{k}"):
                out = a @ b
        return out

    def inputs(self):
        return [t for pair in self.operands for t in pair]

    def summary(self) -> dict:
        rows = []
        for (m, n, k), (a, b) in zip(self.shapes, self.operands):
            t = honest_time(lambda: a @ b, device=self.device, tensors=[a, b], warmup=3, repeats=20)
            flops = 2.0 * m * n * k
            nbytes = (m * k + k * n + m * n) * a.element_size()
            rows.append({
                "m": m, "n": n, "k": k, "dtype": self.dtype,
                "median_ms": t.median_ms, "spread_pct": t.spread_pct,
                "tflops": flops / (t.median_ms * 1e-3) / 1e12,
                "gbps": nbytes / (t.median_ms * 1e-3) / 1e9,
                "intensity": flops / nbytes,
            })
        return {"per_shape": rows}
