"""Where the wall time of `tracetriage report --json` goes as shipped: read-ahead thread, forked levers and all.

    python -m tools.timeline TRACE [--json]

tools.stage_times runs the stages one after another in one process (the levers in it, the read after the imports),
so its stages add up to more than the report's wall time where the report overlaps them, and it cannot show what
the overlap itself costs. Here `tracetriage report TRACE --json --quiet` runs as the command line runs it (the
gunzip in its read-ahead thread while the modules import, and a large .gz's decode, assemble and link there too, the
levers in their forked child on a large trace), and
each step is marked where it starts and ends: the wall time since this process started (interpreter start-up
included) and this process's CPU (its threads' included, the child's not). The read-ahead thread's gunzip and the
levers' child are marked from their own side too (the child writes its end to a file: perf_counter is the system's
monotonic clock, the same in both processes), so the table shows what the main thread waited for and how long.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from contextlib import redirect_stdout

_marks: list[tuple[str, float, float]] = []     # (label, wall s since the process started, this process's CPU s)
_T0 = time.perf_counter()


def _started_ago() -> float:
    """Seconds since this process was created (the interpreter's start-up, before any line of this file ran), to
    the kernel's clock tick: its start after boot (/proc/self/stat) against the time since boot (/proc/uptime).
    (psutil's create_time adds a boot time rounded to the second.) 0 where /proc has neither."""
    try:
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        with open("/proc/self/stat") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(up - started, 0.0)


_OFFSET = 0.0


def _mark(label: str, at: float | None = None) -> None:
    _marks.append((label, (time.perf_counter() if at is None else at) - _T0 + _OFFSET, time.process_time()))


def _wrap(owner, attr: str, label: str) -> None:
    fn = getattr(owner, attr)

    def marked(*a, **k):
        _mark(f"{label} >")
        try:
            return fn(*a, **k)
        finally:
            _mark(f"{label} <")

    setattr(owner, attr, marked)


_A = "tracetriage.analyzers."
STEPS: tuple[tuple[str, str, str], ...] = (
    ("tracetriage.cli", "build_parser", "parser (the levers' modules import)"),
    (_A + "triage.report", "load", "load"),
    (_A + "loading.load", "parsed_ahead", "read and parse (waits for the read-ahead)"),
    (_A + "loading.load", "read_bytes", "read (waits for the read-ahead)"),
    (_A + "loading.formats", "decode", "decode"),
    (_A + "loading.load", "assemble", "assemble"),
    (_A + "loading.load", "link", "link"),
    (_A + "triage.report", "analyze_trace", "analyses"),
    (_A + "triage.report", "_levers_of", "levers (waits for the child)"),
    (_A + "output.serialize", "report", "words: --json"),
    ("tracetriage.cli", "_print_json", "print"),
)


def _install(child: dict, child_end: str) -> None:
    import importlib

    from tracetriage.analyzers.triage import report
    from tracetriage.analyzers.whatif import aside

    for module, attr, label in STEPS:
        _wrap(importlib.import_module(module), attr, label)
    parent = os.getpid()
    levers = report._levers

    def levers_marked(trace, *given, **handed):   # (the roofline, or what waits for the one the parent hands)
        out = levers(trace, *given, **handed)
        if os.getpid() != parent:        # the forked child: its end, on the shared monotonic clock, and its CPU
            with open(child_end, "w") as f:  # (a forked process's CPU clock starts at zero)
                f.write(f"{time.perf_counter() - _T0 + _OFFSET!r} {time.process_time()!r}")
        return out
    report._levers = levers_marked
    fork = aside.start

    def start_marked(trace, replay):
        c = fork(trace, replay)
        if c is not None:
            child["forked"] = time.perf_counter() - _T0 + _OFFSET
        return c
    aside.start = start_marked


def timeline(path: str) -> dict:
    """{"marks": [[label, wall s, CPU s], ...] in time order, "child": {...} or None, "thread": {...}}."""
    global _OFFSET, _T0
    _OFFSET, _T0 = _started_ago(), time.perf_counter()
    os.environ["TRACETRIAGE_NO_CACHE"] = "1"
    _mark("this script starts")
    from tracetriage import cli, dataclass_code  # (what `python -m tracetriage.cli` imports before its main runs)

    _mark("cli imported")
    thread: dict = {}
    child: dict = {}
    child_end = tempfile.NamedTemporaryFile(prefix="tt-timeline-", delete=False)
    child_end.close()
    read_ahead_for = cli._read_ahead_for

    def then_mark(argv):
        """The read-ahead starts as the command line starts it; then the steps are marked. Their modules import
        here, while the thread gunzips, as the parser's and the report's imports do in the command line."""
        from tracetriage.analyzers.loading import read

        gunzip = read._read

        def read_in_thread(*a, **k):
            thread["start"] = time.perf_counter() - _T0 + _OFFSET
            try:
                return gunzip(*a, **k)
            finally:
                thread["end"] = time.perf_counter() - _T0 + _OFFSET
                thread["cpu"] = time.thread_time()
        read._read = read_in_thread
        scan_as_read = read.streamed.Stream._run

        def scan_in_thread(self):
            thread["scan_start"] = time.perf_counter() - _T0 + _OFFSET
            try:
                return scan_as_read(self)
            finally:
                thread["scan_end"] = time.perf_counter() - _T0 + _OFFSET
                thread["scan_cpu"] = time.thread_time()
        read.streamed.Stream._run = scan_in_thread
        parse_ahead = cli._parse_ahead

        def parse_in_thread(*a, **k):    # (the read-ahead thread's decode, assemble and link, after its read)
            thread["parse_start"], cpu = time.perf_counter() - _T0 + _OFFSET, time.thread_time()
            try:
                return parse_ahead(*a, **k)
            finally:
                thread["parse_end"] = time.perf_counter() - _T0 + _OFFSET
                thread["parse_cpu"] = time.thread_time() - cpu
        cli._parse_ahead = parse_in_thread
        read_ahead_for(argv)
        _mark("read-ahead started")
        dataclass_code.install()   # (as cli._main does next: the report's dataclasses made from the kept code)
        _install(child, child_end.name)
        _mark("the report's modules imported")
    cli._read_ahead_for = then_mark
    try:
        with redirect_stdout(io.StringIO()):
            rc = cli.main(["report", path, "--json", "--quiet"])
        _mark("end")
        if rc:
            raise SystemExit(f"report {path} exited {rc}")
        text = open(child_end.name).read()
        if text:
            child["done"], child["cpu"] = map(float, text.split())
    finally:
        os.unlink(child_end.name)
    return {"marks": [[k, round(w, 3), round(c, 3)] for k, w, c in _marks],
            "thread": {k: round(v, 3) for k, v in thread.items()} or None,
            "child": {k: round(v, 3) for k, v in child.items()} or None}


def lines(t: dict) -> list[str]:
    out = [f"{'wall s':>8} {'CPU s':>7}  step (> starts, < ends; wall since the process started)"]
    out += [f"{w:8.3f} {c:7.3f}  {k}" for k, w, c in t["marks"]]
    th, ch = t["thread"], t["child"]
    if th:
        out.append(f"read-ahead thread (gunzip): {th['start']:.3f} s to {th['end']:.3f} s"
                   + (f" ({th['cpu']:.3f} s of CPU)" if "cpu" in th else ""))
        if "parse_start" in th:
            out.append(f"read-ahead thread (decode, assemble, link): {th['parse_start']:.3f} s to "
                       f"{th['parse_end']:.3f} s ({th['parse_cpu']:.3f} s of CPU)")
        if "scan_start" in th:
            out.append(f"streamed scan thread: {th['scan_start']:.3f} s to {th['scan_end']:.3f} s "
                       f"({th['scan_cpu']:.3f} s of CPU)")
    if ch:
        out.append(f"levers' child: forked at {ch['forked']:.3f} s, done at {ch['done']:.3f} s ({ch['cpu']:.3f} s of "
                   "CPU)" if "done" in ch else f"levers' child: forked at {ch['forked']:.3f} s")
    at = {k: w for k, w, _ in t["marks"]}
    wait = "levers (waits for the child)"
    if ch and f"{wait} >" in at:
        # what the child's levers cost the report's wall time: the analyses' own time is the rest of theirs
        out.append(f"the parent waited {at[f'{wait} <'] - at[f'{wait} >']:.3f} s for the child, after "
                   f"{at[f'{wait} >'] - ch['forked']:.3f} s of its own analyses")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.timeline")
    ap.add_argument("trace")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    t = timeline(a.trace)
    print(json.dumps(t) if a.json else "\n".join(lines(t)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
