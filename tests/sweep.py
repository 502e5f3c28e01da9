"""Sweeps (every bundled trace, drill, pair): a few items stand for the rest in the fast suite, and the slow step
(`pytest -m slow`) runs every other one. Nothing is dropped: each item is one test either way."""
from __future__ import annotations

from pathlib import Path

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


def family(path: Path) -> str:
    """A sample's family, the first two words of its name: `probe-sync-any.json.gz` -> `probe-sync` (the probes of
    one cause), `chain-eager-large` -> `chain-eager` (one program at two sizes), `gpt-graphs` -> `gpt-graphs`."""
    return "-".join(path.name.split(".")[0].split("-")[:2])


def smallest_of_each(paths, key) -> list:
    """The smallest file of each group `key` puts it in (its family, its folder): the cheapest stand-in, in the
    order the groups first appear."""
    best: dict = {}
    for p in paths:
        k = key(p)
        if k not in best or p.stat().st_size < best[k].stat().st_size:
            best[k] = p
    return list(best.values())
