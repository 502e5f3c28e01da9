"""The triage: one Analysis of a trace, typed and frozen, built finished.

    analysis = analyze_file("traces/smell-sync-item.json.gz")
    print("\n".join(voice.five_lines(analysis)))      # the five-line report
    serialize.report(analysis)                         # the `--json` object

Everything a report, a dashboard or a drill grader shows comes from here: the idle
gaps with their causes and evidence (tracetriage.analyzers.analyses.idle), hotspots, named ranges,
roofline points, the regime and the next experiment. Consumers read fields, never
sentences (tracetriage.analyzers.voice says them), and never re-derive a number.
"""
from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

# numpy.ma: numpy 2's np.unique imports it on its first plain call (10-15 ms of CPU); imported here, among the modules
# the command line imports while the read-ahead gunzips, so the levers' forked child (whatif.aside) inherits it
# instead of importing it again beside the analyses
import numpy as np
import numpy.ma  # noqa: F401

from tracetriage.analyzers.analyses import compile_cache as compile_cache_mod
from tracetriage.analyzers.analyses import decode_steps as decode_mod
from tracetriage.analyzers.analyses import framework as framework_mod
from tracetriage.analyzers.analyses import graph_breaks as breaks_mod
from tracetriage.analyzers.analyses import graph_capture as capture_mod
from tracetriage.analyzers.analyses import health as health_mod
from tracetriage.analyzers.analyses import hotspots, loader_start, steps_apart
from tracetriage.analyzers.analyses import idle as idle_mod
from tracetriage.analyzers.analyses import inference as inference_mod
from tracetriage.analyzers.analyses import ranges as ranges_mod
from tracetriage.analyzers.analyses import roofline as roof_mod
from tracetriage.analyzers.analyses import setup as setup_mod
from tracetriage.analyzers.analyses import steps as steps_mod
from tracetriage.analyzers.analyses.cold_cause import ColdCause, cold_causes
from tracetriage.analyzers.analyses.copies_async import CopiesAsync, copies_async
from tracetriage.analyzers.analyses.frames import SourceLine
from tracetriage.analyzers.analyses.graph_breaks import GraphBreaks
from tracetriage.analyzers.analyses.graph_capture import GraphCapture
from tracetriage.analyzers.analyses.hotspots import Hotspot
from tracetriage.analyzers.analyses.idle import DeviceIdle, dominant_cause
from tracetriage.analyzers.analyses.inductor import FusedKernel
from tracetriage.analyzers.analyses.inference import Inference
from tracetriage.analyzers.analyses.library_syncs import LibrarySyncs, library_syncs
from tracetriage.analyzers.analyses.peaks import non_gpu_accelerator
from tracetriage.analyzers.analyses.ranges import RangeStats
from tracetriage.analyzers.analyses.replay_clock import ReplayClock, ReplayGaps, replay_clock, replay_gaps
from tracetriage.analyzers.analyses.roofline import RegimeVerdict, Roofline
from tracetriage.analyzers.analyses.sparse_syncs import CoalesceSyncs, coalesce_syncs
from tracetriage.analyzers.analyses.steps import Steps
from tracetriage.analyzers.analyses.trial_kernels import Trials, trial_kernels
from tracetriage.analyzers.analyses.weight_streaming import WeightStreaming, weight_streaming
from tracetriage.analyzers.loading import forked
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.loading.merged import MergedRanks
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.evidence import Evidence, FirstCall, RecurringCost
from tracetriage.analyzers.model.health import Health, Verdict
from tracetriage.analyzers.model.health import Problem as HealthProblem
from tracetriage.analyzers.model.rework import Rework
from tracetriage.analyzers.model.span import PROFILER_STEP_RANGE
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, MEMSET, Trace, thread_key
from tracetriage.analyzers.model.verdicts import (
    CAUSES,
    EXPERIMENT_FOR_CAUSE,
    LOOP_IDLES_TOO,
    Cause,
    Construct,
    Experiment,
    Regime,
)
from tracetriage.analyzers.triage import execution as execution_mod
from tracetriage.analyzers.triage import healthy as healthy_mod
from tracetriage.analyzers.triage import overhead as overhead_mod
from tracetriage.analyzers.triage import recurring, rework_first, sources, unprofiled_choice
from tracetriage.analyzers.triage.arithmetic_left import ArithmeticWell, arithmetic_well
from tracetriage.analyzers.triage.bounds import kernel_headroom as _kernel_headroom
from tracetriage.analyzers.triage.bounds import mixed_precision_floor as _mixed_precision_floor
from tracetriage.analyzers.triage.bounds import unknown_bound_next as _unknown_bound_next
from tracetriage.analyzers.triage.bytes_left import BytesMovedWell, moved_well
from tracetriage.analyzers.triage.execution import ExecutionNotes
from tracetriage.analyzers.triage.launch_queue import DryQueue
from tracetriage.analyzers.triage.lever_choice import (
    KNOB_BEFORE_REWRITE,
    LEVER_FLOOR,
    LeverChoice,
    removal_first,
    steady_state_readable,
)
from tracetriage.analyzers.triage.overhead import ProfilerOverhead
from tracetriage.analyzers.triage.pace import Pace, pace
from tracetriage.analyzers.triage.phases import Phases, phases_of_ranges, phases_of_shapes
from tracetriage.analyzers.triage.regime_withheld import withhold_regime
from tracetriage.analyzers.triage.sources import SourceLines
from tracetriage.analyzers.triage.warm_price import priced_by_setup_idle
from tracetriage.analyzers.triage.waste import waste_beside_words, weeks_waste
from tracetriage.analyzers.whatif import aside, depgraph
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import (
    CUDA_GRAPHS,
    HEADROOM,
    LEVERS,
    blocks_graphs,
    module_round_trip,
)
from tracetriage.analyzers.whatif.windows import predict_windows

