"""A large .gz still being read has its first pieces decoded in a forked child meanwhile (decode.decode_head), the
parent decoding the rest once the text is whole: the same events, tables and totals as one process's decode, on real
bundled traces in every layout the decoder meets, and nothing started where it would not pay or cannot be done.

The thresholds are lowered here (a piece of 1 MB, a split from 4 MB) so that the bundled traces split as the
benchmark's 293 MB one does; the flow is the read-ahead's: decode_head on the text read so far, the same buffer
then grown to the whole text, decode with what decode_head started."""
from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest

from tracetriage.analyzers.loading import decode, formats, read
from tracetriage.analyzers.loading.assemble import assemble
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import TraceError

ROOT = Path(__file__).resolve().parents[1]
REAL = ("gpt-compile.json.gz", "realworld/dataloader_cnn--before.json.gz", "generate/generate-llama-b8-eager.json.gz")


@pytest.fixture(autouse=True)
def _small_pieces(monkeypatch):
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1 << 20)
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 4 << 20)


def _text(name: str) -> bytes:
    return gzip.decompress((ROOT / "traces" / name).read_bytes())


def _tables(parts, path=Path("t.json")):
    t = assemble(parts, path)
    return ({k: getattr(t.ev, k) for k in t.ev.__dataclass_fields__}, t.names, t.shapes_raw, t.events_in_file,
            t.device_names, t.rank, t.world_size, t.base_time_ns, t.caveats)


def _same(a, b) -> bool:
    cols_a, *rest_a = a
    cols_b, *rest_b = b
    return cols_a.keys() == cols_b.keys() and all(np.array_equal(cols_a[k], cols_b[k]) for k in cols_a) \
        and rest_a == rest_b


def _early_then_rest(text: bytes, read_share: float):
    """decode_head on the first read_share of the text, the buffer grown to the whole, decode: (parts, early)."""
    buf = bytearray(text[:int(len(text) * read_share)])
    early = formats.decode_head(buf, len(text), Path("t.json"))
    buf += text[len(buf):]        # the read goes on into the same buffer
    try:
        return decode.decode(buf, Path("t.json"), early), early
    finally:
        if early is not None:
            early.discard()


def _one_process(text: bytes):
    return [decode._decode_whole(bytearray(text), Path("t.json"))]


@pytest.mark.parametrize("name", REAL)
def test_decoding_while_reading_equals_one_process_decode_on_real_traces(name):
    text = _text(name)
    parts, early = _early_then_rest(text, 0.75)
    assert early is not None and len(early.cuts) >= 3           # the child took pieces ...
    assert len(parts) > len(early.cuts) + 1                     # ... and the parent several more
    assert _same(_tables(parts), _tables(_one_process(text)))


def test_the_childs_share_balances_the_rest_of_the_read_against_the_parents_decode():
    text = _text(REAL[0])
    parts, early = _early_then_rest(text, 0.75)
    share = early.cuts[-1].end() / len(text)
    assert 0.52 < share < 0.57        # (1 + 0.25 x 0.35) / 2 = 0.544 of it, cut at an event boundary
    parts, early = _early_then_rest(text, 0.45)                 # under half read: the halves after the read win
    assert early is None and _same(_tables(parts), _tables(_one_process(text)))


def _minified(text: bytes) -> bytes:
    return msgspec.json.encode(msgspec.json.decode(text))


def _events_last_with_keys_after(text: bytes) -> bytes:
    doc = msgspec.json.decode(text)
    events = doc.pop("traceEvents")
    doc["traceEvents"] = events
    doc["deviceProperties"] = doc.pop("deviceProperties")      # after the events: in the parent's last piece
    doc["distributedInfo"] = {"rank": 3, "world_size": 4}
    return msgspec.json.encode(doc)


def _array_form(text: bytes) -> bytes:
    return msgspec.json.encode(msgspec.json.decode(text)["traceEvents"])


@pytest.mark.parametrize("layout", [_minified, _events_last_with_keys_after, _array_form])
def test_decoding_while_reading_equals_one_process_decode_in_odd_layouts(layout):
    text = layout(_text(REAL[0]))
    parts, early = _early_then_rest(text, 0.8)
    assert early is not None
    assert _same(_tables(parts), _tables(_one_process(text)))


