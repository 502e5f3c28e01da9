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
Loading is a pipeline of its own modules (tracetriage.analyzers.loading.load runs it):
read -> decode -> assemble -> link -> cache. This module is the model they build and
imports none of them.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from tracetriage.analyzers.model.errors import TraceError as TraceError  # (its home; imported from here too)
from tracetriage.analyzers.model.groups import any_of, distinct

# --- categories ---------------------------------------------------------------

OTHER, CPU_OP, USER_ANNOTATION, GPU_USER_ANNOTATION, RUNTIME, DRIVER, KERNEL, MEMCPY, MEMSET, CUDA_SYNC, \
    PYTHON, OVERHEAD, CAPTURED_OP = range(13)
CAT_NAMES = ["other", "cpu_op", "user_annotation", "gpu_user_annotation", "cuda_runtime", "cuda_driver",
             "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "python_function", "overhead", "captured_op"]
# CAPTURED_OP is never read from a file: a cpu_op of a separate graph-capture trace, carried into the
# replay's trace for its name and shapes only (tracetriage.analyzers.loading.graphs), zero-length at the trace's end.
# Old (torch 1.x) and new spellings, lower-cased.
CAT_CODES = {
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
CLOCK_TOL_NS = 2_000       # CUPTI aligns CPU and GPU clocks to about a µs: closer than this is the same moment


@dataclass(frozen=True)
class Caveat:
    """Something about the trace itself that a reader must know (tracetriage.analyzers.voice says it).

    kind: dropped_events | duplicate_events | no_gpu_activity | unlinked_gpu | unrecorded_launches (GPU work launched
    by an API the capture does not record: model.driver_launches) | dangling_external_id |
    external_id_by_time (launch calls linked to their op by time, not by their External id: it was the call's own
    correlation id, torch 2.0/2.1) | external_id_own_id (... it was the call's own id: a ROCm trace, no correlation) |
    external_id_elsewhere (... it named an op that does not enclose the call) |
    stream_overlap | graph_replay_unjoined (replayed GPU activities no capture in the trace explains) |
    graph_capture_unrecorded (... where the trace holds the capture, but none of the launch calls made under it);
    count of the events concerned, out of total where that matters.
    """
    kind: str
    count: int = 0
    total: int = 0


GRAPH_UNJOINED_KINDS = ("graph_replay_unjoined", "graph_capture_unrecorded")   # replays left with no op


# --- the model ------------------------------------------------------------------

@dataclass(frozen=True)
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
    nbytes: np.ndarray   # int64 bytes of a memcpy/memset, or the message a collective moves (the larger of
                         # "In/Out msg nelems" x its dtype's size), NONE if absent
    shape: np.ndarray    # int32 index into Trace.shapes_raw (cpu_ops), NONE otherwise
    graph_node: np.ndarray  # int64 CUPTI's "graph node id" of a GPU activity replayed from a graph, NONE otherwise
    group: np.ndarray    # int64 ranks in a collective's process group ("Group size"), NONE otherwise
    seq: np.ndarray      # int64 autograd's "Sequence number" of a cpu_op recorded with grad mode on, NONE otherwise
    pyid: np.ndarray     # int64 the profiler's "Python id" of a python_function call, NONE otherwise: two calls of
                         # one function in the same microsecond differ only here

    def __len__(self) -> int:
        return len(self.start)

    def take(self, idx) -> "Events":
        return Events(**{k: v[idx] for k, v in self.__dict__.items()})

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start


EVENT_COLUMNS = ("cat", "name", "start", "end", "pid", "tid", "device", "stream", "ext", "corr", "nbytes", "shape",
                 "graph_node", "group", "seq", "pyid")


def thread_key(pid, tid) -> np.ndarray:
    """One int64 per host thread: (pid << 32) ^ the tid's low 32 bits. Every analysis that groups host events by
    thread keys them so, and keys from two analyses (set-up windows against a lever's calls) compare."""
    key = np.left_shift(np.asarray(pid, np.int64), 32)   # (int64 columns: no copy before the shift, one array made)
    key ^= np.asarray(tid, np.int64) & 0xFFFFFFFF
    return key


_every_key: list = [None, None]    # [weak reference to the Events, thread_key of each of its rows]


def thread_keys(ev: Events, rows) -> np.ndarray:
    """thread_key(ev.pid[rows], ev.tid[rows]), read from a column of every row's key made once per Events (the one
    analysed last; a weak reference: an Events that is gone is never answered for). The report asks the keys of
    some row set ~70 times, each two gathers and two passes where this is one gather (~6 ms once at 942k events).
    `rows` indexes as an array does (rows, a mask, one row); an array answer is a copy: the caller may modify it."""
    ref, keys = _every_key
    if ref is None or ref() is not ev:
        keys = thread_key(ev.pid, ev.tid)
        _every_key[:] = [weakref.ref(ev), keys]
    out = keys[rows]
    return out.copy() if isinstance(out, np.ndarray) and out.base is keys else out


@dataclass(frozen=True)
class SideInputs:
    """What lies beside the trace file (tracetriage.analyzers.loading.side_inputs reads it once): the measured
    ceilings of its device and the capture's sidecar. Never part of the cached trace."""
    ceilings: dict | None = None
    sidecar: dict | None = None


@dataclass(frozen=True)
class Tables:
    """The events of a file and their tables, sorted, not yet linked.

    tracetriage.analyzers.loading.assemble builds them.
    """
    path: str
    names: list[str]
    ev: Events
    device_names: dict[int, str]
    rank: int | None
    world_size: int | None          # distributedInfo.world_size: the run's ranks, of which this is one
    base_time_ns: int | None
    events_in_file: int
    shapes_raw: list            # distinct (Input Dims, Input type, Concrete Inputs) JSON texts
    caveats: tuple[Caveat, ...]
    merged_ranks: dict[int, int]    # pid -> rank in a file merged from several ranks (args.rank); {}: one rank


@dataclass(frozen=True)
class Trace(Tables):
    """A loaded, linked trace.

    Built finished by tracetriage.analyzers.loading.link (or the cache); never changed after.
    """
    # Links: index arrays into ev, NONE where there is no partner.
    launch_of: np.ndarray       # for each row: the launch call of a GPU activity
    op_of: np.ndarray           # for each row: the cpu_op a launch call belongs to
    side: SideInputs = SideInputs()
    # for each row: the cpu_op that launched a GPU activity replayed from a CUDA/HIP graph, when the
    # graph was captured (tracetriage.analyzers.loading.graphs joins them); None: the trace replays no graph
    graph_op_of: np.ndarray | None = None

    def idx(self, *cats: int) -> np.ndarray:
        return np.flatnonzero(any_of(self.ev.cat, cats))

    def launching_op(self, rows: np.ndarray) -> np.ndarray:
        """The cpu_op each GPU activity is charged to: the op that launched it when its graph was captured
        (a graph replay), else the op of its launch call; NONE where neither is in the trace."""
        call = self.launch_of[rows]
        op = np.where(call != NONE, self.op_of[np.maximum(call, 0)], NONE)
        if self.graph_op_of is not None:
            captured = self.graph_op_of[rows]
            op = np.where(captured != NONE, captured, op)
        return op

    def op_run(self, rows: np.ndarray, op: np.ndarray | None = None) -> np.ndarray:
        """For each GPU activity: one key per run of the op it is charged to (`op`, else launching_op; NONE where
        none). An eager op runs once per row; an op captured into a CUDA graph once per replay of the graph."""
        op = self.launching_op(rows) if op is None else op
        n = len(self.ev) + 1
        run = op * n
        if self.graph_op_of is not None:
            replayed = (self.graph_op_of[rows] != NONE) & (op != NONE)
            run = np.where(replayed, run + self.launch_of[rows] + 1, run)
        return np.where(op != NONE, run, NONE)

    def name_of(self, row: int) -> str:
        return self.names[self.ev.name[row]]

    @property
    def devices(self) -> list[int]:
        return list(self._device_ids)

    @cached_property
    def _device_ids(self) -> tuple[int, ...]:
        # a pass over every event, asked by each analysis and lever that names the device (8 times in the levers
        # alone): found once per Trace (never changed after it is built; a replaced one finds its own)
        gpu = any_of(self.ev.cat, GPU_CATS)
        return tuple(sorted(int(d) for d in distinct(self.ev.device[gpu]) if d != NONE))

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


def capture_unrecorded(trace: Trace) -> bool:
    """Graph replays left unjoined though the trace holds their capture: the profiler recorded none of the launch
    calls made under it (loading.graphs: graph_capture_unrecorded), so which op each replayed kernel is, and its
    shapes, is not known, and profiling the capture again would not record them either."""
    return any(c.kind == "graph_capture_unrecorded" for c in trace.caveats)


def _decode_raw(raw) -> Any:
    # msgspec is imported here, not at the top: the model (and the lever registry above it) is read by
    # the capture harness on GPU machines that have torch but no msgspec
    import msgspec

    if raw is None or len(raw) == 0:
        return None
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
