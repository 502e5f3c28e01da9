"""Grow a real trace into a large one: repeat its events with shifted times and ids.

    python -m tools.grow traces/gpt-eager.json.gz /tmp/big.json --min-mb 250 --min-events 600000

Copy i of every event moves later by i x (the trace's span + 1 ms), and every id
that links events (External id, correlation, Record function id, Ev Idx, flow ids)
moves by i x (the largest id + 1), so the copies link exactly as the original does.
The result has the original's density of events, gaps and causes, only longer:
what a decode loop of a few hundred steps looks like. Written atomically.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from tracetriage.analyzers.loading.atomic import write_bytes_atomic
from tracetriage.analyzers.loading.read import read_bytes

_ID_ARGS = ("External id", "correlation", "Record function id", "Ev Idx", "Python id", "Python parent id")


def _max_ids(events: list[dict]) -> int:
    m = 0
    for e in events:
        a = e.get("args")
        if isinstance(a, dict):
            for k in _ID_ARGS:
                v = a.get(k)
                if isinstance(v, int) and v > m:
                    m = v
        v = e.get("id")
        if isinstance(v, int) and v > m:
            m = v
    return m


def grow(doc: dict, copies: int) -> dict:
    events = doc["traceEvents"]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + (e.get("dur") or 0) for e in timed)
    shift_t = (t1 - t0) + 1000.0  # µs
    shift_id = _max_ids(events) + 1
    out = list(events)
    movable = [e for e in timed if e.get("ph") in ("X", "f", "s", "t", "i") and e.get("cat") != "Trace"]
    for i in range(1, copies):
        dt, did = i * shift_t, i * shift_id
        for e in movable:
            c = dict(e)
            c["ts"] = round(e["ts"] + dt, 3)
            if isinstance(c.get("id"), int):
                c["id"] = c["id"] + did
            a = e.get("args")
            if isinstance(a, dict):
                a2 = dict(a)
                for k in _ID_ARGS:
                    v = a2.get(k)
                    if isinstance(v, int) and v >= 0:
                        a2[k] = v + did
                c["args"] = a2
            out.append(c)
    return {**doc, "traceEvents": out}


def read_source(src: str | Path) -> dict:
    """The decoded JSON document of a trace file (.json or .json.gz)."""
    return msgspec.json.decode(read_bytes(Path(src)))


def write_grown(doc: dict, src: str | Path, dst: str | Path, copies: int) -> dict:
    """`doc` grown `copies` times, written to dst (gzipped when dst ends in .gz); what was written."""
    big = grow(doc, copies)
    data = msgspec.json.encode(big)
    json_mb = round(len(data) / 1e6, 1)
    if str(dst).endswith(".gz"):
        from isal import igzip  # the same gzip format as zlib's, several times faster to write

        data = igzip.compress(data, compresslevel=1)
    write_bytes_atomic(dst, data)
    return {"source": str(src), "copies": copies, "events": len(big["traceEvents"]), "json_mb": json_mb,
            "file_mb": round(len(data) / 1e6, 1)}


def grow_file(src: str | Path, dst: str | Path, *, min_mb: float = 250, min_events: int = 600_000,
              copies: int | None = None) -> dict:
    raw = read_bytes(Path(src))
    doc = msgspec.json.decode(raw)
    n = len(doc["traceEvents"])
    if copies is None:
        copies = max(1, -(-min_events // n), int(-(-min_mb * 1e6 // len(raw))))
    return write_grown(doc, src, dst, copies)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.grow")
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--min-mb", type=float, default=250)
    ap.add_argument("--min-events", type=int, default=600_000)
    ap.add_argument("--copies", type=int)
    a = ap.parse_args(argv)
    print(grow_file(a.src, a.dst, min_mb=a.min_mb, min_events=a.min_events, copies=a.copies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