def test_a_trace_under_the_split_threshold_starts_no_child():
    text = _text("smell-sync-item.json.gz")
    assert len(text) < decode.PARALLEL_MIN_BYTES
    parts, early = _early_then_rest(text, 0.8)
    assert early is None and len(parts) == 1


def test_a_cut_that_is_no_clean_boundary_falls_back_to_the_same_events():
    """An args list of objects with a "ph" key looks like an event boundary: a piece cut there fails to decode,
    and the text is decoded again the other way, to the same events."""
    doc = msgspec.json.decode(_text(REAL[0]))
    events = doc["traceEvents"]
    for e in events[::50]:
        e.setdefault("args", {})["odd"] = [{"x": 1}, {"ph": 2}]
    text = msgspec.json.encode(doc)
    parts, early = _early_then_rest(text, 0.8)
    assert early is not None
    assert _same(_tables(parts), _tables(_one_process(text)))


def test_a_text_that_is_not_the_childs_is_decoded_without_it_and_the_child_is_ended():
    text = _text(REAL[0])
    buf = bytearray(text[:int(len(text) * 0.8)])
    early = formats.decode_head(buf, len(text), Path("t.json"))
    assert early is not None
    parts = decode.decode(bytearray(text), Path("t.json"), early)     # another buffer: the child's cuts are not its
    early.discard()
    assert _same(_tables(parts), _tables(_one_process(text)))
    with pytest.raises(ChildProcessError):
        os.waitpid(early.child.pid, os.WNOHANG)                      # reaped, no zombie left


def test_a_gz_that_ends_early_while_the_child_decodes_is_one_error_and_leaves_no_child(tmp_path, monkeypatch):
    """The read-ahead's flow end to end: the child starts on the text read so far, the read then finds the file
    truncated; load raises the one-line error and ends the child."""
    text = _text(REAL[0])
    path = tmp_path / "cut.json.gz"
    path.write_bytes(gzip.compress(text, compresslevel=1)[:-5000])
    started = []

    def head_of_known_size(p):
        read._ahead.thread.join()       # (the text so far, deterministically: all of it)
        return bytearray(text[:int(len(text) * 0.8)]), len(text)

    real_head = formats.decode_head
    monkeypatch.setattr(read, "text_so_far", head_of_known_size)
    monkeypatch.setattr("tracetriage.analyzers.loading.load.text_so_far", head_of_known_size)
    monkeypatch.setattr(formats, "decode_head", lambda *a: started.append(real_head(*a)) or started[-1])
    read.read_ahead(path)
    with pytest.raises(TraceError, match="ends early"):
        load(path, use_cache=False)
    assert started and started[0] is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(started[0].child.pid, os.WNOHANG)


def test_the_child_forked_beside_the_live_read_ahead_gives_the_same_trace(monkeypatch):
    """End to end with real concurrency: the read-ahead's thread still gunzipping (slowed here, so that the fork
    lands mid-read) into the buffer the child was forked from; the trace equals the one read without a child."""
    path = ROOT / "traces" / REAL[1]
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")    # (a cached trace is not read ahead at all)
    want = load(path, use_cache=False)
    monkeypatch.setattr(read, "CHUNK_BYTES", 256 << 10)          # the thread checks in every 256 KB of text ...
    slow = read._gunzip

    def gunzip_slowly(f, p):
        fill = slow(f, p)

        def paced(out):
            for step in fill(out):
                time.sleep(0.01)                                 # ... and takes its time (0.8 s in all)
                yield step
        return paced
    monkeypatch.setattr(read, "_gunzip", gunzip_slowly)
    started = []
    real_head = formats.decode_head
    monkeypatch.setattr(formats, "decode_head", lambda *a: started.append(real_head(*a)) or started[-1])
    total = len(_text(REAL[1]))
    read.read_ahead(path)
    while len(read._ahead.partial) < 0.7 * total and read._ahead.thread.is_alive():
        time.sleep(0.002)
    got = load(path, use_cache=False)
    assert started and started[0] is not None, "the read ended before the fork: no child was started"
    assert _same(_tables_of(got), _tables_of(want))


def _tables_of(t):
    return ({k: getattr(t.ev, k) for k in t.ev.__dataclass_fields__}, t.names, t.shapes_raw, t.events_in_file,
            t.device_names, t.rank, t.world_size, t.base_time_ns, t.caveats)
