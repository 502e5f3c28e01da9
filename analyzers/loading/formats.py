"""What a trace file is: the formats loading reads, the names their files go by, how each is told from its
first bytes, and its decoder, each behind one function.

    is_trace_name("rank0.json.gz")     # True; its sidecar rank0.meta.json and a manifest.json are not
    trace_stem("rank0.json.gz")        # "rank0": NAME.meta.json and NAME.inductor/ sit beside NAME.json.gz
    sniff(first_bytes)                 # Sniff(is_trace=True, has_rank=False), for listings
    decode(text, path)                 # the Parts its format's decoder makes (tracetriage.analyzers.loading.decode)

One spec per format (as each what-if lever has one, tracetriage.analyzers.whatif.levers.spec):

    name       the format's name
    suffixes   the file names it goes by, longest first; any of them may be gzipped (told by GZIP_MAGIC, never
               by the name: tracetriage.analyzers.loading.read)
    sniff      its first bytes of text -> Sniff: is it one (a look for listings, never a verdict)
    decode     its whole text -> Parts, imported on first use: a listing (the dashboard's library) sniffs
               without numpy or msgspec

The first format of FORMATS decodes whatever no other format's sniff claims, and says in one line why a text
is no trace. Adding a format is its decoder (a module beside decode), its spec and line here, and its test.
Input: a file's name, or its JSON text. Output: what it is, and its Parts.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracetriage.analyzers.loading.decode import Part

GZIP_MAGIC = b"\x1f\x8b"           # a trace of any format may be gzipped
HEAD_BYTES = 256 << 10             # of text, for sniff: Kineto's header (device properties, distributedInfo) fits
                                   # many times
SIDECAR_SUFFIX = ".meta.json"      # what the capture declared about a trace (loading.side_inputs): no trace
MANIFEST = "manifest.json"         # a sample library's labels: no trace


@dataclass(frozen=True)
class Sniff:
    is_trace: bool
    has_rank: bool = False     # a distributedInfo header: one rank of a multi-rank run


@dataclass(frozen=True)
class TraceFormat:
    name: str
    suffixes: tuple[str, ...]
    sniff: Callable[[bytes], Sniff]
    decode: Callable[[bytes | bytearray, Path], list[Part]]


def _sniff_chrome_trace(text: bytes) -> Sniff:
    """A JSON object with a "traceEvents" list (Kineto writes it after the device properties, well inside the
    first kilobytes), or Chrome's JSON Array Format: a bare list of events, each with a "ph"."""
    body = text.lstrip()
    if body.startswith(b"{"):
        found = b'"traceEvents"' in text
        return Sniff(found, found and b'"distributedInfo"' in text)
    if body.startswith(b"["):
        return Sniff(b'"ph"' in text)
    return Sniff(False)


def _decode_chrome_trace(text: bytes | bytearray, path: Path) -> list[Part]:
    from tracetriage.analyzers.loading.native import decode as decode_json  # (msgspec's decode.py behind it)

    return decode_json(text, path)


CHROME_TRACE = TraceFormat("torch.profiler's Chrome-trace JSON (object or array form)", (".json.gz", ".json"),
                           _sniff_chrome_trace, _decode_chrome_trace)

FORMATS: tuple[TraceFormat, ...] = (CHROME_TRACE,)


def trace_stem(name: str) -> str | None:
    """The file name without its trace suffix ("rank0" of "rank0.json.gz"); None for a name no format goes by."""
    for f in FORMATS:
        for suffix in f.suffixes:
            if name.endswith(suffix):
                return name[:-len(suffix)]
    return None


def is_trace_name(name: str) -> bool:
    """A name a trace goes by, and not a sidecar's or a manifest's (they share the suffix)."""
    return trace_stem(name) is not None and not name.endswith(SIDECAR_SUFFIX) and name != MANIFEST


def sniff(text: bytes) -> Sniff:
    """What the first bytes of a file's text say it is: the first format that claims them."""
    for f in FORMATS:
        got = f.sniff(text)
        if got.is_trace:
            return got
    return Sniff(False)


def format_of(text: bytes | bytearray) -> TraceFormat:
    """The format whose sniff claims the text, else the first (whose decoder says why a text is no trace)."""
    head = bytes(text[:HEAD_BYTES]) if len(FORMATS) > 1 else b""
    return next((f for f in FORMATS[1:] if f.sniff(head).is_trace), FORMATS[0])


def decode(text: bytes | bytearray, path: Path) -> list[Part]:
    """The text's Parts, from its format's decoder (raises TraceError with one line)."""
    return format_of(text).decode(text, path)
