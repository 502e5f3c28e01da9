"""The native event scan (eventscan.c, a C extension module) as the decoder's first choice: JSON text -> Parts.

The chrome trace format's decoder (formats.py) calls decode() here, which hands the text to msgspec's decoder
(decode.py, unchanged) whenever the scan does not read it (scan_parts says None): the extension was not built
(no C compiler at install), TRACETRIAGE_NO_NATIVE=1 is set, or the text is one the scan does not handle (see
eventscan.c's head: anything msgspec's strict decode would refuse, a merged multi-rank file, an id of more than
18 digits...). What the scan accepts it reads into the very columns msgspec's path makes (ids by first
appearance, the same tables), checked over the bundled traces by tests/test_native_scan.py.

The scan writes numpy columns of the complete events and interns names, categories and shapes as spans of the
text, with no Python object per event; here the few distinct spans become strings and the columns msgspec's
path fills only for some rows (shape and seq for ops, pyid for Python calls, graph_node for GPU work, a
collective's group and message bytes) are filled for those rows alone. A file of PARALLEL_MIN_BYTES or more is
cut in two at an event boundary and the halves scanned in two threads (the scan releases the GIL): two Parts,
merged by assemble as the forked split's are. A large .json.gz is scanned as it is read instead, in pieces, while
the gunzip goes on (tracetriage.analyzers.loading.streamed): decode() takes that scan's columns, one Part (two where
the read's thread scanned the tail), and scans the text after the read only where the stream did not read it.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np

from tracetriage.analyzers.loading import decode as msgspec_decode
from tracetriage.analyzers.loading import streamed
from tracetriage.analyzers.loading.decode import NONE, Part
from tracetriage.analyzers.loading.memory import check_memory
from tracetriage.analyzers.model.dtypes import DTYPE_BYTES, normalise_dtype
from tracetriage.analyzers.model.kernels import is_collective

eventscan = streamed.eventscan     # None where it was not built (setup.py's extension is optional): msgspec decodes

# eventscan.c's integer columns, in its order (C_PID ...): the last two are a row's args.dtype span in the text
INT_COLUMNS = ("pid", "tid", "ext", "ext_old", "corr", "device", "stream", "nbytes", "seq", "graph_node", "msg_in",
               "msg_out", "group", "pyid", "dtype_off", "dtype_len")
OK, ROWS_FULL = 0, -2
# hash slots per table, a power of two, half usable: 262,144 distinct names (or categories, or shapes) a part; more
# and msgspec decodes the file
TABLE_CAP = streamed.TABLE_CAP
# rows allocated: a part's bytes / 64 (a torch complete event is 150+ bytes; the pages of rows not written are never
# touched), and if that overflows, / 11 (`{"ph":"X"},`)
BYTES_PER_ROW = (streamed.BYTES_PER_ROW, 11)
_OPS = ("cpu_op", "operator")
_GPU = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")


def enabled() -> bool:
    """Is the scan there (built at install) and not switched off (TRACETRIAGE_NO_NATIVE=1)?"""
    return streamed.enabled()


@dataclass
class _Scanned:
    """One part of the events list, scanned: its columns (views of the buffers, `rows` long) and span tables."""
    f64: np.ndarray        # (2, cap): ts, dur
    i64: np.ndarray        # (16, cap): INT_COLUMNS
    i32: np.ndarray        # (3, cap): name, cat, shape ids (first appearance among the part's rows)
    tab_off: np.ndarray    # (9 * TABLE_CAP,): names' spans at 0, categories' at 3 TABLE_CAP, shapes' (3 a key) at 6
    tab_len: np.ndarray
    events: int            # all events of the part, complete or not
    rows: int              # its complete events with a number pid
    list_end: int          # the offset after the list's ']' (the last part), else -1
    tables: tuple[int, int, int]


def decode(data: bytes | bytearray, path: Path) -> list[Part]:
    """All events of a trace as Parts: by the scan where it reads the text, else by msgspec (decode.decode, which
    also says in one line why a text is no trace)."""
    as_read = streamed.take(data)        # the events the scan read as the text arrived, if it did
    if enabled() and msgspec_decode.NONBLANK.match(data):
        check_memory(data, path)
        parts = _streamed_parts(data, path, as_read) if as_read is not None else None
        if parts is None:
            parts = scan_parts(data, path)
        if parts is not None:
            return parts
    return msgspec_decode.decode(data, path)


def _streamed_parts(data: bytes | bytearray, path: Path, scans: list[streamed.Scanned]) -> list[Part] | None:
    """The Parts of a text the scan read as it arrived (tracetriage.analyzers.loading.streamed): one part, or two
    where the read's thread scanned the tail, whose columns are the stream's memory maps."""
    parts = []
    for s in scans:
        cap = s.cap
        events, rows, list_end, *tables = s.info
        parts.append(_Scanned(np.frombuffer(s.f64, np.float64).reshape(2, cap),
                              np.frombuffer(s.i64, np.int64).reshape(len(INT_COLUMNS), cap),
                              np.frombuffer(s.i32, np.int32).reshape(3, cap), np.frombuffer(s.tab_off, np.int64),
                              np.frombuffer(s.tab_len, np.int64), events, rows, list_end, tuple(tables)))
    return _parts(data, scans[0].start, parts)


def scan_parts(data: bytes | bytearray, path: Path) -> list[Part] | None:
    """The trace's events as Parts by the scan, or None: msgspec's to decode."""
    if not enabled():
        return None
    start = eventscan.find_events(data)
    if start < 0:
        return None
    bounds = [start]
    if len(data) >= msgspec_decode.PARALLEL_MIN_BYTES and (os.cpu_count() or 1) > 1:
        cut = streamed.EVENT_BOUNDARY.search(data, max(start, len(data) // 2))
        if cut is not None:            # (the scan of the half before checks that this is a true event boundary)
            bounds.append(cut.start() + cut.group(0).rindex(b"{"))
    jobs = [(lo, hi, hi == len(data)) for lo, hi in zip(bounds, [*bounds[1:], len(data)])]
    if len(jobs) == 1:
        scans = [_scan_part(data, *jobs[0])]
    else:
        with ThreadPoolExecutor(len(jobs)) as pool:
            scans = list(pool.map(lambda job: _scan_part(data, *job), jobs))
    if any(s is None for s in scans):
        return None
    return _parts(data, start, scans)


def _parts(data: bytes | bytearray, start: int, scans: list[_Scanned]) -> list[Part] | None:
    """The scanned parts of a text as Parts, the first with what the file says beside its events."""
    head = _outside_the_list(data, start, scans[-1].list_end)
    if head is None:
        return None
    parts = [_part(data, s) for s in scans]
    if any(p is None for p in parts):
        return None
    first = parts[0]
    first.device_names, first.rank, first.base_time_ns = head.device_names, head.rank, head.base_time_ns
    first.world_size = head.world_size
    first.events_in_file = sum(p.events_in_file for p in parts)     # (the head's totals cover the file, as in a
    return parts                                                     # split decode)


def _scan_part(data: bytes | bytearray, start: int, end: int, last: bool) -> _Scanned | None:
    for per_row in BYTES_PER_ROW:
        cap = (end - start) // per_row + 16
        f64, i64, i32 = np.empty((2, cap)), np.empty((len(INT_COLUMNS), cap), np.int64), np.empty((3, cap), np.int32)
        tab_off, tab_len = np.empty(9 * TABLE_CAP, np.int64), np.empty(9 * TABLE_CAP, np.int64)
        tab_slot, info = np.full(3 * TABLE_CAP, -1, np.int32), np.zeros(6, np.int64)
        status = eventscan.scan(data, start, end, last, f64, i64, i32, tab_off, tab_len, tab_slot, info)
        if status != ROWS_FULL:
            break
    if status != OK:
        return None
    events, rows, list_end, *tables = info.tolist()
    return _Scanned(f64, i64, i32, tab_off, tab_len, events, rows, list_end, tuple(tables))


def _outside_the_list(data: bytes | bytearray, start: int, list_end: int) -> Part | None:
    """The file with its events list emptied, decoded by msgspec (strict): what it says beside the events
    (deviceProperties, distributedInfo, baseTimeNanoseconds), and the check that all of it is valid."""
    after = bytes(data[list_end:])
    if b'"traceEvents"' in after:          # (a second key of that name: msgspec keeps the last)
        return None
    try:
        doc = msgspec.json.decode(bytes(data[:start]) + b"[]" + after, type=msgspec_decode._STRICT)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return None
    return msgspec_decode._part_from_doc(msgspec_decode._file_of(doc), strict=True)


def _texts(data: bytes | bytearray, s: _Scanned, table: int) -> list[str] | None:
    """A table's span texts as msgspec decodes them; None if one does not decode, or two spellings (an escape)
    decode to one string (msgspec's path would give them one id)."""
    at = 3 * table * TABLE_CAP
    out = []
    for off, n in zip(s.tab_off[at:at + s.tables[table]].tolist(), s.tab_len[at:at + s.tables[table]].tolist()):
        raw = bytes(data[off:off + n])
        if raw.isascii() and b"\\" not in raw:
            out.append(raw.decode("ascii"))
            continue
        try:
            out.append(msgspec.json.decode(b'"' + raw + b'"', type=str))
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None
    return out if len(set(out)) == len(out) else None


def _first_appearance(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ids renumbered 0.. by first appearance, and the old id of each new one."""
    rows = np.arange(len(ids))
    first = np.full(int(ids.max()) + 1 if len(ids) else 0, len(ids))
    first[ids[::-1]] = rows[::-1]          # (the last write wins: each id's first row)
    old = np.argsort(first, kind="stable")[:int(np.sum(first < len(ids)))]
    new = np.empty(len(first), np.int64)
    new[old] = np.arange(len(old))
    return new[ids], old


def _part(data: bytes | bytearray, s: _Scanned) -> Part | None:
    """One scanned part as the Part msgspec's path (decode._columns) makes of the same events."""
    n = s.rows
    names, cats = _texts(data, s, 0), _texts(data, s, 1)
    if names is None or cats is None:
        return None
    col = dict(zip(INT_COLUMNS, s.i64[:, :n]))
    cat_raw = s.i32[1, :n].astype(np.int64)
    cols = {"name": s.i32[0, :n], "cat_raw": cat_raw, "ts": s.f64[0, :n], "dur": s.f64[1, :n],
            "pid": col["pid"], "tid": col["tid"]}
    for k in ("ext", "corr", "device", "stream", "nbytes"):
        cols[k] = col[k]
    old = cols["ext"] == NONE          # torch 1.x's "external id" where "External id" is absent
    cols["ext"][old] = col["ext_old"][old]
    ops = _rows_of(cat_raw, cats, lambda c: c.lower() in _OPS)
    cols["shape"] = np.full(n, NONE, np.int32)
    shapes: list[tuple[bytes, bytes, bytes]] = []
    if len(ops):
        cols["shape"][ops], old_ids = _first_appearance(s.i32[2, :n][ops])
        at = 6 * TABLE_CAP
        off = s.tab_off[at:at + 3 * s.tables[2]].reshape(-1, 3)[old_ids].tolist()
        ln = s.tab_len[at:at + 3 * s.tables[2]].reshape(-1, 3)[old_ids].tolist()
        shapes = [tuple(bytes(data[o:o + k]) for o, k in zip(os_, ls)) for os_, ls in zip(off, ln)]
    cols["seq"] = _only(col["seq"], ops)
    cols["pyid"] = _only(col["pyid"], _rows_of(cat_raw, cats, lambda c: c.lower() == "python_function"))
    _graph_and_collectives(data, cols, col, cats, names)
    cols["cat_names"] = np.array(cats, dtype=object)
    return Part(cols, names, shapes, s.events, 0)


def _rows_of(cat_raw: np.ndarray, cats: list[str], which) -> np.ndarray:
    codes = [i for i, c in enumerate(cats) if which(c)]
    return np.flatnonzero(_among(cat_raw, codes, len(cats))) if codes else np.zeros(0, np.int64)


def _among(ids: np.ndarray, wanted: list[int], n_ids: int) -> np.ndarray:
    """np.isin(ids, wanted) for ids of a part's table (0 <= id < n_ids: the scan numbers them so), through a table over
    the ids: one gather, where np.isin's passes over a 1M-row part's column took 8-10 ms of the load's one thread."""
    table = np.zeros(n_ids, bool)
    table[wanted] = True
    return table[ids]


def _only(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """A column that is NONE but on `rows`, where it is `values`'."""
    out = np.full(len(values), NONE, np.int64)
    out[rows] = values[rows]
    return out


def _graph_and_collectives(data: bytes | bytearray, cols: dict, col: dict, cats: list[str], names: list[str]) -> None:
    """graph_node (GPU rows), and a collective's group and message bytes: decode._graph_and_collective_columns,
    read from the scan's columns."""
    codes = {c.lower(): i for i, c in enumerate(cats)}
    gpu_codes = [codes[c] for c in _GPU if c in codes]
    cols["graph_node"] = _only(col["graph_node"], np.flatnonzero(_among(cols["cat_raw"], gpu_codes, len(cats)))
                               if gpu_codes else np.zeros(0, np.int64))
    cols["group"] = np.full(len(cols["cat_raw"]), NONE, np.int64)
    comm_codes = [codes[c] for c in ("kernel", "cpu_op", "operator") if c in codes]
    comm_names = [i for i, name in enumerate(names) if name == "record_param_comms" or is_collective(name)]
    if not comm_codes or not comm_names:
        return
    cand = np.flatnonzero(_among(cols["cat_raw"], comm_codes, len(cats)) & _among(cols["name"], comm_names, len(names)))
    for r in cand[col["msg_in"][cand] != NONE].tolist():
        off, n = int(col["dtype_off"][r]), int(col["dtype_len"][r])
        size = DTYPE_BYTES.get(normalise_dtype(msgspec_decode._value(bytes(data[off:off + n]))) or "", 0)
        nelems = max(int(col["msg_in"][r]), int(col["msg_out"][r]))
        if size and 0 <= nelems < (1 << 56) and cols["nbytes"][r] == NONE:
            cols["nbytes"][r] = nelems * size
        cols["group"][r] = col["group"][r]
