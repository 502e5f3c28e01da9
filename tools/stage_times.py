"""Where `tracetriage report --json` spends its time, stage by stage, in one process.

    python -m tools.stage_times TRACE [--json]
    python -m tools.stage_times TRACE --over 0.03    # the table, then each analysis or lever over 3% of the whole

Runs `tracetriage report TRACE --json --quiet` once in this process (the CLI's own main, its output
discarded, the cache off), with a timer wrapped around each stage's function: the imports, read,
decode, assemble, link, side inputs, each analysis, the dependency graph, each lever's edit and its
replay, the words. A stage's time is its own (the time of the stages it calls is theirs), so the stages
add up to the whole; what no named stage holds is "other". Stages are listed in the order they first
ran. The wrapping costs microseconds per call. CPU is this process's: the decoder child's half of the
decode is not in it (its wall time is: the parent waits for it); the what-if levers, which the report replays
in a forked child beside the other analyses on a large trace, run in this process here. The imports come first
here, so the read's time is the whole gunzip: in `tracetriage report` the read runs ahead in a thread while the
analysis imports (tracetriage.analyzers.loading.read), and the end-to-end time is less than the stages' sum by
that overlap and by the levers' replays beside the other analyses.

The guard on what each analysis and each lever costs: below the table, every stage that is neither the imports,
the load nor the words and whose own CPU holds more than OVER_SHARE of the whole report's is flagged (`over_share`;
tools.benchmark prints them on the biggest bundled trace and on its main size). A lever once ran regular
expressions per kernel and doubled the report's time at 942k events: the table printed it among sixty rows,
nothing flagged it. A flag is printed, not a failed test: on a machine other work loads, a timed test fails by
chance.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from contextlib import contextmanager

_self: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])   # stage: [wall s, this process's CPU s]
_stack: list[list] = []          # [label, wall at start, CPU at start, wall and CPU spent in wrapped callees]


@contextmanager
def _stage(label: str):
    _self[label]   # (listed in the order first entered)
    _stack.append([label, time.perf_counter(), time.process_time(), 0.0, 0.0])
    try:
        yield
    finally:
        lab, t0, c0, inner, inner_cpu = _stack.pop()
        spent, cpu = time.perf_counter() - t0, time.process_time() - c0
        _self[lab][0] += spent - inner
        _self[lab][1] += cpu - inner_cpu
        if _stack:
            _stack[-1][3] += spent
            _stack[-1][4] += cpu


def _wrap(owner, attr: str, label: str, set_attr=setattr) -> None:
    fn = getattr(owner, attr)

    def timed(*a, **k):
        with _stage(label(a) if callable(label) else label):
            return fn(*a, **k)

    set_attr(owner, attr, timed)


_A = "tracetriage.analyzers."
# (module, function, stage): each function is looked up on its module at call time by its callers (loading.load
# calls `formats.decode`, `read_bytes`, `assemble`, `link` through its own globals), so the wrapper sees every
# call; tests/test_stage_times.py fails when one of these names no longer exists or no longer runs
STAGES: tuple[tuple[str, str, str], ...] = (
    (_A + "loading.load", "read_bytes", "load: read (and gunzip; a large .gz scanned beside it)"),
    (_A + "loading.formats", "decode", "load: decode"),
    (_A + "loading.load", "assemble", "load: assemble"),
    (_A + "loading.load", "link", "load: link"),
    (_A + "loading.load", "_with_side_inputs", "load: side inputs"),
    (_A + "analyses.idle", "_host_context", "idle: host context"),
    (_A + "analyses.idle", "free_intervals", "idle: free intervals"),
    (_A + "analyses.idle", "what_follows", "idle: what follows"),
    (_A + "analyses.idle", "classify", "idle: causes"),
    (_A + "analyses.idle", "set_up", "idle: set-up (first calls)"),
    (_A + "analyses.idle", "evidence", "idle: evidence"),
    (_A + "analyses.idle", "analyze", "idle: other"),
    (_A + "analyses.ranges", "analyze", "ranges"),
    (_A + "analyses.roofline", "analyze", "roofline"),
    (_A + "analyses.roofline", "regime", "regime"),
    (_A + "analyses.framework", "analyze", "framework"),
    (_A + "analyses.steps", "search", "steps: search"),
    (_A + "analyses.steps", "find", "steps"),
    (_A + "analyses.health", "check", "health"),
    (_A + "analyses.graph_capture", "analyze", "graph capture"),
    (_A + "analyses.inference", "find", "inference"),
    (_A + "analyses.hotspots", "by_op", "hotspots"),
    (_A + "analyses.hotspots", "by_kernel", "hotspots"),
    (_A + "triage.report", "pace", "pace"),
    (_A + "triage.pace", "traced_window", "pace: traced window"),
    (_A + "triage.pace", "dry_queue", "pace: launch queue"),
    (_A + "analyses.steps", "queued_before_window", "queued before the window"),
    (_A + "analyses.queued", "queued_before_window", "queued before the window"),
    (_A + "analyses.steps", "drained_before_own", "queued before the window"),
    (_A + "analyses.loader_start", "start_ns", "loader start"),
    (_A + "triage.next_experiment", "cold_causes", "cold causes"),
    (_A + "triage.report", "phases_of_ranges", "phases"),
    (_A + "triage.report", "phases_of_shapes", "phases"),
    (_A + "triage.report", "copies_async", "copies async"),
    (_A + "triage.report", "choose_next", "next experiment"),
    (_A + "triage.report", "weigh_levers", "next experiment"),
    (_A + "triage.overhead", "analyze", "profiler overhead"),
    (_A + "triage.sources", "source_lines", "source lines"),
    (_A + "triage.sources", "fused_kernels", "source lines"),
    (_A + "whatif.depgraph", "build", "what-if: dependency graph"),
    (_A + "whatif.predict", "_bare_ratio", "what-if: unprofiled replays"),
    (_A + "whatif.predict", "unprofiled_run", "what-if: unprofiled replays"),
    (_A + "triage.report", "_levers", "what-if: other"),
    (_A + "triage.unprofiled_choice", "with_unprofiled", "what-if: unprofiled replays"),
    (_A + "output.serialize", "report", "words: --json"),
    (_A + "voice.report", "five_lines", "words: five lines"),
)


# an analysis or a lever whose own CPU is more than this share of the whole report's is flagged: at 942k events 3% is
# ~0.12 s, about what the costliest single stages take there (cuda_graphs' edit, the roofline, the steps, the
# dependency graph: 0.08-0.13 s each); a regression that doubles the report's time is many times over it
OVER_SHARE = 0.03
_NOT_GUARDED = ("imports", "other", "load: ", "words: ", "total")   # the fixed costs, not an analysis's or a lever's


def over_share(t: dict, share: float = OVER_SHARE) -> list[str]:
    """One line per analysis or lever stage of stage_times' `t` whose own CPU is more than `share` of the total."""
    total = t["total"][1]
    return [f"{k}: {c:.3f} s of CPU, {c / total:.1%} of the report's {total:.2f} s (the guard: {share:.0%})"
            for k, (_, c) in t.items() if total and not k.startswith(_NOT_GUARDED) and c > share * total]


