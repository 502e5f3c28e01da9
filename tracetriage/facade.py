"""The functions `tracetriage` exports: analyze, diff, whatif, profile (see the package's docstring)."""
from __future__ import annotations

import contextlib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tracetriage import notebook
from tracetriage.analyzers.model.trace import TraceError


def analyze(path: str | os.PathLike, *, range: str | None = None,  # noqa: A002 (the CLI's --range)
            graph_capture: str | os.PathLike | None = None) -> notebook.Analysis:
    """The analysis of one trace file (restricted to the named range `range`, as `report --range`; its
    CUDA-graph replays charged to the ops of a separate capture trace `graph_capture`, as `--graph-capture`)."""
    from tracetriage.analyzers.triage.report import analyze_file

    return notebook.shown(analyze_file(path, range, graph_capture))


def diff(before: str | os.PathLike, after: str | os.PathLike) -> notebook.Diff:
    """The change between two traces in time, launches, bytes and idle, and the lever it applied."""
    from tracetriage.analyzers.triage.diff import diff_files

    return notebook.shown(diff_files(before, after))


def whatif(path: str | os.PathLike, levers: list[str] | None = None, *, only: str | None = None) -> notebook.WhatIf:
    """Each lever's predicted span for the trace, best first (`levers`: a subset; `only`: remove_syncs' op)."""
    from tracetriage.analyzers.whatif.predict import WhatIfError, predict_file

    try:
        return notebook.shown(predict_file(path, levers=levers, only=only))
    except WhatIfError as e:
        raise TraceError(str(e)) from None


@dataclass
class Profiled:
    """What `profile()` recorded: the trace's path, and its analysis once the block has ended."""
    path: Path
    analysis: notebook.Analysis | None = None


@contextlib.contextmanager
def profile(path: str | os.PathLike | None = None, *, cuda: bool | None = None):
    """torch.profiler around the block, with the settings the analysis needs: CPU and (where there is
    a GPU) CUDA activity, shapes (the roofline's FLOPs and bytes), CUDA sync events; named ranges
    from `tracetriage.capture.ranges.named_range` or `torch.profiler.record_function` land in the trace.

    The trace is written to `path` (default: a new file in the temporary directory) and analysed when
    the block ends: `p.analysis`. Pending GPU work is synchronised first, so all of it is in the trace.
    """
    import gzip

    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from tracetriage.capture.harness import experimental_config

    on_gpu = torch.cuda.is_available() if cuda is None else cuda
    out = Path(path) if path is not None else \
        Path(tempfile.gettempdir()) / f"tracetriage-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json.gz"
    result = Profiled(out)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with torch_profile(activities=activities, record_shapes=True,
                       experimental_config=experimental_config() if on_gpu else None) as prof:
        yield result
        if on_gpu:
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(raw))
        data = raw.read_bytes()
    out.write_bytes(gzip.compress(data, compresslevel=6) if out.name.endswith(".gz") else data)
    result.analysis = analyze(out)
