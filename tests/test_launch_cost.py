"""What one kernel launch costs the host is the median launch call that launches one kernel: a graph launch
replays many kernels for one call (130 µs on decode-reduce-overhead against ~3 µs for a kernel launch), so it
counts only where nothing else is launched. Before, remove_syncs said copies return 'after one call's cost (5.0 µs,
the median launch call here)' with the 16 cudaGraphLaunch calls pulling the median up."""
from pathlib import Path

import numpy as np

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.runtime_calls import is_graph_launch, is_launch, median_launch_ns
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers.remove_syncs import says

TRACE = Path(__file__).resolve().parent.parent / "traces" / "graphs" / "decode-reduce-overhead.json.gz"


def test_graph_launches_count_only_where_nothing_else_is_launched():
    assert median_launch_ns([3_000, 3_000, 130_000, 130_000, 130_000], [False, False, True, True, True]) == 3_000
    assert median_launch_ns([130_000, 120_000], [True, True]) == 125_000
    assert median_launch_ns([], []) is None


def test_remove_syncs_prices_a_copy_call_at_a_kernel_launch_not_a_graph_launch():
    tr = load(TRACE)
    names = [tr.names[i] for i in tr.ev.name]
    kernel_launches = [int(tr.ev.end[i] - tr.ev.start[i]) for i, n in enumerate(names)
                       if is_launch(n) and not is_graph_launch(n)]
    assert any(is_graph_launch(n) for n in names)
    w = whatif.predict(tr, ["remove_syncs"])
    call_ns = w.levers[0].assumption.call_ns
    assert call_ns == int(np.median(kernel_launches))
    assert "(3.3 µs, the median launch call here)" in says(w.levers[0].assumption)
