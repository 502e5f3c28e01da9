"""Kineto JSON text -> column arrays, as fast as two cores allow.

The native scan (tracetriage.analyzers.loading.native, over a C extension the install compiles where it can)
reads most traces before they come here; what it does not handle, and every trace where it is not built or
TRACETRIAGE_NO_NATIVE=1 is set, is decoded here, into the same columns: msgspec decodes the events into small
typed structs (only the fields we use; the rest of each event is skipped in C), then the fields become numpy
columns. That
per-event Python work is the cost, so a large file is split at an event boundary
and the second half is decoded in a forked child while the parent does the first.
A split that is not a clean event boundary fails to decode and we fall back to
one process; a malformed file goes to a lenient decoder that salvages what it can.

Input: the JSON text (tracetriage.analyzers.loading.read). Output: a Part (unsorted columns plus local
name / shape tables) or several, which tracetriage.analyzers.loading.assemble merges and sorts.
"""
from __future__ import annotations

import math
import os
import re
import sys
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Union

import msgspec
import numpy as np

NONE = -1
PARALLEL_MIN_BYTES = 32 << 20     # below this, a fork costs more than it saves


from tracetriage.analyzers.loading import forked  # noqa: E402
from tracetriage.analyzers.loading.memory import check_memory  # noqa: E402
from tracetriage.analyzers.loading.streamed import EVENT_BOUNDARY  # noqa: E402
from tracetriage.analyzers.model.dtypes import DTYPE_BYTES, normalise_dtype  # noqa: E402
from tracetriage.analyzers.model.kernels import is_collective  # noqa: E402
from tracetriage.analyzers.model.trace import TraceError  # noqa: E402

# --- the JSON schema we decode (everything else is skipped by msgspec) ----------

_RAW_EMPTY = msgspec.Raw(b"")


class _Args(msgspec.Struct, gc=False, frozen=True):
    # gc=False: a 300 MB trace decodes into ~1.5M of these objects, and letting the cyclic GC
    # track them costs more than the decode itself. They hold no references to containers.
    # frozen: one instance (NO_ARGS) is every argument-less event's default, shared
    ext: int = msgspec.field(name="External id", default=NONE)
    ext_old: int = msgspec.field(name="external id", default=NONE)  # torch 1.x launch calls and kernels
    correlation: int = NONE
    device: int = NONE
    stream: int = NONE
    bytes: int = NONE
    rank: int = NONE   # a trace-fusion tool's tag of the rank each event came from (a merged multi-rank file)
    dims: msgspec.Raw = msgspec.field(name="Input Dims", default=_RAW_EMPTY)
    types: msgspec.Raw = msgspec.field(name="Input type", default=_RAW_EMPTY)
    concrete: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=_RAW_EMPTY)
    # a kernel replayed from a CUDA graph (Kineto >= 2026 on CUDA 12+)
    graph_node: int = msgspec.field(name="graph node id", default=NONE)
    # a collective (NCCL kernels and record_param_comms ops): its message and process group
    msg_in: int = msgspec.field(name="In msg nelems", default=NONE)
    msg_out: int = msgspec.field(name="Out msg nelems", default=NONE)
    msg_dtype: msgspec.Raw = msgspec.field(name="dtype", default=_RAW_EMPTY)
    group: int = msgspec.field(name="Group size", default=NONE)
    # an op recorded while autograd records (grad mode on): its node's sequence number
    seq: int = msgspec.field(name="Sequence number", default=NONE)
    # a python_function call's own id: what tells apart two calls of one function in the same microsecond
    pyid: int = msgspec.field(name="Python id", default=NONE)


# An event without "args" gets this one shared instance, made in C as the event is decoded: the columns then read
# every event's args with attrgetter in C, with no Python pass to put a default in for the missing ones (~40 ms
# of each half of a 300 MB trace). A JSON `"args": null` fails the strict decode; the lenient one reads it as this.
NO_ARGS = _Args()


