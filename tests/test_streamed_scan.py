"""The native scan of a .json.gz as its text arrives (tracetriage.analyzers.loading.streamed) loads the very trace the
scan after the read loads, and where it cannot read the text (a piece the scan leaves to msgspec, a gzip trailer
whose size is wrong, a read that fails or stops) the decoder reads it as before: same trace, same error line, and
no thread left running.

Bundled traces are small, so the stream here scans pieces of 64 KB (4 KB windows) of blocks of 16 KB: dozens of
pieces a trace, each cut at an event boundary, as a 300 MB trace's 8 MB pieces are."""
from __future__ import annotations

import gzip
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tracetriage.analyzers.loading import native, read, streamed
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import TraceError

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(native.eventscan is None, reason="the native scan is not built (no C compiler)")

TRACES = ["gpt-eager.json.gz", "ddp/rank1.json.gz", "script-user-train-stacks.json.gz", "gpt-compile.json.gz",
          "chain-eager-small.json.gz"]


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(streamed, "MIN_BYTES", 0)
    monkeypatch.setattr(streamed, "PIECE_BYTES", 64 << 10)
    monkeypatch.setattr(streamed, "CUT_WINDOW", 4 << 10)
    monkeypatch.setattr(streamed, "STEP_BYTES", 128 << 10)
    monkeypatch.setattr(streamed, "TAIL_MIN_BYTES", 64 << 10)
    monkeypatch.setattr(read, "STREAM_BLOCK_BYTES", 16 << 10)


@pytest.fixture
def taken(monkeypatch):
    """What each decode took from a stream: the Scanned columns, or None (the text was read as before)."""
    seen: list = []
    take = streamed.take

    def recording(text):
        seen.append(take(text))
        return seen[-1]

    monkeypatch.setattr(streamed, "take", recording)
    return seen


def _scan_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tracetriage streamed scan"]


def _same_trace(a, b) -> None:
    assert (a.names, a.shapes_raw, a.events_in_file, a.caveats, a.device_names) == (
        b.names, b.shapes_raw, b.events_in_file, b.caveats, b.device_names)
    for k in a.ev.__dataclass_fields__:
        x, y = getattr(a.ev, k), getattr(b.ev, k)
        assert x.dtype == y.dtype and np.array_equal(x, y), k


@pytest.mark.parametrize("name", TRACES)
def test_a_trace_scanned_as_it_arrives_loads_as_the_scan_after_the_read_loads_it(name, small_pieces, taken,
                                                                                 monkeypatch):
    path = ROOT / "traces" / name
    streamed_trace = load(path, use_cache=False)
    assert taken[-1] is not None, "the stream did not read the trace"
    monkeypatch.setattr(streamed, "MIN_BYTES", 1 << 40)
    _same_trace(streamed_trace, load(path, use_cache=False))
    assert taken[-1] is None
    assert _scan_threads() == []


def test_a_piece_the_scan_leaves_to_msgspec_ends_the_stream_and_msgspec_reads_the_text(tmp_path, small_pieces,
                                                                                        taken, monkeypatch):
    text = gzip.decompress((ROOT / "traces" / "gpt-eager.json.gz").read_bytes())
    # a string tid in a late complete event: valid, but the scan leaves the text to msgspec (which reads its number)
    at = text.rindex(b'"cat": "cpu_op"')
    tid = text.index(b'"tid": ', at) + len(b'"tid": ')
    end = text.index(b",", tid)
    mutated = text[:tid] + b'"%s"' % text[tid:end] + text[end:]
    path = tmp_path / "late.json.gz"
    path.write_bytes(gzip.compress(mutated, 1))
    ours = load(path, use_cache=False)
    assert taken[-1] is None
    monkeypatch.setenv("TRACETRIAGE_NO_NATIVE", "1")
    _same_trace(ours, load(path, use_cache=False))


