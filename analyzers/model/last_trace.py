"""A function of a trace alone, computed once for the trace it was last asked of.

The report asks some questions of one trace from several places: the search for its steps (analyses.steps) is asked
by the report's steps, by setup.one_pass and by the warm_up lever in the levers' forked child (whatif.aside). The
report asks it once, right after the fork, and hands its answer to the child (remember); every later call for the
same Trace object takes that answer. Keyed by the Trace object itself (a weak reference: a trace that is gone is
never answered for, whatever object reuses its address), one trace at a time: a process analyses one trace after
another, never two at once.

What would make this wrong: a function whose answer depends on anything but the trace (an argument, a setting), or
a caller that modifies the answer (its callers read it only).
"""
from __future__ import annotations

import functools
import weakref


def last_trace(fn):
    """fn(trace), computed once for the last trace it was asked of."""
    held: list = [None, None]      # [weak reference to the trace, fn's answer for it]

    @functools.wraps(fn)
    def once(trace):
        ref, answer = held
        if ref is not None and ref() is trace:
            return answer
        answer = fn(trace)
        held[:] = [weakref.ref(trace), answer]
        return answer

    def remember(trace, answer) -> None:
        """Take `answer` as fn(trace)'s, found by another process (the report's levers' child is handed the parent's
        search for the steps)."""
        held[:] = [weakref.ref(trace), answer]

    once.remember = remember   # type: ignore[attr-defined]
    return once
