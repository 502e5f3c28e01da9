"""Where a loop's steps begin when its units were cut at an op inside the iteration."""
from __future__ import annotations

import numpy as np


def from_the_loops_start(tok: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Units cut at an op inside the iteration (the loop's first op occurs twice per iteration, so the cut is its
    second op) leave the first iteration's head before the first unit: when what comes before the first unit is
    exactly what comes before every other unit, the units start there (a 20-iteration loop is 20 steps, numbered
    as its iterations, not a one-op prologue and 20 steps from the second op on)."""
    j = int(pos[0])
    if j == 0 or len(pos) < 2 or np.any(np.diff(pos) <= j):
        return pos
    head = tok[:j]
    if all(np.array_equal(tok[p - j:p], head) for p in pos[1:].tolist()):
        return pos - j
    return pos
