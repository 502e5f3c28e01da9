"""Side input the trace names but does not hold: the user's own source files, read when present.

A frame records its function's first line, not the line that ran (tracetriage.analyzers.analyses.frames); the file
itself says which line of that function made the call. The trace names files as the profiler trimmed
them to their sys.path entry (`train.py`, `pkg/model.py`), so they are looked for as given (absolute),
else under the working directory (where a user runs the report beside their code), else beside the
trace. A missing file is no error: the report then names the function's first line.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

# Folders a caller knows the sources are in: `tracetriage try` runs the user's script from its own folder, and the
# profiler names the script by its base name (`train.py`), which is found neither under the working directory
# (the user's, above the script) nor beside the trace (the try's out folder).
_ALSO_UNDER: ContextVar[tuple[Path, ...]] = ContextVar("source_folders", default=())

MAX_FILES = 32
MAX_BYTES = 2 << 20      # a source file, not a data file


def read_sources(trace_path: str | os.PathLike, files: list[str]) -> dict[str, str]:
    """file as the trace names it -> its text, for the Python files found."""
    out = {}
    roots = [Path.cwd(), *_ALSO_UNDER.get(), Path(trace_path).resolve().parent]
    for name in files[:MAX_FILES]:
        if not name.endswith(".py"):
            continue
        p = Path(name)
        for cand in ([p] if p.is_absolute() else [r / p for r in roots]):
            try:
                if cand.is_file() and cand.stat().st_size <= MAX_BYTES:
                    out[name] = cand.read_text(encoding="utf-8", errors="replace")
                    break
            except OSError:
                continue
    return out


@contextmanager
def also_under(*folders: str | os.PathLike):
    """Look for the sources in these folders too (after the working directory), inside the `with`."""
    token = _ALSO_UNDER.set(tuple(Path(f).resolve() for f in folders))
    try:
        yield
    finally:
        _ALSO_UNDER.reset(token)
