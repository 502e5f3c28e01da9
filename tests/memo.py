"""One analysis per trace for the formats that print it: `report`, `report --json` and `--format markdown` (and
`whatif`'s) print the same frozen Analysis (WhatIf), so a module whose subject is the printing analyses each trace
once. The most recent few are kept (the tests take the traces one at a time)."""
from __future__ import annotations

import contextlib
import functools

import pytest


@contextlib.contextmanager
def analysed_once():
    from tracetriage.analyzers.triage import report
    from tracetriage.analyzers.whatif import predict

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "analyze_file", functools.lru_cache(maxsize=4)(report.analyze_file))
        mp.setattr(predict, "predict_file", _one_at_a_time(predict.predict_file))
        yield


def _one_at_a_time(fn):
    seen = {}

    def predict_file(path, levers=None, only=None):
        key = (str(path), tuple(levers or ()), only)
        if key not in seen:
            seen.clear()   # one trace at a time
            seen[key] = fn(path, levers=levers, only=only)
        return seen[key]
    return predict_file
