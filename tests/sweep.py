"""Sweeps (every bundled trace, drill, pair): a few items stand for the rest in the fast suite, and the slow step
(`pytest -m slow`) runs every other one. Nothing is dropped: each item is one test either way."""
from __future__ import annotations

import pytest


def sweep(items, fast, ids=None) -> list:
    """`items` as pytest parameters (a tuple is one item's arguments), each one not in `fast` marked slow.
    Every item of `fast` must be in the sweep: a renamed trace cannot quietly empty the fast suite's share."""
    items, fast = list(items), list(fast)
    missing = [f for f in fast if f not in items]
    assert not missing, f"not in the sweep: {missing}"
    ids = list(ids) if ids is not None else [None] * len(items)
    # the slow share is also marked `sweep`: pure analysis, no server or browser, so .ci/run spreads it over the cores
    return [pytest.param(*(it if isinstance(it, tuple) else (it,)), id=i,
                         marks=() if it in fast else (pytest.mark.slow, pytest.mark.sweep))
            for it, i in zip(items, ids)]
