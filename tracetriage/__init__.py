"""tracetriage from Python: the typed results of the analysis, for notebooks (Colab, Jupyter) and scripts.

    import tracetriage

    a = tracetriage.analyze("traces/smell-sync-item.json.gz")     # an Analysis
    a                                  # in a notebook: the five lines and the idle-by-cause bar
    a.dominant, a.idle_share, a.next_experiment.lever              # typed fields, no sentences to parse

    d = tracetriage.diff("before.json.gz", "after.json.gz")      # a Diff, with the lever the change applied
    w = tracetriage.whatif("before.json.gz")                      # a WhatIf: each lever's predicted span

    with tracetriage.profile() as p:   # torch.profiler with the capture's settings around your code
        train_step()
    p.analysis                         # ... analysed when the block ends; p.path is the trace

Importing this package costs no torch, triton or streamlit; `profile()` imports torch when it runs.
Nothing here prints, plots or writes, except `profile()`, which writes the trace it recorded.
Every function raises `TraceError` (a one-line message) for a path that is not a usable trace.
"""
from __future__ import annotations

__all__ = ["TraceError", "analyze", "diff", "profile", "whatif"]


def __getattr__(name: str):
    # loaded on first use (PEP 562), so `python -m tracetriage.cli capture` on a GPU machine that has torch
    # but not the analysis's parser (msgspec) can still import the package
    if name in __all__:
        from tracetriage import facade

        return getattr(facade, name)
    raise AttributeError(f"module 'tracetriage' has no attribute {name!r}")
