"""Name tests over event rows: each test runs once per distinct name, not once per event.

A trace of a million events has a few hundred distinct names, so a Python test of a name
(`n in SYNC_CALLS`, `"Pageable" in n`) is cheap when it is asked of the names and broadcast
back to the rows through np.unique's inverse.
"""
from __future__ import annotations

import numpy as np


def name_tests(trace, rows: np.ndarray, *tests) -> list[np.ndarray]:
    """test(name) for each row, for every test, on one np.unique of the rows' names."""
    if not len(rows):
        return [np.zeros(0, dtype=bool) for _ in tests]
    ids, inv = np.unique(trace.ev.name[rows], return_inverse=True)
    names = [trace.names[i] for i in ids]
    inv = inv.ravel()
    return [np.array([bool(t(n)) for n in names], dtype=bool)[inv] for t in tests]


def name_flags(trace, rows: np.ndarray, test) -> np.ndarray:
    """test(name) for each row, evaluated once per distinct name."""
    return name_tests(trace, rows, test)[0]