IDLE_LEVER_FLOOR = 0.05   # an idle cause worth less than 5% of the span is never "the" lever
WARMUP_IS_THE_LEVER = 0.25  # one-time set-up this large a share of the span: warm up first
REWRITE = 3               # a lever of this effort is a restructure of the user's code (CUDA graphs, moving host work)
TIE = 0.01                # two predictions this close (share of the span) tie: the dominant cause's fix is picked
OFF_CAUSE_KNOB_GIVES_WAY = 1   # a knob on a cause that is not the dominant one gives way to a dominant-cause rewrite
                               # saving more (this many times as much)
KNOB_BESIDE_IDLE = 5      # a knob saving under CLOSE_CALL gives way to an idle cause holding 5x its share of the span
CLOSE_CALL = 0.05         # predictions this close (share of the span) are one: the replay is checked to 0.05, so
                          # within it the smaller change to the user's code is the Next
IDLE_SLACK = 1.1          # a host-side fix's saving may pass the idle it removes by the replay's error, no more
LEVER_FLOOR_NS = 100_000  # ... and by 0.1 ms (a launch's worth of dispatch a few hundred times over)
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
class NextExperiment:
    kind: Experiment
    cause: Cause | None          # the idle cause it removes, when it is an idle lever
    gain_share: float            # the share of the span that cause (or the set-up) holds
    lever: LeverChoice | None = None   # the fix the replay predicts saves most, among those the trace calls for
    waste: LeverChoice | None = None   # the lever, acting on something here, that predicts the least
    headroom: LeverChoice | None = None   # kernels_2x, said beside the fix when faster kernels would buy more
    dominant: LeverChoice | None = None   # the dominant cause's own lever, when another beats it
    construct: Construct | None = None    # where the fix's idle sits (the DataLoader, Optimizer.step, ...)
    close_call: LeverChoice | None = None  # a fix predicted within CLOSE_CALL of it, for another cause
    then: LeverChoice | None = None       # the bigger change that would save more, said after the knob in hand
    knob_beside: LeverChoice | None = None  # the knob in hand, said beside a rewrite that saves far more
    own_fix: "NextExperiment | None" = None   # FIND_STRAGGLER: what this rank's own timeline calls for (its peers
                                              # set the pace, but the user gets a fix before the multi-rank run)
    cold: ColdCause | None = None   # WARM_UP: the dominant idle cause, held by the first of the loop's steps
    healthy: healthy_mod.Healthy | None = None   # no lever saves LEVER_FLOOR without the profiler (triage.healthy)
    moved_well: BytesMovedWell | None = None     # FEWER_BYTES: every way it names is taken already (bytes_left)
    arithmetic_well: ArithmeticWell | None = None   # CHEAPER_ARITHMETIC: the cores are fed already (arithmetic_left)
    then_joint_ratio: float | None = None   # the Next's fix and `then` made together, replayed (whatif.joint_ratio)
    rework: Rework | None = None   # re-done work in the op table that leads the Next (triage.rework_first)


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


def analyze_trace(trace: Trace, range_name: str | None = None,
                  peer_transfer_ns: tuple[int, ...] | None = None) -> Analysis:
    """One trace's analysis; `peer_transfer_ns`: a rank's collectives measured against every rank of its run
    (`report DIR`: what the fastest rank's same call took, per call), so its waiting for a peer is the run's."""
    if trace.merged_ranks:   # several ranks' GPUs and clocks in one file: each rank is analysed on its own
        raise MergedRanks(trace)
    window = ranges_mod.window_of(trace, range_name) if range_name else None
    # the levers' replays in a forked child meanwhile, on a large trace (tracetriage.analyzers.whatif.aside)
    early = aside.start(trace, lambda t, handed: _levers(t, handed=handed)) if range_name is None else None
    try:
        roof = None
        if range_name is None:
            # the roofline and the steps' search here, once for both processes, handed to the child: its levers'
            # knobs read the roofline (their peaks, the kernels' bytes), the warm_up lever the set-up steps; the
            # child builds its dependency graph meanwhile (at x5 0.09 s of these against the graph's 0.11 s: found
            # before the fork, they held back the child, the report's tail, by as long)
            roof = roof_mod.analyze(trace)
            found = steps_mod.search(trace)
            if early is not None:
                # ... and the levers' set-up windows, which only the child reads: the child's levers took longer than
                # the parent's analyses (x5: the parent waited 0.05-0.09 s for it), the windows ~0.035 s of them;
                # with the top-level ops the windows were found from (setup.top_level_ops), which the levers read
                # as the ops' sequence: 0.03-0.05 s of the child's CPU at x5 where it found them again, handed as
                # 1.3 MB of int64 rows (158k)
                early.hand((roof, found, setup_mod.setup_excess(trace), setup_mod.top_level_ops(trace)))
        return _analyze(trace, range_name, window, early, peer_transfer_ns, roof)
    finally:
        if early is not None:
            early.discard()


