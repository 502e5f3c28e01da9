"""A what-if lever's prediction as the report weighs it: its traced span, its assumption, its ratio without the
profiler (tracetriage.analyzers.whatif replays the trace with the fix made)."""
from __future__ import annotations

from dataclasses import dataclass

from tracetriage.analyzers.triage import overhead as overhead_mod
from tracetriage.analyzers.whatif.levers import LEVERS
from tracetriage.analyzers.whatif.levers.spec import Assumption


@dataclass(frozen=True)
class LeverChoice:
    """A what-if lever's prediction (tracetriage.analyzers.whatif replays the trace with the fix made)."""
    lever: str                   # a name of the lever registry (tracetriage.analyzers.whatif.levers)
    only: str | None             # remove_syncs: the op whose syncs hold most of the saving
    baseline_ns: int             # the traced span (host and GPU)
    predicted_ns: int
    assumption: Assumption | None = None   # what the lever's replay took as given (tracetriage.analyzers.whatif.levers)
    unprofiled_ratio: float | None = None  # the ratio without the profiler (the Next lever only; None: not asked)
    unprofiled_ranked: bool = False        # ... which chose it (triage.unprofiled_choice): said beside even if close

    @property
    def predicted_ratio(self) -> float:
        return self.predicted_ns / self.baseline_ns if self.baseline_ns else 1.0

    @property
    def saving_ns(self) -> int:
        return self.baseline_ns - self.predicted_ns

    @property
    def unprofiled_differs(self) -> bool:
        """Without the profiler the fix would buy a ratio worth saying beside this one (or that ratio chose it)."""
        return overhead_mod.unprofiled_differs(self.predicted_ratio, self.unprofiled_ratio, self.unprofiled_ranked)

    @property
    def nothing_to_act_on(self) -> bool:
        """An idle lever whose fix finds nothing in this trace (no sync, no pageable copy ...)."""
        return self.assumption is not None and self.assumption.count == 0 and LEVERS[self.lever].cause is not None
