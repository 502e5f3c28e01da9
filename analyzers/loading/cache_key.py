"""Where the columnar cache keeps a trace's entry (tracetriage.analyzers.loading.cache), from the file alone.

An entry's name is a BLAKE2 digest of the file's size and bytes: all of them up to FULL_HASH_LIMIT; beyond that
SAMPLES spread samples of SAMPLE bytes plus the size, so a 300 MB trace is fingerprinted in milliseconds. This
module imports no numpy: the read-ahead (tracetriage.analyzers.loading.read) asks it, in its thread, whether
the trace has an entry before reading the JSON nobody will need.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

FULL_HASH_LIMIT = 64 << 20
SAMPLES, SAMPLE = 32, 256 << 10


def cache_dir() -> Path:
    base = os.environ.get("TRACETRIAGE_CACHE_DIR")
    return Path(base) / "traces" if base else Path.home() / ".cache" / "tracetriage" / "traces"


def enabled() -> bool:
    return not os.environ.get("TRACETRIAGE_NO_CACHE")


def digest(path: Path, size: int) -> str:
    h = hashlib.blake2b(digest_size=20)
    h.update(size.to_bytes(8, "little"))
    with open(path, "rb") as f:
        if size <= FULL_HASH_LIMIT:
            while chunk := f.read(8 << 20):
                h.update(chunk)
        else:
            step = (size - SAMPLE) // (SAMPLES - 1)
            for i in range(SAMPLES):
                f.seek(i * step)
                h.update(f.read(SAMPLE))
    return h.hexdigest()


def entry_path(path: Path) -> Path:
    st = path.stat()
    return cache_dir() / f"{digest(path, st.st_size)}.parquet"
