"""Matrix products that stream their weights: a decode step's GEMMs multiply a few rows of activations by a large
weight matrix, so nearly every byte they move is a weight read once per step. Their lever is fewer weight bytes
(weight-only quantization) or more rows per weight read (more sequences a step), not fusion of the elementwise ops.

Input: the roofline's points (op, shapes, bytes, time, bound). Output: the share of the memory-bound kernel time in
such products and the biggest of them, or None where the memory-bound time is not mostly theirs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tracetriage.analyzers.analyses.roofline import RooflinePoint
from tracetriage.analyzers.model.verdicts import Bound

MAX_ROWS = 32          # activation rows a weight read serves: at or below this, a [rows, K] x [K, N] product's bytes
MIN_WEIGHT_DIM = 512   # are the weights' (K*N) to within (rows * (K + N)) / (K * N) <= 32 * 2 / 512 = 12.5%
HOLDS = 0.5            # such products hold at least this share of the memory-bound kernel time

_DIMS = re.compile(r"\d+(?:x\d+)*")


@dataclass(frozen=True)
class WeightStreaming:
    share: float           # of the memory-bound kernel time, in weight-streaming products
    rows: int              # the biggest product's activation rows (batch x tokens a step)
    k: int                 # its weight matrix, K x N
    n: int
    calls: int
    device_us: float


def weight_product(p: RooflinePoint) -> tuple[int, int, int] | None:
    """(rows, K, N) of a matrix product whose second operand is a 2-D weight and whose rows are few."""
    if p.kind != "matmul":
        return None
    operands = [[int(d) for d in m.group(0).split("x")] for m in _DIMS.finditer(p.shapes)]
    weights = [o for o in operands if len(o) == 2 and min(o) >= MIN_WEIGHT_DIM]
    acts = [o for o in operands if o not in weights and len(o) >= 2]
    if len(weights) != 1 or not acts:
        return None
    k, n = weights[0]
    rows = 1
    for d in acts[0][:-1]:      # [rows, K] or [batch, tokens, K]: every dim but the reduced one
        rows *= d
    return (rows, k, n) if rows <= MAX_ROWS else None


def weight_streaming(points: list[RooflinePoint]) -> WeightStreaming | None:
    memory = [p for p in points if p.bound is Bound.MEMORY]
    total = sum(p.device_us for p in memory)
    found = [(p, w) for p in memory if (w := weight_product(p)) is not None]
    held = sum(p.device_us for p, _ in found)
    if total <= 0 or held < HOLDS * total:
        return None
    top, (rows, k, n) = max(found, key=lambda f: f[0].device_us)
    return WeightStreaming(share=held / total, rows=rows, k=k, n=n, calls=top.calls, device_us=top.device_us)
