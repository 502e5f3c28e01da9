"""`tracetriage try SCRIPT [ARGS...]`: a runner that only orders its steps.

1. capture the script as `capture script` does (a child run with no knob turned), unless --trace gives that
   capture; 2. triage it and propose the knobs (plan); 3. run the script again per knob and without any, profiled
   and unprofiled, --repeats times, interleaved so a drift of the machine falls on every knob alike (runs);
4. measure each knob's saving and its verdict (measure); 5. log each measured run (calibrate).
Ctrl-C or a spent budget stops the runs; the table is made of the runs done.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tracetriage.analyzers.whatif.levers.catalogue import from_outside
from tracetriage.analyzers.whatif.levers.outside import NONE, Outside
from tracetriage.trial import measure, runs
from tracetriage.trial.measure import Verdict
from tracetriage.trial.plan import Proposal, propose
from tracetriage.trial.results import Result, Row


class TryError(Exception):
    """The experiment cannot start (no script, the script fails as it is): one line for the user."""


@dataclass(frozen=True)
class Options:
    repeats: int = 3
    out: Path | None = None
    max_runs: int | None = None
    timeout_s: float | None = None
    device: str | None = None
    trace: str | None = None
    db: str | None = None
    quiet: bool = False
    knobs: tuple[str, ...] = ()        # --knob: turn only these (of those proposed); () for every one proposed


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_knobs(keys: tuple[str, ...]) -> None:
    known = [e.outside.key for e in from_outside() if e.outside is not None]
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise TryError(f"no knob named {', '.join(unknown)}; choose from: {', '.join(known)}")


def check_script(script: str) -> None:
    p = Path(script)
    if not p.is_file():
        raise TryError(f"no such script: {script}")
    if p.suffix != ".py":
        raise TryError(f"try runs a Python script (a .py file), not {p.name}")


def out_dir(script: str, o: Options) -> Path:
    return o.out or Path(Path(script).stem + ".try")


def dry_run(script: str, args: list[str], o: Options) -> list[tuple[str, list[str]]]:
    """What try would run, runs nothing and writes nothing: the first capture, then each knob it can turn."""
    out = out_dir(script, o)
    plan = []
    if o.trace is None:
        plan.append(("the first capture (profiled, no knob)",
                     runs.command(NONE, script, args, out / "r.json", out / "first-capture.json.gz", o.device)))
    device = o.device or default_device()
    knobs = [e.outside for e in from_outside()
             if e.outside is not None and (device == "cuda" or not e.outside.gpu_only)]
    if o.trace is not None:
        knobs = [p.outside for p in _proposals(o.trace, device, o.knobs, script)[0]]
    if o.knobs:
        knobs = [k for k in knobs if k.key in o.knobs]
    for k in [NONE, *knobs]:
        what = "without any knob" if k is NONE else f"{k.key} ({k.how})"
        plan.append((f"{what}, {o.repeats}x profiled and {o.repeats}x unprofiled",
                     runs.command(k, script, args, out / "r.json", out / f"{k.key}-profiled-0.json.gz", o.device)))
    return plan


def _proposals(trace: str, device: str, force: tuple[str, ...] = (), script: str | None = None
               ) -> tuple[list[Proposal], list[Outside]]:
    from tracetriage.analyzers.loading.source_files import also_under
    from tracetriage.analyzers.triage.report import analyze_file

    with also_under(*([Path(script).parent] if script else [])):     # the change's line: the script's own file
        return propose(analyze_file(trace), has_gpu=device == "cuda", force=force)


def try_script(script: str, args: list[str], o: Options) -> Result:
    check_script(script)
    device = o.device or default_device()
    out = out_dir(script, o)
    out.mkdir(parents=True, exist_ok=True)
    budget = runs.Budget(o.max_runs, o.timeout_s)
    before: list[runs.Run] = []
    # 1. the first capture: it proposes and prices the knobs, and is not measured against them. It is the first
    #    process on a cold machine (Inductor's and Triton's caches, the driver's JIT cache, the page cache all
    #    filled by it): measured as run 0 without a knob, it made every knob "save" 25-58% of the traced span on
    #    the H100 where the unprofiled runs moved -8% to +5% (docs/try-h100).
    if o.trace is None:
        first = runs.run_one(NONE, script, args, out, True, 0, budget, device, name="first-capture")
        if first.cut:
            raise TryError(f"the --timeout budget ran out during the first capture, before any knob ({out})")
        if first.failed or first.trace is None:
            raise TryError(f"your script fails as it is, before any knob: {first.failed}")
        before_trace = first.trace
    else:
        before_trace = o.trace
    # 2. the knobs
    proposals, gpu_only = _proposals(before_trace, device, o.knobs, script)
    left_out = [p.key for p in proposals if o.knobs and p.key not in o.knobs]
    rows = [Row(p) for p in proposals if p.key not in left_out]
    res = Result(script, args, device, o.repeats, before_trace, out, rows, gpu_only, left_out=left_out)
    # 3. the runs, interleaved
    todo: list[tuple[Row | None, bool, int]] = []
    for i in range(o.repeats):
        for prof in (False, True):
            for row in [None, *rows]:
                todo.append((row, prof, i))
    done, total = int(o.trace is None), len(todo) + int(o.trace is None)
    try:
        for row, prof, i in todo:
            if row is not None and row.failed is not None:
                continue
            knob = NONE if row is None else row.proposal.outside
            done += 1
            _progress(o, done, total, knob.key, prof, i)
            r = runs.run_one(knob, script, args, out, prof, i, budget, device)
            if r.cut:
                raise runs.BudgetSpent()
            if row is None:
                if r.failed:
                    raise TryError(f"your script failed without any knob on run {i + 1}: {r.failed}")
                before.append(r)
            elif r.failed:
                row.failed = r.failed
            elif prof and r.trace:
                row.after_traces.append(r.trace)
                row.after_spans.append(measure.traced_span_ns(r.trace))
            elif r.wall_ns is not None:
                row.after_walls.append(r.wall_ns)
    except runs.BudgetSpent:
        res.stopped = "the --max-runs/--timeout budget was spent"
    except KeyboardInterrupt:
        res.stopped = "interrupted (Ctrl-C)"
    # 4. measure
    res.before_spans = [measure.traced_span_ns(r.trace) for r in before if r.profiled and r.trace]
    res.before_walls = [r.wall_ns for r in before if not r.profiled and r.wall_ns is not None]
    for row in rows:
        row.stopped = res.stopped
        if row.failed is not None:
            row.verdict = row.verdict_unprofiled = Verdict.FAILED
            continue
        row.profiled = measure.saving(res.before_spans, row.after_spans)
        row.unprofiled = measure.saving(res.before_walls, row.after_walls)
        row.verdict = measure.verdict(row.proposal.predicted, row.profiled)
        row.verdict_unprofiled = measure.verdict(row.proposal.predicted_unprofiled, row.unprofiled)
    # 5. the prediction log
    from tracetriage.trial import calibrate

    res.logged = calibrate.record(rows, res.before_spans, before_trace, script, o.db)
    return res


def _progress(o: Options, n: int, total: int, key: str, profiled: bool, i: int) -> None:
    if not o.quiet:
        print(f"try: run {n}/{total}: {key}, {'profiled' if profiled else 'unprofiled'}, #{i + 1}", file=sys.stderr,
              flush=True)
