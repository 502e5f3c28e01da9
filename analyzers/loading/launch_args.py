"""Read what the columnar decode skips, in one narrow pass: kernels' launch shapes, the devices' limits per SM,
the allocator's [memory] events, the ops' Input Strides and the named ranges.

    args = read_launch_args("traces/ladder/M03.01/occ-stream-starved.json.gz")
    args.kernels.grid[0], args.kernels.regs[0], args.device().regs_per_sm

Input: a trace file (the same text `read` gives the loader: gzip by its magic, the memory budget). Output:
tracetriage.analyzers.model.launch_args.LaunchArgs. msgspec decodes only the fields named below (the rest of each
event is skipped in C); a file read once per process while it stays unchanged. The occupancy, view-or-copy,
byte-ledger and strided-read analyses take the result; the report reads it only where a verdict needs it.
"""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import msgspec
import numpy as np

from tracetriage.analyzers.loading.decode import ns_from_us
from tracetriage.analyzers.loading.read import read_bytes
from tracetriage.analyzers.model.launch_args import (
    DeviceLimits,
    KernelLaunches,
    LaunchArgs,
    MemoryEvents,
    OpStrides,
    Ranges,
)
from tracetriage.analyzers.model.trace import TraceError

NONE = -1
_EMPTY = msgspec.Raw(b"")


class _Args(msgspec.Struct, gc=False):
    correlation: int = NONE
    device: int = NONE
    grid: list[int] | None = None
    block: list[int] | None = None
    regs: int = msgspec.field(name="registers per thread", default=NONE)
    shared: int = msgspec.field(name="shared memory", default=NONE)
    blocks_per_sm: float = msgspec.field(name="blocks per SM", default=math.nan)
    warps_per_sm: float = msgspec.field(name="warps per SM", default=math.nan)
    occupancy: float = msgspec.field(name="est. achieved occupancy %", default=math.nan)
    # [memory] events
    nbytes: int = msgspec.field(name="Bytes", default=0)
    addr: int = msgspec.field(name="Addr", default=0)
    device_type: int = msgspec.field(name="Device Type", default=NONE)
    device_id: int = msgspec.field(name="Device Id", default=NONE)


_ARGS = msgspec.json.Decoder(_Args)


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    tid: int | str = 0
    ts: float = math.nan
    dur: float = math.nan
    args: msgspec.Raw = _EMPTY      # decoded only for kernels and [memory] events; an op's when it is asked for


class _Device(msgspec.Struct, gc=False):
    id: int = 0
    name: str = ""
    numSms: int = 0
    maxThreadsPerMultiprocessor: int = 0
    regsPerMultiprocessor: int = 0
    sharedMemPerMultiprocessor: int = 0
    regsPerBlock: int = 0
    maxThreadsPerBlock: int = 0
    warpSize: int = 32
    computeMajor: int = NONE
    computeMinor: int = NONE


class _File(msgspec.Struct, gc=False):
    traceEvents: list[_Event] = []
    deviceProperties: list[_Device] = []


