"""Kineto-shaped traces built in the tests: small hand-made ones and a big one grown from a sample.

`build(launches)` writes what torch.profiler writes for each launch: a cpu_op with an
External id, the launch call (cuda_runtime) inside it with a correlation id, and the GPU
activity (kernel / gpu_memcpy / gpu_memset) with device, stream and the same correlation,
plus the ac2g flow pair. Times are given in integer ns relative to the trace start and
written as µs with three decimals on a torch-2.11-like origin (5e12 µs), or, with
`flavour="torch1"`, as integer µs since the epoch (~1.7e15) with torch 1.x categories
("Operator", "Runtime", "Kernel", "Memcpy"), lower-case "external id" on the launch call,
string tids ("stream 7") and pid = device on the GPU rows.

`write_big(src, dst, min_bytes)` streams copies of a real trace's events, each shifted
later in time and in its ids (like tools.grow, but without holding the result in
memory), until the JSON reaches min_bytes.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import msgspec

ORIGIN_NS = 5_000_000_000_000_000        # 5e12 µs, torch 2.11 on an H200
TORCH1_ORIGIN_US = 1_700_000_000_000_000  # absolute µs since the epoch, torch 1.x
PID, TID = 4242, 4242


@dataclass(frozen=True)
class Launch:
    """One op that launches one GPU activity. Times in ns from the trace start."""
    op_start: int
    op_end: int
    call_start: int
    call_end: int
    gpu_start: int
    gpu_end: int
    kernel: str = "void k<float>(float*)"
    op: str = "aten::add"
    cat: str = "kernel"          # kernel | gpu_memcpy | gpu_memset
    stream: int = 7
    device: int = 0
    call: str = "cudaLaunchKernel"


def _us(ns: int, flavour: str) -> float | int:
    if flavour == "torch1":
        return TORCH1_ORIGIN_US + ns // 1000
    return round((ORIGIN_NS + ns) / 1000, 3)


def _dur(ns: int, flavour: str) -> float | int:
    return ns // 1000 if flavour == "torch1" else round(ns / 1000, 3)


def events_for(launches: list[Launch], flavour: str = "torch2", first_id: int = 1) -> list[dict]:
    old = flavour == "torch1"
    cats = {"cpu_op": "Operator", "cuda_runtime": "Runtime", "kernel": "Kernel", "gpu_memcpy": "Memcpy",
            "gpu_memset": "Memset"} if old else {}
    out = []
    for i, launch in enumerate(launches):
        ext, corr = first_id + i, 100_000 + first_id + i
        out.append({"ph": "X", "cat": cats.get("cpu_op", "cpu_op"), "name": launch.op, "pid": PID,
                    "tid": str(TID) if old else TID, "ts": _us(launch.op_start, flavour),
                    "dur": _dur(launch.op_end - launch.op_start, flavour),
                    "args": {"External id": ext, "Input Dims": [[1024], [1024]], "Input type": ["float", "float"]}})
        call_args = {"cbid": 211, "correlation": corr, ("external id" if old else "External id"): ext}
        out.append({"ph": "X", "cat": cats.get("cuda_runtime", "cuda_runtime"), "name": launch.call, "pid": PID,
                    "tid": str(TID) if old else TID, "ts": _us(launch.call_start, flavour),
                    "dur": _dur(launch.call_end - launch.call_start, flavour), "args": call_args})
        gpu_args = {"device": launch.device, "stream": launch.stream, "correlation": corr,
                    ("external id" if old else "External id"): ext}
        if launch.cat != "kernel":
            gpu_args["bytes"] = 1 << 20
        out.append({"ph": "X", "cat": cats.get(launch.cat, launch.cat), "name": launch.kernel,
                    "pid": launch.device, "tid": f"stream {launch.stream}" if old else launch.stream,
                    "ts": _us(launch.gpu_start, flavour), "dur": _dur(launch.gpu_end - launch.gpu_start, flavour),
                    "args": gpu_args})
        if not old:
            out.append({"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": _us(launch.call_start, flavour),
                        "cat": "ac2g", "name": "ac2g"})
            out.append({"ph": "f", "id": corr, "pid": launch.device, "tid": launch.stream,
                        "ts": _us(launch.gpu_start, flavour),
                        "cat": "ac2g", "name": "ac2g", "bp": "e"})
    return out


def document(events: list[dict], *, devices=(0,), flavour: str = "torch2", rank: int | None = None) -> dict:
    doc: dict = {"schemaVersion": 1,
                 "deviceProperties": [{"id": d, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
                                       "computeMajor": 9, "computeMinor": 0, "numSms": 132} for d in devices]}
    if flavour != "torch1":
        doc["baseTimeNanoseconds"] = 1790857026000000000
    if rank is not None:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
    doc["traceEvents"] = events
    return doc


def chain(n: int = 20, *, gap_ns: int = 20_000, kernel_ns: int = 10_000, stream: int = 7, device: int = 0,
          t0: int = 100_000, queued: bool = False) -> list[Launch]:
    """n kernels on one stream, each launched `gap_ns` after the previous one ended (host-bound), or all
    queued up front (device-bound) when queued=True."""
    out, t = [], t0
    for i in range(n):
        call_s = t0 + 6_000 * i if queued else t - 8_000
        g_s = max(t, call_s + 5_000)
        out.append(Launch(op_start=call_s - 2_000, op_end=call_s + 5_000, call_start=call_s, call_end=call_s + 4_000,
                          gpu_start=g_s, gpu_end=g_s + kernel_ns, stream=stream, device=device,
                          kernel=f"void k{i % 3}<float>(float*)"))
        t = g_s + kernel_ns + (0 if queued else gap_ns)
    return out


def write(path: Path, doc: dict | list | int | str | bytes, *, gz: bool | None = None) -> Path:
    """A JSON document (dict, list, int), or text (str) or bytes as they are. A document or text is gzipped
    when the name ends with .gz (or gz=True); bytes only when gz=True."""
    path = Path(path)
    data = doc if isinstance(doc, bytes) else (doc.encode() if isinstance(doc, str) else json.dumps(doc).encode())
    if gz if gz is not None else (path.name.endswith(".gz") and not isinstance(doc, bytes)):
        data = gzip.compress(data, compresslevel=1)
    path.write_bytes(data)
    return path


# --- a big trace, streamed --------------------------------------------------------------

_ID_ARGS = ("External id", "correlation", "Record function id", "Ev Idx", "Python id", "Python parent id")


def write_big(src: Path, dst: Path, min_bytes: int) -> dict:
    """Copies of src's timed events, each later by the trace's span + 1 ms and with ids moved past the
    previous copy's, written one copy at a time until the JSON has min_bytes. Returns counts."""

    raw = gzip.decompress(Path(src).read_bytes()) if str(src).endswith(".gz") else Path(src).read_bytes()
    doc = msgspec.json.decode(raw)
    events = doc.pop("traceEvents")
    is_timed = [isinstance(e.get("ts"), (int, float)) and e.get("ph") in ("X", "s", "f") for e in events]
    timed = [e for e, t in zip(events, is_timed) if t]
    rest = [e for e, t in zip(events, is_timed) if not t]   # metadata, instant events: written once
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + (e.get("dur") or 0) for e in timed)
    shift_t = (t1 - t0) + 1000.0
    shift_id = 1 + max([v for e in timed for v in (e.get("id"),) + tuple((e.get("args") or {}).get(k) for k in _ID_ARGS)
                        if isinstance(v, int)] or [0])
    enc = msgspec.json.Encoder()
    head = enc.encode(doc)[:-1] + b', "traceEvents": ['
    n_events, copies = 0, 0
    with open(dst, "wb") as f:
        f.write(head)
        f.write(enc.encode(rest)[1:-1])
        written = len(head)
        while written < min_bytes:
            dt, did = copies * shift_t, copies * shift_id
            batch = []
            for e in timed:
                c = dict(e)
                c["ts"] = round(e["ts"] + dt, 3)
                if "id" in c:
                    c["id"] = c["id"] + did
                a = e.get("args")
                if a:
                    a = dict(a)
                    for k in _ID_ARGS:
                        if isinstance(a.get(k), int) and a[k] >= 0:
                            a[k] += did
                    c["args"] = a
                batch.append(c)
            chunk = b",\n" + enc.encode(batch)[1:-1]
            f.write(chunk)
            written += len(chunk)
            n_events += len(batch)
            copies += 1
        f.write(b"]}\n")
    return {"copies": copies, "events": n_events + len(rest), "bytes": dst.stat().st_size}


