"""The per-op diff: every op's device time, calls, kernels and bytes on both sides, largest change first."""
from pathlib import Path

import pytest

from tracetriage.analyzers.triage.opdiff import op_diff, op_table
from tracetriage.analyzers.triage.report import analyze_file

TRACES = Path(__file__).resolve().parent.parent / "traces"


@pytest.fixture(scope="module")
def chain():
    return analyze_file(TRACES / "chain-eager-large.json.gz"), analyze_file(TRACES / "chain-triton-large.json.gz")


def test_fusing_the_chain_removes_its_three_ops_and_adds_the_fused_kernel_largest_change_first(chain):
    rows = op_diff(*chain)
    assert [r.name for r in rows] == ["aten::mul", "aten::sigmoid", "aten::add", "_fused_chain_kernel"]
    mul = rows[0]
    assert mul.after is None and mul.before.calls == 400 and mul.before.kernels == 400
    assert mul.change_us == -mul.before.device_us
    fused = rows[3]
    assert fused.before is None and fused.after.bytes is None      # a Triton kernel has no cost model: no bytes, not 0
    # the roofline's bytes of its kernels: 200 tensor*tensor muls (3 x 256 MB) and 200 tensor*scalar (2 x 256 MB)
    assert mul.before.bytes == sum(p.bytes for p in chain[0].roof.points if p.name == "aten::mul")
    assert mul.before.bytes == pytest.approx(200 * (3 + 2) * 2 ** 28, rel=1e-6)
    assert [abs(r.change_us) for r in rows] == sorted((abs(r.change_us) for r in rows), reverse=True)


def test_the_op_table_adds_up_to_the_hotspots_and_the_device_time(chain):
    before = chain[0]
    table = op_table(before)
    for h in before.hotspots:
        assert table[h.name].device_us == pytest.approx(h.device_us, abs=0.1)
    gpu = before.trace.ev
    import numpy as np

    from tracetriage.analyzers.model.trace import GPU_CATS

    m = np.isin(gpu.cat, GPU_CATS)
    assert sum(s.device_us for s in table.values()) == pytest.approx(float((gpu.end[m] - gpu.start[m]).sum()) / 1e3)


def test_with_the_diffs_divisors_every_figure_is_per_step():
    b, a = analyze_file(TRACES / "smell-sync-item.json.gz"), analyze_file(TRACES / "control-sync-light.json.gz")
    rows = {r.name: r for r in op_diff(b, a, (4, 2))}
    whole_b, whole_a = op_table(b), op_table(a)
    assert rows["aten::mm"].before.device_us == pytest.approx(whole_b["aten::mm"].device_us / 4)
    assert rows["aten::mm"].after.device_us == pytest.approx(whole_a["aten::mm"].device_us / 2)
    assert rows["aten::mm"].before.calls == round(whole_b["aten::mm"].calls / 4)
