"""Name tests over event rows: each test runs once per distinct name, not once per event.

A trace of a million events has a few hundred distinct names, so a Python test of a name
(`n in SYNC_CALLS`, `"Pageable" in n`) is cheap when it is asked of the names and broadcast
back to the rows through np.unique's inverse.
"""
from __future__ import annotations

import numpy as np


def distinct_names(trace, rows: np.ndarray) -> np.ndarray:
    """The name ids the rows hold, each once, ascending (np.unique's, in one pass: ids index trace.names)."""
    present = np.zeros(len(trace.names), bool)
    present[trace.ev.name[rows]] = True
    return np.flatnonzero(present)


def name_codes(trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(trace.ev.name[rows], return_inverse=True): the name ids the rows hold, ascending, and each row's
    index among them, through a table over the names (two passes over the rows) where np.unique sorts them all:
    on 158k rows of a few hundred names, 1-2 ms against 15-30 ms."""
    names = trace.ev.name[rows]
    if names.size and int(names.min()) < 0:     # (no name id is negative; np.unique's answer if one were)
        return np.unique(names, return_inverse=True)
    present = np.zeros(len(trace.names), bool)
    present[names] = True
    ids = np.flatnonzero(present)
    code = np.zeros(len(trace.names), np.intp)
    code[ids] = np.arange(len(ids))
    return ids.astype(names.dtype), code[names]


def per_name(trace, rows: np.ndarray, ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """values[k] (one per name id ids[k]) broadcast to each row by its name, through a table over the names."""
    table = np.zeros(len(trace.names), values.dtype)
    table[ids] = values
    return table[trace.ev.name[rows]]


class NameIndex:
    """The names of a set of rows, gathered once, for asking many tests of them (each of a distinct name once)."""

    def __init__(self, trace, rows: np.ndarray):
        self.trace, self.rows = trace, rows
        self.row_names = trace.ev.name[rows]   # (gathered once: distinct_names and per_name would each gather it)
        present = np.zeros(len(trace.names), bool)
        present[self.row_names] = True
        self.ids = np.flatnonzero(present)
        self.names = [trace.names[i] for i in self.ids.tolist()]

    def flags(self, test) -> np.ndarray:
        """test(name) for each row."""
        passed = [bool(test(n)) for n in self.names]
        # most tests pass none of a trace's names (a lever's recogniser looks for ops the trace does not run), some
        # all: no gather over the rows then (~1 ms per 500k rows; 56 of the levers' 75 tests at 942k events)
        if not any(passed):
            return np.zeros(len(self.row_names), bool)
        if all(passed):
            return np.ones(len(self.row_names), bool)
        table = np.zeros(len(self.trace.names), bool)
        table[self.ids] = passed
        return table[self.row_names]


def name_tests(trace, rows: np.ndarray, *tests) -> list[np.ndarray]:
    """test(name) for each row, for every test, asked once of each distinct name among the rows."""
    if not len(rows):
        return [np.zeros(0, dtype=bool) for _ in tests]
    index = NameIndex(trace, rows)
    return [index.flags(t) for t in tests]


def name_flags(trace, rows: np.ndarray, test) -> np.ndarray:
    """test(name) for each row, evaluated once per distinct name."""
    return name_tests(trace, rows, test)[0]