# --- single events, for traces a test lays out by hand (times in ns from the trace start) --------

def op(name: str, start: int, end: int, ext: int | None = None, *, dims=None, types=None, tid: int = TID,
       **args) -> dict:
    """A cpu_op (with its External id and, given them, its Input Dims and Input type)."""
    a = dict(args)
    if ext is not None:
        a["External id"] = ext
    if dims is not None:
        a["Input Dims"], a["Input type"] = dims, types
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": PID, "tid": tid, "ts": _us(start, "torch2"),
            "dur": _dur(end - start, "torch2"), "args": a}


def call(name: str, start: int, end: int, corr: int | None = None, ext: int | None = None, *, tid: int = TID) -> dict:
    """A runtime call (cudaLaunchKernel, cudaGraphLaunch, cudaStreamBeginCapture ...)."""
    a: dict = {"cbid": 0}
    if corr is not None:
        a["correlation"] = corr
    if ext is not None:
        a["External id"] = ext
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": PID, "tid": tid, "ts": _us(start, "torch2"),
            "dur": _dur(end - start, "torch2"), "args": a}


def gpu(name: str, start: int, end: int, corr: int, *, stream: int = 7, device: int = 0, cat: str = "kernel",
        **args) -> dict:
    """A GPU activity; extra args as Kineto writes them ("graph node id", "In msg nelems" ...)."""
    return {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": _us(start, "torch2"),
            "dur": _dur(end - start, "torch2"),
            "args": {"device": device, "stream": stream, "correlation": corr, **args}}


def annotation(name: str, start: int, end: int, *, tid: int = TID) -> dict:
    """A named range (record_function), as user_annotation."""
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": PID, "tid": tid, "ts": _us(start, "torch2"),
            "dur": _dur(end - start, "torch2"), "args": {}}
