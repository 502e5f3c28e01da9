"""Group ids of column values: what np.unique's inverse gives, without sorting every row.

np.unique(values, return_inverse=True) sorts all the values (an argsort of a million rows costs tens of
ms, and the report asks it dozens of times); without the inverse numpy hashes them instead, so the few
distinct values (threads, queues, devices) are found in one pass, and each row's group is a binary
search among them. Same ids as np.unique's: the rank of the row's value among the distinct values.
"""
from __future__ import annotations

import numpy as np


def group_ids(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values, ascending; each value's index among them) = np.unique(values, return_inverse=True)."""
    distinct = np.unique(values)
    return distinct, np.searchsorted(distinct, values)


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
