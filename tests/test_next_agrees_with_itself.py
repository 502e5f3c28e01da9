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


def _probe_sync_print() -> dict:
    from pathlib import Path

    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.output import serialize
    from tracetriage.analyzers.triage.report import analyze_trace

    return serialize.report(analyze_trace(load(Path(__file__).resolve().parent.parent / "traces"
                                               / "probe-sync-print.json.gz")))


def test_a_launch_because_says_the_launch_share_where_launches_hold_under_half_the_idle():
    """Was: fresh11 olmo_generate_offloaded_kv_cache "because the GPU idles 89% between 10,240 kernels ... while each
    launch costs the host more" beside an Idle line giving data transfer 55 of those points and launch overhead 27;
    traces/probe-sync-print likewise (idle 69%, launch overhead 33%, synchronization 22%)."""
    from tracetriage.analyzers.output import claims

    out = _probe_sync_print()
    nxt = out["lines"][4]
    idle, launch = out["idle_share"], out["idle"]["by_cause_us"]["launch_overhead"] / out["span_us"]
    assert launch < idle / 2
    assert "because the GPU idles 69% of the span, 33% in launch gaps, between 1,840 kernels" in nxt, nxt
    assert claims.check(out) == []
    # the checker holds a because that gives the launch fix the whole idle without its share
    out["claims"] = [c for c in out["claims"] if c["key"] != "next.because.cause_share"]
    assert any("gives its launch_overhead fix the whole idle" in p for p in claims.check(out))


def test_the_launches_outside_graphs_are_not_told_to_fuse_where_the_what_if_finds_nothing_to_fuse():
    """Was: traces/gpt-graphs "capture more of the step in the graph, fuse what stays outside (torch.compile), or more
    work per launch ... Would waste the week: fusing the elementwise chains, predicted 0%": one of them was wrong, and
    the course's teacher grades "fuse" 0.0 there (drill M00.03-c)."""
    from tracetriage.analyzers.model.evidence import LaunchEvidence

    ev = LaunchEvidence(cause=Cause.LAUNCH_OVERHEAD, gaps=10, total_us=200.0, median_gap_us=20.0, max_gap_us=40.0,
                        next_kernel_median_us=2.0, launch_call_median_us=5.0, queued_gaps=0, launching_ops=(),
                        kernels=100, kernel_median_us=2.0, graph_launches=4, graphed_kernels=60)
    assert "fuse what stays outside" not in advice(Cause.LAUNCH_OVERHEAD, ev, fuse_chains=0)
    assert "fuse what stays outside (torch.compile)" in advice(Cause.LAUNCH_OVERHEAD, ev, fuse_chains=3)
