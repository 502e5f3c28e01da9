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
(msgspec.Raw) until the roofline asks for one op's shapes.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

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


class TraceError(ValueError):
    """The file is not a usable trace; the message is one line for the user."""


# --- the JSON schema we decode (everything else is skipped by msgspec) ----------

_RAW_EMPTY = msgspec.Raw(b"")


class _Args(msgspec.Struct):
    ext: int | None = msgspec.field(name="External id", default=None)
    correlation: int | None = None
    device: int | None = None
    stream: int | None = None
    bytes: int | None = None
    dims: msgspec.Raw = msgspec.field(name="Input Dims", default=_RAW_EMPTY)
    types: msgspec.Raw = msgspec.field(name="Input type", default=_RAW_EMPTY)
    concrete: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=_RAW_EMPTY)


class _Event(msgspec.Struct):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float | None = None
    dur: float | None = None
    args: _Args | None = None


class _DeviceProp(msgspec.Struct):
    id: int = 0
    name: str = ""


class _File(msgspec.Struct):
    traceEvents: list[_Event] | None = None
    deviceProperties: list[_DeviceProp] = []
    distributedInfo: dict | None = None
    baseTimeNanoseconds: int | None = None


# Lenient twins: used only when the strict decode fails, to salvage what is usable.
class _LooseEvent(msgspec.Struct):
    ph: Any = ""
    cat: Any = ""
    name: Any = ""
    pid: Any = 0
    tid: Any = 0
    ts: Any = None
    dur: Any = None
    args: Any = None


class _LooseFile(msgspec.Struct):
    traceEvents: list[_LooseEvent] | None = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None


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
    row: np.ndarray      # int64 index into Trace.args_raw

    def __len__(self) -> int:
        return len(self.start)

    def take(self, idx) -> "Events":
        return Events(**{k: v[idx] for k, v in self.__dict__.items()})

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start


@dataclass
class Trace:
    path: str
    names: list[str]
    ev: Events
    device_names: dict[int, str]
    rank: int | None
    base_time_ns: int | None
    events_in_file: int
    args_raw: list              # per row: (dims, types, concrete) msgspec.Raw, cpu_ops only, else None
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
        raw = self.args_raw[self.ev.row[row]]
        if raw is None:
            return None, None, None
        return tuple(_decode_raw(r) for r in raw)  # type: ignore[return-value]


def _decode_raw(raw) -> Any:
    if raw is None or len(raw) == 0:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None


# --- reading ----------------------------------------------------------------------