def read_launch_args(path: str | Path) -> LaunchArgs:
    """The launch arguments, limits, [memory] events, strides and ranges of one trace file (TraceError when the
    file is not a trace this pass can read)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        raise TraceError(f"no such file: {p}") from None
    return _read_cached(str(p), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=4)
def _read_cached(path: str, mtime_ns: int, size: int) -> LaunchArgs:
    data = read_bytes(Path(path))
    try:
        doc = msgspec.json.decode(data, type=_File)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise TraceError(f"{path}: its kernel arguments could not be read ({e})") from None
    del data
    return LaunchArgs(path=path, devices=tuple(_device(d) for d in doc.deviceProperties),
                      kernels=_kernels(doc.traceEvents), memory=_memory(doc.traceEvents), ops=_ops(doc.traceEvents),
                      ranges=_ranges(doc.traceEvents))


def _device(d: _Device) -> DeviceLimits:
    return DeviceLimits(id=d.id, name=d.name, sms=d.numSms, max_threads_per_sm=d.maxThreadsPerMultiprocessor,
                        regs_per_sm=d.regsPerMultiprocessor, shared_per_sm=d.sharedMemPerMultiprocessor,
                        regs_per_block=d.regsPerBlock, max_threads_per_block=d.maxThreadsPerBlock,
                        warp_size=d.warpSize or 32, major=d.computeMajor, minor=d.computeMinor)


def _tid(t) -> int:
    return t if isinstance(t, int) and not isinstance(t, bool) else NONE


def _dim3(v: list[int] | None) -> tuple[int, int, int]:
    if not v:
        return (NONE, NONE, NONE)
    return tuple((list(v) + [1, 1, 1])[:3])  # type: ignore[return-value]


_ARG_LIST = msgspec.json.Decoder(list[_Args])


def _with_args(events: list[_Event]) -> tuple[list[_Event], list[_Args]]:
    """The events that have args, and their args decoded: all in one call (one event at a time costs 20x more),
    else one by one when one of them is malformed (that one left out)."""
    have = [e for e in events if e.args]
    try:
        return have, _ARG_LIST.decode(b"[" + b",".join(bytes(e.args) for e in have) + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    out = []
    for e in have:
        try:
            out.append((e, _ARGS.decode(e.args)))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return [e for e, _ in out], [a for _, a in out]


def _kernels(events: list[_Event]) -> KernelLaunches:
    ks, a = _with_args([e for e in events if e.ph == "X" and e.cat.lower() == "kernel" and math.isfinite(e.ts)
                        and math.isfinite(e.dur)])
    return KernelLaunches(
        name=[e.name for e in ks],
        start=ns_from_us(np.array([e.ts for e in ks], dtype=np.float64)),
        dur=np.rint(np.array([e.dur for e in ks], dtype=np.float64) * 1000).astype(np.int64),
        device=np.array([x.device for x in a], dtype=np.int32),
        corr=np.array([x.correlation for x in a], dtype=np.int64),
        grid=np.array([_dim3(x.grid) for x in a], dtype=np.int64).reshape(-1, 3),
        block=np.array([_dim3(x.block) for x in a], dtype=np.int64).reshape(-1, 3),
        regs=np.array([x.regs for x in a], dtype=np.int64),
        shared=np.array([x.shared for x in a], dtype=np.int64),
        blocks_per_sm=np.array([x.blocks_per_sm for x in a], dtype=np.float64),
        warps_per_sm=np.array([x.warps_per_sm for x in a], dtype=np.float64),
        est_occupancy=np.array([x.occupancy for x in a], dtype=np.float64))


def _memory(events: list[_Event]) -> MemoryEvents:
    ms, a = _with_args([e for e in events if e.ph == "i" and e.name == "[memory]" and math.isfinite(e.ts)])
    return MemoryEvents(ts=ns_from_us(np.array([e.ts for e in ms], dtype=np.float64)),
                        tid=np.array([_tid(e.tid) for e in ms], dtype=np.int64),
                        nbytes=np.array([x.nbytes for x in a], dtype=np.int64),
                        addr=np.array([x.addr for x in a], dtype=np.int64),
                        device_type=np.array([x.device_type for x in a], dtype=np.int32),
                        device_id=np.array([x.device_id for x in a], dtype=np.int32))


def _complete(e: _Event, cat: str) -> bool:
    return e.ph == "X" and e.cat.lower() == cat and math.isfinite(e.ts) and math.isfinite(e.dur)


def _ops(events: list[_Event]) -> OpStrides:
    """Every cpu_op, its arguments kept as JSON text (most are never asked for: a trace holds ~10^5 ops)."""
    os_ = [e for e in events if _complete(e, "cpu_op")]
    start = ns_from_us(np.array([e.ts for e in os_], dtype=np.float64))
    dur = np.rint(np.array([e.dur for e in os_], dtype=np.float64) * 1000).astype(np.int64)
    return OpStrides(name=[e.name for e in os_], start=start, end=start + dur,
                     tid=np.array([_tid(e.tid) for e in os_], dtype=np.int64), raw=[bytes(e.args) for e in os_])


def _ranges(events: list[_Event]) -> Ranges:
    rs = [e for e in events if _complete(e, "user_annotation")]
    start = ns_from_us(np.array([e.ts for e in rs], dtype=np.float64))
    dur = np.rint(np.array([e.dur for e in rs], dtype=np.float64) * 1000).astype(np.int64)
    return Ranges(name=[e.name for e in rs], start=start, end=start + dur,
                  tid=np.array([_tid(e.tid) for e in rs], dtype=np.int64))
