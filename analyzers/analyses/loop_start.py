"""Where a loop's steps begin when its units were cut at an op inside the iteration."""
from __future__ import annotations

import numpy as np


def from_the_loops_start(tok: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Units cut at an op inside the iteration (the loop's first op occurs twice per iteration, so the cut is its
    second op) leave the first iteration's head before the first unit: when what comes before the first unit is
    exactly what comes before every other unit, the units start there (a 20-iteration loop is 20 steps, numbered
    as its iterations, not a one-op prologue and 20 steps from the second op on). Where a prologue comes before
    that head, see _rotated_to_the_iteration."""
    j = int(pos[0])
    if j == 0 or len(pos) < 2 or np.any(np.diff(pos) <= j):
        return _rotated_to_the_iteration(tok, pos)
    head = tok[:j]
    if all(np.array_equal(tok[p - j:p], head) for p in pos[1:].tolist()):
        return pos - j
    return _rotated_to_the_iteration(tok, pos)


def _common_tail(tok: np.ndarray, pos: np.ndarray) -> int:
    """How many ops come, the same, before every unit's start (the first unit's included), short of a whole unit."""
    most = min(int(pos[0]), int(np.diff(pos).min()) - 1)
    k = 0
    while k < most and (tok[pos - k - 1] == tok[pos[0] - k - 1]).all():
        k += 1
    return k


def _rotated_to_the_iteration(tok: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Units cut at an op inside the iteration, after a prologue: the ops that every unit ends with also come just
    before the first unit, and the last unit stops short of them (the loop ends there), so the loop is whole
    iterations that start k ops earlier. A 20-iteration loop of 11 copy_, fill_, cudaGraphLaunch cut at fill_ read
    as a step 0 holding the prologue and the first iteration's copies, then 20 steps whose last is a fill_ and a
    launch (heldout-user19 gp_cudagraph); one prologue, then 20 steps from the first copy_, it is."""
    if len(pos) < 3:
        return pos
    k = _common_tail(tok, pos)
    if k == 0:
        return pos
    unit = int(pos[-1] - pos[-2])
    head = unit - k
    last, before = int(pos[-1]), int(pos[-2])
    if last + head > len(tok) or not np.array_equal(tok[last:last + head], tok[before:before + head]):
        return pos
    # the last unit is followed by no tail of the unit: the loop ends with its head
    if np.array_equal(tok[last + head:last + unit], tok[last - k:last]):
        return pos
    return pos - k
