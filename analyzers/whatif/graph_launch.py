"""What a CUDA graph launch costs the host: a fixed part plus a part for each node it launches.

Under torch.profiler a cudaGraphLaunch lasts longer the more kernels its graph holds (CUPTI records each node as
the graph launches). On the 20 committed traces that replay graphs (H200, torch 2.11: traces/fixes, realworld,
generate, graphs and gpt-graphs, one graph size each) the median launch of 10 nodes takes 16-21 µs, of 48 70 µs, of
109 167 µs, of 240 345 µs, of 3,334 4.98 ms and of 13,062 19.75 ms: a few µs and ~1.45 µs a node. A flat cost per
kernel read off one size mis-prices another: 2.3 µs a kernel from gpt-graphs (95 nodes) priced traces/fixes
per_param_sgd's 240-kernel step graph at 552 µs where its own graph launches take 345 µs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The reference line, where a trace replays no graph of its own: the median-slope line (Theil-Sen) through the
# median launch of each of those 20 traces, the whole-step graphs of thousands of nodes with the rest (without them
# the small graphs set 8.3 µs and 1.43 µs a node); tests/test_graph_launch.py re-derives it.
REFERENCE_FIXED_NS = 5_200
REFERENCE_PER_NODE_NS = 1_490


@dataclass(frozen=True)
class LaunchCost:
    """A graph launch of n nodes lasts fixed_ns + n * per_node_ns; `source` says where that was measured (a key of
    levers.spec.SOURCE_WORDS)."""
    fixed_ns: int
    per_node_ns: int
    source: str

    def of(self, nodes):
        return self.fixed_ns + self.per_node_ns * nodes


REFERENCE = LaunchCost(REFERENCE_FIXED_NS, REFERENCE_PER_NODE_NS, "graph_reference")


def fit(durations: np.ndarray, nodes: np.ndarray) -> LaunchCost:
    """The line through a trace's own graph launches (their durations, ns, and the nodes each launched), robust to
    the launch that waited on a full launch queue or was preempted:
    1. a launch that issued nothing says nothing of its nodes: left out; none left, the reference line;
    2. per graph size, the median launch;
    3. two sizes or more: the cost a node is the median slope between every two sizes, the fixed part the median of
       what each size's launch leaves beyond its nodes (neither below zero);
    4. one size (or sizes whose launches shrink as they grow): the reference line scaled through that size's median,
       fixed part and nodes alike (a slower host pays more for both: gpt-graphs' 95 nodes take 218 µs, 1.5x the
       reference's 146 µs)."""
    ok = nodes > 0
    if not ok.any():
        return REFERENCE
    sizes, inverse = np.unique(nodes[ok], return_inverse=True)
    medians = np.array([np.median(durations[ok][inverse == i]) for i in range(len(sizes))])
    if len(sizes) >= 2:
        i, j = np.triu_indices(len(sizes), 1)
        per_node = float(np.median((medians[j] - medians[i]) / (sizes[j] - sizes[i])))
        if per_node > 0:
            fixed = float(np.median(medians - per_node * sizes))
            return LaunchCost(int(max(fixed, 0)), int(per_node), "trace")
    scale = float(np.median(medians / REFERENCE.of(sizes)))
    return LaunchCost(int(REFERENCE_FIXED_NS * scale), int(REFERENCE_PER_NODE_NS * scale), "trace_scaled")
