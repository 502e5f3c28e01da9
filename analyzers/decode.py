"""Kineto JSON text -> column arrays, as fast as two cores allow.

msgspec decodes the events into small typed structs (only the fields we use; the
rest of each event is skipped in C), then the fields become numpy columns. That
per-event Python work is the cost, so a large file is split at an event boundary
and the second half is decoded in a forked child while the parent does the first.
A split that is not a clean event boundary fails to decode and we fall back to
one process; a malformed file goes to a lenient decoder that salvages what it can.

Output: a Part (unsorted columns plus local name / shape tables) or several, which
analyzers.trace merges, sorts and links.
"""
from __future__ import annotations

import math
import os
import pickle
import re
import sys
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

NONE = -1
PARALLEL_MIN_BYTES = 32 << 20     # below this, a fork costs more than it saves


class DecodeError(ValueError):
    """Not a usable trace; the message is one line for the user."""


# --- the JSON schema we decode (everything else is skipped by msgspec) ----------

_RAW_EMPTY = msgspec.Raw(b"")


class _Args(msgspec.Struct, gc=False):
    # gc=False: a 300 MB trace decodes into ~1.5M of these objects, and letting the cyclic GC
    # track them costs more than the decode itself. They hold no references to containers.
    ext: int = msgspec.field(name="External id", default=NONE)
    correlation: int = NONE
    device: int = NONE
    stream: int = NONE
    bytes: int = NONE
    dims: msgspec.Raw = msgspec.field(name="Input Dims", default=_RAW_EMPTY)
    types: msgspec.Raw = msgspec.field(name="Input type", default=_RAW_EMPTY)
    concrete: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=_RAW_EMPTY)


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | None = None
    dur: float | None = None
    args: _Args | None = None


class _DeviceProp(msgspec.Struct, gc=False):
    id: int = 0
    name: str = ""


class _File(msgspec.Struct, gc=False):
    traceEvents: list[_Event] | None = None
    deviceProperties: list[_DeviceProp] = []
    distributedInfo: dict | None = None
    baseTimeNanoseconds: int | None = None


# Lenient twins: used only when the strict decode fails, to salvage what is usable.
class _LooseEvent(msgspec.Struct):
    ph: Any = ""
    cat: Any = ""
    name: Any = ""
    pid: Any = 0
    tid: Any = 0
    ts: Any = None
    dur: Any = None
    args: Any = None


class _LooseFile(msgspec.Struct):
    traceEvents: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None


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


# --- reading --------------------------------------------------------------------