def test_a_gzip_whose_trailer_says_too_small_a_size_loads_as_before(tmp_path, small_pieces, taken, monkeypatch):
    # two members: the trailer read is the last member's (a few bytes), so the columns hold too few rows
    text = gzip.decompress((ROOT / "traces" / "gpt-eager.json.gz").read_bytes())
    path = tmp_path / "members.json.gz"
    path.write_bytes(gzip.compress(text[:-100], 1) + gzip.compress(text[-100:], 1))
    monkeypatch.setattr(streamed, "MIN_BYTES", 1)
    ours = load(path, use_cache=False)
    assert taken[-1] is None
    monkeypatch.setattr(streamed, "MIN_BYTES", 1 << 40)
    _same_trace(ours, load(path, use_cache=False))


def test_a_truncated_gzip_says_so_in_one_error_and_leaves_no_scan_running(tmp_path, small_pieces):
    data = (ROOT / "traces" / "gpt-eager.json.gz").read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(TraceError, match="ends early"):
        load(path, use_cache=False)
    assert _scan_threads() == [] and streamed._handed is None


def test_a_read_ahead_stopped_midway_stops_its_scan(small_pieces, monkeypatch):
    monkeypatch.setattr(read, "STREAM_BLOCK_BYTES", 1 << 10)     # (a slow read: the stop lands midway)
    read.read_ahead(ROOT / "traces" / "gpt-eager.json.gz")
    read.forget_read_ahead()
    assert _scan_threads() == [] and streamed._handed is None


def test_a_text_read_for_another_use_is_not_scanned(small_pieces):
    text = read.read_bytes(ROOT / "traces" / "gpt-eager.json.gz")
    assert streamed._handed is None and _scan_threads() == []
    assert text == gzip.decompress((ROOT / "traces" / "gpt-eager.json.gz").read_bytes())


def test_a_streamed_text_is_decompressed_into_one_buffer_of_its_own_size(monkeypatch):
    # the trailer's size gives the buffer, and the gunzip writes each block in place: a bytearray grown block by block
    # kept up to an eighth more than its text (8.8 MB of this 70 MB text) and copied every block into it
    monkeypatch.setattr(streamed, "MIN_BYTES", 0)
    path = ROOT / "traces" / "gpt-eager.json.gz"
    try:
        text = read.read_bytes(path, scan=True)
        assert streamed._handed is not None and streamed._handed[0] is text
        assert text == gzip.decompress(path.read_bytes())
        assert text.__sizeof__() - len(text) < 100          # (bytearray's own fields and its trailing NUL)
    finally:
        streamed.forget()