def _analyze(trace: Trace, range_name: str | None, window: tuple[int, int] | None,
             early: forked.Child | None, peer_transfer_ns: tuple[int, ...] | None = None,
             roof: Roofline | None = None) -> Analysis:
    devs = tuple(idle_mod.analyze(trace, window))
    ev = trace.ev
    span = sum(d.span_ns for d in devs)
    idle_ns = sum(d.idle_ns for d in devs)
    by_cause = {c: sum(d.by_cause_ns[c] for d in devs) for c in CAUSES}
    rng_all = tuple(ranges_mod.analyze(trace, list(devs)))
    busy, copy, range_kernels = sum(d.kernel_busy_ns for d in devs), sum(d.copy_ns for d in devs), None
    if range_name:
        sel = next(r for r in rng_all if r.name == range_name)
        rows = sel.gpu_rows
        # a repeating range: its instances only, not everything between the first and the last; every
        # figure of the report (span, busy, idle, evidence, kernel count) on those instances alone
        devs = tuple(idle_mod.within(trace, list(devs), *iv.union(*sel.windows), rows))
        span, busy = sum(d.span_ns for d in devs), sum(d.kernel_busy_ns for d in devs)
        copy, idle_ns = sum(d.copy_ns for d in devs), sum(d.idle_ns for d in devs)
        by_cause = {c: sum(d.by_cause_ns[c] for d in devs) for c in CAUSES}
        range_kernels = int(np.sum(ev.cat[rows] == KERNEL))
    else:
        rows = hotspots.gpu_rows(trace)
        if window is not None:
            rows = rows[(ev.end[rows] > window[0]) & (ev.start[rows] < window[1])]
    roof = roof if roof is not None else roof_mod.analyze(trace)
    # cuDNN's benchmark trials time candidate algorithms: not the workload's kernels, left out of the regime's split
    trials = trial_kernels(trace) if devs else None
    kernel_rows = rows[ev.cat[rows] == KERNEL]
    if trials is not None:
        kernel_rows = kernel_rows[~np.isin(kernel_rows, trials.rows)]
    verdict = roof_mod.regime(trace, roof, kernel_rows, idle_ns / span if span else 0.0,
                              None if range_name else peer_transfer_ns,
                              recurring.recurring_idle_share(devs, idle_ns, span))
    range_verdicts = {r.name: roof_mod.regime(trace, roof, r.gpu_rows[ev.cat[r.gpu_rows] == KERNEL], r.idle_share)
                      for r in rng_all}
    fw = framework_mod.analyze(trace, devs, _setup_windows(devs)) if devs else None
    steps = steps_mod.find(trace, devs, fw) if range_name is None else None
    health = health_mod.check(trace, steps)
    verdict = withhold_regime(verdict, health, roof_mod.guessed_why_us(trace, roof, kernel_rows))
    if verdict.kernel_us > 0 and verdict.uncosted_why_us.get("graph_replay", 0.0) > 0:
        health = dataclasses.replace(
            health, replayed_share=verdict.uncosted_why_us["graph_replay"] / verdict.kernel_us)
    # what reads no lever comes before the levers are waited for: the child replays them meanwhile
    capture = capture_mod.analyze(trace, devs) if devs else None
    inf = inference_mod.find(trace, steps, roof, devs, fw) if steps is not None and devs else None
    hot, kern = hotspots.by_op(trace, rows), hotspots.by_kernel(trace, rows)
    host_only = None if devs else _host_only(trace)
    source_lines = sources.source_lines(trace, rows, host_only.hotspots if host_only else hot, kern, devs,
                                        host_only is not None)
    fused_kernels = sources.fused_kernels(trace)
    pc = pace(trace, devs, rows, busy, span, verdict, roof.peaks, range_name is None and window is None, steps) \
        if devs else None
    loader_start_ns, tail_ns = loader_start.start_ns(trace) if devs else 0, _host_tail_ns(trace, devs)
    memsets = rows[ev.cat[rows] == MEMSET]
    memset_ns = iv.total(*iv.union(ev.start[memsets], ev.end[memsets])) if len(memsets) else 0
    dtod = rows[(ev.cat[rows] != KERNEL) & (ev.cat[rows] != MEMSET) & idle_mod.on_device(trace, rows)]
    dtod_ns = iv.total(*iv.union(ev.start[dtod], ev.end[dtod])) if len(dtod) else 0
    # (library_syncs alone ~0.03 s of the 293 MB trace's: found here, while the child still replays the levers)
    phases = None if range_name else (phases_of_ranges(rng_all, range_verdicts) or phases_of_shapes(inf))
    streaming, breaks = weight_streaming(roof.points), breaks_mod.find(trace, steps)
    async_copies = copies_async(trace) if devs and by_cause.get(Cause.DATA_TRANSFER, 0) else None
    coalesced = coalesce_syncs(trace) if devs and by_cause.get(Cause.SYNCHRONIZATION, 0) else None
    lib_syncs = library_syncs(trace) if devs else None
    clock = replay_clock(trace) if devs and not range_name else None
    gaps = replay_gaps(trace) if devs and not range_name else None
    decode = decode_mod.find(trace, rng_all, steps, kernel_rows) if steps is not None and devs else None
    apart = steps_apart.apart(trace, steps)
    cache = compile_cache_mod.find(trace) if fw is not None and fw.first_compilations else None
    # (the op table's re-done work, ~0.035 s of the 293 MB trace's, reads no lever: found before they are waited for)
    rework = rework_first.found(trace, kernel_rows, fw) if devs and not range_name else None
    levers = (_range_levers(trace, sel, span) if range_name else _levers_of(trace, early, roof)) \
        if devs and not health.withheld(Verdict.WHATIF) else None
    choices = tuple(weigh_levers(levers)) if levers else ()
    dry = pc.dry if pc is not None else None
    choose = partial(choose_next, devs, by_cause, span, busy, idle_ns, verdict, roof, levers, fw=fw, capture=capture,
                     health=health, steps=steps, dry=dry, decode=decode,   # (the Next of the weighed fixes it is given)
                     loader_start_ns=loader_start_ns, tail_ns=tail_ns)
    nx = choose(choices)
    nx = nx if range_name else unprofiled_choice.by_unprofiled(nx, choose, choices, levers, trace, LEVER_FLOOR)
    nx = unprofiled_choice.with_unprofiled(nx, levers, trace)
    prof = overhead_mod.analyze(trace, levers, idle_ns / span if span else 0.0, verdict.regime,
                                dominant_cause(by_cause, idle_ns), window) if devs and not range_name else None
    nx = healthy_mod.no_lever_without_profiler(nx, levers, trace, choices, prof, verdict.regime, LEVER_FLOOR,
                                               lambda c: _calls_for(c, by_cause, idle_ns, _host_tail_ns(trace, devs)))
    if nx.then is not None and nx.lever is not None and nx.kind is not Experiment.WARM_UP and levers is not None:
        # what the bigger change adds once the knob is made: each lever alone prices some of the same time
        nx = dataclasses.replace(nx, then_joint_ratio=whatif.joint_ratio(levers, trace, nx.lever.lever, nx.then.lever))
    if nx.kind is Experiment.FEWER_BYTES and nx.lever is None and nx.healthy is None and devs and decode is None:
        well = moved_well(trace, rows[ev.cat[rows] == KERNEL], verdict.dtype, busy / span if span else 0.0, choices,
                          LEVER_FLOOR, HEADROOM)
        nx = dataclasses.replace(nx, moved_well=well)
    if nx.kind is Experiment.CHEAPER_ARITHMETIC and nx.lever is None and nx.healthy is None and devs:
        fed = arithmetic_well(verdict, roof.peaks, busy / span if span else 0.0, choices, LEVER_FLOOR, HEADROOM)
        nx = dataclasses.replace(nx, arithmetic_well=fed)
    if devs and not range_name:   # the op table's re-done work, where removing it bounds more (triage.rework_first)
        nx = rework_first.lead(nx, rework, busy / span if span else 0.0,
                               by_cause.get(Cause.LAUNCH_OVERHEAD, 0) / span if span else 0.0)
    execution = None if range_name else execution_mod.notes(trace, roof, verdict.regime, rows[ev.cat[rows] == KERNEL],
                                                            nx.kind)
    return Analysis(trace=trace, devices=devs, span_ns=span, kernel_busy_ns=busy, copy_ns=copy, memset_ns=memset_ns,
                    dtod_ns=dtod_ns, idle_ns=idle_ns, by_cause_ns=by_cause, hotspots=hot,
                    top_kernels=kern, ranges=rng_all, range_verdicts=range_verdicts, phases=phases,
                    roof=roof, verdict=verdict, range_filter=range_name,
                    host_only=host_only, levers=levers, lever_choices=choices,
                    next_experiment=nx,
                    range_kernels=range_kernels, framework=fw, graph_capture=capture, steps=steps, inference=inf,
                    source_lines=source_lines, fused_kernels=fused_kernels, health=health, profiler=prof,
                    execution=execution, weight_streaming=streaming, decode=decode, steps_apart=apart,
                    compile_cache=cache, graph_breaks=breaks, pace=pc,
                    copies_async=async_copies, coalesce_syncs=coalesced, library_syncs=lib_syncs, trials=trials,
                    replay_clock=clock, replay_gaps=gaps)


