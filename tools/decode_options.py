"""What each way of decoding a trace's events costs, side by side in one process (the decoder's options).

    python -m tools.decode_options                  # the benchmark's x5 trace (grown from traces/gpt-eager.json.gz)
    python -m tools.decode_options TRACE --repeats 3

Today's decoder (tracetriage.analyzers.loading.decode) makes a Python object per event and per value, then reads
them into numpy columns. A decoder that writes columns with no Python object per event could only be a C one;
this measures, on one trace's text (gunzipped once, before any timing), the one such decoder installed (pyarrow's
JSON reader, with an explicit schema of the fields the loader uses) against today's two steps, and the floor a
C scanner at msgspec's speed would meet (a parse that makes no object: field-less structs). Each option runs once
per round, the rounds interleaved, and the median of each is printed with the load average beside it: on a
shared machine compare only within one run.

pyarrow reads newline-delimited objects only, so the events' list is turned into lines first (its cost is
printed too), and its typed columns refuse a value of another type: a trace whose profiler spans carry string
pids ("Spans", "Traces") or tids fails as it is; those events are then taken out and the rest measured, so that
the figure is the reader's speed, not its refusal. Pretty-printed events (Kineto writes one per several lines)
need ParseOptions(newlines_in_values=True), set when the text has them.
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from tracetriage.analyzers.loading import decode
from tracetriage.analyzers.loading.read import read_bytes

# The args the loader reads as numbers (tracetriage.analyzers.loading.decode._Args, less the raw shape texts, which
# pyarrow cannot give back as text: "Input Dims" nests unevenly and is kept as the JSON the profiler wrote)
ARG_INTS = ("External id", "external id", "correlation", "device", "stream", "bytes", "rank", "graph node id",
            "In msg nelems", "Out msg nelems", "Group size", "Sequence number", "Python id")
_SEPARATOR = re.compile(rb"\}\s*,\s*\{")
_STRING_ID = re.compile(rb'"[pt]id"\s*:\s*"')


class _Skipped(msgspec.Struct, gc=False):
    """An event read and thrown away: every key skipped, no value made."""


class _SkippedFile(msgspec.Struct, gc=False):
    traceEvents: list[_Skipped] = []


class _RawList(msgspec.Struct):
    traceEvents: msgspec.Raw = msgspec.Raw(b"[]")


def pyarrow_schema():
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

    args = pa.struct([(k, pa.int64()) for k in ARG_INTS] + [("dtype", pa.string())])
    return pa.schema([("ph", pa.string()), ("cat", pa.string()), ("name", pa.string()), ("pid", pa.int64()),
                      ("tid", pa.int64()), ("ts", pa.float64()), ("dur", pa.float64()), ("args", args)])


def events_text(text: bytes | bytearray) -> bytes:
    """The text inside the traceEvents list's brackets."""
    return bytes(msgspec.json.decode(text, type=_RawList).traceEvents).strip()[1:-1]


def as_lines(body: bytes) -> bytes:
    """The events one per line (what pyarrow reads): the separator between two events replaced, with
    bytes.replace where the events are written without spaces (`},{`), else a regular expression."""
    if b"},{" in body[:1 << 16]:
        return body.replace(b"},{", b"}\n{")
    return _SEPARATOR.sub(b"}\n{", body)


def without_string_ids(lines: bytes) -> bytes:
    """The events (one per line, as as_lines makes them) less those whose pid or tid is a string."""
    inner = lines.strip()[1:-1].split(b"}\n{")
    return b"{" + b"}\n{".join(e for e in inner if not _STRING_ID.search(e)) + b"}"


def pyarrow_read(lines: bytes, threads: bool, newlines_in_values: bool):
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    import pyarrow.json as pj  # type: ignore[import-untyped,unused-ignore]

    return pj.read_json(pa.BufferReader(lines), read_options=pj.ReadOptions(use_threads=threads),
                        parse_options=pj.ParseOptions(explicit_schema=pyarrow_schema(),
                                                      unexpected_field_behavior="ignore",
                                                      newlines_in_values=newlines_in_values))


