"""What each idle cause's verdict rests on: typed, frozen, built finished by tracetriage.analyzers.analyses.idle.

Every cause always carries its full evidence type (zeros and empty tuples when it has no
gaps), so a consumer (the report, a drill's feedback, the dashboard's hover) reads fields,
never sentences, and never checks whether a key exists. Times are µs, rounded as shown.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tracetriage.analyzers.model.verdicts import Cause

DEPENDENCY_MOSTLY = 0.5   # a sync's idle is a dependency wait when waits on dependencies hold this share


@dataclass(frozen=True)
class NameCount:
    """A name from the trace (an op, a call) and how often it occurs in the evidence."""
    name: str
    count: int


@dataclass(frozen=True)
class NameTime:
    """A name, how often, and how much time it holds."""
    name: str
    count: int
    us: float


@dataclass(frozen=True)
class CopyKind:
    """One kind of copy (e.g. 'Memcpy HtoD (Pageable -> Device)'): count, time, bytes and measured rate."""
    name: str
    count: int
    us: float
    bytes: int
    gbps: float | None     # None when the trace records no bytes for it


@dataclass(frozen=True)
class FirstCall:
    """One-time set-up caught in the profile: an op's (or an API call's) first call against its later ones."""
    name: str
    first_call_us: float
    later_median_us: float | None     # None: the call never recurs (stream creation, a first cudaFree)
    idle_us: float = 0.0              # the part of it inside idle gaps: what the set-up cost the device


@dataclass(frozen=True)
class RecurringCost:
    """A first call's cost that later profiled steps pay again (a new input shape each step: cuDNN's benchmark, a
    plan or a compile per shape): no one-time set-up, though its first call looks like one."""
    name: str
    first_call_us: float
    again_us: float                   # the longest of its calls that pay it again, in later steps
    warm_us: float | None             # what it takes at its warm cost (None: an API call with no warm call)
    steps: int                        # the profiled steps that pay it
    of_steps: int                     # ... of these
    same_shapes: bool = False         # every call that pays it again has the first call's input shapes: no new shape
    #                                   brings it, the step does this work each time (a table uploaded every step)


@dataclass(frozen=True)
class Evidence:
    """Common to every cause: its gaps on one device."""
    cause: Cause
    gaps: int
    total_us: float
    median_gap_us: float
    max_gap_us: float


@dataclass(frozen=True)
class LaunchEvidence(Evidence):
    next_kernel_median_us: float      # the kernels that ended the gaps
    launch_call_median_us: float | None   # what one launch call costs the host in this trace; None: no
                                          # launch call to measure (a fallback is never reported)
    queued_gaps: int                  # issued before the drain: device-side launch latency
    launching_ops: tuple[NameCount, ...]
    kernels: int                      # kernels on the device
    kernel_median_us: float
    graph_launches: int = 0           # CUDA/HIP graph launch calls in the trace: graphs are already in use
    graphed_kernels: int = 0          # of `kernels`, those a graph launch issued (a replay)
    # the whole gaps between device work that hold these pieces (a gap may be part host work), their median, and
    # how many another cause shares: the words' fields (the JSON keeps its keys)
    whole_gaps: int = field(default=0, metadata={"json": False})
    whole_gap_median_us: float = field(default=0.0, metadata={"json": False})
    part_median_us: float = field(default=0.0, metadata={"json": False})   # ... and of this cause's part of each
    shared_gaps: int = field(default=0, metadata={"json": False})


@dataclass(frozen=True)
class HostEvidence(Evidence):
    host_events: tuple[NameTime, ...]  # top-level CPU ops inside the gaps that issue no GPU work
    untraced_share: float              # share of the gaps with no traced host activity at all
    threshold_us: float                # "much longer than a launch", in this trace
    warmup: tuple[FirstCall, ...]
    python_functions: tuple[NameTime, ...] = ()   # recorded with stacks: the Python frames that held the host
    setup_us: float = 0.0              # of the gaps, the time the host spent in one-time set-up (first calls: a
                                       # launch loading its module, allocator growth, first library calls)
    ranges: tuple[NameTime, ...] = ()  # the user's ranges (not ProfilerStep) around time no op traced, with that time
    in_ranges_share: float = 0.0       # share of the gaps inside those ranges and no op (not in untraced_share)


@dataclass(frozen=True)
class SyncEvidence(Evidence):
    sync_calls: tuple[NameCount, ...]   # the calls the host waited in
    called_from: tuple[NameCount, ...]  # the outermost ops that made them (aten::item, ...)
    waited_on: tuple[NameTime, ...] = ()  # queued work that waited on a dependency: the stream-wait or sync call
    drains: int = 0                     # sync calls the idle follows, each once (a drain's recovery gaps are its own)
    median_drain_us: float = 0.0        # the median idle one such call cost, its recovery gaps included

    @property
    def waits_on_dependency(self) -> bool:
        """Most of this idle is queued work waiting on a cross-stream dependency, not the host in a sync."""
        return bool(self.waited_on) and sum(w.us for w in self.waited_on) >= DEPENDENCY_MOSTLY * self.total_us


@dataclass(frozen=True)
class TransferEvidence(Evidence):
    copies: tuple[CopyKind, ...]
    copy_count: int
    copy_bytes: int
    blocking_calls: tuple[NameCount, ...]
    waited_on: tuple[NameTime, ...] = ()  # queued work that waited while the host staged a copy: the copy call


@dataclass(frozen=True)
class OtherEvidence(Evidence):
    unlinked_gaps: int
    waited_on: tuple[NameTime, ...] = ()  # queued work that waited on a dependency the trace does not record
