"""The command line's process ends at once after its command (cli._leave: no interpreter teardown), and yet its
output is whole, its exit handlers run, its exit code is the command's, and a reader that goes away costs nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACE = str(ROOT / "traces/smell-sync-item.json.gz")
ENV = {**os.environ, "TRACETRIAGE_NO_CACHE": "1"}

# the console script's way in: main() with no argv, after an exit handler was registered and a thread left running
SCRIPT = """
import atexit, sys, threading, time
from tracetriage.cli import main
atexit.register(lambda: print("exit handler ran", file=sys.stderr))
mode = sys.argv[1]
if mode == "thread":   # work not done: a thread that is no daemon, which the process waits for
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread finished", file=sys.stderr))).start()
sys.argv = ["tracetriage", *sys.argv[2:]]
code = main()
if mode == "thread":   # (main() returns where the thread still works: the interpreter's own exit waits for it)
    sys.exit(code)
raise AssertionError("main() of the command line returned instead of ending the process")
"""


def _run(*argv: str, mode: str = "plain") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, mode, *argv], capture_output=True, text=True, env=ENV,
                          timeout=300, cwd=ROOT)


def test_the_command_lines_report_is_whole_its_exit_handlers_run_and_its_code_is_kept():
    r = _run("report", TRACE, "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["trace"]["events"] > 0          # the whole JSON, flushed before the end
    assert r.stderr == "exit handler ran\n"


def test_bad_input_still_ends_with_one_error_line_and_exit_2():
    r = _run("report", str(ROOT / "no-such-trace.json.gz"))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [f"error: no such file: {ROOT / 'no-such-trace.json.gz'}", "exit handler ran"]


def test_a_thread_still_at_work_is_waited_for_as_python_does():
    r = _run("report", TRACE, "--quiet", mode="thread")
    assert r.returncode == 0 and r.stdout.startswith("Measured:"), (r.returncode, r.stdout[:200], r.stderr)
    assert "thread finished" in r.stderr.splitlines(), r.stderr


def test_a_reader_that_goes_away_costs_no_traceback():
    big = str(ROOT / "traces/gpt-compile.json.gz")    # (its JSON, 70 KB, is more than a pipe holds)
    p = subprocess.Popen([sys.executable, "-m", "tracetriage.cli", "report", big, "--json", "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, cwd=ROOT)
    p.stdout.read(10)
    p.stdout.close()      # `tracetriage report x --json | head -c 10`
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0 and err == "", err