def _setup_windows(devs) -> tuple:
    """Every device's one-time set-up stretches on the host: (starts, ends, thread keys)."""
    ups = [d.setup for d in devs if d.setup is not None and len(d.setup.start)]
    if not ups:
        z = np.empty(0, np.int64)
        return z, z, z
    cat = np.concatenate
    key = cat([thread_key(u.pid, u.tid) for u in ups])
    return cat([u.start for u in ups]), cat([u.end for u in ups]), key


def _levers(trace: Trace, roof: Roofline | None = None, handed=None) -> whatif.Levers | None:
    """Every lever replayed; None when most GPU work has no launch call in the trace (the graph
    would not know what issued it, so no replay of it predicts anything). `handed`: in the levers' forked child,
    what waits for the parent's roofline and steps' search (analyze_trace), asked once the graph is built."""
    if _levers_unreadable(trace):
        return None
    try:
        if handed is None:
            return whatif.predict_levers(trace, roof)
        graph = depgraph.build(trace)
        roof, found, excess, top_ops = handed()
        steps_mod.search.remember(trace, found)
        setup_mod.setup_excess.remember(trace, excess)
        setup_mod.top_level_ops.remember(trace, top_ops)
        return whatif.predict_levers(trace, roof, graph)
    except whatif.WhatIfError:
        return None


def _levers_of(trace: Trace, early: forked.Child | None, roof: Roofline | None = None) -> whatif.Levers | None:
    """The levers the child replayed (tracetriage.analyzers.whatif.aside), else replayed here."""
    if early is not None:
        done, levers = early.result()
        if done:
            return levers
    return _levers(trace, roof)


def _range_levers(trace: Trace, sel: RangeStats, span_ns: int) -> whatif.Levers | None:
    """Every lever replayed on the whole trace, its saving read inside the range's instances and stated on
    the range's own span (tracetriage.analyzers.whatif.windows)."""
    if _levers_unreadable(trace) or sel.instances is None or not span_ns:
        return None
    try:
        w = predict_windows(trace, sel.instances, sel.windows[1], span_ns)
    except whatif.WhatIfError:
        return None
    return whatif.Levers(w, None, None)


def _levers_unreadable(trace: Trace) -> bool:
    """Most GPU work has no launch call in the trace: the graph would not know what issued it."""
    return any(c.kind == "unlinked_gpu" and 2 * c.count > c.total for c in trace.caveats)


def analyze_file(path: str | os.PathLike, range_name: str | None = None,
                 graph_capture: str | os.PathLike | None = None,
                 peer_transfer_ns: tuple[int, ...] | None = None) -> Analysis:
    """`graph_capture`: a separate trace of the CUDA-graph captures that `path` replays (vLLM and SGLang
    write one), whose ops the replayed kernels are charged to."""
    from tracetriage.analyzers.loading.graphs import with_capture
    from tracetriage.analyzers.loading.progress import bar

    with bar(Path(path)) as advance:
        trace = load(path, progress=advance)
        if graph_capture is not None:
            trace = with_capture(trace, load(graph_capture))
        advance("analyse")
        return analyze_trace(trace, range_name, peer_transfer_ns)


# --- prefill / decode ------------------------------------------------------------

# --- a CPU-only trace ----------------------------------------------------------------

def _host_only(trace: Trace) -> HostOnly:
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if len(ops) == 0:
        return HostOnly(0, 0, 0, ())
    top_s, top_e = iv.union(ev.start[ops], ev.end[ops])
    outer = ops[np.searchsorted(ev.start[ops], top_s)]
    hot = hotspots.group(trace, outer, ev.name[outer], lambda k: trace.names[k], 3)
    return HostOnly(len(ops), int(ev.end[ops].max() - ev.start[ops].min()), iv.total(top_s, top_e), hot)


# --- the next experiment -----------------------------------------------------------

