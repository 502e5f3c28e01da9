"""The Idle line's clause naming the framework construct whose code holds most of the idle (analyses.framework):
'; 82% of the idle is inside AdamW's step (Optimizer.step): 12,800 launches in 8 calls'."""
from __future__ import annotations

from tracetriage.analyzers.model.constructs import Construct
from tracetriage.analyzers.model.units import share
from tracetriage.analyzers.voice.common import construct_phrase
from tracetriage.analyzers.voice.said import claim


def construct_clause(a) -> str:
    """'; 82% of the idle is inside AdamW's step (Optimizer.step): 12,800 launches in 8 calls'."""
    x = a.construct_named
    if x is None:
        return ""
    # one-time set-up is painted over every construct (analyses.framework): the idle inside a construct that ran
    # through the set-up (a cold forward, +0.6..+316 ms, its first calls 71% of the idle) is its share of the idle
    # outside the set-up, said so (heldout-user11 rn18_h200_cold: "28% of the idle is inside nn.Module forwards",
    # where all of it was)
    setup = a.framework.share_of(Construct.SETUP)
    past = a.framework.idle_ns - (setup.idle_ns if setup is not None else 0)
    if setup is not None and setup.idle_ns >= x.idle_ns and past > 0:   # (where the set-up holds more of the idle)
        held = x.idle_ns / past
        return (f"; {claim('idle.construct_share', held, share(held))} of the idle outside the one-time set-up is "
                f"inside {construct_phrase(x, a.framework.optimizer)}")
    held = x.idle_ns / a.framework.idle_ns
    return (f"; {claim('idle.construct_share', held, share(held))} of the idle is inside "
            f"{construct_phrase(x, a.framework.optimizer)}")
