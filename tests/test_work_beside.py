"""Work the report did on one core while the other waited, done beside it: a large decoded text's pages handed back to
the system in a thread of their own (the load's free of a 293 MB text took 20-24 ms between decode and assemble), the
rows' times in ns worked out in two threads, the op table's re-done work found while the levers' child replays (it
reads no lever), and each concatenation signature read once. The answers are the ones found before."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading import assemble, streamed
from tracetriage.analyzers.loading import load as load_mod
from tracetriage.analyzers.loading.decode import ns_from_us
from tracetriage.analyzers.loading.read import read_bytes
from tracetriage.analyzers.model.rework import GROWING_CAT
from tracetriage.analyzers.model.trace import EVENT_COLUMNS
from tracetriage.analyzers.triage import report as report_mod
from tracetriage.analyzers.triage import rework_first

US = 1000

needs_scan = pytest.mark.skipif(not streamed.enabled(), reason="the native scan is not built")


def _small_trace(tmp_path):
    ev = []
    for i in range(20):
        ev += [op("aten::mm", i * 20 * US, i * 20 * US + 8 * US, i + 1),
               call("cudaLaunchKernel", i * 20 * US + 1 * US, i * 20 * US + 5 * US, corr=i + 1, ext=i + 1),
               gpu("gemm", 500 * US + i * 10 * US, 500 * US + i * 10 * US + 9 * US, i + 1)]
    return write(tmp_path / "t.json.gz", document(ev))


def _same_events(a, b) -> None:
    for k in EVENT_COLUMNS:
        assert np.array_equal(getattr(a.ev, k), getattr(b.ev, k)), k
    assert a.names == b.names and np.array_equal(a.launch_of, b.launch_of) and np.array_equal(a.op_of, b.op_of)


@needs_scan
def test_the_release_hands_back_the_whole_pages_inside_a_buffer_and_keeps_its_length():
    text = bytearray(b"x" * ((1 << 20) + 123))
    streamed.eventscan.release(text)
    assert len(text) == (1 << 20) + 123
    zeros = text.count(0)
    assert zeros > (1 << 20) - 8192 and zeros % 4096 == 0     # whole pages, read as zeros now
    assert text[-1:] == b"x"                                   # (the part page at the end stays as it was)


@needs_scan
def test_a_decoded_text_no_one_else_holds_is_released_in_a_thread_of_its_own(tmp_path, monkeypatch):
    path = _small_trace(tmp_path)
    released = []
    real = streamed.eventscan.release

    def release(text):
        released.append((threading.current_thread() is threading.main_thread(), len(text)))
        real(text)

    monkeypatch.setattr(streamed.eventscan, "release", release)
    monkeypatch.setattr(load_mod, "FREE_BESIDE_BYTES", 0)     # (a small text freed beside, as a large one is)
    box = [read_bytes(path, scan=True)]          # (the box holds the one reference, as the load's does)
    n = len(box[0])
    trace = load_mod.parse_text(path, box)
    for t in threading.enumerate():
        if t.name == "tracetriage free text":
            t.join()
    assert released == [(False, n)]
    _same_events(trace, load_mod.load(path, use_cache=False))


@needs_scan
def test_a_text_someone_else_still_holds_is_never_released(tmp_path, monkeypatch):
    path = _small_trace(tmp_path)
    released = []
    monkeypatch.setattr(streamed.eventscan, "release", released.append)
    monkeypatch.setattr(load_mod, "FREE_BESIDE_BYTES", 0)
    text = read_bytes(path, scan=True)
    kept = bytes(text)
    load_mod.parse_text(path, [text])       # (the caller keeps its own name for the text)
    assert released == [] and text == kept


def test_the_times_worked_out_in_two_threads_are_the_times_of_one_pass():
    n = assemble.THREADED_ROWS * 2 + 7
    rng = np.random.default_rng(3)
    ts = np.round(1.7e15 + rng.uniform(0, 5e6, n), 3)
    ts[:4] = [0.0, 0.0005, 1790857026123456.789, 3999999999999999.5]     # (halves and the far edge of the range)
    dur = np.round(rng.uniform(0, 2e4, n), 3)
    dur[:4] = [0.0, 0.0005, 0.0015, 1e12]
    start, end = assemble._ns_times(ts, dur)
    one_start = ns_from_us(ts)
    d = dur * 1000.0
    np.rint(d, out=d)
    assert np.array_equal(start, one_start) and np.array_equal(end, one_start + d.astype(np.int64))
    small_start, small_end = assemble._ns_times(ts[:100], dur[:100])
    assert np.array_equal(small_start, one_start[:100]) and np.array_equal(small_end, end[:100])


def _cat_loop(tmp_path, grows: bool):
    """40 small GEMMs, each followed by a concatenation onto an index: regrown (each call's first input the last call's
    output) or of fixed-size pieces (one signature, 40 calls)."""
    ev, host, dev = [], 50 * US, 400 * US
    for i in range(80):
        name, k_us = ("aten::addmm", 12) if i % 2 == 0 else ("aten::cat", 4 + 3 * (i // 2) if grows else 6)
        rows = 1024 * (i // 2 + 1) if grows else 1024
        args = ({"dims": [[256], [1024, 512], [512, 256], [], []], "types": ["float"] * 3 + ["Scalar"] * 2}
                if name == "aten::addmm" else
                {"dims": [[[rows, 256], [1024, 256]], []], "types": ["TensorList", "Scalar"],
                 "Concrete Inputs": ["", "0"]})
        ev += [op(name, host, host + 6 * US, i + 1, **args),
               call("cudaLaunchKernel", host + 1 * US, host + 5 * US, corr=i + 1, ext=i + 1),
               gpu("void k<float>(float*)", dev, dev + k_us * US, i + 1)]
        host, dev = host + 8 * US, dev + k_us * US + 1 * US
    ev.append(annotation("ProfilerStep#1", 40 * US, host + 10 * US))
    return write(tmp_path / f"cat_{grows}.json", document(ev))


def test_the_rework_is_found_before_the_levers_are_waited_for_and_leads_as_before(tmp_path, monkeypatch):
    order = []
    found, levers_of = rework_first.found, report_mod._levers_of
    monkeypatch.setattr(rework_first, "found", lambda *a: order.append("rework") or found(*a))
    monkeypatch.setattr(report_mod, "_levers_of", lambda *a, **k: order.append("levers") or levers_of(*a, **k))
    a = report_mod.analyze_file(_cat_loop(tmp_path, grows=True))
    assert order == ["rework", "levers"]
    assert a.next_experiment.rework is not None and a.next_experiment.rework.kind == GROWING_CAT
    assert a.next_experiment.rework.calls == 40


def test_each_concatenation_signature_is_read_once_however_many_calls_repeat_it(tmp_path, monkeypatch):
    from tracetriage.analyzers.analyses import rework

    read = []
    real = rework._cat_shape
    monkeypatch.setattr(rework, "_cat_shape", lambda shapes, dim: read.append(shapes) or real(shapes, dim))
    a = report_mod.analyze_file(_cat_loop(tmp_path, grows=False))
    assert len(read) == 1, read              # 40 calls of one signature
    assert a.next_experiment.rework is None or a.next_experiment.rework.kind != GROWING_CAT
    read.clear()
    a = report_mod.analyze_file(_cat_loop(tmp_path, grows=True))
    assert len(read) == 40 and a.next_experiment.rework is not None and a.next_experiment.rework.calls == 40


@pytest.fixture
def streamed_small(monkeypatch):
    if not streamed.enabled():
        pytest.skip("the native scan is not built")
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")
    monkeypatch.setattr(streamed, "MIN_BYTES", 0)        # (a small trace scanned as it arrives, as a large one is)


def _join_freeing_threads() -> None:
    for t in threading.enumerate():
        if t.name.startswith("tracetriage free"):
            t.join()


def test_a_streamed_scans_column_maps_are_released_in_a_thread_once_assembled(tmp_path, monkeypatch):
    path = _small_trace(tmp_path)
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")
    expected = load_mod.load(path, use_cache=False)          # (a small text: scanned after its read, not streamed)
    if not streamed.enabled():
        pytest.skip("the native scan is not built")
    monkeypatch.setattr(streamed, "MIN_BYTES", 0)
    released = []
    real = streamed.eventscan.release

    def release(buffer):
        released.append((threading.current_thread() is threading.main_thread(), type(buffer).__name__))
        real(buffer)

    monkeypatch.setattr(streamed.eventscan, "release", release)
    trace = load_mod.parse_text(path, [read_bytes(path, scan=True)])
    _join_freeing_threads()
    assert released and all(not main and kind == "mmap" for main, kind in released), released
    _same_events(trace, expected)


def test_no_column_map_is_released_where_an_assembled_column_shares_its_memory(tmp_path, monkeypatch, streamed_small):
    import dataclasses

    path = _small_trace(tmp_path)
    released = []
    monkeypatch.setattr(streamed.eventscan, "release", released.append)
    real = load_mod.assemble

    def sharing(parts, where):
        tables = real(parts, where)
        n = len(tables.ev)
        return dataclasses.replace(tables, ev=dataclasses.replace(tables.ev, name=parts[0].cols["name"][:n]))

    monkeypatch.setattr(load_mod, "assemble", sharing)
    load_mod.parse_text(path, [read_bytes(path, scan=True)])
    _join_freeing_threads()
    assert released == []


@needs_scan
def test_the_scan_finds_a_parts_rows_of_a_category_without_np_isin(monkeypatch):
    from pathlib import Path

    from tracetriage.analyzers.loading import native

    path = Path(__file__).resolve().parents[1] / "traces" / "gpt-eager.json.gz"
    text = read_bytes(path)
    expected = native.scan_parts(text, path)

    def isin(*a, **k):
        raise AssertionError("np.isin over a part's rows")

    monkeypatch.setattr(np, "isin", isin)
    parts = native.scan_parts(text, path)
    monkeypatch.undo()
    assert parts is not None and expected is not None and len(parts) == len(expected)
    for ours, theirs in zip(parts, expected):
        assert set(ours.cols) == set(theirs.cols)
        for k in ours.cols:
            assert np.array_equal(ours.cols[k], theirs.cols[k]) and ours.cols[k].dtype == theirs.cols[k].dtype, k


def test_the_calls_ops_are_found_in_a_second_thread_as_one_thread_finds_them(monkeypatch):
    from pathlib import Path

    from tracetriage.analyzers.loading import link

    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")
    path = Path(__file__).resolve().parents[1] / "traces" / "gpt-eager.json.gz"
    one = load_mod.load(path, use_cache=False)
    where = []
    real = link._ops_of_calls
    monkeypatch.setattr(link, "_ops_of_calls", lambda *a: where.append(threading.current_thread().name) or real(*a))
    monkeypatch.setattr(link, "THREADED_ROWS", 0)
    two = load_mod.load(path, use_cache=False)
    assert len(where) == 1 and where[0] != threading.main_thread().name
    _same_events(two, one)
    assert one.caveats == two.caveats


def test_the_report_waits_for_a_streamed_read_ahead_to_end_before_it_imports_its_analyses(tmp_path, streamed_small):
    from tracetriage.analyzers.loading import read

    path = _small_trace(tmp_path)
    assert read.read_ahead(path, parse=load_mod.parse_text)
    ahead = read._ahead
    ahead.streaming.wait(5)
    read.wait_for_streamed_read(path)
    assert ahead.read.is_set() and ahead.error is None
    trace = load_mod.load(path, use_cache=False)
    assert read._ahead is None
    _same_events(trace, load_mod.load(path, use_cache=False))


def test_a_read_ahead_that_is_not_streamed_is_not_waited_for(tmp_path, monkeypatch):
    from tracetriage.analyzers.loading import read

    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")
    path = write(tmp_path / "plain.json", document([op("aten::mm", 0, 5 * US, 1)]))
    assert read.read_ahead(path, parse=load_mod.parse_text)
    ahead = read._ahead
    ahead.thread.join()
    assert not ahead.streaming.is_set()

    def never(*a):
        raise AssertionError("waited for a read that was not streamed")

    monkeypatch.setattr(ahead.read, "wait", never)
    read.wait_for_streamed_read(path)
    read.forget_read_ahead()


def test_work_beside_is_finished_before_the_next_fork():
    # (a child forked while the load's pages were being handed back would keep them, copy-on-write, until it exits)
    from tracetriage.analyzers.loading import forked

    if not forked.can_fork():
        pytest.skip("no fork here")
    go, done = threading.Event(), []
    forked.beside(lambda: go.wait(5) and done.append(True), "tracetriage free test")
    threading.Timer(0.05, go.set).start()
    child = forked.start(lambda: 1)
    assert done == [True]
    assert child is not None and child.result() == (True, 1)