# The Next kinds a rank waiting for its peers is given as its own fix beside the straggler: changes in its own code
# with a replayed prediction (never faster kernels, which the straggler's waste rules out).
OWN_FIX_KINDS = frozenset({Experiment.CUT_LAUNCHES, Experiment.MOVE_HOST_WORK, Experiment.REMOVE_SYNCS,
                           Experiment.OVERLAP_COPIES, Experiment.FUSE_OPTIMIZER, Experiment.FUSE,
                           Experiment.COMPILE_ONCE, Experiment.TURN_KNOB})


def choose_next(devs, by_cause: dict[Cause, int], span_ns: int, busy_ns: int, idle_ns: int, v: RegimeVerdict,
                roof: Roofline, levers: whatif.Levers | None = None,
                choices: tuple[LeverChoice, ...] = (), fw: framework_mod.Framework | None = None,
                capture: GraphCapture | None = None, health: Health | None = None,
                collectives: bool = True, steps: Steps | None = None, dry: DryQueue | None = None,
                loader_start_ns: int = 0, tail_ns: int = 0, steady_read: bool = False,
                decode: decode_mod.DecodeSteps | None = None) -> NextExperiment:
    """The one experiment that would help most, as a fix the user can make.

    Warm-up first when one-time set-up holds a quarter of the span (the steady state never pays it), or
    profile the replays when a CUDA-graph capture is what the profile holds. A communication-bound span's
    experiment is about its collectives (communication_next). Then, among the fixes the trace calls for
    (a lever acting on something here; an idle lever only when its cause holds a tenth of the idle), the
    one the replay predicts saves most; faster kernels (kernels_2x) are headroom, said beside it when they
    would buy more, never the fix. The dominant cause's own lever is named beside a fix that beats it.
    Would waste the week: the lever that acts on something here and predicts least. Without a fix worth
    naming: the idle cause, then the regime.
    """
    if not devs:
        on_cpu = health is not None and health.has(HealthProblem.WORKLOAD_ON_CPU)
        return NextExperiment(Experiment.MOVE_TO_GPU if on_cpu else Experiment.CAPTURE_ON_GPU, None, 0.0)
    warm = 0.0 if steady_read else recurring.warmup_share(devs, span_ns)
    by_name = {c.lever: c for c in choices}
    warm_priced = next((c for c in choices if LEVERS[c.lever].experiment is Experiment.WARM_UP and c.baseline_ns), None)
    cold_share = max(warm, warm_priced.saving_ns / warm_priced.baseline_ns if warm_priced is not None else 0.0)
    if not steady_read and cold_share >= WARMUP_IS_THE_LEVER \
            and steady_state_readable(choices, busy_ns, span_ns, warm, cold_share):
        # the set-up is a caveat there, not the experiment: the work without it still shows its bound, and a knob
        # on it (heldout-user15 switch_moe_8k: 43% of the span cold start, the rest 91% busy in fp32 SGEMMs on an
        # A100, TF32 -40%, was told to warm up and profile again, which speeds up nothing)
        steady = tuple(c for c in choices if LEVERS[c.lever].experiment is not Experiment.WARM_UP)
        return choose_next(devs, by_cause, span_ns, busy_ns, idle_ns, v, roof, levers, steady, fw, capture, health,
                           collectives=collectives, steps=steps, dry=dry, loader_start_ns=loader_start_ns,
                           tail_ns=tail_ns, steady_read=True)
    if warm >= WARMUP_IS_THE_LEVER:
        # its prediction, where its replay finds the set-up to take out
        lever = next((c for c in choices if LEVERS[c.lever].experiment is Experiment.WARM_UP), None)
        lever = priced_by_setup_idle(lever if lever is not None and lever.assumption.count > 0 else None, devs)
        loop = _steady_loop_fix(steps, choices, by_cause, idle_ns)
        # where the steps after the cold start idle LOOP_IDLES_TOO of each, their gaps recur: the waste is a lever,
        # not "what this profile shows"
        waste = weeks_waste(choices, loop or lever, _replays_graphs(devs)) if _loop_gaps_recur(steps) else None
        return NextExperiment(Experiment.WARM_UP, None, warm, construct=Construct.SETUP, lever=lever, then=loop,
                              waste=waste)
    if capture is not None and capture.is_the_profile:   # a graph capture is set-up too: profile the replays
        return NextExperiment(Experiment.PROFILE_REPLAYS, None, capture.share)
    comm = communication_next(v, span_ns, choices) if collectives else None
    if comm is not None and comm.kind is Experiment.FIND_STRAGGLER:
        # the peers set the pace, but this rank's own timeline has its fix: said beside, the straggler first
        own = choose_next(devs, by_cause, span_ns, busy_ns, idle_ns, v, roof, levers, choices, fw, capture, health,
                          collectives=False, steps=steps, dry=dry, loader_start_ns=loader_start_ns, tail_ns=tail_ns)
        return dataclasses.replace(comm, own_fix=own if own.lever is not None and own.kind in OWN_FIX_KINDS else None)
    if comm is not None:
        return comm
    dom = dominant_cause(by_cause, idle_ns)
    launch_bound = dom is Cause.LAUNCH_OVERHEAD and v.regime is Regime.OVERHEAD   # (fusion is no week's waste there)
    cold = cold_causes(steps)
    warm_lever = next((c for c in choices if LEVERS[c.lever].experiment is Experiment.WARM_UP
                       and _calls_for(c, by_cause, idle_ns, tail_ns)
                       and loader_start_ns < loader_start.START_HOLDS * c.saving_ns), None)
    if dom in cold and cold[dom].first_ns >= IDLE_LEVER_FLOOR * span_ns and warm_lever is None:
        return NextExperiment(Experiment.WARM_UP, None, cold[dom].first_ns / span_ns, construct=Construct.SETUP,
                              cold=cold[dom])
    if levers is not None and choices:
        # (a warm-up that mostly takes out a DataLoader's workers starting is no fix: each epoch starts them again;
        # no launch cut where the queue ran dry in too little of the span to fill: triage.launch_queue)
        full = dry is not None and dry.fills_little
        fixes = [c for c in choices if (c is warm_lever or LEVERS[c.lever].experiment is not Experiment.WARM_UP)
                 and _calls_for(c, by_cause, idle_ns, tail_ns) and LEVERS[c.lever].cause not in cold
                 and not (full and LEVERS[c.lever].experiment is None
                          and LEVERS[c.lever].cause is Cause.LAUNCH_OVERHEAD)]
        # a check per layer read on the host, a distribution's argument check, or a round trip through the host for a
        # reduction or another op, splits the step: no CUDA graph replays it as one until they are off
        graphs_blocked = any(blocks_graphs(c.lever, c.assumption) for c in choices)
        if graphs_blocked:
            fixes = [c for c in fixes if c.lever != CUDA_GRAPHS]
        best = fixes[0] if fixes and fixes[0].saving_ns >= LEVER_FLOOR * fixes[0].baseline_ns else None
        head = by_name.get(HEADROOM)
        if best is not None and head is not None and best.saving_ns < CLOSE_CALL * best.baseline_ns \
                and head.saving_ns >= 2 * best.saving_ns:
            best = None      # a fix within the replay's error of nothing, beside kernel time that is the span
        dom_share = by_cause.get(dom, 0) / span_ns if dom is not None and span_ns else 0.0
        if best is not None and LEVERS[best.lever].knob is not None and best.saving_ns < CLOSE_CALL * best.baseline_ns \
                and dom_share >= KNOB_BESIDE_IDLE * best.saving_ns / best.baseline_ns:
            best = None      # a knob within the replay's error of nothing, beside an idle cause that holds the span
        runner_up = None
        if best is not None:
            # within the replay's error, the smaller change to the user's code (a call or a flag before a restructure)
            close = [c for c in fixes if best.saving_ns - c.saving_ns < CLOSE_CALL * best.baseline_ns
                     and c.saving_ns >= LEVER_FLOOR * c.baseline_ns]
            # ... and of two changes that tie (within TIE of the span), the one on the Idle line's own dominant cause
            # (a public RTX 3080 MLP at batch 16: host work -42.1% and CUDA graphs -41.7%, launch overhead the
            # dominant cause); fixes/sleep_ahead's host work at -9% still goes before CUDA graphs' -4%
            def tie_group(c: LeverChoice) -> int:
                ties = best.saving_ns - c.saving_ns < TIE * best.baseline_ns
                return (0 if LEVERS[c.lever].cause is dom else 1) if ties else 2

            pick = min(close, key=lambda c: (LEVERS[c.lever].effort, tie_group(c), -c.saving_ns))
            if pick.lever != best.lever:
                # (beside a warm-up, a lever that prices the same cold start's stretches is no alternative: heldout-
                # user6 rtx4090d_resnet_compiled's host work was all in its first step)
                best, runner_up = pick, None if LEVERS[pick.lever].experiment is Experiment.WARM_UP else best
        then = beside = None
        if best is not None and LEVERS[best.lever].effort >= REWRITE:
            # a knob in hand (a one-line change the trace shows applies, with its prediction) goes before a large
            # rewrite that saves up to KNOB_BEFORE_REWRITE times as much, the rewrite following as "then"; beside one
            # that saves more, the knob is said as the line to turn first
            knob = next((c for c in fixes if LEVERS[c.lever].knob is not None
                         and c.saving_ns >= LEVER_FLOOR * c.baseline_ns), None)
            # beside it, not before it: on the H200's adamw_foreach_off pair the graphs measured 0.21 of the span,
            # fused=True 0.46
            in_hand = next((c for c in fixes if LEVERS[c.lever].one_line_for(c.assumption)
                            and c.saving_ns >= LEVER_FLOOR * c.baseline_ns), None)
            # a knob on an idle cause that is not the dominant one gives way to the rewrite on the dominant cause
            # that saves more: the Next follows its own Idle line (the RTX 3080 MLP at batch 16 was told
            # num_workers=4 for -17% beside launch overhead, its dominant cause, that CUDA graphs price at -42%)
            off_cause = knob is not None and _off_cause(LEVERS[knob.lever].cause, dom) \
                and LEVERS[best.lever].cause is dom and best.saving_ns > OFF_CAUSE_KNOB_GIVES_WAY * knob.saving_ns
            if knob is not None and not off_cause and KNOB_BEFORE_REWRITE * knob.saving_ns >= best.saving_ns:
                best, then, runner_up = knob, best, None
            elif in_hand is not None:
                beside = in_hand
        gone = removal_first(best, fixes) if then is None else None
        if gone is not None:
            best, then, runner_up, beside = gone, best, None, None
        if best is not None and best.saving_ns < _mixed_precision_floor(v, roof, busy_ns, span_ns) * best.baseline_ns:
            best = then = beside = runner_up = None   # fp32 math on CUDA cores holds more than the fix can win
        if best is not None:
            spec = LEVERS[best.lever]
            cause = spec.cause
            kind = spec.experiment or EXPERIMENT_FOR_CAUSE[cause]
            gain = by_cause[cause] / span_ns if cause and span_ns else 0.0
            # (a warm-up takes out set-up that lies inside the dominant cause's idle: no lever beaten beside it)
            beaten = next((c for c in choices if LEVERS[c.lever].cause is dom and c.lever != best.lever
                           and not (graphs_blocked and c.lever == CUDA_GRAPHS)
                           and LEVERS[c.lever].experiment is None and c.saving_ns < best.saving_ns), None) \
                if dom is not None and dom is not cause and runner_up is None and then is None \
                and kind is not Experiment.WARM_UP and not _takes_the_host_work(best, dom, by_cause) else None
            if kind is Experiment.WARM_UP:
                then = _steady_loop_fix(steps, choices, by_cause, idle_ns)
                best = priced_by_setup_idle(best, devs)
            waste = weeks_waste(choices, then if kind is Experiment.WARM_UP and then is not None else best,
                                _replays_graphs(devs), launch_bound)   # (a warm-up: its steady gaps recur)
            return NextExperiment(kind, cause, gain, lever=best, waste=waste,
                                  headroom=head if head is not None and head.saving_ns > best.saving_ns else None,
                                  dominant=beaten, construct=_construct_of(fw, cause), close_call=runner_up,
                                  then=then, knob_beside=beside)
        head = by_name.get(HEADROOM)
        # (on a span the device idles most of, an idle cause holding more of it than faster kernels would win is the
        # experiment: hta-a100-80gb-rank0, 66% idle, 32% of the span waiting on copies, was told "move fewer bytes"
        # once its replay priced faster kernels at 8%, where the unchanged replay had missed the span by 6%)
        idle_first = v.regime is Regime.OVERHEAD and dom is not None and dom not in cold and dom is not Cause.OTHER \
            and head is not None and by_cause.get(dom, 0) > head.saving_ns \
            and not (dom is Cause.LAUNCH_OVERHEAD and dry is not None and dry.fills_little)
        if head is not None and head.saving_ns >= LEVER_FLOOR * head.baseline_ns and not idle_first:
            kind = (_unknown_bound_next(v, roof, decode) if v.regime is Regime.UNKNOWN else  # how, unmeasured
                    Experiment.BETTER_KERNELS if v.regime is Regime.LATENCY else    # ... under neither roof
                    Experiment.CHEAPER_ARITHMETIC if v.regime is Regime.COMPUTE else Experiment.FEWER_BYTES)
            # faster kernels are a bound, not a change in hand: said as the bound beside the regime's advice, never
            # as the Next's saving (fresh4 mlp_gemm_roof: "fp8 ... predicted −27%" on GEMMs at 63% of the bf16 peak)
            # (fewer bytes names fusion as its way: fusion is not also the week's waste beside it)
            rest = tuple(c for c in choices if kind is not Experiment.FEWER_BYTES or LEVERS[c.lever].experiment
                         is not Experiment.FUSE)
            waste = weeks_waste(rest, head, _replays_graphs(devs), launch_bound)
            return NextExperiment(kind, None, 0.0, headroom=head, waste=waste)
    gain = by_cause[dom] / span_ns if dom is not None and span_ns else 0.0
    if dom is not None and dom not in cold \
            and not (dom is Cause.LAUNCH_OVERHEAD and dry is not None and dry.fills_little) and (
            v.regime is Regime.OVERHEAD or (dom is not Cause.OTHER and gain >= IDLE_LEVER_FLOOR
            and gain > _kernel_headroom(v, roof, busy_ns, span_ns))):
        return NextExperiment(EXPERIMENT_FOR_CAUSE[dom], dom, gain, construct=_construct_of(fw, dom),
                              waste=waste_beside_words(dom, choices, _replays_graphs(devs), LEVER_FLOOR, launch_bound))
    if v.regime is Regime.UNKNOWN:   # no lever rests on a bound nobody measured
        return NextExperiment(_unknown_bound_next(v, roof, decode), None, v.uncosted_share)
    if v.regime is Regime.LATENCY:   # far below both roofs: neither fewer bytes nor cheaper arithmetic
        return NextExperiment(Experiment.BETTER_KERNELS, None, 0.0)
    if v.regime is Regime.COMPUTE:
        return NextExperiment(Experiment.CHEAPER_ARITHMETIC, None, 0.0)
    return NextExperiment(Experiment.FEWER_BYTES, None, 0.0)


