"""The `try` subcommand's options and its call (tracetriage/cli.py adds it with one line)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_USER_ERROR = 2


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {n}")
    return n


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not s > 0:
        raise argparse.ArgumentTypeError(f"expected more than 0 seconds, got {text}")
    return s


def add_parser(sub) -> None:
    t = sub.add_parser("try", help="run the knobs the report proposes on your script, and measure each prediction",
                       description="Capture SCRIPT as `capture script` does, triage it, then run it again with each "
                                   "knob the report proposes that can be turned without editing your code (in a "
                                   "child process; your files are only read), profiled and unprofiled, and print "
                                   "predicted beside measured. Options go before SCRIPT.")
    t.add_argument("script", help="your script (a .py file); the arguments after it are its own")
    t.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    t.add_argument("--repeats", type=_positive, default=3, help="runs per knob, profiled and unprofiled (default 3)")
    t.add_argument("--json", action="store_true", help="print one JSON object and nothing else on stdout")
    t.add_argument("--format", choices=["text", "json", "markdown"], default=None,
                   help="text (default), json, markdown")
    t.add_argument("--dry-run", action="store_true", help="list what it would run; run and write nothing")
    t.add_argument("--max-runs", type=_positive, default=None, help="at most this many runs of the script in all")
    t.add_argument("--timeout", type=_seconds, default=None, help="at most this many seconds for all the runs")
    t.add_argument("--out", help="the folder for the traces and logs (default: SCRIPT_STEM.try)")
    t.add_argument("--trace", help="a capture of this script to triage instead of capturing it first")
    t.add_argument("--device", choices=["cuda", "cpu"], default=None,
                   help="where the script runs (default: cuda if any)")
    t.add_argument("--db", help="the prediction log (default: $TRACETRIAGE_DB, else the user data directory)")
    t.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    t.add_argument("--knob", action="append", default=[], metavar="KEY",
                   help="turn only this knob, of those the report proposes (repeat for several; default: all)")
    t.set_defaults(fn=cmd_try)


def cmd_try(a) -> int:
    from tracetriage.drills.predictions import LogError
    from tracetriage.trial import command, voice

    fmt = "json" if a.json else (a.format or "text")
    o = command.Options(repeats=a.repeats, out=Path(a.out) if a.out else None, max_runs=a.max_runs,
                        timeout_s=a.timeout, device=a.device, trace=a.trace, db=a.db, quiet=a.quiet,
                        knobs=tuple(a.knob))
    try:
        command.check_script(a.script)
        command.check_knobs(o.knobs)
        if a.trace is not None and not Path(a.trace).is_file():
            raise command.TryError(f"no such trace: {a.trace}")
        if a.dry_run:
            plan = command.dry_run(a.script, a.args, o)
            if fmt == "json":
                print(json.dumps({"schema_version": voice.SCHEMA_VERSION, "dry_run": True,
                                  "runs": [{"what": w, "command": c} for w, c in plan]}, indent=2))
            else:
                note = "" if a.trace else "(a knob runs only if the report of the first capture proposes it)"
                print("\n".join(voice.dry_run_lines(a.script, plan, note)))
            return 0
        res = command.try_script(a.script, a.args, o)
    except (command.TryError, LogError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    saved = voice.save(res)
    if fmt == "json":
        print(json.dumps(voice.to_json(res), indent=2))
    else:
        print(voice.markdown(res) if fmt == "markdown" else voice.text(res))
    if saved is not None and not a.quiet:
        print(f"try: the table is kept in {saved} (and .txt, .md beside it)", file=sys.stderr)
    return 130 if res.stopped and "interrupted" in res.stopped else 0
