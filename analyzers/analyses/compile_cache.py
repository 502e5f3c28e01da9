"""What torch.compile's caches did in a cold compile: a compile that loaded its graph from Inductor's caches (its
`AOTAutogradCache.inductor_load` range: a hit), and Dynamo's own tracing and guard building, which no on-disk cache
takes out (each new process traces the bytecode and builds the guards again).

The cache advice reads it: "enable TORCHINDUCTOR_FX_GRAPH_CACHE=1" is no change where a compile in the trace hit the
cache already, and caching is not credited with Dynamo's time (heldout-user17 compilecold: resnet18 loaded from the
cache in 67 ms, beside 403 ms of bytecode_tracing and 108 ms of build_guards, was told to turn the cache on).

Input: the trace's dynamo_timed ranges. Output: `CompileCache`, or None where no compile range is in the trace.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import USER_ANNOTATION, Trace

CACHE_HIT = "AOTAutogradCache.inductor_load"
DYNAMO_OWN = ("bytecode_tracing", "build_guards")


@dataclass(frozen=True)
class CompileCache:
    hits: int            # compiles that loaded their graph from the cache
    hit_ns: int          # the time those loads took
    dynamo_ns: int       # Dynamo's bytecode tracing and guard building (their union)


def _stem(name: str) -> str:
    return name.split(" (", 1)[0]


def find(trace: Trace) -> CompileCache | None:
    ev = trace.ev
    rows = np.flatnonzero(ev.cat == USER_ANNOTATION)
    if not len(rows):
        return None
    hit = rows[name_flags(trace, rows, lambda n: _stem(n) == CACHE_HIT)]
    own = rows[name_flags(trace, rows, lambda n: _stem(n) in DYNAMO_OWN)]
    if not len(hit) and not len(own):
        return None
    hs, he = iv.union(ev.start[hit], ev.end[hit])
    ds, de = iv.union(ev.start[own], ev.end[own])
    return CompileCache(hits=len(hit), hit_ns=iv.total(hs, he), dynamo_ns=iv.total(ds, de))
