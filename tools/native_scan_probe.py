"""What the native scan costs against msgspec's decoder, on one trace: the decoder's options side by side.

    python -m tools.native_scan_probe                   # the benchmark's x5 trace (grown from traces/gpt-eager)
    python -m tools.native_scan_probe TRACE --repeats 3

The scan is the product's (tracetriage.analyzers.loading.native, over the _scan extension the install builds;
without it the probe says so and stops). The trace is gunzipped once, before any timing, then each option runs on
the same text, interleaved, `--repeats` times: the scan in one thread and in two (the list cut in halves at an
event boundary, each half in a thread: the scan releases the GIL), and msgspec's decoder in one process and as
the loader runs it when the scan is off (half in a forked child). Each option's Parts are assembled and compared
with msgspec's, column by column. The figures are medians of CPU seconds of this process (threads included; a
forked child's not) and of wall seconds, with the load average beside them: on a shared machine compare only
within one run.
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tracetriage.analyzers.loading import decode, native
from tracetriage.analyzers.loading.assemble import assemble
from tracetriage.analyzers.loading.read import read_bytes


class ProbeError(Exception):
    pass


def _native(data: bytearray, path: Path, threads: int) -> list[decode.Part]:
    was = decode.PARALLEL_MIN_BYTES
    decode.PARALLEL_MIN_BYTES = was if threads == 2 else len(data) + 1     # (one thread: never past it)
    try:
        parts = native.scan_parts(data, path)
    finally:
        decode.PARALLEL_MIN_BYTES = was
    if parts is None:
        raise ProbeError("the scan does not handle this trace (see analyzers/loading/eventscan.c's head): the loader "
                         "reads it with msgspec")
    return parts


def same_events(ours: list[decode.Part], theirs: list[decode.Part], path: Path) -> bool:
    """Do the two decodes assemble into the same table of events, names and shapes?"""
    a, b = assemble(ours, path), assemble(theirs, path)
    return all(np.array_equal(getattr(a.ev, f.name), getattr(b.ev, f.name)) for f in dataclasses.fields(a.ev)) and (
        a.names, a.shapes_raw, a.events_in_file, a.device_names) == (b.names, b.shapes_raw, b.events_in_file,
                                                                      b.device_names)


def measure(path: Path, repeats: int) -> dict:
    """CPU and wall seconds (medians) of each option, and whether each reads what msgspec's decoder reads."""
    if not native.enabled():
        raise ProbeError("the native scan is not built (no C compiler at install) or TRACETRIAGE_NO_NATIVE=1 is set")
    text = read_bytes(path)
    options = {"native scan, one thread": lambda: _native(text, path, 1),
               "native scan, two threads": lambda: _native(text, path, 2),
               "msgspec decode, one process": lambda: [decode._decode_whole(text, path)],
               "msgspec decode as the loader runs it without the scan (half in a forked child)":
                   lambda: decode._decode_split(text, path) or [decode._decode_whole(text, path)]}
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in options}
    out: dict[str, Any] = {}
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for label, fn in options.items():
                out[label] = None       # (the last run's Parts freed before the next run)
                w, c = time.perf_counter(), time.process_time()
                out[label] = fn()
                times[label].append((time.perf_counter() - w, time.process_time() - c))
    finally:
        if gc_was_on:
            gc.enable()
    reference = out["msgspec decode, one process"]
    return {"events": reference[0].events_in_file, "rows": len(reference[0].cols["ts"]),
            "same": {k: same_events(v, reference, path) for k, v in out.items()},
            "wall_s": {k: round(statistics.median(w for w, _ in v), 3) for k, v in times.items()},
            "cpu_s": {k: round(statistics.median(c for _, c in v), 3) for k, v in times.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.native_scan_probe")
    ap.add_argument("trace", nargs="?", help="a trace file (default: the benchmark's x5, grown in a temp dir)")
    ap.add_argument("--copies", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    before = _load_average()
    try:
        with tempfile.TemporaryDirectory(prefix="tt-scan-trace-") as work:
            path = Path(a.trace) if a.trace else _grown(Path(work), a.copies)
            r = measure(path, a.repeats)
    except ProbeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{path.name}: {r['events']:,} events, {r['rows']:,} complete; {os.cpu_count()} CPUs, load average "
          f"{before} before, {_load_average()} after (1, 5, 15 min)")
    for k, v in r["cpu_s"].items():
        print(f"  {k}: {v:.3f} s CPU of this process, {r['wall_s'][k]:.3f} s wall (medians of {a.repeats})"
              + ("" if r["same"][k] else "  -- NOT the events msgspec's decoder reads"))
    return 0


def _load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _grown(work: Path, copies: int) -> Path:
    from tools.benchmark import SOURCE as GPT
    from tools.grow import read_source, write_grown

    path = work / f"gpt-eager-x{copies}.json.gz"
    write_grown(read_source(GPT), GPT, path, copies)
    return path


if __name__ == "__main__":
    sys.exit(main())
