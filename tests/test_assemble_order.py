"""assemble sorts the rows by start, longest first on ties (parents before children), then file order."""
from pathlib import Path

import numpy as np
import pytest

from tracetriage.analyzers.loading import assemble as assemble_mod
from tracetriage.analyzers.loading.assemble import _by_start_longest_first
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.loading.read import read_bytes
from tracetriage.analyzers.model.trace import EVENT_COLUMNS

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


def _tables(parts, monkeypatch, threaded_rows: int):
    monkeypatch.setattr(assemble_mod, "THREADED_ROWS", threaded_rows)
    return assemble_mod.assemble(parts, Path("t.json"))


@pytest.mark.parametrize("halves", [1, 2])
def test_the_columns_gathered_in_threads_are_the_ones_gathered_in_one(monkeypatch, halves):
    """One part (its name and shape ids kept as they are) and two (re-numbered, placed piece by piece), with rows
    whose times are dropped: the same table whether the sorted columns are gathered in threads or not."""
    from tracetriage.analyzers.loading import decode, native

    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 0 if halves == 2 else 1 << 62)
    data = read_bytes(TRACES / "smell-sync-item.json.gz")
    parts = native.scan_parts(data, Path("t.json")) or decode.decode(data, Path("t.json"))
    assert len(parts) == halves
    parts[0].cols["ts"][3] = -1.0                   # dropped: a negative time
    parts[-1].cols["dur"][-2] = float("nan")        # ... and a duration that is no number
    threaded, serial = _tables(parts, monkeypatch, 0), _tables(parts, monkeypatch, 1 << 62)
    assert threaded.caveats == serial.caveats and any(c.kind == "dropped_events" for c in threaded.caveats)
    assert threaded.names == serial.names and threaded.shapes_raw == serial.shapes_raw
    for k in EVENT_COLUMNS:
        a, b = getattr(threaded.ev, k), getattr(serial.ev, k)
        assert a.dtype == b.dtype and np.array_equal(a, b), k
