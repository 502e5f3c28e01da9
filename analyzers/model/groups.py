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
    """np.unique(values) of an integer array: its distinct values, ascending, in its dtype. Values of a narrow span
    (name or shape ids, codes: no wider than twice their count) are flagged in a table over the span, two passes
    where a sort of many repeats in no order is slow (467k ops' shape ids of 296 values: ~3 ms against ~30)."""
    v = np.asarray(values).ravel()
    if v.size > 256 and (v.dtype.kind == "i" or (v.dtype.kind == "u" and v.dtype.itemsize < 8)):
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < min(2 * v.size, TABLE_MAX):
            present = np.zeros(hi - lo + 1, bool)
            present[v.astype(np.intp) - lo if lo else v] = True   # (in intp: a narrow dtype would wrap)
            return (np.flatnonzero(present) + lo).astype(v.dtype)
    s = np.sort(v)
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


TABLE_MAX = 1 << 22     # dense_codes tabulates a span of values up to this wide (4 MB of flags, 32 MB of codes)


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_inverse=True) of a 1-D integer array whose values span less than TABLE_MAX (name ids,
    shape ids, codes): a table over the span, two passes over the values, where np.unique sorts them (101k
    signatures of a 942k-event trace: ~2 ms against ~15). A wider span: np.unique's own answer."""
    v = np.asarray(values)
    if not v.size:
        return np.unique(v, return_inverse=True)
    lo, hi = int(v.min()), int(v.max())
    if hi - lo >= TABLE_MAX:
        return np.unique(v, return_inverse=True)
    off = v.astype(np.intp) - lo      # (in intp: a narrow dtype would wrap)
    present = np.zeros(hi - lo + 1, bool)
    present[off] = True
    at = np.flatnonzero(present)
    table = np.zeros(hi - lo + 1, np.intp)
    table[at] = np.arange(len(at))
    return (at + lo).astype(v.dtype), table[off]


def first_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_index=True, return_inverse=True)[1:] of a 1-D integer array: where each distinct value
    first occurs and each value's index among the distinct ones (dense_codes: a table where the span is narrow)."""
    v = np.asarray(values)
    if not v.size or int(v.max()) - int(v.min()) >= TABLE_MAX:
        return np.unique(v, return_index=True, return_inverse=True)[1:]
    _, inverse = dense_codes(v)
    first = np.zeros(int(inverse.max()) + 1, np.intp)
    first[inverse[::-1]] = np.arange(len(v) - 1, -1, -1)    # (the last write of a repeated index wins: the first row)
    return first, inverse


def pair_codes(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (a, b) pairs in lexicographic order (as two arrays) and each row's index among them, as
    pair_groups, through dense_codes of each column and of their pair's code (no sort where the spans are narrow)."""
    ua, ia = dense_codes(a)
    ub, ib = dense_codes(b)
    pair, inverse = dense_codes(ia.astype(np.int64) * len(ub) + ib)
    return ua[pair // max(len(ub), 1)], ub[pair % max(len(ub), 1)], inverse


def stable_order(codes: np.ndarray) -> np.ndarray:
    """np.argsort(codes, kind="stable") of an integer array: the same order, by radix sort where every code fits 16
    bits unsigned (numpy radix-sorts only types that narrow: 101k codes in 2 ms, not 12)."""
    c = np.asarray(codes)
    if c.size and int(c.min()) >= 0 and int(c.max()) < (1 << 16):
        c = c.astype(np.uint16)
    return np.argsort(c, kind="stable")