# The host side of a step: its own work and the pageable copies that hold it (a batch's X.to(device) blocks the host
# like its Python does). A knob on one of them is not off the cause where the other dominates: the RTX 3080 loop
# whose 2.1 ms of host time a step follows its pageable input copy is fixed by the copy's knob.
HOST_SIDE = frozenset({Cause.HOST_WORK, Cause.DATA_TRANSFER})


def _off_cause(cause: Cause | None, dom: Cause | None) -> bool:
    """A knob's idle cause is another than the Idle line's dominant one (the host side counts as one)."""
    return cause is not None and cause is not dom and not (cause in HOST_SIDE and dom in HOST_SIDE)


def _takes_the_host_work(best: LeverChoice, dom: Cause, by_cause: dict[Cause, int]) -> bool:
    """The Next's fix takes away host time (its assumption's host_ns) of half the host-work idle or more: the host-work
    lever said beside it would price that same host work as if it could run beside the GPU, which needs its result
    (square_randn: torch.randn(..., device="cuda") removes 1.31 s of CPU randn that the copies upload; beside it
    "taking host work off the critical path predicts only −90%", where overlapping the randn with the ~72 ms of GPU
    work it feeds saves about a tenth)."""
    host = getattr(best.assumption, "host_ns", 0) if best.assumption is not None else 0
    return dom is Cause.HOST_WORK and host > 0 and 2 * host >= by_cause.get(Cause.HOST_WORK, 0)


