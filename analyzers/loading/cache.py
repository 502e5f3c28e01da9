"""A columnar cache of loaded traces: the second open of a trace skips the JSON.

One Parquet file per trace content, in `$TRACETRIAGE_CACHE_DIR` (default
`~/.cache/tracetriage/traces/`), holding the event columns and the links, with the
names, shapes and trace metadata in the file's key-value metadata.

- Keyed by content: the entry's name is a BLAKE2 digest of the file's size and
  bytes (all of them up to 64 MiB; beyond that 32 spread 256 KiB samples plus the
  size, so a 300 MB trace is fingerprinted in milliseconds). An entry also records
  the source's size and mtime; if either differs the entry is stale and rebuilt,
  so an edited file never reads an old entry.
- Written atomically (temporary file + os.replace): two processes racing on one
  trace both write whole files and the last rename wins; a reader never sees half.
- Never trusted blindly: the file ends with a CRC-32 of everything before it (Parquet's
  own page checksums leave its footer, where the names and metadata live, unchecked);
  the format version, column types and lengths, and the range of every index column
  are checked; an entry that fails any check is deleted (if it is still the file we
  read) and rebuilt. Temporary files left by a writer that died are ignored, and
  removed once they are an hour old.
Set TRACETRIAGE_NO_CACHE=1 to bypass it.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from tracetriage.analyzers.loading.cache_key import cache_dir, digest, enabled, entry_path  # (numpy-free)
from tracetriage.analyzers.model.trace import EVENT_COLUMNS, Caveat, Events, Trace

FORMAT = 16  # 5: caveats are typed (kind, count, total); 6: distributedInfo's world_size; 7: op_of by time
             # where External ids name no enclosing op (tracetriage.analyzers.loading.containment), the ranks
             # of a merged multi-rank file, device names with their properties where the name says nothing;
             # 8: graph node ids, collectives' groups, the graph replays' captured ops; 9: autograd's sequence
             # numbers of ops; 10: python_function calls' Python ids; 11: the stream-overlap caveat leaves
             # out programmatic dependent launch (loading.link); 12: activities with no correlation linked by an
             # External id one call and one activity share (ROCm/HIP traces: loading.external_pairs); 13: the
             # calls placed by time split by what their id was (loading.link: a ROCm trace's own ids apart);
             # 14: replays left unjoined where the capture is in the trace but none of its launches
             # (loading.graphs: graph_capture_unrecorded)
             # 15: kernels launched by an API the capture does not record (model.driver_launches) apart
             # 16: both of them, merged
_TRAILER_MAGIC = b"TTC4"           # entry = Parquet bytes + CRC-32 of them (4 bytes, little endian) + magic
_STALE_TMP_S = 3600
_COLUMNS = EVENT_COLUMNS


def _crc32(data) -> int:
    try:
        from isal import isal_zlib  # ~3x faster than zlib's

        return isal_zlib.crc32(data)
    except ImportError:  # pragma: no cover
        import zlib

        return zlib.crc32(data)


class CorruptEntry(ValueError):
    pass


class _Stale(Exception):
    pass


def get(path: Path):
    """The cached Trace for this file, or None (missing, stale or corrupt: corrupt ones are removed)."""
    if not enabled():
        return None
    try:
        entry = entry_path(path)
    except OSError:
        return None
    try:
        with open(entry, "rb") as f:
            st_entry = os.fstat(f.fileno())
            data = f.read()
    except OSError:
        return None  # no entry (or unreadable): build it
    try:
        return _decode_entry(data, path, entry)
    except _Stale:
        return None  # the file changed since: rebuild (put() replaces the entry)
    except Exception:  # a truncated, corrupt or foreign file: never trust it
        _remove_if_same(entry, st_entry)
        return None


def _remove_if_same(entry: Path, st_read: os.stat_result) -> None:
    """Delete a bad entry, unless another process has meanwhile replaced it with a new (good) one."""
    try:
        st_now = os.stat(entry)
        if (st_now.st_ino, st_now.st_dev) == (st_read.st_ino, st_read.st_dev):
            entry.unlink()
    except OSError:
        pass


def _decode_entry(data: bytes, path: Path, entry: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    if len(data) < 8 or data[-4:] != _TRAILER_MAGIC:
        raise CorruptEntry("no trailer: truncated, or not a cache entry")
    body = memoryview(data)[:-8]
    if _crc32(body) != int.from_bytes(data[-8:-4], "little"):
        raise CorruptEntry("checksum mismatch")
    table = pq.ParquetFile(pa.BufferReader(pa.py_buffer(body))).read()
    meta = json.loads(table.schema.metadata[b"tracetriage"])
    if meta.get("format") != FORMAT:
        raise CorruptEntry("old cache format")
    if meta.get("digest") != entry.stem:
        raise CorruptEntry("an entry for another file under this name")
    st = path.stat()
    if (meta["source_size"], meta["source_mtime_ns"]) != (st.st_size, st.st_mtime_ns):
        raise _Stale()
    return _from_table(table, meta, path)


def put(path: Path, trace) -> None:
    if not enabled():
        return
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from tracetriage.analyzers.loading.atomic import write_bytes_atomic

        st = path.stat()
        key = digest(path, st.st_size)
        entry = cache_dir() / f"{key}.parquet"
        cols = {c: getattr(trace.ev, c) for c in _COLUMNS}
        cols["launch_of"] = trace.launch_of
        cols["op_of"] = trace.op_of
        if trace.graph_op_of is not None:
            cols["graph_op_of"] = trace.graph_op_of
        meta = {
            "format": FORMAT, "digest": key, "source": str(path), "source_size": st.st_size,
            "source_mtime_ns": st.st_mtime_ns,
            "rows": len(trace.ev), "names": trace.names,
            "shapes": [[b.decode("utf-8", "replace") for b in s] for s in trace.shapes_raw],
            "device_names": {str(k): v for k, v in trace.device_names.items()}, "rank": trace.rank,
            "world_size": trace.world_size,
            "base_time_ns": trace.base_time_ns, "events_in_file": trace.events_in_file,
            "caveats": [[c.kind, c.count, c.total] for c in trace.caveats],
            "merged_ranks": [[int(k), int(v)] for k, v in trace.merged_ranks.items()],
        }
        table = pa.Table.from_arrays([_arrow(a) for a in cols.values()], names=list(cols))
        table = table.replace_schema_metadata({"tracetriage": json.dumps(meta)})
        sink = pa.BufferOutputStream()
        # one row group, no dictionary, lz4: the read is a few memcpy's (~30 ms for 750k events)
        pq.write_table(table, sink, compression="lz4", use_dictionary=False, row_group_size=max(1, len(trace.ev)))
        body = sink.getvalue()
        write_bytes_atomic(entry, b"".join((body, _crc32(body).to_bytes(4, "little"), _TRAILER_MAGIC)))
        _remove_stale_temporaries(entry.parent)
    except Exception:
        pass  # a cache that cannot be written (read-only home, full disk) must not fail the report


def _arrow(a: np.ndarray):
    """A null-free Arrow column over the integer column's own buffer, zero-copy. (`pa.array` asks pandas whether
    the array is one of its own, importing it: ~0.3 CPU-s in the forked writer of every trace loaded afresh.)"""
    import pyarrow as pa

    a = np.ascontiguousarray(a)
    if a.dtype.kind not in "iu":            # (Arrow packs booleans in bits: no numpy buffer to share)
        return pa.array(a)
    return pa.Array.from_buffers(pa.from_numpy_dtype(a.dtype), len(a), [None, pa.py_buffer(a)])


def _remove_stale_temporaries(directory: Path) -> None:
    """Temporary files of writers that died mid-write (atomic.py names them `.NAME.XXXX.tmp`)."""
    now = time.time()
    with os.scandir(directory) as it:
        for d in it:
            if d.name.startswith(".") and d.name.endswith(".tmp"):
                try:
                    if now - d.stat().st_mtime > _STALE_TMP_S:
                        os.unlink(d.path)
                except OSError:
                    pass


def put_in_background(path: Path, trace) -> None:
    """Write the entry from a forked child so the caller does not wait for Parquet and the
    disk (~0.3 s for a 300 MB trace). The child shares the columns copy-on-write and exits;
    the atomic rename means a reader sees no entry or a whole one. Elsewhere: synchronous."""
    if not enabled():
        return
    if not sys.platform.startswith("linux"):
        put(path, trace)
        return
    try:
        pid = os.fork()
    except OSError:
        put(path, trace)
        return
    if pid == 0:
        try:
            os.setsid()  # leave the terminal's process group: ^C on the report does not kill the write
            put(path, trace)
        finally:
            os._exit(0)


_DTYPES = {"cat": np.int8, "name": np.int32, "device": np.int32, "shape": np.int32}  # the rest: int64


def _numpy(column) -> np.ndarray:
    """A primitive, null-free Arrow column as numpy, zero-copy. (Arrow's own to_numpy imports
    pandas on first use: 0.2 s, most of this cache's budget.)"""
    if column.null_count:
        raise ValueError("cache column has nulls")
    chunks = []
    for ch in column.chunks:
        dtype = np.dtype(ch.type.to_pandas_dtype())
        chunks.append(np.frombuffer(ch.buffers()[1], dtype=dtype, count=len(ch), offset=ch.offset * dtype.itemsize))
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def _from_table(table, meta: dict, path: Path):
    n = meta["rows"]
    arrays = {c: _numpy(table.column(c)) for c in table.column_names}
    if any(len(a) != n for a in arrays.values()) or set(_COLUMNS) - set(arrays) or \
            {"launch_of", "op_of"} - set(arrays):
        raise ValueError("cache entry has the wrong shape")
    for c, a in arrays.items():
        if a.dtype != _DTYPES.get(c, np.int64):
            raise ValueError(f"cache column {c} has dtype {a.dtype}")
    ev = Events(**{c: np.ascontiguousarray(arrays[c]) for c in _COLUMNS})
    tr = Trace(path=str(path), names=meta["names"], ev=ev,
               device_names={int(k): v for k, v in meta["device_names"].items()},
               rank=meta["rank"], world_size=meta["world_size"],
               base_time_ns=meta["base_time_ns"], events_in_file=meta["events_in_file"],
               shapes_raw=[tuple(x.encode("utf-8") for x in s) for s in meta["shapes"]],
               launch_of=np.ascontiguousarray(arrays["launch_of"]), op_of=np.ascontiguousarray(arrays["op_of"]),
               caveats=tuple(Caveat(k, int(n), int(t)) for k, n, t in meta["caveats"]),
               merged_ranks={int(k): int(v) for k, v in meta["merged_ranks"]},
               graph_op_of=np.ascontiguousarray(arrays["graph_op_of"]) if "graph_op_of" in arrays else None)
    bounds = {"name": len(tr.names), "shape": len(tr.shapes_raw), "launch_of": n, "op_of": n, "cat": 12}
    if "graph_op_of" in arrays:
        bounds["graph_op_of"] = n
    for c, hi in bounds.items():
        a = arrays[c]
        if n and (int(a.max()) >= hi or int(a.min()) < (0 if c in ("name", "cat") else -1)):
            raise ValueError(f"cache column {c} points outside its table")
    return tr
