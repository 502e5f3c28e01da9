"""The health check's vocabulary: the problems a trace can have, the verdicts each takes away, and the typed
result (tracetriage.analyzers.analyses.health runs the checks; tracetriage.analyzers.voice.health says them)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Problem(str, Enum):
    GPU_ACTIVITY_NOT_RECORDED = "gpu_activity_not_recorded"
    WORKLOAD_ON_CPU = "workload_on_cpu"
    KERNELS_WITHOUT_LAUNCH = "kernels_without_launch"
    LAUNCHES_WITHOUT_KERNEL = "launches_without_kernel"
    BAD_TIMESTAMPS = "bad_timestamps"
    CLOCKS_OUT_OF_ORDER = "clocks_out_of_order"
    SHAPES_NOT_RECORDED = "shapes_not_recorded"
    OPS_NOT_RECORDED = "ops_not_recorded"
    STACKS_NOT_RECORDED = "stacks_not_recorded"
    SYNC_EVENTS_NOT_RECORDED = "sync_events_not_recorded"
    CUT_MID_STEP = "cut_mid_step"
    KERNELS_CUT_AT_STOP = "kernels_cut_at_stop"

    def __str__(self) -> str:
        return self.value


class Verdict(str, Enum):
    """What a report line decides, as a finding can take it away."""
    IDLE = "idle"            # the idle split by cause
    REGIME = "regime"        # compute / memory from the roofline
    WHATIF = "whatif"        # the replay's predictions
    SOURCES = "sources"      # the user's source lines
    STREAMS = "streams"      # which stream waited for which

    def __str__(self) -> str:
        return self.value


# What each problem takes away. `shown`: said in the Health line (else in the JSON only).
WITHHOLDS: dict[Problem, tuple[Verdict, ...]] = {
    Problem.GPU_ACTIVITY_NOT_RECORDED: (Verdict.IDLE, Verdict.REGIME, Verdict.WHATIF),
    Problem.WORKLOAD_ON_CPU: (Verdict.IDLE, Verdict.REGIME, Verdict.WHATIF),
    Problem.KERNELS_WITHOUT_LAUNCH: (Verdict.IDLE, Verdict.WHATIF),
    Problem.LAUNCHES_WITHOUT_KERNEL: (Verdict.IDLE, Verdict.WHATIF),
    Problem.BAD_TIMESTAMPS: (Verdict.IDLE,),
    Problem.CLOCKS_OUT_OF_ORDER: (Verdict.IDLE, Verdict.WHATIF),
    Problem.SHAPES_NOT_RECORDED: (Verdict.REGIME,),
    Problem.OPS_NOT_RECORDED: (),     # the timeline stands; what the host did between launches has no op to name
    Problem.STACKS_NOT_RECORDED: (Verdict.SOURCES,),
    Problem.SYNC_EVENTS_NOT_RECORDED: (Verdict.STREAMS,),
    Problem.CUT_MID_STEP: (),
    Problem.KERNELS_CUT_AT_STOP: (),
}


@dataclass(frozen=True)
class Finding:
    problem: Problem
    count: int = 0           # the rows concerned
    total: int = 0           # ... out of this many
    shown: bool = True       # said in the Health line; False: a note in the JSON only
    # the verdicts it takes away; None: the problem's own (WITHHOLDS), else what the check decided for this much
    # of it (a few dropped kernels leave the what-if standing)
    takes: tuple[Verdict, ...] | None = None
    # CLOCKS_OUT_OF_ORDER: the host calls all come from one process (one torch.profiler session: the skew is the
    # profiler's GPU-to-host time conversion, not two machines), and how much further ahead of their launches the GPU
    # activities of the later half of the trace start than the earlier half's (drift), over how long
    one_process: bool = False
    drift_ns: int = 0
    drift_over_ns: int = 0
    lead_ns: int = 0         # the furthest any GPU activity starts ahead of its launch call

    @property
    def withholds(self) -> tuple[Verdict, ...]:
        return WITHHOLDS[self.problem] if self.takes is None else self.takes


@dataclass(frozen=True)
class Health:
    findings: tuple[Finding, ...]
    gpu_named: str | None    # the GPU the trace's deviceProperties name (None: none)
    replayed_share: float = 0.0   # of the kernel time, CUDA-graph replays no captured op costs: shapes recorded in the
                                  # profile cannot reach them (their ops ran at capture)
    capture_unrecorded: bool = False   # ... and their capture is in the trace, with none of the launches made under it

    @property
    def shown(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.shown)

    @property
    def ok(self) -> bool:
        return not self.shown

    def has(self, problem: Problem) -> bool:
        return any(f.problem is problem for f in self.findings)

    def withheld(self, verdict: Verdict) -> bool:
        """A verdict that depends on data the trace lacks (only shown findings take one away)."""
        return any(verdict in f.withholds for f in self.shown)
