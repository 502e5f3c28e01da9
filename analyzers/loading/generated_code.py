"""Side input the trace names but does not hold: Inductor's generated wrappers, read when present.

A trace recorded with stacks names each generated wrapper in its frames (/tmp/torchinductor_USER/ab/
cab....py(119): call); the wrapper's comments say which ATen ops each kernel fused
(tracetriage.analyzers.analyses.inductor). The file is looked for where the trace says, then in `NAME.inductor/`
beside `NAME.json.gz` (where `tracetriage capture` copies them, so a trace analysed on another machine
keeps them). A missing or unreadable file is no error: the kernel's name still says what it fused.
"""
from __future__ import annotations

import os
from pathlib import Path

from tracetriage.analyzers.loading.formats import trace_stem

MAX_FILES = 64              # a compiled model has a wrapper per graph; a few dozen at most
MAX_BYTES = 16 << 20        # a wrapper of a large model runs to a few MB


def beside(trace_path: str | os.PathLike) -> Path:
    """`NAME.inductor/` beside `NAME.json.gz` (or `NAME.json`)."""
    p = Path(trace_path)
    return p.parent / f"{trace_stem(p.name) or p.name}.inductor"


def read_wrappers(trace_path: str | os.PathLike, paths: list[str]) -> dict[str, str]:
    """path as the trace names it -> text, for the wrappers found."""
    out = {}
    folder = beside(trace_path)
    for recorded in paths[:MAX_FILES]:
        for cand in (Path(recorded), folder / Path(recorded).name):
            try:
                if cand.is_file() and cand.stat().st_size <= MAX_BYTES:
                    out[recorded] = cand.read_text(encoding="utf-8", errors="replace")
                    break
            except OSError:
                continue
    return out