def _columns(doc) -> decode.Part:
    return decode._part_from_doc(decode._file_of(doc), strict=True)


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def measure(path: Path, repeats: int) -> dict:
    """{option: {"wall_s", "cpu_s"}} (medians), and what pyarrow said of the trace as it is."""
    text = read_bytes(path)
    body = events_text(text)
    lines = as_lines(body)
    events = lines.count(b"}\n{") + 1
    pretty = b"\n" in lines[:lines.find(b"}\n{")] if b"}\n{" in lines else False
    as_is = None
    try:
        pyarrow_read(lines, False, pretty)
    except Exception as e:    # (pyarrow.lib.ArrowInvalid: the error is the finding)
        as_is = str(e).splitlines()[0]
        lines = without_string_ids(lines)
    strict = msgspec.json.Decoder(decode._STRICT)
    skipped = msgspec.json.Decoder(_SkippedFile)
    options: dict[str, Callable[[], Any] | None] = {
        "msgspec, typed structs (today's decode, one process)": lambda: strict.decode(text),
        "structs -> columns (today's passes)": None,   # (on the structs the line above made)
        "msgspec, field-less structs (parse and skip only: no object per value)": lambda: skipped.decode(text),
        "events' list -> one per line (for pyarrow; the list's text found before)": lambda: as_lines(body),
        "pyarrow.json.read_json, one thread": lambda: pyarrow_read(lines, False, pretty),
        "pyarrow.json.read_json, its threads": lambda: pyarrow_read(lines, True, pretty),
    }
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in options}
    rows = {}
    gc_was_on = gc.isenabled()
    gc.disable()     # (as load() runs the decoder)
    try:
        for _ in range(repeats):
            for label, fn in options.items():
                if fn is None:
                    continue
                wall, cpu, out = _timed(fn)
                runs[label].append((wall, cpu))
                if label.startswith("msgspec, typed"):
                    wall, cpu, part = _timed(partial(_columns, out))
                    runs["structs -> columns (today's passes)"].append((wall, cpu))
                    rows["msgspec"] = len(part.cols["ts"])
                elif label.startswith("pyarrow"):
                    rows["pyarrow"] = out.num_rows
                del out
    finally:
        if gc_was_on:
            gc.enable()
    return {"events": events, "pyarrow_as_is": as_is, "pretty": pretty, "rows": rows,
            "options": {k: {"wall_s": round(statistics.median(w for w, _ in v), 3),
                            "cpu_s": round(statistics.median(c for _, c in v), 3)} for k, v in runs.items()}}


def _load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.decode_options")
    ap.add_argument("trace", nargs="?", help="a trace file (default: the benchmark's x5, grown in a temp dir)")
    ap.add_argument("--copies", type=int, default=5, help="without TRACE: the grown trace's size, in copies")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tt-decode-") as work:
        path = Path(a.trace) if a.trace else _grown(Path(work), a.copies)
        before = _load_average()
        r = measure(path, a.repeats)
    print(f"{path.name}: {r['events']:,} events{' (pretty-printed)' if r['pretty'] else ''}; "
          f"{os.cpu_count()} CPUs, load average {before} before, {_load_average()} after (1, 5, 15 min)")
    if r["pyarrow_as_is"]:
        print(f"pyarrow on the trace as it is: {r['pyarrow_as_is']}; measured without the events of string pids "
              "or tids")
    print("| option | CPU s | wall s |\n|---|---:|---:|")
    for label, o in r["options"].items():
        print(f"| {label} | {o['cpu_s']:.3f} | {o['wall_s']:.3f} |")
    print(f"rows: {r['rows']} (msgspec: complete events kept; pyarrow: every event read)")
    return 0


def _grown(work: Path, copies: int) -> Path:
    from tools.benchmark import SOURCE
    from tools.grow import read_source, write_grown

    path = work / f"gpt-eager-x{copies}.json.gz"
    write_grown(read_source(SOURCE), SOURCE, path, copies)
    return path


if __name__ == "__main__":
    sys.exit(main())
