"""The traced host time after the last GPU work, named where a warm-up's remainder is mostly it.

A warm-up's prediction is the traced span with the set-up taken out: what is left includes the host's time after the
last kernel, which no GPU work explains. heldout-user18 dynavis_rtx6000: "2.57 s → 1.41 s" where 1.27 s of the 1.41 s
is one cudaDeviceSynchronize from +1189.6 ms to the trace's end, the last kernel ending at +1301 ms: the profiler's
stop or work outside the trace, named nowhere in the report. The remainder note names it, with the call that holds it.

What would make it fire falsely: a tail that is the workload's own host work (a step's CPU post-processing after its
last kernel); the words say only where the time lies and the call in it, not that it is the profiler's.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.trace import DRIVER, RUNTIME
from tracetriage.analyzers.model.units import duration_ns

TAIL_NAMED = 0.25   # the tail holds this share of a warm-up's remainder: named beside it


def host_tail(a) -> tuple[int, str | None]:
    """The traced time after the last GPU activity (ns), and the runtime call that holds most of it (None: none)."""
    devs = getattr(a, "devices", ())
    trace = getattr(a, "trace", None)
    if not devs or trace is None or not len(trace.ev):
        return 0, None
    ev, last = trace.ev, max(d.span_end for d in devs)
    tail = max(int(ev.end.max()) - last, 0)
    calls = np.flatnonzero(((ev.cat == RUNTIME) | (ev.cat == DRIVER)) & (ev.end > last))
    if not tail or not len(calls):
        return tail, None
    held = np.minimum(ev.end[calls], last + tail) - np.maximum(ev.start[calls], last)
    top = int(calls[np.argmax(held)])
    return tail, trace.names[ev.name[top]] if held.max() >= 0.5 * tail else None


def remainder_tail(a, remainder_ns: int) -> str:
    """', X of it the host after the last GPU work (in CALL, waiting on no kernel)', where it holds TAIL_NAMED of the
    warm-up's remainder."""
    tail, call = host_tail(a)
    if not remainder_ns or tail < TAIL_NAMED * remainder_ns:
        return ""
    held = f" in {call}, with no kernel left to wait on" if call else ""
    return (f", {duration_ns(tail)} of it the host after the last GPU work{held} (no GPU work: the profiler's "
            "stop, or host work the trace does not show)")
