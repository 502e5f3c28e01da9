"""What a native decoder would cost: tools/native_scan/scan.c against today's decoder, on one trace.

    python -m tools.native_scan_probe                   # the benchmark's x5 trace (grown from traces/gpt-eager)
    python -m tools.native_scan_probe TRACE --repeats 3

A probe, not the product: it compiles scan.c with the system's C compiler (cc) into a temporary directory, loads
it with ctypes, and runs it over the trace's text (gunzipped once, before any timing). The scan writes numpy
columns and interns names, categories and shapes as spans of the text, with no Python object per event; the
columns are then renumbered as today's decoder numbers them (by first appearance among the complete events,
shapes among the ops), with numpy. It runs in one thread, and in two (the list cut in halves at an event boundary,
each scanned in a thread of its own: ctypes releases the GIL). Today's decoder (tracetriage.analyzers.loading.decode)
runs on the same text, in one process and as the loader runs it (half in a forked child), and every column the
scan covers is compared with its: the probe says which are identical. The figures are medians of CPU seconds of
this process (not the decoder's child) and of wall seconds, with the load average beside them: on a shared
machine compare only within one run.

Not covered by the scan (today's decoder reads them): graph node ids, collectives' message sizes and groups,
python ids, merged ranks, names with escapes; a trace it does not handle is said so, as the product would hand
it to today's decoder.
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from tracetriage.analyzers.loading import decode
from tracetriage.analyzers.loading.read import read_bytes

SOURCE = Path(__file__).resolve().parent / "native_scan" / "scan.c"
# the integer columns, in scan.c's order (C_PID ...)
INT_COLS = ("pid", "tid", "ext", "ext_old", "corr", "device", "stream", "nbytes", "seq")
TAB_CAP = 1 << 20          # distinct names, categories or shapes a trace may have (a power of two; half usable)
_LIST = re.compile(rb'"traceEvents"\s*:\s*\[')
_OPS = ("cpu_op", "operator")


class ProbeError(Exception):
    pass


def compile_scan(work: Path) -> ctypes.CDLL:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise ProbeError("no C compiler (cc) on PATH: the probe compiles tools/native_scan/scan.c")
    lib = work / "scan.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(SOURCE)], check=True)
    dll = ctypes.CDLL(str(lib))
    dll.scan.restype = ctypes.c_int64
    return dll


def scan(dll: ctypes.CDLL, text: bytearray, threads: int = 1) -> dict:
    """The trace's events as columns, by the C scan (the list cut into `threads` parts at event boundaries, each
    scanned in a thread of its own), numbered as today's decoder numbers them."""
    m = _LIST.search(text)
    first = re.match(rb"\s*\[", text)        # (the JSON Array Format: a bare list of events)
    if m is None and first is None:
        raise ProbeError("no traceEvents list (nor a bare list of events): not a trace")
    start = m.end() - 1 if m else first.end() - 1 if first else 0
    bounds = [start]
    for k in range(1, threads):
        cut = decode._BOUNDARY.search(text, max(bounds[-1], len(text) * k // threads))
        if cut is None:
            break
        bounds.append(cut.start() + cut.group(0).rindex(b"{"))    # (the part before ends just after its '}')
    ends = [b - 1 for b in bounds[1:]] + [len(text)]
    if len(bounds) == 1:
        parts = [_scan_part(dll, text, start, len(text))]
    else:
        with ThreadPoolExecutor(len(bounds)) as pool:       # (ctypes releases the GIL for the scan)
            parts = list(pool.map(lambda be: _scan_part(dll, text, *be), zip(bounds, ends)))
    tables: list[dict] = [{}, {}, {}]          # names, categories, shapes: span texts -> id across the parts
    for part in parts:
        for t, ids in ((0, "name"), (1, "cat"), (2, "shape")):
            remap = np.array([tables[t].setdefault(x, len(tables[t])) for x in part["tables"][t]] or [0], np.int64)
            part[ids] = remap[part[ids]]
    col = {k: np.concatenate([p[k] for p in parts], axis=parts[0][k].ndim - 1) for k in parts[0] if k != "tables"}
    keep = np.flatnonzero(col["is_x"].astype(bool) & (col["i64"][0] != np.iinfo(np.int64).min))
    cols = {"ts": col["f64"][0, keep], "dur": col["f64"][1, keep],
            **{c: col["i64"][j, keep] for j, c in enumerate(INT_COLS)}}
    old = cols["ext"] == decode.NONE     # torch 1.x's "external id" where "External id" is absent, as today
    cols["ext"][old] = cols.pop("ext_old")[old]
    spans = [list(t) for t in tables]
    cols["name"], name_ids = _by_first_appearance(col["name"][keep])
    cols["cat_raw"], cat_ids = _by_first_appearance(col["cat"][keep])
    names = [spans[0][i][0].decode() for i in name_ids.tolist()]
    cats = [spans[1][i][0].decode() for i in cat_ids.tolist()]
    op = np.isin(cols["cat_raw"], [i for i, c in enumerate(cats) if c.lower() in _OPS])
    cols["shape"] = np.full(len(keep), decode.NONE, np.int32)
    cols["shape"][op], shape_ids = _by_first_appearance(col["shape"][keep][op])
    cols["seq"][~op] = decode.NONE
    return {"events": len(col["is_x"]), "cols": cols, "names": names, "cats": cats,
            "shapes": [spans[2][i] for i in shape_ids.tolist()]}


def _scan_part(dll: ctypes.CDLL, text: bytearray, start: int, end: int) -> dict:
    """One part of the list scanned: its columns (all events) and its tables' span texts, ids local to it."""
    cap = (end - start) // 24 + 16       # (an event is more than 24 bytes of JSON)
    is_x = np.empty(cap, np.uint8)
    f64 = np.empty((2, cap))
    i64 = np.empty((len(INT_COLS), cap), np.int64)
    name, cat, shape = (np.empty(cap, np.int32) for _ in range(3))
    tab_off, tab_len = np.empty(9 * TAB_CAP, np.int64), np.empty(9 * TAB_CAP, np.int64)
    tab_slot, tab_n = np.full(3 * TAB_CAP, -1, np.int32), np.zeros(3, np.int64)
    ptr = (lambda a: a.ctypes.data_as(ctypes.c_void_p))
    n = dll.scan((ctypes.c_char * len(text)).from_buffer(text), ctypes.c_int64(end), ctypes.c_int64(start),
                 ctypes.c_int64(cap), *map(ptr, (is_x, f64, i64, name, cat, shape, tab_off, tab_len, tab_slot)),
                 ctypes.c_int64(TAB_CAP), ptr(tab_n))
    if n < 0:
        raise ProbeError("the scan does not handle this trace (an escaped name, a number it does not read, a "
                         "string tid on a complete event): the product would read it with today's decoder")

    def spans(table: int, parts: int = 1) -> list[tuple[bytes, ...]]:
        off = tab_off[3 * table * TAB_CAP:].reshape(-1, parts)[:tab_n[table]].tolist()
        ln = tab_len[3 * table * TAB_CAP:].reshape(-1, parts)[:tab_n[table]].tolist()
        return [tuple(bytes(text[o:o + k]) for o, k in zip(os_, ls)) for os_, ls in zip(off, ln)]

    return {"is_x": is_x[:n], "f64": f64[:, :n], "i64": i64[:, :n], "name": name[:n], "cat": cat[:n],
            "shape": shape[:n], "tables": (spans(0), spans(1), spans(2, 3))}


def _by_first_appearance(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ids renumbered 0.. by first appearance, and the old id of each new one."""
    rows = np.arange(len(ids))
    first = np.full(int(ids.max()) + 1 if len(ids) else 0, len(ids))
    first[ids[::-1]] = rows[::-1]          # (the last write wins: each id's first row; no sort of the rows)
    old = np.argsort(first, kind="stable")[:int(np.sum(first < len(ids)))]
    new = np.empty(len(first), np.int64)
    new[old] = np.arange(len(old))
    return new[ids], old


def compare(ours: dict, part: decode.Part) -> dict[str, bool]:
    """Column by column: is the scan's the same as today's decoder's?"""
    c = part.cols
    same = {k: bool(np.array_equal(ours["cols"][k], c[k], equal_nan=k in ("ts", "dur")))
            for k in ("ts", "dur", "pid", "tid", "ext", "corr", "device", "stream", "seq", "name", "cat_raw",
                      "shape")}
    plain = c["group"] == decode.NONE     # (a collective's nbytes is its message's size: not read by the scan)
    same["nbytes"] = bool(np.array_equal(ours["cols"]["nbytes"][plain], c["nbytes"][plain]))
    same["names table"] = ours["names"] == part.names
    same["categories table"] = ours["cats"] == list(c["cat_names"])
    same["shapes table"] = ours["shapes"] == [tuple(bytes(x) for x in s) for s in part.shapes]
    return same


def measure(path: Path, repeats: int) -> dict:
    """CPU and wall seconds (medians) of the scan in one thread and in two, and of today's decoder in one process
    and as the loader runs it (split, half in a forked child); and whether the scan's columns are today's."""
    text = read_bytes(path)
    with tempfile.TemporaryDirectory(prefix="tt-scan-") as work:
        dll = compile_scan(Path(work))
        options = {"native scan, one thread (+ numpy renumbering)": lambda: scan(dll, text),
                   "native scan, two threads (+ numpy renumbering)": lambda: scan(dll, text, threads=2),
                   "today's decode, one process": lambda: decode._decode_whole(text, path),
                   "today's decode as the loader runs it (half in a forked child)": lambda: decode.decode(text, path)}
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in options}
        out: dict[str, Any] = {}
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            for _ in range(repeats):
                for label, fn in options.items():
                    w, c = time.perf_counter(), time.process_time()
                    out[label] = fn()
                    times[label].append((time.perf_counter() - w, time.process_time() - c))
        finally:
            if gc_was_on:
                gc.enable()
    ours, part = out["native scan, one thread (+ numpy renumbering)"], out["today's decode, one process"]
    same = compare(ours, part)
    two = compare(out["native scan, two threads (+ numpy renumbering)"], part)
    return {"events": ours["events"], "rows": len(ours["cols"]["ts"]), "same": same,
            "same_in_two_threads": two == same,
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
    except (ProbeError, subprocess.CalledProcessError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{path.name}: {r['events']:,} events, {r['rows']:,} complete; {os.cpu_count()} CPUs, load average "
          f"{before} before, {_load_average()} after (1, 5, 15 min)")
    for k, v in r["cpu_s"].items():
        print(f"  {k}: {v:.3f} s CPU of this process, {r['wall_s'][k]:.3f} s wall (medians of {a.repeats})")
    if not r["same_in_two_threads"]:
        print("  the scan in two threads reads other columns than in one")
    differ = [k for k, same in r["same"].items() if not same]
    print("  columns and tables identical to today's decoder's: " + (
        "all " + str(len(r["same"])) if not differ else f"all but {', '.join(differ)}"))
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
