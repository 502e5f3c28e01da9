"""A graph launch's cost grows with its nodes (whatif.graph_launch): a fixed part and a part a node, fitted on the
trace's own graph launches, else the reference line through the committed traces'; the cuda_graphs lever prices the
graphs it builds with it, and the unprofiled replay keeps a share of the fixed part only."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.runtime_calls import is_graph_launch
from tracetriage.analyzers.whatif import depgraph, graph_launch
from tracetriage.analyzers.whatif import replay as rp
from tracetriage.analyzers.whatif.levers import cuda_graphs
from tracetriage.analyzers.whatif.levers.spec import Context, Options
from tracetriage.analyzers.whatif.unprofiled import unprofile

TRACES = Path(__file__).resolve().parent.parent / "traces"


def _launches(path: Path) -> tuple[np.ndarray, np.ndarray, object, object]:
    """A trace's graph launches: (their calls, the nodes each launched, the trace, its graph)."""
    t = load(path)
    g = depgraph.build(t)
    gl = np.flatnonzero(Context(t, g).calls_named(is_graph_launch))
    return gl, np.bincount(g.g_call[g.g_linked], minlength=g.n_calls)[gl], t, g


def _replaying_traces() -> list[Path]:
    return [p for p in sorted(TRACES.rglob("*.json.gz")) if "cuda_graphs" in p.name or "static" in p.name
            or p.parent.name == "graphs" or p.name == "gpt-graphs.json.gz"]


def test_the_reference_line_is_the_median_slope_through_the_committed_traces_graph_launches():
    sizes, medians = [], []
    for p in _replaying_traces():
        gl, n, _, g = _launches(p)
        ok = n > 0
        if ok.sum():
            sizes.append(float(np.median(n[ok])))
            medians.append(float(np.median(g.c_dur[gl][ok])))
    assert len(sizes) >= 18
    n, d = np.array(sizes), np.array(medians)
    slope = np.median([(d[j] - d[i]) / (n[j] - n[i]) for i, j in itertools.combinations(range(len(n)), 2)
                       if n[i] != n[j]])
    assert abs(slope - graph_launch.REFERENCE_PER_NODE_NS) <= 0.03 * graph_launch.REFERENCE_PER_NODE_NS
    assert abs(np.median(d - slope * n) - graph_launch.REFERENCE_FIXED_NS) <= 1_000


def test_launches_of_several_sizes_give_their_own_line_and_one_that_waited_does_not_move_it():
    nodes = np.array([10, 10, 10, 50, 50, 50, 200, 200, 200, 0])
    durations = 6_000 + 2_000 * nodes
    durations[1] += 400_000          # a launch that waited on a full launch queue
    cost = graph_launch.fit(durations, nodes)
    assert (cost.fixed_ns, cost.per_node_ns, cost.source) == (6_000, 2_000, "trace")


def test_launches_of_one_size_scale_the_reference_line_and_none_take_it_whole():
    ref = graph_launch.REFERENCE
    assert graph_launch.fit(np.array([], np.int64), np.array([], np.int64)) == ref
    assert graph_launch.fit(np.array([5_000]), np.array([0])) == ref     # a launch that issued nothing
    cost = graph_launch.fit(np.full(4, 2 * ref.of(95)), np.full(4, 95))
    assert cost.source == "trace_scaled"
    assert abs(cost.of(95) - 2 * ref.of(95)) <= 2 and abs(cost.per_node_ns - 2 * ref.per_node_ns) <= 1


def test_gpt_graphs_own_launches_price_a_graph_of_their_size_at_what_they_take():
    gl, n, t, g = _launches(TRACES / "gpt-graphs.json.gz")
    cost = cuda_graphs.graph_cost(Context(t, g))
    assert cost.source == "trace_scaled"
    assert abs(cost.of(95) - np.median(g.c_dur[gl][n == 95])) <= 0.02 * cost.of(95)


def test_a_step_graph_the_lever_builds_costs_what_that_steps_own_graph_launches_take():
    # traces/fixes/per_param_sgd: the fix's graph replays 240 kernels a step in ~345 µs under the profiler; a flat
    # 2.3 µs a kernel (gpt-graphs' 95-node graphs) priced the lever's graph of the before trace at 552 µs
    gl, n, _, g_after = _launches(TRACES / "fixes" / "per_param_sgd--cuda_graphs.json.gz")
    traced = float(np.median(g_after.c_dur[gl]))
    t = load(TRACES / "fixes" / "per_param_sgd--before.json.gz")
    g = depgraph.build(t)
    c = Context(t, g)
    p = rp.Plan.of(g)
    cuda_graphs.apply(c, p, Options())
    graphs = np.flatnonzero(np.bincount(p.g_call[p.g_call >= 0], minlength=g.n_calls) == int(np.median(n)))
    assert len(graphs)
    assert np.all(np.abs(p.c_dur[graphs] - traced) <= 0.1 * traced)


def test_without_the_profiler_a_big_graphs_launch_keeps_a_share_of_its_fixed_part_not_of_its_nodes():
    # 240 nodes launched in ~345 µs traced, ~1.5 µs of it a node the profiler records: a quarter of the whole call
    # kept 86 µs a launch, more than the GPU takes for half the graph
    gl, n, t, g = _launches(TRACES / "fixes" / "per_param_sgd--cuda_graphs.json.gz")
    p = rp.Plan.of(g)
    unprofile(t, g, p)
    assert np.all(n == 240)
    assert np.median(p.c_dur[gl]) <= graph_launch.REFERENCE_FIXED_NS
