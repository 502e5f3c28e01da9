"""Interval arithmetic on sorted int64 arrays (ns). No Python loop over intervals."""
from __future__ import annotations

import numpy as np


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge possibly overlapping [start, end) intervals into disjoint sorted ones."""
    if len(starts) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if (starts[1:] >= starts[:-1]).all():   # event rows come sorted by start: nothing to sort or gather
        s, e = starts, ends
    else:
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    # a new merged interval begins where a start lies beyond everything seen so far
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], run_end[last]


def complement(starts: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The gaps of disjoint sorted intervals inside [lo, hi)."""
    if len(starts) == 0:
        return (np.array([lo], np.int64), np.array([hi], np.int64)) if hi > lo else (np.empty(0, np.int64),) * 2
    gs = np.concatenate(([lo], np.maximum(ends, lo)))
    ge = np.concatenate((np.minimum(starts, hi), [hi]))
    keep = ge > gs
    return gs[keep], ge[keep]


def intersect(a_s, a_e, b_s, b_e) -> tuple[np.ndarray, np.ndarray]:
    """Intersection of two disjoint sorted interval lists."""
    if len(a_s) == 0 or len(b_s) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # every intersection starts at some a_s or b_s; candidates pair each b with the a's it overlaps
    lo = np.searchsorted(a_e, b_s, side="right")   # first a ending after b starts
    hi = np.searchsorted(a_s, b_e, side="left")    # a's starting before b ends
    counts = np.maximum(hi - lo, 0)
    if counts.sum() == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    b_idx = np.repeat(np.arange(len(b_s)), counts)
    offs = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    a_idx = np.repeat(lo, counts) + offs
    s = np.maximum(a_s[a_idx], b_s[b_idx])
    e = np.minimum(a_e[a_idx], b_e[b_idx])
    keep = e > s
    return s[keep], e[keep]


def covered(starts: np.ndarray, ends: np.ndarray, qs: np.ndarray, qe: np.ndarray) -> np.ndarray:
    """For each query [qs, qe), the time covered by disjoint sorted intervals (vectorized)."""
    if len(starts) == 0:
        return np.zeros(len(qs), np.int64)
    cum = np.concatenate(([0], np.cumsum(ends - starts)))

    def before(t):  # covered time in (-inf, t)
        i = np.searchsorted(starts, t, side="right")  # intervals starting at or before t
        last = np.maximum(i - 1, 0)                   # (one index for the three gathers)
        last_s = starts[last]
        # np.clip(t - last_s, 0, last_e - last_s), as its minimum of a maximum without clip's overhead
        return np.where(i > 0, cum[last] + np.minimum(np.maximum(t - last_s, 0), ends[last] - last_s), 0)

    return np.maximum(before(qe) - before(qs), 0)


def total(starts: np.ndarray, ends: np.ndarray) -> int:
    return int(np.sum(ends - starts)) if len(starts) else 0
