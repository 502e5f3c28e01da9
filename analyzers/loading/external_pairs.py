"""GPU activity linked to its launch call by External id, where no correlation links it.

A CUDA trace links a runtime call to what it launched by `args.correlation`, a key both carry. A ROCm/HIP trace
(roctracer under Kineto: hipLaunchKernel, hipExtModuleLaunchKernel, hipMemcpyAsync ... under cat cuda_runtime)
writes no correlation at all: each runtime call and each kernel carries an "External id" that is the call's own
id, unique to that (call, kernel) pair, and an ac2g flow ("s" at the call, "f" at the kernel) with the same id.
Read by correlation only, every kernel of such a trace looks launched by nothing and every launch call looks as if
its activity was dropped (a full activity buffer), and the trace's one-time set-up (an 18.99 ms first
hipLaunchKernel loading code objects) is read as idle nobody caused.

The rule: an activity no correlation linked is paired with the one host call, itself linked to no activity, that
carries the same External id, where exactly one such call and exactly one such activity carry it.

What would make it pair falsely: in a CUDA trace the External id is the launching *op's* id, shared by the op's
runtime calls and by every kernel it launched; an op that launches several kernels, or makes several runtime calls,
gives an id more than one side holds, so nothing pairs. Left to pair falsely is one op whose one kernel lost its
correlation while its one runtime call (a launch, by then matched to nothing) has it: that call did launch it.
A runtime call that already launched something by correlation is never a candidate.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.trace import NONE, Events


def _once(keys: np.ndarray) -> np.ndarray:
    """Which entries of keys hold a value no other entry holds (and are not NONE)."""
    if not len(keys):
        return np.zeros(0, bool)
    values, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return (counts[inverse] == 1) & (keys != NONE)


def pair_by_external_id(ev: Events, gpu: np.ndarray, calls: np.ndarray, launch_of: np.ndarray) -> int:
    """Set launch_of (in place) for the activities in `gpu` that no correlation linked, by an External id one
    unlinked call and one unlinked activity share. Returns how many were paired."""
    loose = gpu[launch_of[gpu] == NONE]
    if not len(loose) or not len(calls):
        return 0
    linked = np.zeros(len(ev), bool)
    linked[launch_of[gpu][launch_of[gpu] != NONE]] = True
    free = calls[~linked[calls]]
    loose = loose[_once(ev.ext[loose])]
    free = free[_once(ev.ext[free])]
    if not len(loose) or not len(free):
        return 0
    order = np.argsort(ev.ext[free], kind="stable")
    keys = ev.ext[free][order]
    pos = np.minimum(np.searchsorted(keys, ev.ext[loose]), len(keys) - 1)
    hit = keys[pos] == ev.ext[loose]
    launch_of[loose[hit]] = free[order[pos[hit]]]
    return int(hit.sum())