def test_the_scan_reads_what_is_written_while_another_thread_holds_the_gil(small_pieces):
    # the scan waits for the text without the GIL: a thread that keeps it (as the main thread importing the modules
    # does for long stretches) does not hold the scan up
    text = gzip.decompress((ROOT / "traces" / "gpt-eager.json.gz").read_bytes())
    stream = streamed.Stream(len(text))
    with memoryview(stream.text) as view:
        view[:] = text
    counts = memoryview(stream.columns.info).cast("q")
    stream.wrote(len(text) // 2)
    while counts[0] == 0 and stream.thread.is_alive():       # (sleeping lets go of the GIL: the scan starts)
        time.sleep(0.001)
    scanned_before = counts[0]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)    # from here this thread keeps the GIL: a thread that asks for it waits 1000 s
    try:
        stream.wrote(len(text) - len(text) // 2)
        deadline = time.monotonic() + 60
        while counts[0] == scanned_before and time.monotonic() < deadline:
            pass
        scanned_after = counts[0]
    finally:
        sys.setswitchinterval(switch)
    stream.end()
    assert 0 < scanned_before < scanned_after
    assert stream.finish() is not None


def test_a_gzip_with_bytes_after_its_last_member_loads_as_it_does_unstreamed(tmp_path, small_pieces, monkeypatch):
    path = tmp_path / "tail.json.gz"
    path.write_bytes((ROOT / "traces" / "gpt-eager.json.gz").read_bytes() + b"not a gzip member")
    ours = load(path, use_cache=False)
    monkeypatch.setattr(streamed, "MIN_BYTES", 1 << 40)
    _same_trace(ours, load(path, use_cache=False))
    assert _scan_threads() == []


def test_a_gzip_whose_checksum_is_wrong_says_so_as_it_does_unstreamed(tmp_path, small_pieces, monkeypatch):
    data = bytearray((ROOT / "traces" / "gpt-eager.json.gz").read_bytes())
    data[-8] ^= 0xFF                  # the CRC-32 (the trailer: CRC-32, then the size)
    path = tmp_path / "crc.json.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError) as streamed_error:
        load(path, use_cache=False)
    monkeypatch.setattr(streamed, "MIN_BYTES", 1 << 40)
    with pytest.raises(TraceError) as read_error:
        load(path, use_cache=False)
    assert str(streamed_error.value) == str(read_error.value) and "corrupt" in str(read_error.value)
    assert _scan_threads() == [] and streamed._handed is None


def test_a_scan_built_by_an_older_install_is_not_streamed_and_the_trace_loads_the_same(small_pieces, taken,
                                                                                      monkeypatch):
    # a checkout updated without reinstalling keeps the scan its last install built, without scan_stream
    path = ROOT / "traces" / "chain-eager-small.json.gz"
    want = load(path, use_cache=False)
    older = type("OlderBuild", (), {"scan": staticmethod(native.eventscan.scan),
                                    "find_events": staticmethod(native.eventscan.find_events)})
    monkeypatch.setattr(streamed, "eventscan", older)
    _same_trace(load(path, use_cache=False), want)
    assert taken[-1] is None and _scan_threads() == []


def test_an_isal_without_its_c_gzip_reader_reads_the_trace_the_careful_way(tmp_path, small_pieces, monkeypatch):
    # the streamed read uses python-isal's C reader by a private name: a release that drops it must not end the report
    from isal import isal_zlib

    path = ROOT / "traces" / "gpt-eager.json.gz"
    want = load(path, use_cache=False)
    monkeypatch.delattr(isal_zlib, "_GzipReader")
    _same_trace(load(path, use_cache=False), want)
    assert _scan_threads() == [] and streamed._handed is None


def test_the_tail_the_read_scans_beside_the_scan_gives_the_trace_the_scan_after_the_read_gives(small_pieces):
    # a scan behind the gunzip: once the whole text is in, the read's thread takes the second half of what the scan
    # has not claimed and scans it on the other core, the scan stopping where the tail begins; two parts, one trace
    from tracetriage.analyzers.loading.assemble import assemble
    from tracetriage.analyzers.loading.link import link

    path = ROOT / "traces" / "gpt-eager.json.gz"
    text = gzip.decompress(path.read_bytes())
    stream = streamed.Stream(len(text))
    with memoryview(stream.text) as view:
        view[:] = text
    stream.wrote(256 << 10)
    slots = memoryview(stream.progress).cast("q")
    deadline = time.monotonic() + 60
    while slots[streamed.P_FRONT] < (128 << 10) and time.monotonic() < deadline:    # (the scan's first steps)
        time.sleep(0.001)
    stream.filled = len(text)              # the rest written at once: ~70 MB unclaimed when the read ends
    stream.end()
    scans = stream.finish()
    assert scans is not None and len(scans) == 2
    assert scans[0].info[2] == -1 and scans[1].info[2] == text.rindex(b"]") + 1     # (the list's end)
    assert scans[1].start == slots[streamed.P_TAIL] > len(text) // 4
    tail = link(assemble(native._streamed_parts(stream.text, path, scans), path))
    _same_trace(tail, link(assemble(native.scan_parts(bytearray(text), path), path)))
    assert _scan_threads() == []