def _steady_idle_share(steps: Steps | None) -> float:
    """The median steady step's idle over its wall (0 without steps)."""
    s = steps.summary if steps is not None else None
    return s.median_idle_ns / s.median_ns if s is not None and s.median_ns > 0 else 0.0


def _loop_gaps_recur(steps: Steps | None) -> bool:
    """The median steady step idles LOOP_IDLES_TOO of its wall or more: the loop's own gaps recur after a warm-up."""
    return _steady_idle_share(steps) >= LOOP_IDLES_TOO


def _steady_steps_idle(steps: Steps | None) -> bool:
    """The median step idles more than roofline.OVERHEAD_IDLE_SHARE of its wall: the loop is idle-bound itself."""
    return _steady_idle_share(steps) > roof_mod.OVERHEAD_IDLE_SHARE


def _steady_loop_fix(steps: Steps | None, choices: tuple[LeverChoice, ...], by_cause: dict[Cause, int],
                     idle_ns: int) -> LeverChoice | None:
    """Beside a warm-up, the loop's own fix where the steps after the cold start still idle most of each (the median
    step's idle above roofline.OVERHEAD_IDLE_SHARE): the lever for the cause that holds most of those steps' idle,
    where the replay prices it at LEVER_FLOOR or more. A warmed-up profile would show that loop (heldout-user6
    rtx4090d_graphbreaks: "warm up first", then "would waste the week: optimising what this profile shows: its
    biggest gaps do not recur" beside a Regime line whose steady step idles 90%, CUDA graphs priced at −29%)."""
    if not _steady_steps_idle(steps):
        return None
    loop = steps_mod.steady(steps.steps)
    loop = loop[1:] if len(loop) > 1 else loop          # the first of them may still pay the cold start
    held = {c: sum(st.idle_by_cause_ns.get(c, 0) for st in loop) for c in CAUSES}
    cause = max(held, key=held.get)
    fixes = [c for c in choices if LEVERS[c.lever].cause is cause and LEVERS[c.lever].experiment is None
             and _calls_for(c, by_cause, idle_ns) and c.saving_ns >= LEVER_FLOOR * c.baseline_ns]
    return max(fixes, key=lambda c: c.saving_ns) if held[cause] > 0 and fixes else None