def _install() -> None:
    import importlib

    from tracetriage.analyzers.whatif import aside, predict, replay
    from tracetriage.analyzers.whatif.levers import LEVERS

    # the report replays a large trace's levers in a forked child (tracetriage.analyzers.whatif.aside), whose
    # stages no timer here would see: here they run in this process, each lever's edit and replay timed
    aside.MIN_EVENTS = sys.maxsize

    for module, attr, label in STAGES:
        owner = importlib.import_module(module)
        if not hasattr(owner, attr):
            raise SystemExit(f"tools.stage_times: {module} has no {attr} any more; name what it calls now in STAGES")
        _wrap(owner, attr, label)
    last = ["unchanged graph"]
    for name, spec in LEVERS.items():
        def edit(a, name=name, fn=spec.apply):
            last[0] = name
            with _stage(f"lever {name}: edit"):
                return fn(*a)
        object.__setattr__(spec, "apply", lambda *a, edit=edit: edit(a))

    def replay_label(_a) -> str:
        if _stack and _stack[-1][0] == "what-if: unprofiled replays":
            return _stack[-1][0]
        return f"lever {last[0]}: replay" if last[0] != "unchanged graph" else "what-if: replay of the unchanged graph"
    _wrap(replay, "replay", replay_label)
    orig_predict = predict.predict

    def fresh_predict(*a, **k):
        last[0] = "unchanged graph"
        return orig_predict(*a, **k)
    predict.predict = fresh_predict


def stage_times(path: str) -> dict:
    """{stage: [wall s, CPU s]} of one `report PATH --json`, in the order the stages first ran, and the whole
    under "total"."""
    import io
    import os
    from contextlib import redirect_stdout

    os.environ["TRACETRIAGE_NO_CACHE"] = "1"
    t0 = time.perf_counter()
    with _stage("imports"):
        _install()
        from tracetriage import cli
    _wrap(cli, "_print_json", "words: --json")
    # the report parses a large .gz in its read-ahead thread, beside the imports (cli._parse_ahead): here the stages
    # run one after another, the decode, assemble and link in this thread after the read, each timed
    cli._parse_ahead = None
    with _stage("other"), redirect_stdout(io.StringIO()):
        rc = cli.main(["report", str(path), "--json", "--quiet"])
    if rc:
        raise SystemExit(f"report {path} exited {rc}")
    out = {k: [round(w, 3), round(c, 3)] for k, (w, c) in _self.items()}
    out["total"] = [round(time.perf_counter() - t0, 3), round(sum(c for _, c in _self.values()), 3)]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.stage_times")
    ap.add_argument("trace")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--over", type=float, default=OVER_SHARE,
                    help="flag each analysis or lever whose CPU is more than this share of the report's")
    a = ap.parse_args(argv)
    t = stage_times(a.trace)
    if a.json:
        print(json.dumps(t))
    else:
        print(f"{'wall s':>8} {'CPU s':>7}  stage")
        for k, (w, c) in t.items():
            print(f"{w:8.3f} {c:7.3f}  {k}")
        flagged = over_share(t, a.over)
        print(f"over {a.over:.0%} of the report: " + ("none" if not flagged else ""))
        for line in flagged:
            print("  ! " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
