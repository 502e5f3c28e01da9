"""Repeats of one op sequence that are a loop over tiles of one matrix product, not layers of a model.

A pass with no mark of a step whose units repeat is one forward's layers (steps.NoSteps.ONE_PASS). But a unit that
slices its operands, multiplies the slices and adds the partial product into one output in place is a loop over tiles
of the product's reduction dimension: `for k0 in range(0, K, T): out += a[:, k0:k0+T] @ b[k0:k0+T]`. CS521-mp2's
im2col convolution on an A10G runs its K = 36 .. 196 in tiles of 64 so, and its 4 repeats 'from aten::slice' were
called 'layers of it': one product cut into launches, the loop to fold back into one matmul.

Read from the regular units' op names (the first SAMPLE units), round the loop from the product: each product is
followed by an in-place add, then by the slicing of the next tile's operands.

Input: a Trace and the repeated units (rows, positions, regular, unit_ops, as analyses.steps cuts them).
Output: tiled(...), whether they are such a loop.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.trace import Trace

SAMPLE = 8      # regular units read: a loop's units are alike
SLICING = frozenset({"aten::slice", "aten::narrow", "aten::split", "aten::chunk", "aten::select", "aten::as_strided"})
PRODUCTS = frozenset({"aten::mm", "aten::matmul", "aten::bmm", "aten::linear", "aten::einsum"})
ACCUMULATING = frozenset({"aten::add_", "aten::addmm_", "aten::baddbmm_", "aten::addbmm_"})


def tiled(trace: Trace, rows: np.ndarray, positions: np.ndarray, regular: np.ndarray, unit_ops: int) -> bool:
    """Whether each regular unit slices, multiplies the slices, and accumulates the product in place, in that order."""
    starts = positions[regular][:SAMPLE]
    if not len(starts) or unit_ops <= 0:
        return False
    for s in starts.tolist():
        names = [trace.name_of(int(r)) for r in rows[s:s + unit_ops]]
        product = next((i for i, n in enumerate(names) if n in PRODUCTS), None)
        if product is None:
            return False
        # the unit is cut where the loop's ops repeat, at any of them: read it from its product on, round the loop
        after = names[product + 1:] + names[:product]
        added = next((i for i, n in enumerate(after) if n in ACCUMULATING), None)
        if added is None or not any(n in SLICING for n in after[added + 1:]):
            return False
    return True
