"""Set operations on integer event columns, done the way that is fast for them.

numpy 2's np.unique(values) with no return_* finds the distinct values by hashing every value, which on
these columns is 10x (a few distinct threads in 600k rows) to 60x (start times, nearly all distinct)
slower than sorting them; with return_inverse (or index, or counts) it sorts. distinct() sorts: the same
result for integer arrays (for floats np.unique also merges NaNs, which this does not). np.isin against a
handful of codes (event categories) sorts or tabulates first, ~12x slower over 700k rows than comparing
with each code: any_of() compares.
"""
from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values) of an integer array: its distinct values, ascending, in its dtype."""
    s = np.sort(np.asarray(values).ravel())
    if len(s) < 2:
        return s
    keep = np.empty(len(s), bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def any_of(values: np.ndarray, codes) -> np.ndarray:
    """np.isin(values, codes) for a handful of codes (event categories): a comparison per code."""
    out = np.zeros(np.shape(values), bool)
    for c in codes:
        out |= values == c
    return out


def pair_groups(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (a, b) pairs in lexicographic order (as two arrays) and each row's index among them:
    np.unique(np.stack([a, b]), axis=1, return_inverse=True) without its sort of structured rows."""
    order = np.lexsort((b, a))
    sa, sb = a[order], b[order]
    new = np.ones(len(order), bool)
    new[1:] = (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])
    inverse = np.empty(len(order), np.int64)
    inverse[order] = np.cumsum(new) - 1
    return sa[new], sb[new], inverse
