"""What the columnar trace leaves out and a few analyses need: kernels' launch shapes, the device's limits per
SM, the allocator's [memory] events and the ops' Input Strides.

The loader keeps what every report needs (tracetriage.analyzers.model.trace); these fields serve the occupancy,
view-or-copy, byte-ledger and strided-read analyses only, so they are read apart, in one narrow pass over the
file, when one of those asks (tracetriage.analyzers.loading.launch_args). Columns of numpy arrays, one row per
event, times in integer ns on the trace's own clock (as `Trace`'s).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DeviceLimits:
    """One device's limits per SM, as Kineto's deviceProperties records them (CUDA names)."""
    id: int
    name: str
    sms: int
    max_threads_per_sm: int
    regs_per_sm: int
    shared_per_sm: int          # bytes: the most shared memory an SM can give its blocks
    regs_per_block: int
    max_threads_per_block: int
    warp_size: int
    major: int
    minor: int


@dataclass(frozen=True)
class KernelLaunches:
    """Every kernel's launch arguments (Kineto's kernel args), one row per launch."""
    name: list                  # str per row
    start: np.ndarray           # int64 ns
    dur: np.ndarray             # int64 ns
    device: np.ndarray          # int32
    corr: np.ndarray            # int64 correlation id
    grid: np.ndarray            # int64 (n, 3)
    block: np.ndarray           # int64 (n, 3)
    regs: np.ndarray            # int64 registers per thread (-1: not recorded)
    shared: np.ndarray          # int64 bytes of shared memory per block, static + dynamic (-1: not recorded)
    blocks_per_sm: np.ndarray   # float64 grid blocks / SMs, as Kineto writes it (NaN: not recorded)
    warps_per_sm: np.ndarray    # float64 blocks per SM x warps per block (NaN: not recorded)
    est_occupancy: np.ndarray   # float64 Kineto's "est. achieved occupancy %" (NaN: not recorded)

    def __len__(self) -> int:
        return len(self.name)


@dataclass(frozen=True)
class MemoryEvents:
    """The caching allocator's [memory] instant events (profile_memory=True): + bytes an allocation, - a free."""
    ts: np.ndarray              # int64 ns
    tid: np.ndarray             # int64
    nbytes: np.ndarray          # int64, negative for a free
    addr: np.ndarray            # int64
    device_type: np.ndarray     # int32: 0 the host, 1 CUDA (torch's DeviceType)
    device_id: np.ndarray       # int32

    def __len__(self) -> int:
        return len(self.ts)


@dataclass(frozen=True)
class OpStrides:
    """Each cpu_op: its name, interval, and its args kept as JSON text until an analysis asks for one op's Input
    Dims, Input Strides and Input type (`args`)."""
    name: list                  # str
    start: np.ndarray           # int64 ns
    end: np.ndarray             # int64 ns
    tid: np.ndarray             # int64
    raw: list                   # per row: the event's "args" JSON text (b"" when it has none)

    def __len__(self) -> int:
        return len(self.name)

    def args(self, row: int) -> tuple[list, list, list]:
        """(dims, strides, types) of one op, one entry per argument; [] where the trace holds none (an op recorded
        without shapes, or a torch too old to record strides)."""
        import msgspec

        try:
            doc = msgspec.json.decode(self.raw[row]) if self.raw[row] else {}
        except msgspec.DecodeError:
            doc = {}
        if not isinstance(doc, dict):
            doc = {}
        out = [doc.get(k) for k in ("Input Dims", "Input Strides", "Input type")]
        return tuple(v if isinstance(v, list) else [] for v in out)  # type: ignore[return-value]


@dataclass(frozen=True)
class Ranges:
    """The user_annotation ranges (record_function), one row per instance."""
    name: list
    start: np.ndarray           # int64 ns
    end: np.ndarray             # int64 ns
    tid: np.ndarray             # int64

    def __len__(self) -> int:
        return len(self.name)


@dataclass(frozen=True)
class LaunchArgs:
    path: str
    devices: tuple[DeviceLimits, ...]
    kernels: KernelLaunches
    memory: MemoryEvents
    ops: OpStrides
    ranges: Ranges

    def device(self, device_id: int | None = None) -> DeviceLimits | None:
        if not self.devices:
            return None
        return next((d for d in self.devices if d.id == device_id), self.devices[0])
