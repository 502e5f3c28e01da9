"""Repeats of one op sequence that are a loop over a tensor's elements, not layers of a model.

A pass with no mark of a step whose units repeat is one forward's layers (steps.NoSteps.ONE_PASS). But a unit
whose ops each take tensors of one element (0-d or [1]), save the tensor an indexing op picks the element from,
is a Python loop over elements: `for i in range(n): total += t[i].cpu()`. heldout-user19 gp_d2h_sync sums 4,096
elements three times so, and its 12,286 repeats 'from aten::add_' were called 'layers of it': the loop the
engineer has to delete, said as the model's structure.

Read from the recorded shapes of the regular units' ops (the first SAMPLE units): a unit is per-element when at
least one of its ops has a tensor input (by its Input type: a size list records [] as a 0-d tensor does), and
none has one of more than one element, the source an indexing op (select, slice, index ...) reads aside. Without
shapes nothing is said.
"""
from __future__ import annotations

import math

import numpy as np

from tracetriage.analyzers.model.trace import NONE, Trace

SAMPLE = 64        # regular units read: a loop's units are alike, so a few say what all do
# ops that pick elements out of a tensor: their first input is the tensor looped over, of any size
INDEXING_OPS = frozenset({"aten::select", "aten::slice", "aten::index", "aten::narrow", "aten::unbind",
                          "aten::as_strided", "aten::index_select", "aten::__getitem__", "aten::item",
                          "aten::_local_scalar_dense"})
# the Input type of an argument that is no tensor (a size list such as aten::zeros' reads [] too)
NOT_TENSORS = frozenset({"", "Scalar", "ScalarList", "GenericList", "TensorList", "None"})


def _largest_input(trace: Trace, row: int) -> int | None:
    """The element count of the op's largest tensor input (the indexing ops' source aside); None: no tensor."""
    dims, types, _ = trace.shapes(row)
    if not dims:
        return None
    types = types or [""] * len(dims)
    skip = 1 if trace.name_of(row) in INDEXING_OPS else 0
    sizes = [math.prod(d) for d, t in list(zip(dims, types))[skip:]
             if isinstance(d, list) and t not in NOT_TENSORS and all(isinstance(x, int) for x in d)]
    return max(sizes) if sizes else None


def per_element(trace: Trace, rows: np.ndarray, positions: np.ndarray, regular: np.ndarray, unit_ops: int) -> bool:
    """Whether the regular units (each unit_ops rows from its position in rows) each work on single elements."""
    starts = positions[regular][:SAMPLE]
    if not len(starts) or unit_ops <= 0:
        return False
    at = (starts[:, None] + np.arange(unit_ops)[None, :]).ravel()
    picked = rows[at[at < len(rows)]]          # (the last unit may end with the rows)
    with_shapes = picked[trace.ev.shape[picked] != NONE]
    if not len(with_shapes):
        return False
    # one reading per (name, shapes) signature: a loop repeats a handful
    key = trace.ev.name[with_shapes].astype(np.int64) * (len(trace.shapes_raw) + 1) + trace.ev.shape[with_shapes]
    _, first = np.unique(key, return_index=True)
    sizes = [_largest_input(trace, int(with_shapes[i])) for i in first.tolist()]
    seen = [s for s in sizes if s is not None]
    return bool(seen) and max(seen) <= 1
