"""no_host_work: host stretches that issue no GPU work vanish (done elsewhere, ahead of time).

The fix: take the host work off the critical path (DataLoader workers, prefetch, precomputation).
In the graph, the part of each call's preceding stretch that is not dispatch of its op (untraced
Python, CPU-only ops, sleeping) and lasts long enough to count goes; dispatch stays. A thread that waited
for its work through such a stretch (a DataLoader's pin-memory thread, waiting for the batch the main thread
waits for) waits that much less (host_windows.shorten_wakes): without it, the stretch left the main thread and
stayed in the pin thread's wait, and a loader's 85% of the idle was priced at −2%. Only the loop's stretches go
(host_windows.loop_host_ns): of the script's start-up before its first GPU work no more than its thread's longest
stretch in the loop, and nothing of what it runs after its last (the window's tail is in no step). Nor the stretch
after a benchmark's timing sync (analyses.timed_regions): the timing loop's own Python between measured iterations.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.timed_regions import timing_syncs
from tracetriage.analyzers.model.units import duration_ns
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.whatif.levers.host_windows import loop_host_ns, shorten_wakes
from tracetriage.analyzers.whatif.levers.spec import (
    MOVES_HOST,
    Assumption,
    Context,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    went,
)


@dataclass(frozen=True)
class HostWorkGone(Assumption):
    long_ns: int = 0                 # the shortest stretch that counts


def apply(c: Context, p, o: Options) -> tuple[HostWorkGone, dict]:
    g = c.g
    host = loop_host_ns(g)
    m = (host > 0) & ~_after_a_timer(c)
    p.c_gap[m] -= host[m]
    # the stretch sits at the end of the call's gap (what precedes the call right before it is its dispatch)
    handed = shorten_wakes(c, p, g.c_start[m] - host[m], g.c_start[m])
    detail = {"stretches": int(m.sum()), "host_ns": int(host[m].sum()), "handed_ns": handed, MOVES_HOST: True}
    return HostWorkGone("no_host_work", int(m.sum()), long_ns=g.host_long_ns), detail


def _after_a_timer(c: Context) -> np.ndarray:
    """Per call: the thread's previous call is a timing sync (analyses.timed_regions): the stretch between is the
    timing loop's own Python between measured iterations (its range's exit and entry, the loop), the benchmark's, not
    the work it times (transformer_nuggets' qlora bench: "take the host work off the critical path −6%" for the ~200 µs
    after each iteration's timer sync)."""
    g = c.g
    timer = np.isin(g.c_row, timing_syncs(c.trace)) if g.n_calls else np.zeros(0, bool)
    out = np.zeros(g.n_calls, bool)
    if not timer.any():
        return out
    order = np.lexsort((g.c_start, g.c_thread))
    same = g.c_thread[order][1:] == g.c_thread[order][:-1]
    out[order[1:]] = same & timer[order[:-1]]
    return out


def says(a: HostWorkGone) -> str:
    if a.count == 0:
        return (f"no host stretch of {duration_ns(a.long_ns)} or more (10 launch calls) that issues no GPU work: "
                "nothing to remove")
    return (f"host stretches that issue no GPU work and last {duration_ns(a.long_ns)} or more (10 launch calls) "
            "vanish; dispatch of the ops stays")


def host_work_ns(m: Measured) -> int:
    """Host time in the long stretches that issue no GPU work: what the fix moves elsewhere (a fix that
    moves it to DataLoader workers may leave as many stretches, the batches' hand-over, but short ones;
    removing a sync leaves it all, only no longer waited on)."""
    return m.whatif.lever("no_host_work").detail.get("host_ns", 0)


SPEC = LeverSpec(
    name="no_host_work", effort=3, cause=Cause.HOST_WORK, apply=apply, says=says,
    words="taking host work off the critical path",
    fix="the host work that issues no GPU work is gone (done elsewhere, ahead of time)",
    recognise=Recognise(order=5, evidence="host_work", because="its host work that issues no GPU work went",
                        amount=host_work_ns, acted=lambda m: m.by_cause_ns.get(Cause.HOST_WORK, 0),
                        applied=went))
