"""torch.compile's first compilations as one-time set-up: the stretches dynamo and Inductor held the host.

Input: a trace, and the host-work and launch gaps of one device with the set-up already found in them
(tracetriage.analyzers.analyses.first_calls). Output: the host stretches inside torch.compile's compile spans
(model.constructs: `... (dynamo_timed)`, entire_frame_compile, compile_fx, ...) where every compilation the trace
names is a function's first (compile ids N/0 only: no frame compiles again), and one set-up finding for them.

A function's first call under torch.compile traces, lowers and compiles it; the steady state never pays that
again (a recompile, id N/1 and up, recurs wherever the shapes change: the no_recompiles lever's, not set-up). The
set-up the first-call rule finds inside a compile span is only the gap that ends at a generated kernel's first
launch (first_calls.compiling): on a profile of the first compiled calls (heldout-user6 rtx4090d_compile_warmup,
compile_inner 1.42 s of a 1.73 s span) that held 32% of the span while the Idle line said 90% of the idle was inside
torch.compile, and the warm-up's replay, which took out none of the compile spans, predicted −3%.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.constructs import MARKING_CATS, compile_ids, construct_of
from tracetriage.analyzers.model.evidence import FirstCall
from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.trace import Trace
from tracetriage.analyzers.model.verdicts import Construct


def first_compile_rows(trace: Trace) -> np.ndarray:
    """The host rows marking torch.compile compiling, where the trace names compile ids and none is a recompile;
    empty otherwise (no compile ids, torch before 2.1: whether a span is a first compilation is unknown)."""
    ids = compile_ids(trace.names)
    if not ids or any(attempt > 0 for _, attempt in ids):
        return np.empty(0, np.int64)
    # the compile construct's marking events (analyses.framework paints the same ones)
    names = [i for i, n in enumerate(trace.names) if construct_of(n) is Construct.COMPILE]
    return np.flatnonzero(np.isin(trace.ev.name, names) & any_of(trace.ev.cat, MARKING_CATS))


def frames_compiled(trace: Trace) -> int:
    """How many functions (dynamo frames) the trace compiles: its distinct compile ids."""
    return len(compile_ids(trace.names))


def compilations(trace: Trace, s: np.ndarray, e: np.ndarray, found_s: np.ndarray, found_e: np.ndarray,
                 before_s: np.ndarray, before_e: np.ndarray) -> FirstCall | None:
    """One finding for the idle gaps s..e that torch.compile's first compilations held: their compile spans and the
    stretches before a generated kernel's first launch (first_calls.compiling's windows before_s..before_e, whose
    findings it replaces), less what the other set-up windows (found_s..found_e: first calls, set-up API calls) hold
    already.
    None where the trace compiles nothing for the first time."""
    rows = first_compile_rows(trace)
    if not len(rows) or not len(s):
        return None
    ev = trace.ev
    ws, we = iv.union(np.r_[ev.start[rows], before_s], np.r_[ev.end[rows], before_e])
    gs, ge = iv.union(s, e)
    held = iv.intersect(gs, ge, ws, we)
    already = iv.intersect(*held, *iv.union(found_s, found_e)) if len(found_s) else (held[0][:0], held[1][:0])
    idle_ns = iv.total(*held) - iv.total(*already)
    if idle_ns <= 0:
        return None
    frames = frames_compiled(trace)
    # (said after "first calls of": its first-ness is the caveat's)
    return FirstCall(f"torch.compile compiling {frames} function{'s' if frames != 1 else ''}",
                     round(iv.total(ws, we) / 1e3, 1), None, round(idle_ns / 1e3, 1))