def read_bytes(path: Path) -> bytes:
    """The JSON text of a .json or .json.gz file (gzip detected by magic, not by name)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        raise TraceError(f"{path} is a directory; pass a trace file or use load_dir") from None
    except OSError as e:
        raise TraceError(f"cannot read {path}: {e.strerror or e}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            from isal import igzip  # ~1.5x faster than zlib for gunzip

            return igzip.decompress(data)
        except ImportError:  # pragma: no cover
            import gzip

            return gzip.decompress(data)
        except Exception as e:  # truncated or corrupt gzip
            raise TraceError(f"{path}: not a readable gzip file ({type(e).__name__}: {e}); "
                             "was the download cut short?") from None
    return data


def _ns(us: np.ndarray) -> np.ndarray:
    """µs (float64, 3 decimals) -> int64 ns, exact even where float64 spacing is ~1 ns."""
    whole = np.floor(us)
    return whole.astype(np.int64) * 1000 + np.rint((us - whole) * 1000.0).astype(np.int64)


def _decode(data: bytes, path: Path) -> tuple[Any, bool]:
    try:
        return msgspec.json.decode(data, type=_File), True
    except msgspec.ValidationError:
        pass
    except msgspec.DecodeError as e:
        hint = " (truncated?)" if "truncated" in str(e).lower() or "end of" in str(e).lower() else ""
        raise TraceError(f"{path}: not valid JSON{hint}: {e}") from None
    try:
        return msgspec.json.decode(data, type=_LooseFile), False
    except msgspec.ValidationError:
        raise TraceError(f"{path}: JSON, but not a trace: expected an object with a 'traceEvents' list") from None
    except msgspec.DecodeError as e:
        raise TraceError(f"{path}: not valid JSON: {e}") from None


def _num(x) -> float:
    if isinstance(x, bool) or x is None:
        return math.nan
    if isinstance(x, (int, float)):
        return float(x)
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _int_or_none(x) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return None


def _sanitize(loose: list) -> tuple[list[_Event], int]:
    """Turn lenient events into strict ones, dropping what cannot be used."""
    out, dropped = [], 0
    for e in loose:
        if not isinstance(e, _LooseEvent) or e.ph != "X":
            continue
        ts, dur = _num(e.ts), _num(e.dur)
        if not (math.isfinite(ts) and math.isfinite(dur)) or dur < 0:
            dropped += 1
            continue
        a = e.args if isinstance(e.args, dict) else {}
        args = _Args(ext=_int_or_none(a.get("External id")), correlation=_int_or_none(a.get("correlation")),
                     device=_int_or_none(a.get("device")), stream=_int_or_none(a.get("stream")),
                     bytes=_int_or_none(a.get("bytes")))
        for key, attr in (("Input Dims", "dims"), ("Input type", "types"), ("Concrete Inputs", "concrete")):
            if key in a:
                setattr(args, attr, msgspec.Raw(msgspec.json.encode(a[key])))
        pid = e.pid if isinstance(e.pid, (int, str)) and not isinstance(e.pid, bool) else 0
        tid = e.tid if isinstance(e.tid, (int, str)) and not isinstance(e.tid, bool) else 0
        out.append(_Event(ph="X", cat=str(e.cat or ""), name=str(e.name or ""), pid=pid, tid=tid,
                          ts=ts, dur=dur, args=args))
    return out, dropped


def load(path: str | os.PathLike) -> Trace:
    """Load and link one trace file. Raises TraceError with a one-line message."""
    path = Path(path)
    if not path.exists():
        raise TraceError(f"no such file: {path}")
    data = read_bytes(path)
    if not data.strip():
        raise TraceError(f"{path}: empty file")
    doc, strict = _decode(data, path)
    del data
    if doc.traceEvents is None:
        raise TraceError(f"{path}: JSON, but not a trace: no 'traceEvents' list")
    caveats: list[str] = []
    events_in_file = len(doc.traceEvents)
    if strict:
        xs = [e for e in doc.traceEvents if e.ph == "X" and e.ts is not None and e.dur is not None]
        bad = sum(1 for e in doc.traceEvents if e.ph == "X") - len(xs)
    else:
        xs, bad = _sanitize(doc.traceEvents)
    if bad:
        caveats.append(f"{bad} complete events had a missing, negative or non-numeric ts/dur and were dropped")
    device_names = {}
    props = doc.deviceProperties if strict else (doc.deviceProperties if isinstance(doc.deviceProperties, list) else [])
    for p in props or []:
        if isinstance(p, _DeviceProp):
            device_names[p.id] = p.name
        elif isinstance(p, dict) and isinstance(p.get("id"), int):
            device_names[p["id"]] = str(p.get("name", ""))
    rank = None
    info = doc.distributedInfo
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        rank = info["rank"]
    base = doc.baseTimeNanoseconds if isinstance(doc.baseTimeNanoseconds, int) else None
    trace = _columns(xs, path, device_names, rank, base, events_in_file, caveats)
    del doc, xs
    link(trace)
    return trace


def _columns(xs: list[_Event], path: Path, device_names, rank, base, events_in_file, caveats) -> Trace:
    n = len(xs)
    name_ids: dict[str, int] = {}
    name = np.fromiter((name_ids.setdefault(e.name, len(name_ids)) for e in xs), np.int32, n)
    cat_lut: dict[str, int] = {}

    def cat_code(c: str) -> int:
        code = cat_lut.get(c)
        if code is None:
            code = cat_lut[c] = _CAT_CODES.get(c.lower(), OTHER)
        return code

    cat = np.fromiter((cat_code(e.cat) for e in xs), np.int8, n)
    ts = np.fromiter((e.ts for e in xs), np.float64, n)
    dur = np.fromiter((e.dur for e in xs), np.float64, n)
    str_ids: dict[str, int] = {}

    def as_int(v) -> int:
        return v if type(v) is int else -(1 + str_ids.setdefault(v, len(str_ids)))

    pid = np.fromiter((as_int(e.pid) for e in xs), np.int64, n)
    tid = np.fromiter((as_int(e.tid) for e in xs), np.int64, n)
    no = _Args()
    args = [e.args or no for e in xs]
    ext = np.fromiter((-1 if a.ext is None else a.ext for a in args), np.int64, n)
    corr = np.fromiter((-1 if a.correlation is None else a.correlation for a in args), np.int64, n)
    device = np.fromiter((-1 if a.device is None else a.device for a in args), np.int64, n).astype(np.int32)
    stream = np.fromiter((-1 if a.stream is None else a.stream for a in args), np.int64, n)
    nbytes = np.fromiter((-1 if a.bytes is None else a.bytes for a in args), np.int64, n)
    is_cpu_op = cat == CPU_OP
    args_raw = [(a.dims, a.types, a.concrete) if c else None for a, c in zip(args, is_cpu_op.tolist())]

    bad_dur = dur < 0
    if bad_dur.any():
        caveats.append(f"{int(bad_dur.sum())} events had a negative duration and were dropped")
    start = _ns(ts)
    end = start + np.rint(np.maximum(dur, 0) * 1000.0).astype(np.int64)

    # GPU activities without args.device/stream (old traces): pid is the device, tid the stream.
    gpu = np.isin(cat, GPU_CATS)
    fix = gpu & (device == NONE) & (pid >= 0)
    device[fix] = pid[fix]
    fix = gpu & (stream == NONE) & (tid >= 0)
    stream[fix] = tid[fix]

    keep = ~bad_dur
    order = np.lexsort((-end[keep], start[keep]))  # by start, longest first on ties (parents first)
    sel = np.flatnonzero(keep)[order]
    ev = Events(cat=cat[sel], name=name[sel], start=start[sel], end=end[sel], pid=pid[sel], tid=tid[sel],
                device=device[sel], stream=stream[sel], ext=ext[sel], corr=corr[sel], nbytes=nbytes[sel],
                row=sel.astype(np.int64))
    names = [""] * len(name_ids)
    for s, i in name_ids.items():
        names[i] = s
    return Trace(path=str(path), names=names, ev=ev, device_names=device_names, rank=rank, base_time_ns=base,
                 events_in_file=events_in_file, args_raw=args_raw, caveats=caveats)


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
    unlinked = int(np.sum(trace.launch_of[gpu] == NONE))
    if len(gpu) and unlinked:
        trace.caveats.append(f"{unlinked} of {len(gpu)} GPU activities have no launch call in the trace "
                             "(missing correlation, or launched before profiling started)")


def find_traces(directory: Path) -> list[Path]:
    files = sorted(p for p in directory.iterdir()
                   if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz"))
                   and not p.name.endswith(".meta.json") and p.name != "manifest.json")
    return files
