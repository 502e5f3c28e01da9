"""assemble sorts the rows by start, longest first on ties (parents before children), then file order."""
from pathlib import Path

import numpy as np

from tracetriage.analyzers.loading.assemble import _by_start_longest_first
from tracetriage.analyzers.loading.load import load

TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_the_row_order_is_lexsorts_by_start_then_longest_then_file_order_whatever_the_ties():
    rng = np.random.default_rng(1)
    for n, span in ((0, 5), (1, 5), (1000, 20), (100_000, 1000), (50_000, 10**12)):   # few ties to nearly all
        start = rng.integers(0, span, n)
        end = start + rng.integers(0, 20, n)
        assert _by_start_longest_first(start, end).tolist() == np.lexsort((-end, start)).tolist()


def test_a_loaded_trace_has_parents_before_children():
    ev = load(TRACES / "gpt-eager.json.gz", use_cache=False).ev
    same = ev.start[1:] == ev.start[:-1]
    assert (ev.start[1:] >= ev.start[:-1]).all() and (ev.end[1:][same] <= ev.end[:-1][same]).all()