class _Event(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    """A complete event ("ph": "X"): the only kind analysed. Its "ph" is its tag (msgspec reads it, in C, to
    pick this struct), so it is no field."""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = math.nan     # missing: NaN, dropped and counted with the other bad times
    dur: float = math.nan
    args: _Args = NO_ARGS


# Every other phase of Chrome's Trace Event Format (flows, instants, counters, metadata, async ...; a quarter
# of a torch trace's events are flows) decodes to a struct with no fields: its keys are skipped in C, with no
# string or number made for them. A phase not listed here (or an event without one) fails the strict decode, and
# the lenient one (below) reads the file: the same events, kept and dropped alike, only slower.
_OTHER_PHASES = ("B", "E", "i", "I", "C", "b", "n", "e", "S", "T", "p", "F", "s", "t", "f", "P", "O", "N", "D",
                 "M", "V", "v", "R", "c", "(", ")")
_Others = tuple(msgspec.defstruct(f"_Other{i}", [], tag_field="ph", tag=ph, gc=False)
                for i, ph in enumerate(_OTHER_PHASES))
_AnyEvent = Union[(_Event, *_Others)]  # noqa: UP007  (a union built from a tuple)


class _DeviceProp(msgspec.Struct, gc=False):
    id: int = 0
    name: str = ""
    computeMajor: int = NONE
    computeMinor: int = NONE
    numSms: int = 0
    totalGlobalMem: int = 0


class _File(msgspec.Struct, gc=False):
    traceEvents: list[_AnyEvent] | None = None
    deviceProperties: list[_DeviceProp] = []
    distributedInfo: dict | None = None
    baseTimeNanoseconds: int | None = None


# Lenient twins: used only when the strict decode fails, to salvage what is usable. Every value
# stays raw JSON text until it is read, one at a time, so that no single odd value (a string ts,
# an args list, a number too big for a float, an event that is not an object) can fail the file.
class _LooseArgs(msgspec.Struct):
    ext: msgspec.Raw = msgspec.field(name="External id", default=_RAW_EMPTY)
    ext_old: msgspec.Raw = msgspec.field(name="external id", default=_RAW_EMPTY)
    correlation: msgspec.Raw = _RAW_EMPTY
    device: msgspec.Raw = _RAW_EMPTY
    stream: msgspec.Raw = _RAW_EMPTY
    bytes: msgspec.Raw = _RAW_EMPTY
    rank: msgspec.Raw = _RAW_EMPTY
    dims: msgspec.Raw = msgspec.field(name="Input Dims", default=_RAW_EMPTY)
    types: msgspec.Raw = msgspec.field(name="Input type", default=_RAW_EMPTY)
    concrete: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=_RAW_EMPTY)
    graph_node: msgspec.Raw = msgspec.field(name="graph node id", default=_RAW_EMPTY)
    msg_in: msgspec.Raw = msgspec.field(name="In msg nelems", default=_RAW_EMPTY)
    msg_out: msgspec.Raw = msgspec.field(name="Out msg nelems", default=_RAW_EMPTY)
    msg_dtype: msgspec.Raw = msgspec.field(name="dtype", default=_RAW_EMPTY)
    group: msgspec.Raw = msgspec.field(name="Group size", default=_RAW_EMPTY)
    seq: msgspec.Raw = msgspec.field(name="Sequence number", default=_RAW_EMPTY)
    pyid: msgspec.Raw = msgspec.field(name="Python id", default=_RAW_EMPTY)


class _LooseEvent(msgspec.Struct):
    ph: msgspec.Raw = _RAW_EMPTY
    cat: msgspec.Raw = _RAW_EMPTY
    name: msgspec.Raw = _RAW_EMPTY
    pid: msgspec.Raw = _RAW_EMPTY
    tid: msgspec.Raw = _RAW_EMPTY
    ts: msgspec.Raw = _RAW_EMPTY
    dur: msgspec.Raw = _RAW_EMPTY
    args: msgspec.Raw = _RAW_EMPTY


class _LooseFile(msgspec.Struct):
    traceEvents: list[msgspec.Raw] | None = None
    deviceProperties: msgspec.Raw = _RAW_EMPTY
    distributedInfo: msgspec.Raw = _RAW_EMPTY
    baseTimeNanoseconds: msgspec.Raw = _RAW_EMPTY


