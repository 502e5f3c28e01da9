"""What try found: Input the runs; Output a Row per knob and the Result the voice speaks (tracetriage.trial.voice)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tracetriage.analyzers.whatif.levers.outside import Outside
from tracetriage.trial.measure import Saving, Verdict
from tracetriage.trial.plan import Proposal


@dataclass
class Row:
    proposal: Proposal
    after_traces: list[str] = field(default_factory=list)
    after_spans: list[int] = field(default_factory=list)
    after_walls: list[int] = field(default_factory=list)
    profiled: Saving | None = None
    unprofiled: Saving | None = None
    verdict: Verdict = Verdict.NOT_RUN
    verdict_unprofiled: Verdict = Verdict.NOT_RUN
    failed: str | None = None
    stopped: str | None = None


@dataclass
class Result:
    script: str
    args: list[str]
    device: str
    repeats: int
    before_trace: str
    out: Path
    rows: list[Row]
    gpu_only: list[Outside]
    before_spans: list[int] = field(default_factory=list)
    before_walls: list[int] = field(default_factory=list)
    logged: list[int] = field(default_factory=list)
    stopped: str | None = None
    left_out: list[str] = field(default_factory=list)     # proposed, but not among --knob

    @property
    def device_words(self) -> str:
        return "the GPU" if self.device == "cuda" else "the CPU (no GPU here)"
