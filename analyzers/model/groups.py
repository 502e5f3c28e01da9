"""Distinct values of integer columns, and groups of value pairs, by sorting.

numpy 2's np.unique(values) with no return_* finds the distinct values by hashing every value, which on
these columns is 10x (a few distinct threads in 600k rows) to 60x (start times, nearly all distinct)
slower than sorting them; with return_inverse (or index, or counts) it sorts. distinct() sorts: the same
result for integer arrays (for floats np.unique also merges NaNs, which this does not).
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