@dataclass
class Part:
    """Columns of one slice of the events (unsorted), with its own name and shape tables."""
    cols: dict[str, np.ndarray]
    names: list[str]
    shapes: list[tuple[bytes, bytes, bytes]]
    events_in_file: int
    dropped: int
    device_names: dict[int, str] = field(default_factory=dict)
    rank: int | None = None
    base_time_ns: int | None = None
    has_trace_events: bool = True
    world_size: int | None = None
    rank_of_pid: dict[int, int] = field(default_factory=dict)   # args.rank of each pid's first event, where tagged


# ROCm traces from vLLM name their devices "" and older ROCm ones "AMD Radeon Graphics" for an
# Instinct part; the properties Kineto records beside the name still tell the part apart (an MI300X:
# compute 9.4, 304 CUs, 192 GB). Such a name gets them appended, so the peak table can match them.
_NAMES_THAT_SAY_NOTHING = ("", "amd radeon graphics")


def device_name(name: str, major: int, minor: int, units: int, mem_bytes: int) -> str:
    """The device's name as recorded, with its recorded properties appended when the name says nothing."""
    if name.strip().lower() not in _NAMES_THAT_SAY_NOTHING or major < 0 or units <= 0:
        return name
    what = f"compute {major}.{max(minor, 0)}, {units} multiprocessors" + (
        f", {mem_bytes / 2**30:.0f} GB" if mem_bytes > 0 else "")
    return f"{name.strip() or 'unnamed device'} ({what})"


# --- decoding -------------------------------------------------------------------------

_NONBLANK = NONBLANK = re.compile(rb"\s*\S")    # (NONBLANK: native.py's too)
_WHAT_TO_PASS = ("pass the .json or .json.gz that torch.profiler exports (export_chrome_trace, "
                 "tensorboard_trace_handler)")


def decode(data: bytes | bytearray, path: Path) -> list[Part]:
    """All events of a trace as one Part or several (several when the file is split across cores), by msgspec."""
    if not _NONBLANK.match(data):
        raise TraceError(f"{path}: the file is empty; {_WHAT_TO_PASS}")
    check_memory(data, path)
    if len(data) >= PARALLEL_MIN_BYTES and sys.platform.startswith("linux") and (os.cpu_count() or 1) > 1:
        parts = _decode_split(data, path)
        if parts is not None:
            return parts
    try:
        return [_decode_whole(data, path)]
    except TraceError as e:
        if _INVALID_UTF8 not in str(e):
            raise
    # torch.profiler writes a Python frame's name byte by byte and can cut a multi-byte character in two (seen:
    # "torch/utils/_config_module.py(0): \xd0" in a python_function event): JSON must be UTF-8, so msgspec refuses the
    # whole file for one name. Each such byte becomes U+FFFD, as a text editor shows it; only then (a second decode,
    # on the rare file that needs it) -- every event and number is kept.
    return [_decode_whole(bytes(data).decode("utf-8", "replace").encode(), path)]


_INVALID_UTF8 = "Invalid UTF-8"    # msgspec's DecodeError for a byte sequence that is not UTF-8


def _not_json(path: Path, e: Exception) -> TraceError:
    if "truncated" in str(e).lower():
        return TraceError(f"{path}: not valid JSON: it ends early (truncated: an interrupted export, download "
                           "or copy?); export or fetch it again")
    return TraceError(f"{path}: not valid JSON ({e}); {_WHAT_TO_PASS}")


# A trace is Chrome's JSON Object Format ({"traceEvents": [...], ...}, what torch.profiler writes) or its
# JSON Array Format (a bare list of events, which chrome://tracing and Perfetto read too): the array
# form carries no deviceProperties, distributedInfo or baseTimeNanoseconds.
_STRICT = _File | list[_AnyEvent]
_LOOSE = _LooseFile | list[msgspec.Raw]


def _file_of(doc: _File | list) -> _File:
    return doc if isinstance(doc, _File) else _File(traceEvents=doc)


