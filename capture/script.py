"""Profile a user's own script: `tracetriage capture script train.py --lr 3e-4`.

The script runs as __main__ with its own argv under the same profiler settings
as the workloads (shapes, CUDA sync events). There is no warm-up we can do for a
script; put the interesting part in a loop, or wrap phases with
`capture.ranges.named_range` so the report can speak of them.
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

import torch

from capture.harness import record
from capture.stacks import StackChoice, choose


def capture_script(path: str, args: list[str], out_path: Path, stacks: str = "auto") -> StackChoice:
    """Profile one run of the script; returns whether stacks were recorded (a script cannot be measured first)."""
    script = Path(path)
    if not script.is_file():
        raise FileNotFoundError(f"no such script: {path}")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    saved_argv = sys.argv
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        def run_once():
            with torch.profiler.record_function(f"script:{script.name}"):
                try:
                    runpy.run_path(str(script), run_name="__main__")
                except SystemExit as e:  # a script that calls sys.exit(0) still gets its trace
                    if e.code not in (None, 0):
                        raise
        stack = choose(stacks)
        record(run_once, device=device, steps=1, out_path=out_path, with_stack=stack.on)
    finally:
        sys.argv = saved_argv
        sys.path.remove(str(script.resolve().parent))
    return stack
