"""The ground-truth workloads (capture/fixes.py) run on the CPU: every scenario, every variant."""
import json

import pytest

from tracetriage.analyzers.whatif.levers import LEVERS
from tracetriage.capture.fixes import BEFORE, SCENARIOS, FixWorkload, profile_window, span_us, variants


@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_every_variant_of_every_workload_runs_on_the_cpu(kind):
    for v in variants(kind):
        wl = SCENARIOS[kind](device="cpu", fix=v, iters=1)
        wl.setup()
        wl.window()


def test_every_lever_has_at_least_three_workloads():
    """The one-GPU workloads: a lever whose fix needs more ranks (overlap_comm) is captured on two GPUs."""
    from tracetriage.analyzers.whatif.levers import CAPTURE_PENDING
    from tracetriage.capture.realworld import REALWORLD
    from tracetriage.capture.realworld_cold import KINDS as COLD_KINDS

    # (a lever in CAPTURE_PENDING is checked on its development pair alone until its workloads are written)
    for lever in (name for name, spec in LEVERS.items() if spec.ranks == 1 and name not in CAPTURE_PENDING):
        # (the cold-start pairs, capture/realworld_cold.py, run each variant in a fresh process: warm_up's)
        n = sum(lever in c.levers for c in [*SCENARIOS.values(), *REALWORLD.values()])
        n += len(COLD_KINDS) * (lever == "warm_up")
        assert n >= 3, lever


def test_a_workload_refuses_a_fix_it_does_not_model():
    with pytest.raises(ValueError, match="has no 'cuda_graphs' variant"):
        SCENARIOS["item_python"](device="cpu", fix="cuda_graphs")


def test_a_profiled_window_is_a_trace_with_the_window_range_and_its_span(tmp_path):
    import gzip

    wl = SCENARIOS["item_python"](device="cpu", fix=BEFORE, iters=2, python_steps=100)
    wl.setup()
    span = profile_window(wl, tmp_path / "w.json.gz")
    trace = json.loads(gzip.decompress((tmp_path / "w.json.gz").read_bytes()))
    assert any(e.get("name") == "fix_window" for e in trace["traceEvents"])
    assert span == span_us(trace) > 0
    assert isinstance(wl, FixWorkload)