def read_bytes(path: Path) -> bytes:
    """The JSON text of a .json or .json.gz file (gzip detected by magic, not by name)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        raise DecodeError(f"{path} is a directory; pass a trace file") from None
    except OSError as e:
        raise DecodeError(f"cannot read {path}: {e.strerror or e}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            from isal import igzip  # ~1.5x faster than zlib for gunzip

            return igzip.decompress(data)
        except ImportError:  # pragma: no cover
            import gzip

            return gzip.decompress(data)
        except Exception as e:  # truncated or corrupt gzip
            raise DecodeError(f"{path}: not a readable gzip file ({type(e).__name__}: {e}); "
                              "was the download cut short?") from None
    return data


# --- decoding -------------------------------------------------------------------------

def decode(data: bytes, path: Path) -> list[Part]:
    """All events of a trace as one or two Parts (two when the file is split across cores)."""
    if len(data) == 0 or not data.lstrip()[:1]:
        raise DecodeError(f"{path}: empty file")
    if len(data) >= PARALLEL_MIN_BYTES and sys.platform.startswith("linux") and (os.cpu_count() or 1) > 1:
        parts = _decode_split(data, path)
        if parts is not None:
            return parts
    return [_decode_whole(data, path)]


def _decode_whole(data: bytes, path: Path) -> Part:
    try:
        doc = msgspec.json.decode(data, type=_File)
        return _part_from_doc(doc, strict=True)
    except msgspec.ValidationError:
        pass
    except msgspec.DecodeError as e:
        hint = " (truncated?)" if "truncated" in str(e).lower() or "end of" in str(e).lower() else ""
        raise DecodeError(f"{path}: not valid JSON{hint}: {e}") from None
    try:
        doc = msgspec.json.decode(data, type=_LooseFile)
    except msgspec.ValidationError:
        raise DecodeError(f"{path}: JSON, but not a trace: expected an object with a 'traceEvents' list") from None
    except msgspec.DecodeError as e:
        raise DecodeError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(doc.traceEvents, list):
        raise DecodeError(f"{path}: JSON, but not a trace: no 'traceEvents' list")
    return _part_from_doc(doc, strict=False)


_BOUNDARY = re.compile(rb'\}\s*,\s*\{\s*"ph"\s*:')


def _decode_split(data: bytes, path: Path) -> list[Part] | None:
    """Decode the two halves in two processes; None if the file does not split cleanly."""
    start = data.find(b'"traceEvents"')
    if start < 0:
        return None
    m = _BOUNDARY.search(data, max(start, len(data) // 2))
    if m is None:
        return None
    # first half: everything up to the end of an event, then close the list and the object
    first = data[:m.start() + 1] + b"]}"
    # second half: a fresh object whose list starts at the next event (trailing keys come along)
    brace = m.group(0).rindex(b"{")
    second = b'{"traceEvents":[' + data[m.start() + brace:]
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: decode the second half, send its Part back, exit without cleanup
        code = 0
        try:
            os.close(rfd)
            part = _part_from_doc(msgspec.json.decode(second, type=_File), strict=True)
            payload = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            payload, code = b"", 1
        with os.fdopen(wfd, "wb") as w:
            w.write(payload)
        os._exit(code)
    os.close(wfd)
    del second
    try:
        mine = _part_from_doc(msgspec.json.decode(first, type=_File), strict=True)
        ok = True
    except (msgspec.ValidationError, msgspec.DecodeError):
        ok = False
    del first
    with os.fdopen(rfd, "rb") as r:
        payload = r.read()
    _, status = os.waitpid(pid, 0)
    if not ok or status != 0 or not payload:
        return None  # not a clean split, or not strictly valid: the single-process path decides
    theirs = pickle.loads(payload)
    mine.events_in_file += theirs.events_in_file
    return [mine, theirs]


# --- structs -> columns ---------------------------------------------------------------

def _num(x) -> float:
    if isinstance(x, bool) or x is None:
        return math.nan
    if isinstance(x, (int, float)):
        return float(x)
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _int_or(x, default: int = NONE) -> int:
    """An id from loosely typed JSON; anything that is not a whole number is `default`."""
    if isinstance(x, bool):
        return default
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return default


def _sanitize(loose: list) -> tuple[list[_Event], int]:
    """Turn lenient events into strict ones, dropping what cannot be used."""
    out, dropped = [], 0
    for e in loose:
        if not isinstance(e, _LooseEvent) or e.ph != "X":
            continue
        ts, dur = _num(e.ts), _num(e.dur)
        if not (math.isfinite(ts) and math.isfinite(dur)) or dur < 0 or abs(ts) > 1e17:
            dropped += 1
            continue
        if isinstance(e.pid, str) and not isinstance(e.tid, int):
            continue  # the profiler's own spans ("Spans"/"PyTorch Profiler")
        a = e.args if isinstance(e.args, dict) else {}
        args = _Args(ext=_int_or(a.get("External id")), correlation=_int_or(a.get("correlation")),
                     device=_int_or(a.get("device")), stream=_int_or(a.get("stream")), bytes=_int_or(a.get("bytes")))
        for key, attr in (("Input Dims", "dims"), ("Input type", "types"), ("Concrete Inputs", "concrete")):
            if key in a:
                setattr(args, attr, msgspec.Raw(msgspec.json.encode(a[key])))
        pid = e.pid if isinstance(e.pid, (int, str)) and not isinstance(e.pid, bool) else 0
        tid = e.tid if isinstance(e.tid, (int, str)) and not isinstance(e.tid, bool) else 0
        out.append(_Event(ph="X", cat=str(e.cat or ""), name=str(e.name or ""), pid=pid, tid=tid,
                          ts=ts, dur=dur, args=args))
    return out, dropped


def _ids(values: list, table: dict) -> np.ndarray:
    """Small integer ids for hashable values (names, categories), numbered by first appearance.

    dict.fromkeys finds the distinct values and map(dict.__getitem__) numbers them, both in C:
    ~4x faster than a Python-level setdefault loop over 750k events.
    """
    for v in dict.fromkeys(values):
        if v not in table:
            table[v] = len(table)
    return np.array(list(map(table.__getitem__, values)), dtype=np.int64) if values else np.zeros(0, np.int64)


def _int_column(values: list) -> np.ndarray:
    """pid/tid: ints, except that old traces name GPU rows with strings ('stream 7')."""
    try:
        return np.array(values, dtype=np.int64).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        strs: dict = {}
        return np.fromiter((v if type(v) is int else -(1 + strs.setdefault(v, len(strs))) for v in values),
                           np.int64, len(values))


def _part_from_doc(doc, strict: bool) -> Part:
    events = doc.traceEvents or []
    events_in_file = len(events)
    if strict:
        complete = [e for e in events if e.ph == "X"]
        # string pids mark the profiler's own spans ("Spans"/"PyTorch Profiler"): not trace content
        xs = [e for e in complete if e.ts is not None and e.dur is not None and e.dur >= 0 and e.pid.__class__ is int]
        dropped = 0
        if len(xs) != len(complete):
            dropped = sum(1 for e in complete if e.pid.__class__ is int) - len(xs)
        del complete
    else:
        xs, dropped = _sanitize(events)
    device_names: dict[int, str] = {}
    props = doc.deviceProperties if isinstance(doc.deviceProperties, list) else []
    for p in props:
        if isinstance(p, _DeviceProp):
            device_names[p.id] = p.name
        elif isinstance(p, dict) and isinstance(p.get("id"), int):
            device_names[p["id"]] = str(p.get("name", ""))
    info = doc.distributedInfo
    rank = info["rank"] if isinstance(info, dict) and isinstance(info.get("rank"), int) else None
    base = doc.baseTimeNanoseconds if isinstance(doc.baseTimeNanoseconds, int) else None
    cols, names, shapes = _columns(xs)
    return Part(cols, names, shapes, events_in_file, dropped, device_names, rank, base,
                has_trace_events=doc.traceEvents is not None)


def _columns(xs: list[_Event]) -> tuple[dict, list[str], list[tuple]]:
    n = len(xs)
    get = attrgetter
    name_ids: dict[str, int] = {}
    cat_ids: dict[str, int] = {}
    cols = {
        "name": _ids(list(map(get("name"), xs)), name_ids).astype(np.int32),
        "cat_raw": _ids(list(map(get("cat"), xs)), cat_ids),
        "ts": np.fromiter(map(get("ts"), xs), np.float64, n),
        "dur": np.fromiter(map(get("dur"), xs), np.float64, n),
        "pid": _int_column(list(map(get("pid"), xs))),
        "tid": _int_column(list(map(get("tid"), xs))),
    }
    no = _Args()
    args = [e.args or no for e in xs]
    for f, col in (("ext", "ext"), ("correlation", "corr"), ("device", "device"), ("stream", "stream"),
                   ("bytes", "nbytes")):
        cols[col] = np.fromiter(map(get(f), args), np.int64, n)
    # Shapes: only cpu_ops have them, and a loop repeats a few hundred signatures. Keep one
    # copy of each distinct (Input Dims, Input type, Concrete Inputs) and an id per row.
    cats = list(cat_ids)
    op_codes = [i for c, i in cat_ids.items() if c.lower() in ("cpu_op", "operator")]
    shape_id = np.full(n, NONE, np.int32)
    shape_ids: dict[tuple, int] = {}
    op_rows = np.flatnonzero(np.isin(cols["cat_raw"], op_codes)) if op_codes else np.zeros(0, np.int64)
    if len(op_rows):
        op_args = list(map(args.__getitem__, op_rows.tolist()))
        keys = list(zip(map(bytes, map(get("dims"), op_args)), map(bytes, map(get("types"), op_args)),
                        map(bytes, map(get("concrete"), op_args))))
        shape_id[op_rows] = _ids(keys, shape_ids)
    cols["shape"] = shape_id
    cols["cat_names"] = np.array(cats, dtype=object)  # the table behind cat_raw
    names = [""] * len(name_ids)
    for s_, i in name_ids.items():
        names[i] = s_
    shapes: list = [None] * len(shape_ids)
    for k, i in shape_ids.items():
        shapes[i] = k
    return cols, names, shapes


def ns_from_us(us: np.ndarray) -> np.ndarray:
    """µs (float64, 3 decimals) -> int64 ns, exact even where float64 spacing is ~1 ns."""
    whole = np.floor(us)
    return whole.astype(np.int64) * 1000 + np.rint((us - whole) * 1000.0).astype(np.int64)
