"""The report's what-if levers replayed in a forked child while the parent runs the other analyses.

    early = aside.start(trace, replay)    # None where a fork would not pay: a small trace, one core, not Linux
    early.hand(found)                     # what the parent found since that the child's replay(trace, handed) asks
    ...                                   # idle, ranges, roofline, steps, health ... in the parent
    done, levers = early.result()         # (False, None): the child failed; replay here instead
    early.discard()                       # (always, in a finally: a child whose levers are not asked for is ended)

On a large trace the levers (the dependency graph, every lever's edit and replay, the best ones again without the
profiler) take about as long as all the other analyses together, and neither reads the other, so on two cores the
replays cost no wall time of their own. The child shares the trace copy-on-write and sends back its Levers without
the graph (pickled: ~1 MB for a 300 MB trace; the graph and its context hold the trace), and
Levers.unprofiled_ratio builds the graph again should the parent need one more lever's ratio. A child that fails
for any reason sends nothing and the parent replays itself: the same figures either way (the fork and the pipe:
tracetriage.analyzers.loading.forked).

Why the parent does not replay a share of the levers itself once its analyses are done: on the 293 MB benchmark trace
the parent waits for the child 0.1-0.25 s (its analyses 0.5-0.67 s, the child's levers 0.7-0.8 s), and a share needs
a dependency graph of its own (0.12 s) and repeats the look-ups the levers share through their Context (the first lever
to ask pays for them): with cuda_graphs and batch_items replayed in the parent, the parent's CPU went up by 0.3 s, the
child's down by 0.1-0.2 s, and analyze_trace took as long as before (0.76-0.89 s against 0.78-0.88 s, 3 pairs).
"""
from __future__ import annotations

import threading

from tracetriage.analyzers.loading import forked
from tracetriage.analyzers.model.trace import Trace

MIN_EVENTS = 100_000   # below this the levers take a few tens of ms: a fork and a pickle would cost a share of it


def start(trace: Trace, replay) -> forked.Child | None:
    """`replay(trace, handed)` (the report's own call: Levers or None) in a forked child, where that pays; handed()
    waits for what the parent gives the child's hand() (the report: the roofline and the steps, found while the child
    builds its dependency graph). The child's result() is (True, Levers without their graph, or None as the report's
    own call gives) or (False, None)."""
    if len(trace.ev) < MIN_EVENTS or threading.current_thread() is not threading.main_thread():
        return None

    def work(handed):
        lv = replay(trace, handed)
        return lv.without_graph(trace) if lv is not None else None

    return forked.start(work, handoff=True)
