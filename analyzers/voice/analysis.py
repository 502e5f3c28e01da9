"""What the voice reads of an analysis, as a Protocol: the triage layer builds the analysis
(tracetriage.analyzers.triage.report.Analysis) and the voice may not import it, nor the analyses it holds
(tests/test_imports.py: the words read decisions and make none). A type checker matches the real
Analysis against this wherever one is handed to the words (tracetriage/cli.py does), so a field the
words read and the analysis lost, or retyped, is an error there.

The model's types are named; a result of a later layer (a what-if lever choice, a regime verdict, the
steps ...) is Any here, with its class named beside it: naming it would be the import the layers forbid.
Every member is a read-only property, as the analysis is frozen.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from tracetriage.analyzers.model.evidence import Evidence, FirstCall
from tracetriage.analyzers.model.health import Health
from tracetriage.analyzers.model.trace import Trace
from tracetriage.analyzers.model.verdicts import Cause


class Caveated(Protocol):
    """What the caveats read of an analysis or of a diff's side (tracetriage.analyzers.triage.diff.Side);
    the rest (the health, the profiler's cost, the graph captures) only where the object has it."""
    @property
    def warmup(self) -> Sequence[FirstCall]: ...
    @property
    def warmup_share(self) -> float: ...
    @property
    def setup_worth_naming(self) -> bool: ...


class Analysis(Caveated, Protocol):
    """One analysed trace, as the five lines, the Next, the caveats, the markdown and the notebook read it."""
    @property
    def trace(self) -> Trace: ...
    @property
    def devices(self) -> Sequence[Any]: ...              # analyses.idle.DeviceIdle, one per GPU
    @property
    def span_ns(self) -> int: ...
    @property
    def kernel_busy_ns(self) -> int: ...
    @property
    def copy_ns(self) -> int: ...
    @property
    def memset_ns(self) -> int: ...                      # memsets: device work, in kernel_busy_ns
    @property
    def dtod_ns(self) -> int: ...                        # device-to-device copies: device work, in kernel_busy_ns
    @property
    def idle_ns(self) -> int: ...
    @property
    def idle_share(self) -> float: ...
    @property
    def by_cause_ns(self) -> Mapping[Cause, int]: ...
    @property
    def dominant(self) -> Cause | None: ...
    @property
    def evidence(self) -> Mapping[Cause, Evidence]: ...
    @property
    def kernels(self) -> int: ...
    @property
    def hotspots(self) -> Sequence[Any]: ...             # analyses.hotspots.Hotspot, by the launching op
    @property
    def fused_kernels(self) -> Mapping[str, Any]: ...    # analyses.inductor.FusedKernel, by kernel name
    @property
    def named_ranges(self) -> Sequence[Any]: ...         # analyses.ranges.RangeStats
    @property
    def range_filter(self) -> str | None: ...
    @property
    def phases(self) -> Any: ...                         # triage.report.Phases | None
    @property
    def steps(self) -> Any: ...                          # analyses.steps.Steps | None
    @property
    def roof(self) -> Any: ...                           # analyses.roofline.Roofline
    @property
    def verdict(self) -> Any: ...                        # analyses.roofline.RegimeVerdict
    @property
    def above_peak(self) -> Sequence[Any]: ...           # op signatures above the device's peak
    @property
    def host_only(self) -> Any: ...                      # triage.analysis.HostOnly | None (no GPU timeline)
    @property
    def accelerator(self) -> str | None: ...
    @property
    def health(self) -> Health | None: ...
    @property
    def framework(self) -> Any: ...                      # analyses.framework.Framework | None
    @property
    def construct_named(self) -> Any: ...                # analyses.framework.ConstructShare | None
    @property
    def graph_capture(self) -> Any: ...                  # analyses.graph_capture.GraphCapture | None
    @property
    def source_lines(self) -> Any: ...                   # triage.sources.SourceLines | None
    @property
    def next_source(self) -> Any: ...                    # analyses.frames.SourceLine | None
    @property
    def lever_choices(self) -> Sequence[Any]: ...        # triage.report.LeverChoice, largest saving first
    @property
    def next_experiment(self) -> Any: ...                # triage.next_experiment.NextExperiment
    @property
    def serialising_syncs(self) -> Any: ...              # triage.report.LeverChoice | None
    @property
    def copies_count_as_idle(self) -> bool: ...
    @property
    def sync_cost_is_lost_overlap(self) -> bool: ...
    @property
    def profiler(self) -> Any: ...                       # triage.overhead.ProfilerOverhead | None
    @property
    def execution(self) -> Any: ...                      # triage.execution.ExecutionNotes | None
    @property
    def weight_streaming(self) -> Any: ...               # analyses.weight_streaming.WeightStreaming | None
    @property
    def steps_apart(self) -> Any: ...                    # tuple[analyses.steps_apart.StepApart, ...]
    @property
    def compile_cache(self) -> Any: ...                  # analyses.compile_cache.CompileCache | None
    @property
    def decode(self) -> Any: ...                         # analyses.decode_steps.DecodeSteps | None
    @property
    def replay_clock(self) -> Any: ...                   # analyses.replay_clock.ReplayClock | None
    @property
    def replay_gaps(self) -> Any: ...                    # analyses.replay_clock.ReplayGaps | None
    @property
    def graph_breaks(self) -> Any: ...                   # analyses.graph_breaks.GraphBreaks | None
    @property
    def pace(self) -> Any: ...                           # triage.pace.Pace | None
    @property
    def copies_async(self) -> Any: ...                   # analyses.copies_async.CopiesAsync | None
