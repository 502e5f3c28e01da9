"""Step starts from marks that come in runs (one step start per run of back-to-back marks), and the marks a cut's
units hold.

In any trace a step mark (a host sync, an optimizer step, the op a loop's units start at) can occur twice in a row
with nothing between: vLLM's decode waits in one cudaEventSynchronize and then calls a second one that returns at
once; a loop may `.item()` twice. Each mark read as a step start makes every other step an empty window (0 ops, 0
kernels), so a loop of 10 iterations reads as 19 steps, and 19 x the 77 ms median no longer fits the 775 ms span.
What would make this wrong: a step that really holds only its mark, i.e. a loop whose every other iteration is a
single sync and nothing else; such a "step" launches nothing and adds no wall of its own, so merging it into its
neighbour loses nothing a step line says. Marks that launch work (a CUDA-graph replay per step, called back to
back) are never merged: each is a step.
"""
from __future__ import annotations

import numpy as np


def one_per_run(pos: np.ndarray, keep_last: bool, silent: np.ndarray) -> np.ndarray:
    """The step starts (token positions, sorted) with each run of consecutive positions (p, p + 1, ...) kept once
    where the one-token unit between them launches no GPU work (`silent`, per token: a sync, a poll): its last
    where steps start after a mark (a sync ends the step, so the step ends after the run's last sync), its first
    where they start at one. Back-to-back marks that each launch work (graph.replay() called 16 times in a row)
    are steps each."""
    if len(pos) < 2:
        return pos
    run_on = (np.diff(pos) == 1) & silent[pos[:-1]]   # pos[i + 1] directly follows pos[i], which launched nothing
    drop = np.append(run_on, False) if keep_last else np.insert(run_on, 0, False)
    return pos[~drop]


def marked_share(positions: np.ndarray, regular: np.ndarray, marks: np.ndarray) -> float:
    """The share of a cut's regular units (starting at `positions`) that hold a mark of a whole step."""
    at = np.flatnonzero(marks)
    stops = np.append(positions[1:], len(marks))
    held = (np.searchsorted(at, stops) - np.searchsorted(at, positions))[regular] > 0
    return float(held.mean()) if len(held) else 0.0
