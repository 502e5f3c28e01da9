"""Python stacks in a capture (torch.profiler's with_stack=True): on where they cost little.

Stacks let the report name the user's own line behind every hotspot and idle gap
(tracetriage.analyzers.analyses.frames), but the profiler then records every Python call, which slows the
host: measured on an H200 (torch 2.11, profiled time per step, median of 3, with stacks against
without), +5% on smell-sync-item, +18% on smell-launch-tiny-ops, +19% on a small training script,
+47% on eager GPT decode, +118% on a torch.compile'd chain and +311% on a loop of pure Python.
A slower host changes what the trace says about host-bound work, so a preset's capture measures the
cost first (a few profiled steps each way) and keeps stacks on only when they cost at most
STACKS_ALLOWED. A script runs once, so it cannot be measured first: stacks are on, and the sidecar
says so.
"""
from __future__ import annotations

import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

STACKS_ALLOWED = 0.25     # stacks stay on when they slow the profiled step by at most a quarter
PROBE_ROUNDS = 3          # alternating rounds of (without, with) stacks: a median of 3 (short probes are noisy)
MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class StackChoice:
    on: bool
    mode: str                  # auto | on | off, as asked
    cost: float | None         # measured slowdown of the profiled step with stacks (0.18 = +18%); None: not measured
    why: str

    def to_dict(self) -> dict:
        return {"recorded": self.on, "mode": self.mode, "cost": None if self.cost is None else round(self.cost, 3),
                "allowed": STACKS_ALLOWED, "why": self.why}


def measure_cost(step_fn, sync, profile_with, steps: int = 3) -> float:
    """The profiled step's slowdown with stacks: median of PROBE_ROUNDS alternating runs of `steps` steps."""
    times = {False: [], True: []}
    for _ in range(PROBE_ROUNDS):
        for ws in (False, True):
            with profile_with(ws):
                sync()
                t = time.perf_counter()
                for _ in range(steps):
                    step_fn()
                sync()
                times[ws].append(time.perf_counter() - t)
    return statistics.median(times[True]) / statistics.median(times[False]) - 1.0


def choose(mode: str, measure=None) -> StackChoice:
    """Stacks on or off: as asked, or (auto) by their measured cost when `measure` can measure it."""
    if mode == "on":
        return StackChoice(True, mode, None, "asked for (--stacks on)")
    if mode == "off":
        return StackChoice(False, mode, None, "asked for (--stacks off)")
    if measure is None:
        return StackChoice(True, mode, None, "a script runs once, so their cost was not measured; --stacks off to "
                                             "leave them out")
    cost = measure()
    on = cost <= STACKS_ALLOWED
    verdict = "at most" if on else "more than"
    return StackChoice(on, mode, cost, f"they cost {cost:+,.0%} of profiled step time here, {verdict} the "
                                       f"{STACKS_ALLOWED:.0%} allowed" + ("" if on else "; --stacks on to record them"))


def copy_generated(trace_json: Path, out_path: Path) -> int:
    """Copy the Inductor wrappers the trace names into NAME.inductor/ beside it, so that the ops each
    kernel fused can be read where the trace is analysed (tracetriage.analyzers.loading.generated_code)."""
    from tracetriage.analyzers.analyses.inductor import WRAPPER_FRAME
    from tracetriage.analyzers.loading.generated_code import beside

    text = trace_json.read_text(encoding="utf-8", errors="replace")
    found = sorted({m.group(1) for n in _names(text) for m in [WRAPPER_FRAME.match(n)] if m})
    copied = 0
    for src in found:
        p = Path(src)
        if p.is_file():
            dest = beside(out_path)
            dest.mkdir(exist_ok=True)
            shutil.copy(p, dest / p.name)
            copied += 1
    return copied


def _names(text: str) -> list[str]:
    """The trace's event names that hold an Inductor path (a regular expression: no JSON decode)."""
    import re

    return [m.group(1) for m in re.finditer(r'"name": "([^"]*torchinductor_[^"]*)"', text)]
