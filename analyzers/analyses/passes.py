"""Whole passes of one op sequence: a trace that runs the same forward (or step) twice, too few times for a loop.

A notebook often profiles a module run twice, once bare and once under a `record_function` range (heldout-user13
arc-a5000-mha: two forwards of one attention module, the second under `model_inference`, 39.9 of 78.6 ms of GPU
time). The step search finds no loop there (a unit seen fewer than STEP_MIN_REPEATS times is none), and the units
that do repeat (the projections, cut at each aten::matmul) hold no mark of a step, so the trace was called "one
pass" whose repeats are its layers, beside a Time line whose range holds half the GPU time once.

What any trace of it shows: its top-level ops, from the first to the last that is an op (a closing
torch.cuda.synchronize() left out), are K copies of one sequence, name for name, 2 <= K < STEP_MIN_REPEATS. A range
of the user's that holds exactly one copy's ops is named with it. K copies as often as a loop's unit were weighed by
the step search already (a pass of nothing but identical layers: one pass, its layers).
What would make it fire falsely: a pass whose first and second halves are alike by construction (two identical
stacks of two different layers, with nothing between them) reads as two passes; no step is claimed from it either
way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, USER_ANNOTATION, Trace


@dataclass(frozen=True)
class Passes:
    count: int                 # whole copies of one op sequence the trace runs
    range_name: str | None     # a user's range that holds exactly one of them, else None


def whole_passes(trace: Trace, rows: np.ndarray, torch_ranges: tuple[str, ...], loop_repeats: int) -> Passes | None:
    """The trace's top-level ops (rows, in time order) as K copies of one sequence, 2 <= K < loop_repeats (the step
    search's STEP_MIN_REPEATS: module docstring)."""
    ev = trace.ev
    op_rows = np.flatnonzero(ev.cat[rows] == CPU_OP)
    if len(op_rows) < 2:
        return None
    core = rows[op_rows[0]: op_rows[-1] + 1]
    tok = ev.name[core]
    n = len(tok)
    for p in range(1, n // 2 + 1):
        if n % p == 0 and np.array_equal(tok, np.tile(tok[:p], n // p)):
            # as often as a loop's unit: the step search weighed those units already and found no step's mark in
            # them (a pass of identical layers and nothing else): its word stands
            if n // p >= loop_repeats:
                return None
            return Passes(n // p, _range_of_one(trace, core, p, torch_ranges))
    return None


def _range_of_one(trace: Trace, core: np.ndarray, p: int, torch_ranges: tuple[str, ...]) -> str | None:
    """A user's range whose span holds exactly one pass's ops (p of the sequence's rows, one copy's, in place)."""
    ev = trace.ev
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    if not len(ann):
        return None
    if torch_ranges:
        ann = ann[~name_flags(trace, ann, lambda n: n.startswith(torch_ranges))]
    for r in ann.tolist():
        inside = np.flatnonzero((ev.start[core] >= ev.start[r]) & (ev.end[core] <= ev.end[r]))
        if len(inside) == p and inside[0] % p == 0 and inside[-1] == inside[0] + p - 1:
            return trace.names[int(ev.name[r])]
    return None
