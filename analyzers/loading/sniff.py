"""Is a file a trace? A look at its first bytes, for listings (the dashboard's library), never a verdict.

The file's first HEAD_BYTES of text (gunzipped when it is gzip, told by its magic as the reader tells it) go
to the formats' sniffs (tracetriage.analyzers.loading.formats): a torch.profiler trace is a JSON object with a
"traceEvents" list, or Chrome's JSON Array Format. A file of the same extension that is neither (measured
ceilings, a manifest, a sidecar) is not listed. Reading the whole file stays the loader's job: a file that
sniffs as a trace can still fail to load, with the loader's one-line error.
"""
from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from tracetriage.analyzers.loading import formats
from tracetriage.analyzers.loading.formats import GZIP_MAGIC, HEAD_BYTES, Sniff

__all__ = ["HEAD_BYTES", "Sniff", "head", "is_trace", "sniff"]


def head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """Up to n bytes of the file's JSON text (gunzipped when it is gzip); b"" when it cannot be read."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != GZIP_MAGIC:
                f.seek(0)
                return f.read(n)
            f.seek(0)
            with gzip.GzipFile(fileobj=f) as g:
                return g.read(n)
    except (OSError, EOFError, zlib.error):
        return b""


def sniff(path: Path) -> Sniff:
    return formats.sniff(head(Path(path)))


def is_trace(path: Path) -> bool:
    return sniff(path).is_trace
