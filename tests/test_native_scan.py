"""The native event scan (analyzers/loading/eventscan.c, driven by tracetriage.analyzers.loading.native) reads the very
Parts msgspec's decoder reads, and hands msgspec every text it does not: never a wrong column.

Representative bundled traces are decoded both ways and compared field by field (the full sweep over every
bundled trace is slow-marked); a small trace holding every kind of field the decoder reads is mutated byte by
byte, and wherever the scan accepts a mutant, msgspec's strict decode must accept it too and read the same.
"""
from __future__ import annotations

import glob
import gzip
import random
import shutil
from pathlib import Path

import msgspec
import numpy as np
import pytest

from tracetriage.analyzers.loading import decode, native
from tracetriage.analyzers.loading.assemble import assemble
from tracetriage.analyzers.loading.read import read_bytes

ROOT = Path(__file__).resolve().parents[1]

HAS_CC = shutil.which("cc") is not None or shutil.which("gcc") is not None
# (where no C compiler built the extension, msgspec decodes everything and there is nothing to compare)
pytestmark = pytest.mark.skipif(native.eventscan is None and not HAS_CC, reason="no C compiler: the scan is not built")

PART_FIELDS = ("names", "shapes", "events_in_file", "dropped", "device_names", "rank", "base_time_ns",
               "has_trace_events", "world_size", "rank_of_pid")


def _differences(ours: decode.Part, theirs: decode.Part) -> list[str]:
    out = [] if set(ours.cols) == set(theirs.cols) else ["column names"]
    for k in set(ours.cols) & set(theirs.cols):
        a, b = ours.cols[k], theirs.cols[k]
        if a.dtype != b.dtype or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            out.append(k)
    return out + [f for f in PART_FIELDS if getattr(ours, f) != getattr(theirs, f)]


def _native_one_part(data: bytes | bytearray) -> decode.Part | None:
    parts = native.scan_parts(data, Path("t.json"))
    if parts is None:
        return None
    assert len(parts) == 1       # (below PARALLEL_MIN_BYTES: one thread)
    return parts[0]


def _compare_with_msgspec(path: Path) -> None:
    data = read_bytes(path)
    ours = _native_one_part(data)
    assert ours is not None, f"{path.name}: the scan fell back"
    assert _differences(ours, decode._decode_whole(data, path)) == []


# collectives (ddp), Python ids (with_stack), an eager chain, a compiled model, the array form's absence
REPRESENTATIVE = ["chain-eager-small.json.gz", "ddp/rank1.json.gz", "script-user-train-stacks.json.gz",
                  "gpt-compile.json.gz", "smell-sync-item.json.gz"]


@pytest.mark.parametrize("name", REPRESENTATIVE)
def test_the_scan_reads_a_bundled_trace_into_the_columns_msgspec_reads(name):
    _compare_with_msgspec(ROOT / "traces" / name)


@pytest.mark.slow
def test_the_scan_reads_every_bundled_trace_as_msgspec_does_or_leaves_it_to_msgspec(monkeypatch):
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 1 << 40)     # (one thread, one Part: compared column by column)
    fell_back = []
    for p in sorted(glob.glob(str(ROOT / "traces" / "**" / "*.json.gz"), recursive=True)):
        data = read_bytes(Path(p))
        ours = _native_one_part(data)
        if ours is None:
            fell_back.append(Path(p).name)
            continue
        assert _differences(ours, decode._decode_whole(data, Path(p))) == [], p
    # (one capture holds an event with no "ph": msgspec's strict decode refuses it, its lenient one reads it)
    assert fell_back == ["tf32_mlp--baseline.json.gz"]


def test_a_big_file_scanned_in_two_threads_assembles_to_what_msgspec_assembles(tmp_path, monkeypatch):
    """Past PARALLEL_MIN_BYTES the halves are scanned in two threads (two Parts): lowered here, so a small trace
    takes that way."""
    path = ROOT / "traces" / "chain-eager-small.json.gz"
    data = read_bytes(path)
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", len(data) // 4)
    ours = native.scan_parts(data, path)
    assert ours is not None and len(ours) == 2
    a, b = assemble(ours, path), assemble([decode._decode_whole(data, path)], path)
    for f in ("cat", "name", "start", "end", "pid", "tid", "device", "stream", "ext", "corr", "nbytes", "shape",
              "graph_node", "group"):
        assert np.array_equal(getattr(a.ev, f), getattr(b.ev, f)), f
    assert (a.names, a.shapes_raw, a.events_in_file, a.device_names) == (b.names, b.shapes_raw, b.events_in_file,
                                                                          b.device_names)


