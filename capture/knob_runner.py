# A comment first: torch's Python tracer names a frame of this module by its first source line, unescaped in
# the trace's JSON, and a docstring's quotes there broke every trace.
"""The child process of `tracetriage try`: turn one knob, then run the user's script as __main__.

    python -P -m tracetriage.capture.knob_runner --outside JSON --result R.json [--profile T.json.gz]
        -- SCRIPT [ARGS...]

Input: the library paths every run resolves before its script (--preload: the same imports in every run, so
none is charged another's), the knob as levers/outside.Outside.to_json() writes it (this module never imports
the analyzers: the parent sends the data), the script and its arguments.
Output: R.json, `{"wall_ns"}` (the script's run, from its first line to its last with the device drained;
torch's import and the device's start before it are left out) or `{"failed"}` (the script's exception, one
line), and with --profile the trace `capture script` would write; `device_start_ns` beside either: how long
CUDA's context took to start, before the script.

The knob is turned in this process only: module attributes set, constructors and methods wrapped, calls made
no-ops, all before the script's first line; the script's files are read, never written. Environment variables
were set by the parent (they must be in place before CUDA starts).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import importlib
import json
import re
import sys
import time
from pathlib import Path

import torch

from tracetriage.capture.script import ScriptFailed, capture_script, run_as_main


def _resolve(path: str) -> tuple[object, str, object]:
    """`torch.optim.AdamW` -> (the module or class holding it, "AdamW", the object): the longest importable
    module prefix, then attributes."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            holder: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:-1]:
            holder = getattr(holder, name)
        return holder, parts[-1], getattr(holder, parts[-1])
    raise ValueError(f"cannot resolve {path}")


def _forcing(target, forced: dict):
    """A class replaced by a subclass whose constructor forces these keyword arguments; a function by a wrapper
    that does (a caller's own value for them is overridden: that is the experiment)."""
    if isinstance(target, type):
        def __init__(self, *args, **kwargs):
            kwargs.update(forced)
            target.__init__(self, *args, **kwargs)
        return type(target.__name__, (target,), {"__init__": __init__, "__module__": target.__module__,
                                                  "__qualname__": target.__qualname__})

    @functools.wraps(target)
    def wrapper(*args, **kwargs):
        kwargs.update(forced)
        return target(*args, **kwargs)
    return wrapper


def turn(knob: dict) -> None:
    """Set the knob in this process (the env part is the parent's)."""
    for path, value in knob.get("attrs", {}).items():
        holder, name, _ = _resolve(path)
        setattr(holder, name, value)
    for path, forced in knob.get("overrides", {}).items():
        holder, name, target = _resolve(path)
        setattr(holder, name, _forcing(target, forced))
    for path in knob.get("noops", []):
        holder, name, _ = _resolve(path)
        setattr(holder, name, lambda *a, **k: None)


def _context(knob: dict, device: str):
    dtype = knob.get("autocast")
    return torch.autocast(device, dtype=getattr(torch, dtype)) if dtype else contextlib.nullcontext()


def start_device(device: str) -> int:
    """Start CUDA's context before the script, in every run alike; the ns it took (0 on a CPU).

    The profiled window always opened on a started device (the capture asks the device's name first, and
    the profiler starts CUPTI), while the unprofiled clock used to start before the script's first CUDA call
    made the context: 0.3-1 s of a few-second script on the H200, outside every trace the what-if predicts
    from, so each saving measured unprofiled was diluted by it (fused AdamW: -12% measured against -29%
    predicted). Started here, both runs measure the script's own work; no knob changes the context's start."""
    if device != "cuda":
        return 0
    start = time.perf_counter_ns()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    return time.perf_counter_ns() - start


def _timed(script: Path, args: list[str], knob: dict, device: str) -> int:
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    start = time.perf_counter_ns()
    with _context(knob, device):
        run_as_main(script)
    if device == "cuda" and torch.cuda.is_initialized():
        torch.cuda.synchronize()            # the script's last kernels are part of its time
    return time.perf_counter_ns() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tracetriage.capture.knob_runner")
    ap.add_argument("--outside", required=True)
    ap.add_argument("--result", required=True)
    ap.add_argument("--preload", default="", help="library paths every run resolves first (comma-separated)")
    ap.add_argument("--profile")
    ap.add_argument("--device", default=None)
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    knob = json.loads(a.outside)
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    script, args = Path(a.script), _after_dashes(a.args)
    result: dict = {}
    try:
        for path in filter(None, a.preload.split(",")):
            _resolve(path)
        result["device_start_ns"] = start_device(device)
        turn(knob)
        if a.profile:
            with _context(knob, device):
                capture_script(str(script), args, Path(a.profile), device=device)
            repair_names(Path(a.profile))
            result["trace"] = a.profile
        else:
            result["wall_ns"] = _timed(script, args, knob, device)
    except ScriptFailed as e:
        sys.stderr.write(e.traceback_text)
        result["failed"] = _last_line(e.traceback_text) or str(e)
    except Exception as e:          # the knob itself could not be turned (an API this torch lacks)
        result["failed"] = f"{type(e).__name__}: {e}".splitlines()[0]
    Path(a.result).write_text(json.dumps(result))
    return 3 if "failed" in result else 0


# One field per line, as Kineto writes it: `    "name": "<text>",`
_NAME_LINE = re.compile(rb'^(\s*"name": ")(.*)(",?)$', re.M)


def repair_names(trace: Path) -> int:
    """Escape the quotes Kineto left raw in an event's name; returns how many names it mended.

    torch's Python tracer sometimes names a frame with stale text (`_cupti_monitor.py(0): <the first line of
    another file>`, seen under torch 2.13 on the CPU); when that text holds a `"`, the exported JSON does not
    parse, and the run's trace would be lost. Only a name line with an unescaped quote inside is touched."""
    raw = gzip.decompress(trace.read_bytes())
    mended = 0

    def fix(m: re.Match) -> bytes:
        nonlocal mended
        inner = m.group(2)
        if not re.search(rb'(?<!\\)"', inner):
            return m.group(0)
        mended += 1
        return m.group(1) + re.sub(rb'(?<!\\)"', rb'\\"', inner) + m.group(3)

    fixed = _NAME_LINE.sub(fix, raw)
    if mended:
        trace.write_bytes(gzip.compress(fixed, compresslevel=6))
    return mended


def _after_dashes(rest: list[str]) -> list[str]:
    return rest[1:] if rest[:1] == ["--"] else rest


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1].strip() if lines else ""


if __name__ == "__main__":
    sys.exit(main())
