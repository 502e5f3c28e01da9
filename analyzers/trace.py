"""The trace model: load a Kineto trace into linked columns of integer nanoseconds.

A Kineto trace (torch.profiler's Chrome-trace JSON) is a flat list of events. We
keep the complete ("ph": "X") ones as parallel numpy arrays, sorted by start:

    cat     category code (CPU_OP, RUNTIME, KERNEL, MEMCPY, ...)
    name    index into Trace.names
    start, end   int64 ns. The JSON has µs with three decimals; values near 5e12
                 (torch >= 2.4 on an H200) sit where a float64 is only ~1 ns
                 precise, so we split integer and fractional µs before scaling.
    pid, tid, device, stream, ext ("External id"), corr ("correlation")

and link them: cpu_op <-> launch call by External id, launch call (runtime *or*
driver API: cuBLAS launches through cuLaunchKernelEx) <-> GPU activity by
correlation. Only "Input Dims"/"Input type"/"Concrete Inputs" stay undecoded
(one JSON text per distinct signature) until the roofline asks for one op's shapes.
The JSON itself is read by analyzers.decode.
"""
from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from analyzers.decode import DecodeError, Part, decode, ns_from_us, read_bytes, table_list  # noqa: F401 (re-exported)

# --- categories ---------------------------------------------------------------

OTHER, CPU_OP, USER_ANNOTATION, GPU_USER_ANNOTATION, RUNTIME, DRIVER, KERNEL, MEMCPY, MEMSET, CUDA_SYNC, \
    PYTHON, OVERHEAD = range(12)
