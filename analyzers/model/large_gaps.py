"""A few large gaps that hold most of a cause's idle: which gaps they are.

A cause's gaps are often a few long ones (one per step: the host's scheduling, a per-step Python stretch, a batch
handed over) beside many short ones. What the host did in the long ones is the cause's content; what it did in the
short ones is not: heldout-user16 mlp_bs2056_nw8 named the Adam step's Python and _foreach ops (the small gaps') as
the content of host-work gaps whose three ~2 ms ones, 88% of it, hold no traced op and no Python frame below main
(a DataLoader batch handed over and freed). The few are the gaps LARGEST_TIMES the median or longer, at most
FEW_AT_MOST of the gaps, holding FEW_HOLD of the idle, of one size class (the smallest at least a LARGEST_TIMES-th of
the largest)."""
from __future__ import annotations

import numpy as np

LARGEST_TIMES = 5     # a gap this many times the median or longer is one the median hides
FEW_HOLD = 0.8        # the gaps the median hides hold this share of the cause's idle ...
FEW_AT_MOST = 0.5     # ... and are at most half of its gaps: "a few large gaps"


def few_large(dur: np.ndarray) -> np.ndarray | None:
    """The mask of `dur`'s few large gaps (module docstring), or None where its gaps are not so split."""
    dur = np.asarray(dur, np.int64)
    total = int(dur.sum())
    if len(dur) < 3 or total <= 0:
        return None
    big = dur >= LARGEST_TIMES * np.median(dur)
    k = int(big.sum())
    if k < 2 or k > FEW_AT_MOST * len(dur) or int(dur[big].sum()) < FEW_HOLD * total \
            or int(dur[big].min()) * LARGEST_TIMES < int(dur.max()):
        return None
    return big
