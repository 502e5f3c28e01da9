"""A progress bar for loads long enough to wonder about (stderr only, never stdout).

Shown when stderr is a terminal, the user did not pass --quiet, and the file is big
enough that the load takes over a second (~100 MB of JSON or ~8 MB of gzip on two
cores). rich is imported only then.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Callable, Iterator

_quiet = False
STAGES = ("read", "decode", "link", "analyse")


def set_quiet(flag: bool) -> None:
    global _quiet
    _quiet = flag


def _slow(path: Path) -> bool:
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
    except OSError:
        return False
    return size > (8 << 20 if gz else 100 << 20)


@contextlib.contextmanager
def bar(path: Path) -> Iterator[Callable[[str], None]]:
    """Yields advance(stage): call it as each stage of STAGES begins."""
    if _quiet or os.environ.get("TRACETRIAGE_QUIET") or not sys.stderr.isatty() or not _slow(path):
        yield lambda stage: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as p:
        task = p.add_task(f"{path.name}: read", total=len(STAGES))

        def advance(stage: str) -> None:
            done = STAGES.index(stage) if stage in STAGES else 0
            p.update(task, completed=done, description=f"{path.name}: {stage}")

        yield advance
