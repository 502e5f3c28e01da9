"""Is a file a trace? A look at its first bytes, for listings (the dashboard's library), never a verdict.

A torch.profiler trace is a JSON object with a "traceEvents" list (Kineto writes it after the device
properties, well inside the first kilobytes), or Chrome's JSON Array Format, a bare list of events each
with a "ph". A file of the same extension that is neither (measured ceilings, a manifest, a sidecar) is
not listed. gzip is told by its magic, as the reader tells it. Reading the whole file stays the loader's
job: a file that sniffs as a trace can still fail to load, with the loader's one-line error.
"""
from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass
from pathlib import Path

HEAD_BYTES = 256 << 10        # of JSON text: Kineto's header (device properties, distributedInfo) fits many times
_GZ_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Sniff:
    is_trace: bool
    has_rank: bool = False     # a distributedInfo header: one rank of a multi-rank run


def head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """Up to n bytes of the file's JSON text (gunzipped when it is gzip); b"" when it cannot be read."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != _GZ_MAGIC:
                f.seek(0)
                return f.read(n)
            f.seek(0)
            with gzip.GzipFile(fileobj=f) as g:
                return g.read(n)
    except (OSError, EOFError, zlib.error):
        return b""


def sniff(path: Path) -> Sniff:
    text = head(Path(path))
    body = text.lstrip()
    if body.startswith(b"{"):
        found = b'"traceEvents"' in text
        return Sniff(found, found and b'"distributedInfo"' in text)
    if body.startswith(b"["):
        return Sniff(b'"ph"' in text)
    return Sniff(False)


def is_trace(path: Path) -> bool:
    return sniff(path).is_trace
