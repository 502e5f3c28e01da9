"""Read a trace file's JSON text: the first step of loading (read -> decode -> assemble -> link).

gzip is detected by its magic, not by the name; a file whose JSON would need more memory
than there is gets refused before it is read whole (analyzers.loading.memory).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from analyzers.loading.memory import CHECK_MIN_BYTES, read_limit, refuse_to_read
from analyzers.model.trace import TraceError

_GZ_CHUNK = 16 << 20


def read_bytes(path: Path) -> bytearray:
    """The JSON text of a .json or .json.gz file (gzip detected by magic, not by name), in a bytearray
    (decode() splits it in place). Refuses, before reading it all, a file whose JSON would need more
    memory than there is."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # (before open: opening a FIFO would block)
            raise TraceError(f"{path} is not a regular file; pass a trace file (.json or .json.gz)")
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            head = f.read(2)
            gz = head == b"\x1f\x8b"
            size = st.st_size
            limit = None
            if gz or size >= CHECK_MIN_BYTES:  # (any .gz: a small one can hold a huge JSON)
                limit = read_limit()
                if not gz and size > limit:
                    raise refuse_to_read(path, size)
            f.seek(0)
            if not gz:
                data = bytearray(size)
                n = f.readinto(data)
                if n != size:  # the file shrank while we read it
                    del data[n:]
                return data
            compressed = f.read()
    except IsADirectoryError:
        raise TraceError(f"{path} is a directory; pass a trace file") from None
    except OSError as e:
        raise TraceError(f"cannot read {path}: {e.strerror or e}") from None
    return _gunzip(compressed, path, limit)


def _gunzip(compressed: bytes, path: Path, limit: int | None) -> bytearray:
    """Decompress chunk by chunk into one growing buffer (glibc grows a big one with mremap, without
    copying), and stop as soon as the output passes `limit`: a small .gz can hold a huge JSON, and its
    trailer's size field (mod 4 GiB, unchecked until the end) cannot be trusted to say so."""
    from isal import igzip_lib

    out = bytearray()
    buf = compressed
    d = igzip_lib.IgzipDecompressor(igzip_lib.DECOMP_GZIP)
    try:
        while True:
            chunk = d.decompress(buf, _GZ_CHUNK)
            buf = b""
            out += chunk
            if limit is not None and len(out) > limit:
                raise refuse_to_read(path, limit, more=True)
            if d.eof:
                rest = d.unused_data.lstrip(b"\x00")
                if rest[:2] != b"\x1f\x8b":  # trailing padding is fine; another gzip member continues
                    break
                buf, d = rest, igzip_lib.IgzipDecompressor(igzip_lib.DECOMP_GZIP)
            elif not chunk and d.needs_input:
                raise TraceError(f"{path}: not a readable gzip file: it ends early, after {len(out):,} bytes of "
                                  "JSON (truncated: an interrupted download or copy?); fetch or export it again")
    except igzip_lib.IsalError as e:
        raise TraceError(f"{path}: not a readable gzip file ({e}): it is corrupt; fetch or export it "
                          "again") from None
    return out