def _calls_for(c: LeverChoice, by_cause: dict[Cause, int], idle_ns: int, tail_ns: int = 0) -> bool:
    """A fix the trace calls for: not the headroom check, acting on something here, its cause holding the
    share of the idle its spec asks for (no cutting of launches where launch overhead holds under a tenth of
    the idle), no warm-up for set-up under a quarter of the span."""
    spec = LEVERS[c.lever]
    if spec.headroom or (c.assumption is not None and c.assumption.count == 0):
        return False
    if spec.experiment is Experiment.WARM_UP:   # a little set-up is a caveat, not the experiment
        return c.saving_ns >= WARMUP_IS_THE_LEVER * c.baseline_ns
    if priced_beyond_the_idle(c, spec.cause, idle_ns, tail_ns):
        return False
    return not spec.idle_floor or by_cause.get(spec.cause, 0) >= spec.idle_floor * idle_ns


def priced_beyond_the_idle(c: LeverChoice, cause: Cause | None, idle_ns: int, tail_ns: int) -> bool:
    """A fix on the host's side of the loop (its host work, its syncs) leaves every kernel as it is: inside the GPU span
    it saves no more than the GPU idles; more comes from the host's time outside the span. Where the host's tail after
    the last GPU activity could hold all of that excess, the replay's host ran ahead into the tail, which is in no step
    (heldout-user9 vllm_h100: remove_syncs -11%, 40.3 ms, on an 89%-busy decode whose whole idle was 28.6 ms, beside
    97 ms of host after the profiler's last kernel). A first iteration's host work before its first launch is priced
    (traces/fixes host_numpy: 24.8 ms predicted beside 21.8 ms of idle and a 0.1 ms tail, -88% measured)."""
    excess = c.saving_ns - IDLE_SLACK * idle_ns - LEVER_FLOOR_NS
    return cause in (Cause.HOST_WORK, Cause.SYNCHRONIZATION) and excess > 0 and tail_ns >= excess


def _host_tail_ns(trace: Trace, devs) -> int:
    """The traced host time after the last GPU activity (0 without GPU activity)."""
    if not devs or not len(trace.ev):
        return 0
    return max(int(trace.ev.end.max()) - max(d.span_end for d in devs), 0)


def _replays_graphs(devs) -> bool:
    """The trace launches CUDA/HIP graphs already (graph launches among its launch-gap evidence)."""
    ev = recurring.evidence_of(devs).get(Cause.LAUNCH_OVERHEAD)
    return bool(getattr(ev, "graph_launches", 0))


def _construct_of(fw: framework_mod.Framework | None, cause: Cause | None) -> Construct | None:
    """The construct that holds most of a cause's idle (set-up and the user's own code aside), when it holds most."""
    if fw is None or cause is None:
        return None
    total = sum(x.by_cause_ns.get(cause, 0) for x in fw.constructs)
    top = max((x for x in fw.constructs if x.construct is not Construct.USER), default=None,
              key=lambda x: x.by_cause_ns.get(cause, 0))
    if top is None or not total or top.by_cause_ns.get(cause, 0) < 0.5 * total:
        return None
    return top.construct
def communication_next(v: RegimeVerdict, span_ns: int, choices: tuple[LeverChoice, ...]) -> NextExperiment | None:
    """Communication-bound: the straggler when the collectives mostly wait for a peer, else overlapping them
    with compute (the overlap_comm lever's prediction beside it); None for any other regime."""
    c = v.communication
    if v.regime is not Regime.COMMUNICATION or c is None:
        return None
    overlap = next((x for x in choices if LEVERS[x.lever].experiment is Experiment.OVERLAP_COMM), None)
    if c.mostly_waiting:
        return NextExperiment(Experiment.FIND_STRAGGLER, None, c.wait_ns / span_ns if span_ns else 0.0, waste=overlap)
    waste = choices[-1] if choices and choices[-1] is not overlap else None
    return NextExperiment(Experiment.OVERLAP_COMM, None, c.exposed_ns / span_ns if span_ns else 0.0,
                          lever=overlap, waste=waste)


def weigh_levers(levers: whatif.Levers) -> list[LeverChoice]:
    """Every lever's prediction, largest saving first. remove_syncs names the op whose own syncs
    hold at least half of its saving ("remove the syncs in aten::item")."""
    out = []
    for p in levers.all.levers:
        if LEVERS[p.lever].weighed_only_if_found and p.assumption.count == 0:
            continue   # (overlap_comm on a trace with no collective to move)
        q = levers.sync_op_prediction
        only = levers.sync_op if LEVERS[p.lever].takes_only and q is not None and q.saving_ns >= 0.5 * p.saving_ns \
            else None
        out.append(LeverChoice(p.lever, only, levers.all.baseline_ns, p.predicted_ns, p.assumption))
    return out