def _decode_whole(data: bytes | bytearray, path: Path) -> Part:
    try:
        try:
            return _part_from_doc(_file_of(msgspec.json.decode(data, type=_STRICT)), strict=True)
        except msgspec.ValidationError:
            pass
        doc = msgspec.json.decode(data, type=_LOOSE)
    except msgspec.ValidationError:
        raise TraceError(f"{path}: JSON, but not a trace: expected an object with a 'traceEvents' list (or a list "
                          f"of events); {_WHAT_TO_PASS}") from None
    except msgspec.DecodeError as e:
        raise _not_json(path, e) from None
    except RecursionError:
        raise TraceError(f"{path}: JSON nested too deeply to be a trace; {_WHAT_TO_PASS}") from None
    if isinstance(doc, list):
        if doc and not any(bytes(raw)[:1] == b"{" for raw in doc):
            raise TraceError(f"{path}: JSON, but not a trace: a list, but of no event objects (a trace is an object "
                             f"with a 'traceEvents' list, or a list of events); {_WHAT_TO_PASS}")
        doc = _LooseFile(traceEvents=doc)
    return _part_from_doc(_LooseDoc(doc), strict=False)


_BOUNDARY = EVENT_BOUNDARY
# What a piece after the first starts with, written over the 16 bytes before its first event, and what
# a piece before the last ends with, written over the 2 bytes after its last event: in the object form
# each piece is an object with a 'traceEvents' list, in the array form a list.
_PIECE_EDGES = {False: (b'{"traceEvents":[', b"]}"), True: (b" " * 15 + b"[", b"] ")}


CHUNK_BYTES = 32 << 20   # decode this much JSON at a time: structs for ~100k events, freed as columns
# ... all but one in KEEP_EVERY of them, until the last piece is decoded. Python's allocator gives a memory block
# (1 MB) back to the system once nothing in it lives, and each piece's structs would then be laid in fresh pages,
# every one faulted in again: the one struct in 256 kept (with the strings and numbers it holds) keeps each
# block, and the next piece's structs fill it. For a 300 MB trace: 92k page faults -> 38k and 7% less CPU, for
# ~10 MB more at the peak.
KEEP_EVERY = 256


