"""The child runs: Input a knob (levers/outside.Outside), the script and its arguments; Output one Run each.

Each run is a fresh `python -P -m tracetriage.capture.knob_runner` (-P: nothing is imported from the user's
working directory), so a knob turned in one never leaks into the next, and the user's files are only read.
A Budget bounds them all: --max-runs counts the runs, --timeout the seconds; a run past the time left is
killed, and the runs not started say so.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tracetriage.analyzers.whatif.levers.catalogue import from_outside
from tracetriage.analyzers.whatif.levers.outside import Outside


@dataclass(frozen=True)
class Run:
    knob: str
    profiled: bool
    index: int
    wall_ns: int | None = None      # unprofiled: the script's run
    trace: str | None = None        # profiled: the trace written
    failed: str | None = None       # one line: what went wrong
    cut: bool = False               # killed at the end of the --timeout budget: not the knob's failure


class BudgetSpent(Exception):
    """No run may start: --max-runs or --timeout is used up."""


@dataclass
class Budget:
    max_runs: int | None
    seconds: float | None
    started: float = 0.0
    runs: int = 0

    def __post_init__(self):
        self.started = time.monotonic()

    def left_s(self) -> float | None:
        return None if self.seconds is None else self.seconds - (time.monotonic() - self.started)

    def take(self) -> float | None:
        """Take one run; the seconds it may last (None: unbounded). BudgetSpent when none is left."""
        left = self.left_s()
        if (self.max_runs is not None and self.runs >= self.max_runs) or (left is not None and left <= 0):
            raise BudgetSpent()
        self.runs += 1
        return left


def command(o: Outside, script: str, args: list[str], result: Path, trace: Path | None,
            device: str | None) -> list[str]:
    preload = sorted({p for e in from_outside() if e.outside is not None for p in e.outside.paths()})
    cmd = [sys.executable, "-P", "-m", "tracetriage.capture.knob_runner", "--outside", json.dumps(o.to_json()),
           "--preload", ",".join(preload), "--result", str(result)]
    if trace is not None:
        cmd += ["--profile", str(trace)]
    if device:
        cmd += ["--device", device]
    return [*cmd, "--", script, *args]


def run_one(o: Outside, script: str, args: list[str], out: Path, profiled: bool, index: int, budget: Budget,
            device: str | None, name: str | None = None) -> Run:
    stem = name or f"{o.key}-{'profiled' if profiled else 'unprofiled'}-{index}"
    result = out / f"{stem}.result.json"
    trace = out / f"{stem}.json.gz" if profiled else None
    limit = budget.take()
    env = {**os.environ, **o.env}
    with open(out / f"{stem}.log", "w") as log:
        try:
            subprocess.run(command(o, script, args, result, trace, device), env=env, stdout=log, stderr=log,
                           timeout=limit, check=False)
        except subprocess.TimeoutExpired:      # (subprocess.run killed it)
            return Run(o.key, profiled, index, cut=True)
    if not result.exists():
        return Run(o.key, profiled, index, failed=f"the child died without a result (see {out / (stem + '.log')})")
    r = json.loads(result.read_text())
    if "failed" in r:
        return Run(o.key, profiled, index, failed=r["failed"])
    return Run(o.key, profiled, index, wall_ns=r.get("wall_ns"), trace=r.get("trace"))
