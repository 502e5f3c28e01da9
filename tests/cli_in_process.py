"""The CLI run inside the test's own process, seen as a child's would be: its exit code, stdout and stderr.

`python -m tracetriage.cli ...` as a child costs the interpreter's start and every import again (~0.3-0.5 s of a
core each, more under load), and analyses anew a bundled trace this process has analysed already
(tests/bundled_analyses.py). `main(argv)` is the same path from the arguments to the exit code, minus the process
itself; the tests that are about the process (the exit status and the one error line a shell sees, a `report`
killed or piped: tests/test_cli_exit.py, tests/test_bad_inputs.py) keep a real child.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*argv, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`tracetriage ARGV` run from `cwd` in this process: returncode, stdout and stderr as text."""
    from tracetriage.cli import main

    args = [str(a) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as e:     # argparse's --help and the house's bad-option line exit
                code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["tracetriage", *args], code, out.getvalue(), err.getvalue())