CAT_NAMES = ["other", "cpu_op", "user_annotation", "gpu_user_annotation", "cuda_runtime", "cuda_driver",
             "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "python_function", "overhead"]
# Old (torch 1.x) and new spellings, lower-cased.
_CAT_CODES = {
    "cpu_op": CPU_OP, "operator": CPU_OP, "cpu_instant_event": OTHER,
    "user_annotation": USER_ANNOTATION, "gpu_user_annotation": GPU_USER_ANNOTATION,
    "cuda_runtime": RUNTIME, "runtime": RUNTIME, "cuda_driver": DRIVER, "driver": DRIVER,
    "kernel": KERNEL, "gpu_memcpy": MEMCPY, "memcpy": MEMCPY, "gpu_memset": MEMSET, "memset": MEMSET,
    "cuda_sync": CUDA_SYNC, "python_function": PYTHON, "overhead": OVERHEAD,
}
GPU_CATS = (KERNEL, MEMCPY, MEMSET)
HOST_CALL_CATS = (RUNTIME, DRIVER)

NONE = -1  # missing integer field
MAX_TS_US = 4e15       # µs since the epoch ~ year 2096; int64 ns overflow at 9.2e15
MAX_DUR_US = 1e12      # 11.6 days
STREAM_OVERLAP_NS = 2_000  # kernels on one stream may overlap by < 1 µs (programmatic dependent launch)


# The file is not a usable trace; the message is one line for the user.
TraceError = DecodeError


# --- the model ------------------------------------------------------------------

@dataclass
class Events:
    """Columns of complete events, one row per event, sorted by (start, -end)."""
    cat: np.ndarray      # int8
    name: np.ndarray     # int32 index into Trace.names
    start: np.ndarray    # int64 ns
    end: np.ndarray      # int64 ns
    pid: np.ndarray      # int64 (string pids are mapped to negative ids)
    tid: np.ndarray      # int64
    device: np.ndarray   # int32, NONE if absent
    stream: np.ndarray   # int64, NONE if absent
    ext: np.ndarray      # int64 External id, NONE if absent
    corr: np.ndarray     # int64 correlation, NONE if absent
    nbytes: np.ndarray   # int64 bytes of a memcpy/memset, NONE if absent
    shape: np.ndarray    # int32 index into Trace.shapes_raw (cpu_ops), NONE otherwise

    def __len__(self) -> int:
        return len(self.start)

    def take(self, idx) -> "Events":
        return Events(**{k: v[idx] for k, v in self.__dict__.items()})

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start


_EVENT_COLUMNS = ("cat", "name", "start", "end", "pid", "tid", "device", "stream", "ext", "corr", "nbytes", "shape")


@dataclass
class Trace:
    path: str
    names: list[str]
    ev: Events
    device_names: dict[int, str]
    rank: int | None
    base_time_ns: int | None
    events_in_file: int
    shapes_raw: list            # distinct (Input Dims, Input type, Concrete Inputs) JSON texts
    caveats: list[str] = field(default_factory=list)

    # Links (filled by link()): index arrays into ev, NONE where there is no partner.
    launch_of: np.ndarray | None = None   # for each row: the launch call of a GPU activity
    op_of: np.ndarray | None = None       # for each row: the cpu_op a launch call belongs to

    def idx(self, *cats: int) -> np.ndarray:
        return np.flatnonzero(np.isin(self.ev.cat, cats))

    def name_of(self, row: int) -> str:
        return self.names[self.ev.name[row]]

    @property
    def devices(self) -> list[int]:
        gpu = np.isin(self.ev.cat, GPU_CATS)
        return sorted(int(d) for d in np.unique(self.ev.device[gpu]) if d != NONE)

    def device_name(self, device: int | None = None) -> str | None:
        if device is None:
            devs = self.devices
            device = devs[0] if devs else None
        if device is None:
            return None
        return self.device_names.get(device) or (next(iter(self.device_names.values()), None))

    def shapes(self, row: int) -> tuple[list | None, list | None, list | None]:
        """Input Dims, Input type and Concrete Inputs of a cpu_op row, decoded on demand."""
        sid = self.ev.shape[row]
        if sid == NONE:
            return None, None, None
        return tuple(_decode_raw(r) for r in self.shapes_raw[sid])  # type: ignore[return-value]


def _decode_raw(raw) -> Any:
    if raw is None or len(raw) == 0:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None


# --- reading ----------------------------------------------------------------------

def load(path: str | os.PathLike, *, use_cache: bool = True, progress=None) -> Trace:
    """Load and link one trace file. Raises TraceError with a one-line message.

    A second load of an unchanged file comes from the columnar cache (analyzers.cache).
    """
    path = Path(path)
    if not path.exists():
        raise TraceError(f"no such file: {path}")
    if path.is_dir():
        raise TraceError(f"{path} is a directory; pass one trace file (`tracetriage report DIR` reads ranks)")
    if not path.is_file():  # a FIFO would block the read forever, a device never end it
        raise TraceError(f"{path} is not a regular file; pass a trace file (.json or .json.gz)")
    if use_cache:
        from analyzers import cache

        hit = cache.get(path)
        if hit is not None:
            return hit
    gc_was_on = gc.isenabled()
    gc.disable()  # millions of fresh objects, none of them in cycles: the cyclic GC only costs time
    try:
        trace = _parse(path, progress or (lambda stage: None))
    finally:
        if gc_was_on:
            gc.enable()
    if use_cache:
        from analyzers import cache

        cache.put_in_background(path, trace)
    return trace


def _parse(path: Path, progress) -> Trace:
    progress("read")
    data = read_bytes(path)
    progress("decode")
    parts = decode(data, path)
    del data
    if not parts[0].has_trace_events:
        raise TraceError(f"{path}: JSON, but not a trace: no 'traceEvents' list; pass the .json or .json.gz "
                         "that torch.profiler exports")
    if sum(p.events_in_file for p in parts) == 0:
        raise TraceError(f"{path}: the trace has no events ('traceEvents' is empty): the profiler recorded "
                         "nothing; check that the workload ran inside the profiler's `with` block, then capture again")
    progress("link")
    trace = _assemble(parts, path)
    if len(trace.ev) == 0:
        raise TraceError(f"{path}: none of its {_n(trace.events_in_file, 'event')} is a complete event "
                         "(\"ph\": \"X\") with a usable ts and dur: nothing to analyse; capture the trace again")
    link(trace)
    return trace


def _assemble(parts: list[Part], path: Path) -> Trace:
    """Merge the decoded parts (re-numbering their local name/shape tables), convert times, sort."""
    names: dict[str, int] = {}
    shapes: dict[tuple, int] = {}
    cols: dict[str, list] = {}
    for part in parts:
        name_map = np.array([names.setdefault(n, len(names)) for n in part.names] or [0], np.int32)
        shape_map = np.array([shapes.setdefault(k, len(shapes)) for k in part.shapes] or [0], np.int32)
        cat_lut = np.array([_CAT_CODES.get(str(c).lower(), OTHER) for c in part.cols["cat_names"]] or [0], np.int8)
        c = part.cols
        sid = c["shape"]
        local = {"name": name_map[c["name"]] if len(c["name"]) else c["name"],
                 "cat": cat_lut[c["cat_raw"]] if len(c["cat_raw"]) else c["cat_raw"].astype(np.int8),
                 "shape": np.where(sid >= 0, shape_map[np.maximum(sid, 0)], NONE).astype(np.int32)}
        for k in ("ts", "dur", "pid", "tid", "ext", "corr", "device", "stream", "nbytes"):
            local[k] = c[k]
        for k, v in local.items():
            cols.setdefault(k, []).append(v)
    col = {k: np.concatenate(v) for k, v in cols.items()}
    # Times that cannot be right: negative, not finite, or beyond what int64 ns hold (ts past year
    # 2096 in µs since the epoch, a duration over 11 days). Such rows are dropped and counted.
    ts, dur = col["ts"], col["dur"]
    bad = ~((ts >= 0) & (ts <= MAX_TS_US) & (dur >= 0) & (dur <= MAX_DUR_US))  # (NaN compares False)
    n_bad = int(bad.sum())
    if n_bad:
        col = {k: v[~bad] for k, v in col.items()}
    cat, pid, tid = col["cat"], col["pid"], col["tid"]
    device, stream = col["device"].astype(np.int32), col["stream"]
    start = ns_from_us(col["ts"])
    end = start + np.rint(col["dur"] * 1000.0).astype(np.int64)
    # GPU activities without args.device/stream (old traces): pid is the device, tid the stream.
    gpu = np.isin(cat, GPU_CATS)
    fix = gpu & (device == NONE) & (pid >= 0)
    device[fix] = pid[fix]
    fix = gpu & (stream == NONE) & (tid >= 0)
    stream[fix] = tid[fix]
    order = np.lexsort((-end, start))  # by start, longest first on ties (parents before children)
    ev = Events(cat=cat[order], name=col["name"][order], start=start[order], end=end[order], pid=pid[order],
                tid=tid[order], device=device[order], stream=stream[order], ext=col["ext"][order],
                corr=col["corr"][order], nbytes=col["nbytes"][order], shape=col["shape"][order])
    caveats = []
    dropped = sum(p.dropped for p in parts) + n_bad
    if dropped:
        caveats.append(f"{_n(dropped, 'complete event')} had a missing, negative, non-numeric or out-of-range "
                       f"ts/dur and {'was' if dropped == 1 else 'were'} dropped")
    ev, dups = _drop_duplicates(ev)
    if dups:
        caveats.append(f"{_n(dups, 'event')} repeated an earlier one exactly (same category, name, times, thread "
                       "and ids) and counted once")
    head = parts[0]
    device_names: dict[int, str] = {}
    for p in reversed(parts):  # (keys after traceEvents land in the second part of a split decode)
        device_names.update(p.device_names)
    rank = next((p.rank for p in parts if p.rank is not None), None)
    base = next((p.base_time_ns for p in parts if p.base_time_ns is not None), None)
    return Trace(path=str(path), names=table_list(names), ev=ev, device_names=device_names, rank=rank,
                 base_time_ns=base, events_in_file=head.events_in_file, shapes_raw=table_list(shapes),
                 caveats=caveats)


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def _drop_duplicates(ev: Events) -> tuple[Events, int]:
    """The same event written twice (a merged or re-exported trace) would count its time twice.

    Exact duplicates agree on every column; sorted by (start, -end) they share start and end, so
    only rows in runs of equal (start, end) are compared, on all columns (cheap: such runs are rare).
    """
    n = len(ev)
    if n < 2:
        return ev, 0
    tie = (ev.start[1:] == ev.start[:-1]) & (ev.end[1:] == ev.end[:-1])
    if not tie.any():
        return ev, 0
    cand = np.flatnonzero(np.concatenate(([False], tie)) | np.concatenate((tie, [False])))
    cols = [getattr(ev, k)[cand].astype(np.int64) for k in reversed(_EVENT_COLUMNS)]
    order = np.lexsort(cols)   # identical rows become adjacent; stable, so the first of each is kept
    keys = np.stack([c[order] for c in cols])
    same = (keys[:, 1:] == keys[:, :-1]).all(axis=0)
    if not same.any():
        return ev, 0
    drop = np.zeros(n, dtype=bool)
    drop[cand[order[1:][same]]] = True
    return ev.take(np.flatnonzero(~drop)), int(drop.sum())


def _match(keys_from: np.ndarray, keys_to: np.ndarray, to_rows: np.ndarray) -> np.ndarray:
    """For each key in keys_from, the row in to_rows whose key matches (NONE if none)."""
    out = np.full(len(keys_from), NONE, dtype=np.int64)
    if len(keys_to) == 0:
        return out
    order = np.argsort(keys_to, kind="stable")
    sk = keys_to[order]
    pos = np.searchsorted(sk, keys_from)
    pos_c = np.minimum(pos, len(sk) - 1)
    hit = (pos < len(sk)) & (sk[pos_c] == keys_from) & (keys_from != NONE)
    out[hit] = to_rows[order[pos_c[hit]]]
    return out


def link(trace: Trace) -> None:
    ev = trace.ev
    n = len(ev)
    trace.launch_of = np.full(n, NONE, dtype=np.int64)
    trace.op_of = np.full(n, NONE, dtype=np.int64)
    calls = np.flatnonzero(np.isin(ev.cat, HOST_CALL_CATS) & (ev.corr != NONE))
    gpu = np.flatnonzero(np.isin(ev.cat, GPU_CATS))
    trace.launch_of[gpu] = _match(ev.corr[gpu], ev.corr[calls], calls)
    ops = np.flatnonzero((ev.cat == CPU_OP) & (ev.ext != NONE))
    allcalls = np.flatnonzero(np.isin(ev.cat, HOST_CALL_CATS))
    trace.op_of[allcalls] = _match(ev.ext[allcalls], ev.ext[ops], ops)
    if len(gpu) == 0:
        trace.caveats.append("no GPU activity in the trace (no kernels, copies or memsets: a CPU-only capture, or "
                             "CUDA activity was not recorded): there is no GPU span, idle time or regime to report")
        return
    unlinked = int(np.sum(trace.launch_of[gpu] == NONE))
    if unlinked:
        trace.caveats.append(f"{unlinked:,} of {_n(len(gpu), 'GPU activity', 'GPU activities')} have no launch call in "
                             "the trace (missing correlation, or launched before profiling started): the idle before "
                             "them counts as other")
    dangling = int(np.sum((ev.ext[allcalls] != NONE) & (trace.op_of[allcalls] == NONE)))
    if dangling:
        verb = "carries" if dangling == 1 else "carry"
        trace.caveats.append(f"{_n(dangling, 'launch call')} {verb} an External id that no cpu_op in the trace has: "
                             "their GPU time is listed under the kernel's name, not the op's")
    overlaps = _stream_overlaps(ev, gpu)
    if overlaps:
        verb = "starts" if overlaps == 1 else "start"
        trace.caveats.append(f"{_n(overlaps, 'GPU activity', 'GPU activities')} {verb} more than "
                             f"{STREAM_OVERLAP_NS / 1e3:.0f} µs before the previous one on their stream ends, though a "
                             "stream runs in order (a merged or edited trace?): busy and idle time count the "
                             "overlapped time once")


def _stream_overlaps(ev: Events, gpu: np.ndarray) -> int:
    """GPU activities that start well before the previous activity on their (device, stream) ends."""
    order = np.lexsort((ev.start[gpu], ev.stream[gpu], ev.device[gpu]))
    rows = gpu[order]
    dev, stream, start, end = ev.device[rows], ev.stream[rows], ev.start[rows], ev.end[rows]
    same = (dev[1:] == dev[:-1]) & (stream[1:] == stream[:-1])
    return int(np.sum(same & (end[:-1] - start[1:] > STREAM_OVERLAP_NS)))


def find_traces(directory: Path) -> list[Path]:
    files = sorted(p for p in directory.iterdir()
                   if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz"))
                   and not p.name.endswith(".meta.json") and p.name != "manifest.json")
    return files