def _boundaries(data: bytearray, start: int, n_chunks: int) -> list[re.Match]:
    """Event boundaries (`}, {"ph":`) that cut the events into about n_chunks equal pieces."""
    cuts, pos = [], start
    for k in range(1, n_chunks):
        m = _BOUNDARY.search(data, max(pos, len(data) * k // n_chunks))
        if m is None:
            break
        cuts.append(m)
        pos = m.end()
    return cuts


def _decode_pieces(data: bytearray, cuts: list[re.Match], first: int, last: int, array: bool = False) -> list[Part]:
    """Decode pieces first..last (piece k runs from cut k-1 to cut k) in place, one at a time.

    Piece k > 0 gets `{"traceEvents":[` (array form: `[`) written over the 16 bytes before its first
    event (the tail of piece k-1, already decoded); a piece that ends at a cut gets `]}` (`] `)
    written over the two bytes after its last event and put back after, since they may be the next
    piece's `{`. Only one piece's structs are alive at a time: each becomes columns before the next.
    """
    head, tail = _PIECE_EDGES[array]
    parts = []
    kept = []      # a few of each piece's structs, held until the last piece is decoded (see KEEP_EVERY)
    for k in range(first, last + 1):
        lo, hi = 0, len(data)
        edits = []  # (offset, original bytes): every write is undone, so a fallback reads the true text
        try:
            if k > 0:
                brace = cuts[k - 1].start() + cuts[k - 1].group(0).rindex(b"{")
                lo = brace - len(head)
                edits.append((lo, bytes(data[lo:brace])))
                data[lo:brace] = head
            if k < len(cuts):
                end = cuts[k].start() + 1
                edits.append((end, bytes(data[end:end + len(tail)])))
                data[end:end + len(tail)] = tail
                hi = end + len(tail)
            with memoryview(data) as view:
                doc = msgspec.json.decode(view[lo:hi], type=list[_AnyEvent] if array else _File)
        finally:
            for off, orig in reversed(edits):
                data[off:off + len(orig)] = orig
        whole = _file_of(doc)
        parts.append(_part_from_doc(whole, strict=True))
        kept.append(whole.traceEvents[::KEEP_EVERY] if whole.traceEvents else None)
        del doc, whole
    return parts


def _decode_split(data: bytes | bytearray, path: Path) -> list[Part] | None:
    """Decode the events in pieces, the second half of them in a forked child; None if the file
    does not split cleanly at event boundaries (the single-process path then decides).

    In place, without copying the text (see _decode_pieces): each process sees only its own
    writes (copy-on-write), so the pieces cost no memory beyond the text itself, and at any time
    each process holds the structs of one piece only.
    """
    if not isinstance(data, bytearray):
        data = bytearray(data)  # (read_bytes gives a bytearray; other callers pay one copy)
    array = _NONBLANK.match(data).group(0)[-1:] == b"["
    start = _NONBLANK.match(data).end() if array else data.find(b'"traceEvents"')
    if start < 0:
        return None
    pairs = max(1, -(-len(data) // (2 * CHUNK_BYTES)))     # an even number of pieces: equal halves
    cuts = _boundaries(data, start, 2 * pairs)
    if not cuts:
        return None
    n_pieces = len(cuts) + 1
    half = n_pieces // 2                    # the parent takes pieces 0..half-1, the child the rest
    child = forked.start(lambda: _decode_pieces(data, cuts, half, n_pieces - 1, array))
    try:
        mine = _decode_pieces(data, cuts, 0, (half if child is not None else n_pieces) - 1, array)
    except BaseException as e:
        if child is not None:
            child.discard()
        if isinstance(e, Exception):
            return None  # not strictly valid (or not a clean split): the single-process path decides
        raise
    done, theirs = child.result() if child is not None else (True, [])
    if not done:
        return None
    parts = mine + theirs
    # the head's totals cover the whole file; the other pieces' counts move into it
    head = parts[0]
    for p in parts[1:]:
        head.events_in_file += p.events_in_file
        head.dropped += p.dropped
        p.dropped = 0
    return parts


# --- structs -> columns ---------------------------------------------------------------

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _num(x) -> float:
    """A ts or dur from loosely typed JSON: a JSON number, else NaN (dropped later)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return math.nan
    try:
        return float(x)
    except OverflowError:  # an integer with hundreds of digits
        return math.nan


def _int_or(x, default: int = NONE) -> int:
    """An id from loosely typed JSON; anything that is not a whole number in int64 is `default`."""
    if isinstance(x, bool):
        return default
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    if isinstance(x, int) and _I64_MIN <= x <= _I64_MAX:
        return x
    return default


_ANY = msgspec.json.Decoder()
_LOOSE_EVENT = msgspec.json.Decoder(_LooseEvent)
_LOOSE_ARGS = msgspec.json.Decoder(_LooseArgs)


def _value(raw: msgspec.Raw, decoder=_ANY):
    """One raw JSON value, decoded; None if it is absent or unusable (a number beyond float range...)."""
    if not raw:
        return None
    try:
        return decoder.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return None


class _LooseDoc:
    """The lenient file's top-level values, decoded one by one."""

    def __init__(self, doc: _LooseFile):
        self.traceEvents = doc.traceEvents
        self.deviceProperties = _value(doc.deviceProperties)
        self.distributedInfo = _value(doc.distributedInfo)
        self.baseTimeNanoseconds = _value(doc.baseTimeNanoseconds)


def _sanitize(loose: list) -> tuple[list[_Event], int]:
    """Turn lenient events into strict ones, dropping what cannot be used. A ts or dur that is not a
    number becomes NaN: tracetriage.analyzers.model.trace drops (and counts) those rows with the other bad times."""
    out = []
    for raw in loose:
        e = _value(raw, _LOOSE_EVENT)  # None when the event is not an object
        if e is None or _value(e.ph) != "X":
            continue
        pid, tid = _value(e.pid), _value(e.tid)
        if isinstance(pid, str):
            continue  # the profiler's own spans ("Spans"/"PyTorch Profiler"), as in the strict path
        a = _value(e.args, _LOOSE_ARGS)
        if a is not None:
            ext = _int_or(_value(a.ext))
            args = _Args(ext=ext if ext != NONE else _int_or(_value(a.ext_old)),
                         correlation=_int_or(_value(a.correlation)), device=_int_or(_value(a.device)),
                         stream=_int_or(_value(a.stream)), bytes=_int_or(_value(a.bytes)),
                         rank=_int_or(_value(a.rank)), dims=a.dims, types=a.types, concrete=a.concrete,
                         graph_node=_int_or(_value(a.graph_node)), msg_in=_int_or(_value(a.msg_in)),
                         msg_out=_int_or(_value(a.msg_out)), msg_dtype=a.msg_dtype, group=_int_or(_value(a.group)),
                         seq=_int_or(_value(a.seq)), pyid=_int_or(_value(a.pyid)))
        else:
            args = NO_ARGS
        pid = pid if isinstance(pid, (int, str)) and not isinstance(pid, bool) else 0
        tid = tid if isinstance(tid, (int, str)) and not isinstance(tid, bool) else 0
        cat, name = _value(e.cat), _value(e.name)
        out.append(_Event(cat=cat if isinstance(cat, str) else "",
                          name=name if isinstance(name, str) else ("" if name is None else str(name)),
                          pid=pid, tid=tid, ts=_num(_value(e.ts)), dur=_num(_value(e.dur)), args=args))
    return out, 0


def _ids(values, n: int) -> tuple[np.ndarray, dict]:
    """Small integer ids for n hashable values (names, categories, shapes), numbered by first appearance,
    and the table {value: id}. One pass in C: a defaultdict whose default is its own length gives each
    value it has not met the next id as it is met (~2x faster than finding the distinct values first)."""
    table: defaultdict = defaultdict()
    table.default_factory = table.__len__
    ids = np.fromiter(map(table.__getitem__, values), np.int64, n)
    return ids, dict(table)


_STREAM_NAME = re.compile(r"\s*(?:stream\s*)?(-?\d+)\s*")


def table_list(table: dict) -> list:
    """The keys of an id table ({value: id}, ids 0..n-1) in id order."""
    out: list = [None] * len(table)
    for v, i in table.items():
        out[i] = v
    return out


def _int_column(xs: list, field: str) -> np.ndarray:
    """pid/tid: ints, except that old traces write them as strings: "1234" for a thread, "stream 7"
    for a GPU row. Those become the number; any other string a stable negative id (the same in
    every process and every part: a hash, not a running count)."""
    try:
        return np.fromiter(map(attrgetter(field), xs), np.int64, len(xs))   # (a digit string reads as int() does)
    except (TypeError, ValueError, OverflowError):
        return np.fromiter(map(_int_of, map(attrgetter(field), xs)), np.int64, len(xs))


def _times_and_threads(xs: list[_Event]) -> dict[str, np.ndarray]:
    """ts, dur, pid and tid, a pass each: a pass per field is ~40% faster than one 4-tuple per event into a record
    array (numpy fills a record's fields one object at a time). A pid or tid numpy cannot read as an int64 (a
    "stream 7" of an old trace, an id past int64) takes _int_column's way, which reads every digit string as int()
    does."""
    n = len(xs)
    return {"ts": np.fromiter(map(attrgetter("ts"), xs), np.float64, n),
            "dur": np.fromiter(map(attrgetter("dur"), xs), np.float64, n),
            "pid": _int_column(xs, "pid"), "tid": _int_column(xs, "tid")}


def _int_of(v) -> int:
    if type(v) is int and _I64_MIN <= v <= _I64_MAX:
        return v
    text = str(v)
    m = _STREAM_NAME.fullmatch(text)
    if m and len(m.group(1)) < 19:
        return int(m.group(1))
    return -1 - zlib.crc32(text.encode("utf-8", "replace"))


def _int64s(make_iter, n: int) -> np.ndarray:
    """An int64 column from an iterator of ints; ids outside int64 (hostile input) become NONE."""
    try:
        return np.fromiter(make_iter(), np.int64, n)
    except OverflowError:
        return np.fromiter((v if _I64_MIN <= v <= _I64_MAX else NONE for v in make_iter()), np.int64, n)


def _part_from_doc(doc, strict: bool) -> Part:
    events = doc.traceEvents or []
    events_in_file = len(events)
    if strict:
        # string pids mark the profiler's own spans ("Spans"/"PyTorch Profiler"): not trace content.
        # Missing, out-of-range, negative or non-finite times are dropped (and counted) by
        # tracetriage.analyzers.model.trace, vectorised: one pass here.
        xs = [e for e in events if e.__class__ is _Event and e.pid.__class__ is int]
        dropped = 0
    else:
        xs, dropped = _sanitize(events)
    device_names: dict[int, str] = {}
    props = doc.deviceProperties if isinstance(doc.deviceProperties, list) else []
    for p in props:
        if isinstance(p, _DeviceProp):
            device_names[p.id] = device_name(p.name, p.computeMajor, p.computeMinor, p.numSms, p.totalGlobalMem)
        elif isinstance(p, dict) and _int_or(p.get("id")) != NONE:
            device_names[_int_or(p["id"])] = device_name(
                str(p.get("name", "")), _int_or(p.get("computeMajor")), _int_or(p.get("computeMinor")),
                max(_int_or(p.get("numSms")), 0), max(_int_or(p.get("totalGlobalMem")), 0))
    info = doc.distributedInfo
    rank = _int_or(info.get("rank"), None) if isinstance(info, dict) else None
    world = info.get("world_size") if isinstance(info, dict) else None
    world_size = world if isinstance(world, int) and not isinstance(world, bool) and world > 0 else None
    base = _int_or(doc.baseTimeNanoseconds, None)
    cols, names, shapes = _columns(xs)
    rank_of_pid = cols.pop("rank_of_pid")
    return Part(cols, names, shapes, events_in_file, dropped, device_names, rank, base,
                has_trace_events=doc.traceEvents is not None, world_size=world_size, rank_of_pid=rank_of_pid)


def _columns(xs: list[_Event]) -> tuple[dict, list[str], list[tuple]]:
    n = len(xs)
    get = attrgetter
    names, name_ids = _ids(map(get("name"), xs), n)
    cat_raw, cat_ids = _ids(map(get("cat"), xs), n)
    cols = {
        "name": names.astype(np.int32),
        "cat_raw": cat_raw,
        **_times_and_threads(xs),
    }
    args = list(map(get("args"), xs))
    for f, col in (("ext", "ext"), ("correlation", "corr"), ("device", "device"), ("stream", "stream"),
                   ("bytes", "nbytes")):
        cols[col] = _int64s(lambda f=f: map(get(f), args), n)
    # torch 1.x wrote "external id" (lower case) on launch calls and GPU rows: use it where
    # "External id" is absent (only those rows are looked at: most rows have the new key)
    no_ext = np.flatnonzero(cols["ext"] == NONE)
    if len(no_ext):
        rows = no_ext.tolist()
        old = _int64s(lambda: map(get("ext_old"), map(args.__getitem__, rows)), len(rows))
        cols["ext"][no_ext] = old
    # Shapes: only cpu_ops have them, and a loop repeats a few hundred signatures. Keep one
    # copy of each distinct (Input Dims, Input type, Concrete Inputs) and an id per row.
    cats = list(cat_ids)
    op_codes = [i for c, i in cat_ids.items() if c.lower() in ("cpu_op", "operator")]
    shape_id = np.full(n, NONE, np.int32)
    shape_ids: dict[tuple, int] = {}
    op_rows = np.flatnonzero(np.isin(cols["cat_raw"], op_codes)) if op_codes else np.zeros(0, np.int64)
    if len(op_rows):
        op_args = list(map(args.__getitem__, op_rows.tolist()))
        ids, shape_ids = _shape_ids(op_args)
        shape_id[op_rows] = ids
    cols["shape"] = shape_id
    # autograd's sequence number: only cpu_ops carry one (those recorded while grad mode is on)
    cols["seq"] = np.full(n, NONE, np.int64)
    if len(op_rows):
        cols["seq"][op_rows] = _int64s(lambda: map(get("seq"), op_args), len(op_rows))
    py_codes = [i for c, i in cat_ids.items() if c.lower() == "python_function"]
    py_rows = np.flatnonzero(np.isin(cols["cat_raw"], py_codes)) if py_codes else np.zeros(0, np.int64)
    cols["pyid"] = np.full(n, NONE, np.int64)
    if len(py_rows):
        cols["pyid"][py_rows] = _int64s(lambda: map(get("pyid"), map(args.__getitem__, py_rows.tolist())),
                                        len(py_rows))
    _graph_and_collective_columns(cols, args, cat_ids, name_ids)
    cols["cat_names"] = np.array(cats, dtype=object)  # the table behind cat_raw
    # A merged multi-rank file tags every event with the rank it came from, and gives each rank's
    # processes their own pids: the first event of each pid says its rank. A file whose first and last
    # events carry no tag is no merged file, and costs no search (np.unique over a million pids: 60 ms)
    cols["rank_of_pid"] = {}
    if n and (args[0].rank != NONE or args[-1].rank != NONE):
        pids, first = np.unique(cols["pid"], return_index=True)
        ranks = [args[i].rank for i in first.tolist()]
        cols["rank_of_pid"] = {int(p): int(r) for p, r in zip(pids.tolist(), ranks) if r != NONE}
    return cols, table_list(name_ids), table_list(shape_ids)


_SEP = b"\0"   # never in JSON text (a control character inside a string is escaped), so a joined key splits back


def _shape_ids(op_args: list[_Args]) -> tuple[np.ndarray, dict[tuple, int]]:
    """Each op row's shape id, numbered by first appearance, and the table {(Input Dims, Input type, Concrete
    Inputs): id} of their raw JSON texts. A row's key is its three texts joined by a NUL in one bytes (one object
    to make and hash per row, not three and a tuple: half the time on 470k rows)."""
    ids, joined = _ids(map(_SEP.join, map(attrgetter("dims", "types", "concrete"), op_args)), len(op_args))
    table = {tuple(k.split(_SEP)): i for k, i in joined.items()}
    if len(table) == len(joined) and all(len(k) == 3 for k in table):
        return ids, table
    keys = zip(map(bytes, map(attrgetter("dims"), op_args)), map(bytes, map(attrgetter("types"), op_args)),
               map(bytes, map(attrgetter("concrete"), op_args)))     # (a NUL in a text: keys of three bytes)
    return _ids(keys, len(op_args))


def _graph_and_collective_columns(cols: dict, args: list, cat_ids: dict, name_ids: dict) -> None:
    """graph_node and group, and a collective's message bytes in nbytes. Only GPU activities replay graphs,
    and only collective kernels and record_param_comms ops describe a message, so only their rows are read."""
    n = len(args)
    get = attrgetter
    cols["graph_node"] = np.full(n, NONE, np.int64)
    cols["group"] = np.full(n, NONE, np.int64)
    codes = {c.lower(): i for c, i in cat_ids.items()}
    gpu_codes = [codes[c] for c in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset") if c in codes]
    gpu = np.flatnonzero(np.isin(cols["cat_raw"], gpu_codes)) if gpu_codes else np.zeros(0, np.int64)
    if len(gpu):
        rows = gpu.tolist()
        cols["graph_node"][gpu] = _int64s(lambda: map(get("graph_node"), map(args.__getitem__, rows)), len(rows))
    comm_codes = [codes[c] for c in ("kernel", "cpu_op", "operator") if c in codes]
    comm_names = [i for n, i in name_ids.items() if n == "record_param_comms" or is_collective(n)]
    if not comm_codes or not comm_names:
        return
    cand = np.flatnonzero(np.isin(cols["cat_raw"], comm_codes) & np.isin(cols["name"], comm_names))
    rows = cand.tolist()
    msg_in = _int64s(lambda: map(get("msg_in"), map(args.__getitem__, rows)), len(rows))
    comm = cand[msg_in != NONE]
    for r in comm.tolist():
        a = args[r]
        size = DTYPE_BYTES.get(normalise_dtype(_value(a.msg_dtype)) or "", 0)
        nelems = max(_int_or(a.msg_in), _int_or(a.msg_out))
        if size and 0 <= nelems < (1 << 56) and cols["nbytes"][r] == NONE:
            cols["nbytes"][r] = nelems * size
        cols["group"][r] = _int_or(a.group)


def ns_from_us(us: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """µs (float64, 3 decimals) -> int64 ns, exact even where float64 spacing is ~1 ns; into `out` where given."""
    whole = np.floor(us)
    frac = us - whole
    frac *= 1000.0
    np.rint(frac, out=frac)
    if out is None:
        ns = whole.astype(np.int64)
    else:
        ns = out
        np.copyto(ns, whole, casting="unsafe")      # (astype's cast, into the caller's column)
    ns *= 1000
    ns += frac.astype(np.int64)     # (in place: the same sums, half the temporary arrays)
    return ns
