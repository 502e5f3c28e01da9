"""The Analysis: one trace's triage, typed and frozen (triage.report builds it), with the properties the voice
reads off it (the dominant cause, the set-up worth naming, the syncs worth naming beside another cause...);
HostOnly, what a trace without GPU activity shows instead, and host_only_of, which finds it."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from tracetriage.analyzers.analyses import compile_cache as compile_cache_mod
from tracetriage.analyzers.analyses import decode_steps as decode_mod
from tracetriage.analyzers.analyses import framework as framework_mod
from tracetriage.analyzers.analyses import hotspots
from tracetriage.analyzers.analyses import ranges as ranges_mod
from tracetriage.analyzers.analyses import setup as setup_mod
from tracetriage.analyzers.analyses.copies_async import CopiesAsync
from tracetriage.analyzers.analyses.frames import SourceLine
from tracetriage.analyzers.analyses.graph_breaks import GraphBreaks
from tracetriage.analyzers.analyses.graph_capture import GraphCapture
from tracetriage.analyzers.analyses.hotspots import Hotspot
from tracetriage.analyzers.analyses.idle import DeviceIdle, dominant_cause
from tracetriage.analyzers.analyses.inductor import FusedKernel
from tracetriage.analyzers.analyses.inference import Inference
from tracetriage.analyzers.analyses.library_syncs import LibrarySyncs
from tracetriage.analyzers.analyses.peaks import non_gpu_accelerator
from tracetriage.analyzers.analyses.ranges import RangeStats
from tracetriage.analyzers.analyses.replay_clock import ReplayClock, ReplayGaps
from tracetriage.analyzers.analyses.roofline import RegimeVerdict, Roofline
from tracetriage.analyzers.analyses.sparse_syncs import CoalesceSyncs
from tracetriage.analyzers.analyses.steps import Steps
from tracetriage.analyzers.analyses.trial_kernels import Trials
from tracetriage.analyzers.analyses.weight_streaming import WeightStreaming
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.evidence import Evidence, FirstCall, RecurringCost
from tracetriage.analyzers.model.health import Health
from tracetriage.analyzers.model.span import PROFILER_STEP_RANGE
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, Trace
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.triage import recurring, sources
from tracetriage.analyzers.triage.execution import ExecutionNotes
from tracetriage.analyzers.triage.lever_choice import LeverChoice
from tracetriage.analyzers.triage.next_experiment import NextExperiment
from tracetriage.analyzers.triage.overhead import ProfilerOverhead
from tracetriage.analyzers.triage.pace import Pace
from tracetriage.analyzers.triage.phases import Phases
from tracetriage.analyzers.triage.sources import SourceLines
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import LEVERS, module_round_trip

SYNC_OVERLAP_FLOOR = 0.05  # the Idle line names syncs that serialise this share of the span or more
SETUP_NAMED = 0.05        # one-time set-up this large a share of the span is named in a caveat
RECURRING_ITEM = 0.01     # a recurring first-call cost is named where its first call holds this share of the span
COPIES_NAMED = 0.05       # copies' idle this large a share of the span: say that copies count as compute idle
CONSTRUCT_NAMED = 0.25    # a framework construct holding this share of the idle is named in the Idle line
CONSTRUCT_COVERS_ALL = 0.9   # ... unless it made this share of the launches outside the set-up: it names no part
RANGE_IDLE_NAMED = 0.10   # a named range holding this share of the idle is named where ranges split it
SYNC_DRAIN_FLOOR = 0.05   # sync drains under this share of the span: the syncs cost the overlap they prevent


@dataclass(frozen=True)
class HostOnly:
    """A trace with no GPU activity: what its host did."""
    ops: int
    span_ns: int
    busy_ns: int
    hotspots: tuple[Hotspot, ...]



@dataclass(frozen=True)
class Analysis:
    trace: Trace
    devices: tuple[DeviceIdle, ...]
    span_ns: int
    kernel_busy_ns: int
    copy_ns: int
    idle_ns: int
    by_cause_ns: dict[Cause, int]
    hotspots: tuple[Hotspot, ...]       # by the op that launched the work
    top_kernels: tuple[Hotspot, ...]
    ranges: tuple[RangeStats, ...]
    range_verdicts: dict[str, RegimeVerdict]
    phases: Phases | None
    roof: Roofline
    verdict: RegimeVerdict
    range_filter: str | None
    host_only: HostOnly | None
    levers: whatif.Levers | None         # every what-if lever replayed on this trace (None: no GPU timeline)
    lever_choices: tuple[LeverChoice, ...]   # ... as the report weighs them, largest saving first
    next_experiment: NextExperiment
    range_kernels: int | None = None    # --range: the range's own kernels (None: the whole trace's)
    framework: framework_mod.Framework | None = None   # whose code made the idle and the launches
    graph_capture: GraphCapture | None = None   # the CUDA-graph captures the trace holds (None: it holds none)
    steps: Steps | None = None          # the iterations (tracetriage.analyzers.analyses.steps);
                                        # None: --range, or no timeline
    inference: Inference | None = None  # prefill and decode from the ops' shapes
                                        # (tracetriage.analyzers.analyses.inference)
    source_lines: SourceLines | None = None   # the user's own frames (tracetriage.analyzers.triage.sources);
                                              # None: no stacks
    fused_kernels: dict[str, FusedKernel] = field(default_factory=dict)   # Inductor kernels -> the ATen ops fused
    health: Health | None = None        # is the trace whole (tracetriage.analyzers.analyses.health); None: not checked
    profiler: ProfilerOverhead | None = None   # the profiler's own cost and the run without it (None: no replay)
    execution: ExecutionNotes | None = None    # the top kernel's occupancy, a transposed copy costed both ways
    weight_streaming: WeightStreaming | None = None   # products of a few rows with big weights hold the memory time
                                               # (tracetriage.analyzers.triage.execution), where they matter
    memset_ns: int = 0                  # the device's time in memsets: device work, in kernel_busy_ns, not copy_ns
    dtod_ns: int = 0                    # ... in device-to-device copies: device work too (copy_ns is over the link)
    graph_breaks: GraphBreaks | None = None   # each steady step enters several compiled regions
                                              # (tracetriage.analyzers.analyses.graph_breaks)
    pace: Pace | None = None            # who sets the pace: the host's window, the launch queue, the kernels
                                        # (tracetriage.analyzers.triage.pace); None: no GPU timeline
    copies_async: CopiesAsync | None = None   # the copies over the link: pinned and async already? any kernel?
    coalesce_syncs: CoalesceSyncs | None = None   # syncs inside coalescing a sparse COO operand (sparse_syncs)
    library_syncs: LibrarySyncs | None = None     # syncs a library's machinery issued, reading no value (library_syncs)
    trials: Trials | None = None        # cuDNN's benchmark trial kernels, out of the regime's split (trial_kernels)
    replay_clock: ReplayClock | None = None   # graph replays whose kernel stamps are laid end to end (replay_clock)
    replay_gaps: ReplayGaps | None = None     # the gaps inside and between replays holding most kernels (replay_clock)
    compile_cache: compile_cache_mod.CompileCache | None = None   # cache hits, Dynamo's own time (compile_cache)
    steps_apart: tuple = ()             # steps outside the loop and set-up, longer than its max (steps_apart)
    decode: decode_mod.DecodeSteps | None = None   # an engine's GPU-bound decode of a few sequences, its kernels
                                                   # mostly matrix products (analyses.decode_steps)

    @property
    def next_source(self) -> SourceLine | None:
        """The user's frame the Next line names (a trace with stacks only)."""
        nx = self.next_experiment
        knob = LEVERS[nx.lever.lever].knob if nx.lever is not None else None
        cause = knob.where if knob is not None else nx.cause   # a knob's line: where its evidence sits
        return sources.next_line(nx.kind, cause, self.source_lines, self.hotspots, knob.ops if knob else (),
                                 by_range=bool(self.idle_by_range))

    @property
    def idle_share(self) -> float:
        return self.idle_ns / self.span_ns if self.span_ns else 0.0

    @property
    def dominant(self) -> Cause | None:
        return dominant_cause(self.by_cause_ns, self.idle_ns)

    @property
    def evidence(self) -> dict[Cause, Evidence]:
        """Evidence of the device with the most idle time (the one the report speaks of)."""
        return recurring.evidence_of(self.devices)

    @property
    def serialising_syncs(self) -> LeverChoice | None:
        """remove_syncs, when the syncs serialise host work with GPU work worth naming beside another cause."""
        c = next((x for x in self.lever_choices if LEVERS[x.lever].cause is Cause.SYNCHRONIZATION), None)
        if c is None or self.dominant is Cause.SYNCHRONIZATION or c.nothing_to_act_on \
                or c.saving_ns < SYNC_OVERLAP_FLOOR * c.baseline_ns:
            return None
        # host work overlaps GPU work only as far as there is GPU work: an overlap longer than the device's work is
        # not what removing the syncs buys (heldout-user3 cs521_induction_a10g: 'overlaps 2.64 s' beside 62 µs of
        # GPU work, a cold start whose host time is compiling)
        if c.saving_ns > self.kernel_busy_ns + self.copy_ns:
            return None
        # ... nor longer than the device's idle: what the overlap removes is idle the host's waits left on the GPU
        # (heldout-user9 vllm_h100: 'overlaps 40.3 ms' where the whole in-window idle was 28.6 ms; the rest was the
        # host's time before the first and after the last GPU activity, outside any step)
        if c.saving_ns > self.idle_ns:
            return None
        # ... nor the pageable copies' own syncs where the copies are a module moved to the host and back: they go
        # with the copies, not apart (fresh8 t2i_text_encoder_offload: 'removing them overlaps 78.7 ms')
        return None if module_round_trip.owns_syncs(self.levers, c.only) else c

    @property
    def kernels(self) -> int:
        if self.range_kernels is not None:
            return self.range_kernels
        return int(np.sum(self.trace.ev.cat == KERNEL))

    @property
    def warmup(self) -> tuple[FirstCall, ...]:
        return recurring.warmup(self.devices)

    @property
    def warmup_share(self) -> float:
        return recurring.warmup_share(self.devices, self.span_ns)

    @property
    def setup_worth_naming(self) -> bool:
        return self.warmup_share >= SETUP_NAMED

    @functools.cached_property
    def setup_outside(self) -> tuple[FirstCall, ...]:
        """Set-up windows outside the GPU span, as first calls (analyses.setup.outside_span): the caveat names them
        beside the first calls inside it, where they count in its share. Only looked for where the caveat is said."""
        if not self.devices or not self.setup_worth_naming:
            return ()
        return setup_mod.outside_span(self.trace, min(d.span_start for d in self.devices),
                                      max(d.span_end for d in self.devices))

    @property
    def recurring_setup(self) -> tuple[RecurringCost, ...]:
        """First calls whose cost later profiled steps pay again (analyses.first_calls), where their first calls hold
        SETUP_NAMED of the span or more: named as per-shape costs, never as one-time set-up."""
        if not self.devices:
            return ()
        found = max(self.devices, key=lambda d: d.idle_ns).setup
        # (each named one holds RECURRING_ITEM of the span: a 93 µs aten::to beside a 457 ms convolution is noise)
        found = tuple(r for r in (found.recurring if found is not None else ())
                      if r.first_call_us * 1e3 >= RECURRING_ITEM * self.span_ns)
        return found if sum(r.first_call_us for r in found) * 1e3 >= SETUP_NAMED * self.span_ns else ()

    @property
    def accelerator(self) -> str | None:
        """A non-GPU accelerator the trace was recorded on (MTIA, Gaudi, TPU), else None."""
        return non_gpu_accelerator(self.trace.device_names.values(), self.trace.names)

    @property
    def copies_count_as_idle(self) -> bool:
        """Copies hold idle worth saying that a copy on its own engine does not keep compute busy."""
        transfer = self.by_cause_ns.get(Cause.DATA_TRANSFER, 0)
        return (self.dominant is Cause.DATA_TRANSFER or transfer >= COPIES_NAMED * self.span_ns) and self.copy_ns > 0

    @property
    def sync_cost_is_lost_overlap(self) -> bool:
        """The syncs' drains are a sliver, but host work they serialise is there: what they cost is the overlap."""
        gain = self.next_experiment.gain_share
        return gain < SYNC_DRAIN_FLOOR and bool(self.evidence[Cause.HOST_WORK].gaps)

    @property
    def construct_named(self) -> framework_mod.ConstructShare | None:
        """The framework construct (not set-up, not the user's own code) that made enough of the idle to name."""
        return framework_mod.construct_to_name(self.framework, CONSTRUCT_NAMED, CONSTRUCT_COVERS_ALL)

    @property
    def above_peak(self) -> tuple:
        """Ops whose cost would put them above the device's peak: attribution errors, left out of the vote."""
        return self.roof.above_peak

    @property
    def named_ranges(self) -> list[RangeStats]:
        """The user's own named ranges that ran kernels (not the profiler's ProfilerStep, not `## ` markers)."""
        return [r for r in self.ranges
                if r.name != PROFILER_STEP_RANGE and not r.name.startswith("## ") and r.kernel_busy_us > 0]

    @property
    def idle_by_range(self) -> tuple[tuple[str, float], ...]:
        """The user's named ranges that split the idle (analyses.ranges.idle_split): their names say where the idle
        sits better than one frame's call where every block is one function (heldout-user15 gh200_encoder: 'in your
        code: the `Sequential(...)` in `forward`', the MLP's 23%, where Self-Attention held 33%)."""
        return ranges_mod.idle_split(self.named_ranges, self.idle_ns, self.trace.ev, RANGE_IDLE_NAMED)



def host_only_of(trace: Trace) -> HostOnly:
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if len(ops) == 0:
        return HostOnly(0, 0, 0, ())
    top_s, top_e = iv.union(ev.start[ops], ev.end[ops])
    outer = ops[np.searchsorted(ev.start[ops], top_s)]
    hot = hotspots.group(trace, outer, ev.name[outer], lambda k: trace.names[k], 3)
    return HostOnly(len(ops), int(ev.end[ops].max() - ev.start[ops].min()), iv.total(top_s, top_e), hot)