def test_tracetriage_no_native_hands_every_file_to_msgspec(monkeypatch):
    data = read_bytes(ROOT / "traces" / "chain-eager-small.json.gz")
    assert native.scan_parts(data, Path("t.json")) is not None
    monkeypatch.setenv("TRACETRIAGE_NO_NATIVE", "1")
    assert native.scan_parts(data, Path("t.json")) is None
    assert native.decode(data, Path("t.json"))[0].events_in_file > 1000      # (msgspec's)


def test_the_install_built_the_scan_beside_the_loader_that_imports_it():
    """With a C compiler the install builds the extension (setup.py's, optional: a failed build would go
    unnoticed but for this), and puts it beside the loader's modules: in the editable install, in
    analyzers/loading/ (pyproject's tracetriage.analyzers -> analyzers/)."""
    assert native.eventscan is not None and native.enabled()
    assert Path(native.eventscan.__file__).parent == Path(native.__file__).parent


# --- mutants: the scan accepts a text only where msgspec's strict decode reads the same ----------------------

SEED = (b'{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "computeMajor": 9}],\n'
        b' "distributedInfo": {"rank": 1, "world_size": 2},\n'
        b' "traceEvents": [\n'
        b'  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 1000.125, "dur": 20.5,\n'
        b'   "args": {"External id": 3, "Sequence number": 11, "Input Dims": [[4, 8], [8, 2]],\n'
        b'            "Input type": ["float", "float"], "Concrete Inputs": ["", ""]}},\n'
        b'  {"ph": "X", "cat": "kernel", "name": "gemm\\u00e9 \\"k\\"", "pid": 0, "tid": 7, "ts": 1010, "dur": 3,\n'
        b'   "args": {"device": 0, "stream": 7, "correlation": 5, "external id": 3, "graph node id": 42}},\n'
        b'  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 9123456789012.345,\n'
        b'   "dur": 1.25e0,\n'
        b'   "args": {"device": 0, "stream": 7, "bytes": 4096}},\n'
        b'  {"ph": "X", "cat": "python_function", "name": "f.py(1): g", "pid": 7, "tid": 7, "ts": 999, "dur": 30,\n'
        b'   "args": {"Python id": 12, "Python parent id": 1}},\n'
        b'  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 8,\n'
        b'   "ts": 1020, "dur": 9, "args": {"In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "Float",\n'
        b'   "Group size": 2, "device": 0, "stream": 8}},\n'
        b'  {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",\n'
        b'   "ts": 990, "dur": 100},\n'
        b'  {"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 1010, "cat": "ac2g", "name": "ac2g", "bp": "e"},\n'
        b'  {"ph": "M", "name": "thread_name", "pid": 7, "tid": 7,\n'
        b'   "args": {"name": "main\\tthread", "x": [true, null, -1.5e3]}},\n'
        b'  {"ph": "i", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": 1001, "args": {"Bytes": 8}}\n'
        b' ],\n'
        b' "baseTimeNanoseconds": 1700000000000000000}\n')
ALPHABET = b'{}[]",:0123456789.-+eE\\/ \t\nXMiftrueals\x01\xc3\xa9\xff'


def _strict(text: bytes) -> decode.Part | None:
    try:
        doc = msgspec.json.decode(text, type=decode._STRICT)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return None
    return decode._part_from_doc(decode._file_of(doc), strict=True)


def _mutants(seed: bytes, n: int, rng: random.Random):
    for _ in range(n):
        b = bytearray(seed)
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            at = rng.randrange(len(b))
            how = rng.randrange(3)
            if how == 0:
                del b[at]
            elif how == 1:
                b.insert(at, rng.choice(ALPHABET))
            else:
                b[at] = rng.choice(ALPHABET)
        yield bytes(b)


def test_the_seed_is_read_by_the_scan_as_by_msgspec():
    ours = _native_one_part(SEED)
    assert ours is not None and len(ours.cols["ts"]) == 5 and ours.events_in_file == 9
    assert _differences(ours, _strict(SEED)) == []
    assert ours.cols["nbytes"].tolist()[-1] == 4096        # (the collective's message: 1024 x 4 bytes)


@pytest.mark.parametrize("seed_no", range(4))
def test_a_mutant_the_scan_accepts_msgspec_accepts_and_reads_the_same(seed_no):
    rng = random.Random(seed_no)
    accepted = 0
    for text in _mutants(SEED, 600, rng):
        ours = _native_one_part(text)
        if ours is None:
            continue
        accepted += 1
        theirs = _strict(text)
        assert theirs is not None, text
        assert _differences(ours, theirs) == [], text
    assert accepted > 100          # (most mutants land in a value the scan reads or checks and still parse)


