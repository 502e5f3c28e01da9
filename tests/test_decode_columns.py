"""decode's columns made in fewer passes give what one pass per field gives: the shape ids (one joined key per op
row), and ts, dur, pid and tid (strings and ids past int64 the way they always went)."""
import zlib
from operator import attrgetter
from pathlib import Path

import msgspec
import numpy as np

from tracetriage.analyzers.loading import decode
from tracetriage.analyzers.loading.read import read_bytes

ROOT = Path(__file__).resolve().parents[1]


def _by_tuples(op_args):
    get = attrgetter
    keys = zip(map(bytes, map(get("dims"), op_args)), map(bytes, map(get("types"), op_args)),
               map(bytes, map(get("concrete"), op_args)))
    return decode._ids(keys, len(op_args))


def _op_args(path: Path) -> list:
    doc = msgspec.json.decode(read_bytes(path), type=decode._STRICT)
    return [e.args for e in doc.traceEvents
            if e.__class__ is decode._Event and e.cat == "cpu_op" and e.args is not None]


def test_joined_keys_number_every_op_row_as_three_bytes_keys_do_on_a_real_trace():
    op_args = _op_args(ROOT / "traces" / "gpt-compile.json.gz")
    ids, table = decode._shape_ids(op_args)
    want_ids, want_table = _by_tuples(op_args)
    assert len(want_table) > 50 and ids.tolist() == want_ids.tolist() and table == want_table


def test_a_text_holding_a_nul_falls_back_to_three_bytes_keys():
    raw = msgspec.Raw
    op_args = [decode._Args(dims=raw(b'[[1]]'), types=raw(b'["a\x00b"]'), concrete=raw(b'[""]')),
               decode._Args(dims=raw(b'[[1]]'), types=raw(b'["a"]'), concrete=raw(b'["b"]')),
               decode._Args(dims=raw(b'[[1]]'), types=raw(b'["a"]'), concrete=raw(b'["b"]'))]
    ids, table = decode._shape_ids(op_args)
    want_ids, want_table = _by_tuples(op_args)
    assert ids.tolist() == want_ids.tolist() == [0, 1, 1] and table == want_table


def _per_field(xs):
    get = attrgetter
    return {"ts": np.fromiter(map(get("ts"), xs), np.float64, len(xs)),
            "dur": np.fromiter(map(get("dur"), xs), np.float64, len(xs)),
            "pid": decode._int_column(xs, "pid"), "tid": decode._int_column(xs, "tid")}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) and a[k].flags.c_contiguous
                                        for k in a)


def test_times_and_threads_read_digit_strings_stream_names_and_huge_ids_as_one_pass_per_field_does():
    E = decode._Event
    ints = [E(ts=1.5, dur=2.0, pid=7, tid=123), E(ts=float("nan"), dur=0.0, pid=8, tid=-1)]
    assert _same(decode._times_and_threads(ints), _per_field(ints))
    digits = ints + [E(ts=3.0, dur=1.0, pid=9, tid="42")]           # a digit string reads as int() does
    assert decode._times_and_threads(digits)["tid"].tolist() == [123, -1, 42]
    huge = 1 << 70
    for odd, want in (("stream 7", 7), (huge, -1 - zlib.crc32(str(huge).encode()))):   # an old GPU row; past int64
        xs = ints + [E(ts=3.0, dur=1.0, pid=9, tid=odd)]
        assert _same(decode._times_and_threads(xs), _per_field(xs))
        assert decode._times_and_threads(xs)["tid"].tolist() == [123, -1, want]


def _columns_of(text: bytes) -> dict:
    (part,) = decode.decode(text, Path("t.json"))
    return {k: v for k, v in part.cols.items() if isinstance(v, np.ndarray) and v.dtype != object}


def test_an_event_with_args_null_or_without_args_reads_as_the_shared_empty_args():
    """Events without "args" share one default instance (made in C); a `"args": null` (which the strict decode
    refuses) reads through the lenient decoder as the same defaults, never as a crash or a lost event."""
    ev = b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 10, "dur": 2%s}'
    with_ids = ev % b', "args": {"External id": 5, "device": 0, "stream": 7, "correlation": 9}'
    absent = b'{"traceEvents": [' + ev % b"" + b", " + with_ids + b"]}"
    null = b'{"traceEvents": [' + ev % b', "args": null' + b", " + with_ids + b"]}"
    a, b = _columns_of(absent), _columns_of(null)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    assert a["ext"].tolist() == [decode.NONE, 5] and a["stream"].tolist() == [decode.NONE, 7]
    doc = msgspec.json.decode(absent, type=decode._STRICT)
    assert doc.traceEvents[0].args is decode.NO_ARGS
