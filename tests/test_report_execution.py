"""The Regime line speaks of the GPU's execution model where it matters (issue 37): a top kernel at low occupancy
already at its roof is said not to need occupancy; a .contiguous() copy that buys a coalesced consumer is costed both
ways; nothing is said where nothing applies."""
from __future__ import annotations

from pathlib import Path

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output.serialize import report as report_json
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import five_lines

ROOT = Path(__file__).resolve().parent.parent


def _regime_line(path: str) -> tuple[str, object]:
    a = analyze_trace(load(ROOT / path))
    return five_lines(a)[3], a


def test_a_cublas_matmul_at_the_compute_roof_at_low_occupancy_is_said_not_to_need_occupancy():
    line, a = _regime_line("traces/matmul-sweep-bf16.json.gz")
    o = a.execution.occupancy
    assert o.shape.achieved_pct < 25 and o.verdict.roof == "compute" and o.verdict.roof_share > 0.9
    assert (f"reaches {round(100 * o.verdict.roof_share)}% of the compute roof at 18.8% occupancy (1 block of 12 "
            "warps per SM") in line
    assert "occupancy is not its lever" in line
    assert report_json(a)["execution"]["occupancy"]["shape"]["resident_blocks"] == 1


def test_an_overhead_bound_trace_says_nothing_of_occupancy_and_reads_no_launch_arguments():
    line, a = _regime_line("traces/gpt-eager.json.gz")
    assert a.execution is None and "occupancy" not in line
    assert "execution" not in report_json(a)


def test_a_memory_bound_chain_of_vectorised_kernels_says_nothing_of_strides_or_occupancy():
    line, a = _regime_line("traces/chain-eager-large.json.gz")
    assert a.execution is None and "sectors" not in line and "occupancy" not in line