@pytest.mark.parametrize("text", [
    b'{"traceEvents": [{"ph": "X", "name": "a", "args": {"rank": 1}}]}',          # a merged multi-rank file
    b'{"traceEvents": [{"ph": "X", "tid": "stream 7"}]}',                         # an old trace's string tid
    b'{"traceEvents": [{"ph": "X", "args": {"device": 12345678901234567890}}]}',  # past int64
    b'{"traceEvents": [{"name": "no phase"}]}',
    b'{"traceEvents": [{"ph": "X"}], "traceEvents": []}',                         # msgspec keeps the last
    b'{"traceEvents": [{"ph": "X", "name": "a", "name": "b"}]}',
    b'{"traceEvents": [{"p\\u0068": "X"}]}',                                      # an escaped key
    b'{"traceEvents": [{"ph": "X", "name": "\\u0061"}, {"ph": "X", "name": "a"}]}',  # one name, two spellings
    b'{"traceEvents": [{"ph": "i", "x": "\\ud83d\\ude00"}]}',                     # a surrogate pair
    b'{"traceEvents": [{"ph": "X", "args": null}]}',
    b'{"traceEvents": null}',
])
def test_what_the_scan_leaves_to_msgspec(text):
    assert _native_one_part(text) is None
    assert native.decode(text, Path("t.json"))           # (msgspec reads each of them: no error)


def test_a_gzipped_seed_decodes_through_the_loader_with_the_scan(tmp_path):
    path = tmp_path / "seed.json.gz"
    path.write_bytes(gzip.compress(SEED))
    parts = native.decode(read_bytes(path), path)
    assert len(parts) == 1 and _differences(parts[0], _strict(SEED)) == []


def _numbers(rng: random.Random, n: int) -> list[bytes]:
    """ts texts of every form: the fast path's, 17 and more digits (a clock up 104 days), exponents, signs."""
    out = []
    for _ in range(n):
        whole = str(rng.choice((0, rng.randrange(10), rng.randrange(10 ** 13), rng.randrange(10 ** 17),
                                rng.randrange(10 ** 22))))
        frac = rng.choice(("", "." + str(rng.randrange(10 ** rng.randrange(1, 8))).zfill(rng.randrange(1, 9))))
        exp = rng.choice(("", "", "", f"e{rng.randrange(-30, 30)}", f"E+{rng.randrange(5)}"))
        out.append((rng.choice(("", "", "-")) + whole + frac + exp).encode())
    return out


def test_a_ts_or_dur_of_any_form_reads_as_the_double_msgspec_reads():
    numbers = _numbers(random.Random(7), 3000) + [b"9123456789012.345", b"9007199254740993", b"-0", b"0.1e1"]
    rows = [b'{"ph": "X", "ts": %s, "dur": %s}' % (x, y) for x, y in zip(numbers, reversed(numbers))]
    text = b'{"traceEvents": [' + b",".join(rows) + b']}'
    ours, theirs = _native_one_part(text), _strict(text)
    assert ours is not None and theirs is not None
    assert _differences(ours, theirs) == []


@pytest.mark.parametrize("odd", [b"1e400", b"-1e309", b"4.9e-324", b"1e-310"])
def test_a_number_past_a_doubles_range_or_below_its_normal_ones_is_left_to_msgspec(odd):
    assert _native_one_part(b'{"traceEvents": [{"ph": "X", "ts": %s}]}' % odd) is None


@pytest.mark.parametrize("value, valid", [
    ("0", True), ("-0", True), ("1.5", True), ("1e5", True), ("1E+5", True), ("-1.5e-3", True), ("1e400", True),
    ("123456789012345678901234567890", True), ("[[1,2048],[],[3.5e2]]", True), ("[1 ,2 , 3]", True),
    ("01", False), ("1.", False), ("-", False), ("1e", False), ("1e-", False), (".5", False), ("1.5.2", False),
    ("00", False), ("-01", False), ("2.5E", False), ("+1", False), ("1x", False), ("[1,2,01]", False),
    ("[1,-]", False), ("[1e5,2.]", False), ('{"a":01}', False)])
def test_a_number_in_args_the_columns_do_not_read_is_checked_for_json_grammar_alone(value, valid):
    # (those numbers are passed over without their value: one that is no JSON number still leaves the text to
    # msgspec, which says why; one out of a double's range, which no column reads, does not)
    text = ('{"traceEvents": [{"ph": "X", "name": "n", "cat": "c", "pid": 1, "tid": 1, "ts": 1, "dur": 1, '
            '"args": {"Input Strides": %s}}]}' % value).encode()
    assert (_native_one_part(bytearray(text)) is not None) == valid
