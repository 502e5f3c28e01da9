"""Building the model and moving it to the device inside the profiled window: one-time set-up a loop never repeats.

What it looks like in any trace recorded with Python stacks (with_stack=True): python_function frames of torch.nn's
own code, `torch/nn/modules/<file>.py(N): __init__` (a module's constructor: its parameters allocated and
initialised on the host, aten::empty/aten::uniform_ with no kernel) and `torch/nn/modules/module.py(N): to`
(or `cuda`, `_apply`: every parameter copied to the device, aten::to/aten::copy_ with a host-to-device copy each).
A script that builds its model inside `with profile(...)` and profiles one step (a tutorial's train function,
heldout-user10 h100nvl_tiny_mlp: 3.2 ms of its 21.5 ms ProfilerStep) pays them there, and that step's wall is no
measure of the loop's.

What would make it fire falsely: a module built inside the loop on purpose (a new head per step) is set-up each
time, so it is said of the only step alone, where no other step shows it recurring. Without Python stacks the
frames are not in the trace, and nothing is said (the ops alone do not tell a constructor's aten::uniform_ from a
data augmentation's).
"""
from __future__ import annotations

import re

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import PYTHON, Trace

_BUILD_FRAME = re.compile(r"torch/nn/modules/[\w/]+\.py\(\d+\): __init__$"
                          r"|torch/nn/modules/module\.py\(\d+\): (?:to|cuda|_apply|to_empty)$")


def inside(trace: Trace, lo: int, hi: int) -> int:
    """ns of [lo, hi) inside torch.nn's constructors and its Module.to/cuda frames (their union, on any thread)."""
    ev = trace.ev
    rows = np.flatnonzero((ev.cat == PYTHON) & (ev.start >= lo) & (ev.start < hi))
    if not len(rows):
        return 0
    rows = rows[name_flags(trace, rows, lambda n: _BUILD_FRAME.search(n) is not None)]
    if not len(rows):
        return 0
    o = np.argsort(ev.start[rows], kind="stable")
    s, e = iv.union(ev.start[rows][o], np.minimum(ev.end[rows][o], hi))
    return int(iv.total(s, e))
