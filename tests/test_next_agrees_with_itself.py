"""The Next's mechanism words say what the trace's own construct does, and its because agrees with the report's own
Idle and Regime lines."""
from __future__ import annotations

from tracetriage.analyzers.model.verdicts import Cause, Construct
from tracetriage.analyzers.voice.common import advice


def test_reduce_overhead_is_said_to_replay_each_compiled_call_not_each_step():
    """Was: fresh11 streaming_conformer_compiled_no_cudagraphs "torch.compile(mode='reduce-overhead') replays each step
    as one graph launch", where the step makes 16 compiled calls (and its fix replayed 16 graphs a step)."""
    said = advice(Cause.LAUNCH_OVERHEAD, construct=Construct.COMPILED)
    assert "replays each step as one graph launch" not in said
    assert "replays each compiled call (not the whole step) as one graph launch" in said
