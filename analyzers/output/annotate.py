"""Write a trace back with one more track: its idle gaps, named by cause, for Perfetto UI.

    tracetriage annotate traces/smell-sync-item.json.gz -o /tmp/annotated.json.gz

The original events are kept as they were (re-encoded, same values); the added
track is a process of its own ("tracetriage: idle by cause", one thread per GPU)
holding one complete ("X") slice per gap, named by its cause, with the gap's
evidence in args. Times are the trace's own µs, so the track lines up with the
GPU streams in ui.perfetto.dev and chrome://tracing.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import numpy as np

from tracetriage.analyzers.loading.atomic import write_bytes_atomic
from tracetriage.analyzers.loading.read import read_bytes
from tracetriage.analyzers.model.trace import TraceError
from tracetriage.analyzers.triage import timeline
from tracetriage.analyzers.triage.report import Analysis, analyze_file
from tracetriage.analyzers.voice import common as voice

TRACK_PROCESS = "tracetriage: idle by cause"
SLICE_CAT = "tracetriage_idle"


def _enc_hook(o):
    if isinstance(o, np.generic):
        return o.item()
    raise NotImplementedError(f"not JSON serialisable: {type(o).__name__}")


def _free_pid(events: list) -> int:
    """A pid no event uses: one past the largest integer pid (Kineto uses OS pids and device ids)."""
    pids = [e.get("pid") for e in events if isinstance(e, dict)]
    ints = [p for p in pids if isinstance(p, int) and not isinstance(p, bool)]
    return max(ints, default=0) + 1


def _us(ns: int) -> float:
    """ns -> µs as the JSON writes them (three decimals); float64 holds them to well under 1 ns."""
    return int(ns) / 1000.0


def gap_events(a: Analysis, pid: int) -> list[dict]:
    """Metadata naming the track, then one "X" slice per idle gap."""
    g = timeline.gaps(a)
    out: list[dict] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": TRACK_PROCESS}},
                       {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": -1}}]
    for d in sorted(set(int(x) for x in g.device)):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": d, "args": {"name": f"GPU {d} idle"}})
    for i in range(len(g)):
        d, cause = int(g.device[i]), g.cause[i]
        summary = g.evidence.get(d, {}).get(cause)
        args = {"cause": cause, "device": d, "dur_us": _us(g.end_ns[i] - g.start_ns[i])}
        if g.host_call[i]:
            args["host_call"] = g.host_call[i]
        if g.called_from[i]:
            args["called_from"] = g.called_from[i]
        if g.next_name[i]:
            args["ended_by"] = g.next_name[i]
        if summary is not None:   # the cause's evidence on this device, and its one advice text
            args["cause_gaps"] = summary.gaps
            args["cause_median_gap_us"] = summary.median_gap_us
            args["first_experiment"] = voice.advice(summary.cause, summary)
        out.append({"ph": "X", "cat": SLICE_CAT, "name": cause, "pid": pid, "tid": d, "ts": _us(g.start_ns[i]),
                    "dur": _us(g.end_ns[i] - g.start_ns[i]), "args": args})
    return out


def annotated_json(path: str | Path, a: Analysis | None = None) -> bytes:
    """The trace's JSON with the idle track added (not compressed)."""
    path = Path(path)
    a = a if a is not None else analyze_file(path)
    doc = msgspec.json.decode(bytes(read_bytes(path)))
    if isinstance(doc, list):  # the bare-array form of the Chrome trace format
        doc = {"traceEvents": doc}
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise TraceError(f"{path}: JSON, but not a trace: no 'traceEvents' list")
    events.extend(gap_events(a, _free_pid(events)))
    return msgspec.json.encode(doc, enc_hook=_enc_hook)


def annotated_bytes(path: str | Path, a: Analysis | None = None, compress: bool = True) -> bytes:
    data = annotated_json(path, a)
    return gzip.compress(data, compresslevel=3, mtime=0) if compress else data


def annotate_file(path: str | Path, out: str | Path) -> tuple[Path, int]:
    """Write the annotated trace (gzip when OUT ends in .gz); returns the path and the number of gaps."""
    path, out = Path(path), Path(out)
    if out.resolve() == path.resolve():
        raise TraceError(f"{out} is the input trace; write the annotated copy to another file")
    a = analyze_file(path)
    data = annotated_bytes(path, a, compress=out.name.endswith(".gz"))
    write_bytes_atomic(out, data)
    return out, len(timeline.gaps(a))
