"""What conftest.py sets up in a test process: cache entries written without forking (tests/cache_writes.py), the
objects collection made kept out of full garbage collections (tests/collected_objects.py)."""
import gc
import os

import kineto_factory as kf
from tracetriage.analyzers.loading import cache
from tracetriage.analyzers.loading.load import load


def test_a_trace_loaded_afresh_has_its_entry_when_the_load_returns_and_nothing_forked(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRACETRIAGE_NO_CACHE", raising=False)

    def no_fork():
        raise AssertionError("the test process forked")

    monkeypatch.setattr(os, "fork", no_fork)
    path = kf.write(tmp_path / "t.json", kf.document(kf.events_for(kf.chain(20))))
    assert cache.get(path) is None
    trace = load(path)
    assert cache.get(path) is not None and len(cache.get(path).ev) == len(trace.ev)


def test_what_collection_made_is_out_of_the_collectors_full_collections():
    assert gc.get_freeze_count() > 10_000
