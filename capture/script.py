"""Profile a user's own script: `tracetriage capture script train.py --lr 3e-4`.

The script runs as __main__ with its own argv under the same profiler settings
as the workloads (shapes, CUDA sync events). There is no warm-up we can do for a
script; put the interesting part in a loop, or wrap phases with
`tracetriage.capture.ranges.named_range` so the report can speak of them.

A script that raises is the user's bug, not ours: ScriptFailed carries the traceback
from the script's own first frame on (never the CLI's, runpy's or the profiler's frames
above it), and no trace is written, so an earlier trace at the same path stays as it was.
"""
from __future__ import annotations

import runpy
import sys
import traceback
from pathlib import Path

import torch

from tracetriage.capture.harness import record
from tracetriage.capture.stacks import StackChoice, choose


class ScriptFailed(Exception):
    """The user's script raised or exited with a non-zero status."""

    def __init__(self, script: Path, message: str, traceback_text: str, exit_code: int):
        super().__init__(message)
        self.script = script
        self.traceback_text = traceback_text    # what Python itself would have printed
        self.exit_code = exit_code


def capture_script(path: str, args: list[str], out_path: Path, device: str | None = None,
                   stacks: str = "auto") -> StackChoice:
    """Profile one run of the script; returns whether stacks were recorded (a script cannot be measured first)."""
    script = Path(path)
    if not script.is_file():
        raise FileNotFoundError(f"no such script: {path}")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    saved_argv = sys.argv
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        def run_once():
            with torch.profiler.record_function(f"script:{script.name}"):
                run_as_main(script)
        stack = choose(stacks)
        record(run_once, device=device, steps=1, out_path=out_path, with_stack=stack.on)
    finally:
        sys.argv = saved_argv
        sys.path.remove(str(script.resolve().parent))
    return stack


def run_as_main(script: Path) -> None:
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:
        if e.code in (None, 0):  # a script that calls sys.exit(0) still gets its trace
            return
        if isinstance(e.code, int):
            raise ScriptFailed(script, f"your script {script.name} exited with status {e.code}", "", e.code) from None
        # sys.exit("message"): Python prints the message and exits with status 1
        raise ScriptFailed(script, f"your script {script.name} exited with status 1", f"{e.code}\n", 1) from None
    except Exception as e:  # (KeyboardInterrupt is the user stopping us: it goes on up)
        raise ScriptFailed(script, f"your script {script.name} raised {type(e).__name__} (shown above)",
                           their_traceback(e, script), 1) from None


def their_traceback(exc: BaseException, script: Path) -> str:
    """The traceback as Python prints it, from the script's first frame on. A SyntaxError in the
    script has no frame of it (runpy's compile raised it): then only the error, which names the line."""
    own = script.resolve()
    tb = exc.__traceback__
    while tb is not None and Path(tb.tb_frame.f_code.co_filename).resolve() != own:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))
