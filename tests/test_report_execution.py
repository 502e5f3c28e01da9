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


LADDER = "traces/ladder/M03.02"


def test_a_copy_made_for_one_coalesced_add_is_costed_both_ways_and_said_not_to_pay():
    # the capture's pair: through the view the add takes ~490 µs; the copy ~460 µs and the coalesced add ~180 µs
    line, a = _regime_line(f"{LADDER}/tr-add-copyfirst.json.gz")
    c = a.execution.transpose.costing
    assert (c.copy.op, c.consumer.op, c.consumers, c.break_even_consumers) == ("aten::copy_", "aten::add", 1, 2)
    assert c.with_copy_us > c.through_view_us > c.consumer_us
    assert "the copy pays from 2 consumers on, and 1 consumer reads it here: it does not pay" in line


def test_one_copy_read_by_eight_adds_is_said_to_pay():
    line, a = _regime_line(f"{LADDER}/tr-reuse8-copyfirst.json.gz")
    assert a.execution.transpose.costing.consumers == 8
    assert "and 8 consumers read it here: it pays" in line


def test_an_add_reading_through_the_transposed_view_is_named_with_its_sectors():
    line, a = _regime_line(f"{LADDER}/tr-add-tview.json.gz")
    o = a.execution.transpose.strided
    assert o.op == "aten::add" and o.strided_reads[0].arg == 1
    assert "reads 268.4 MB against its layout, asking for up to 2.15 GB of 32-byte sectors" in line


def test_a_kernel_at_its_memory_roof_at_low_occupancy_is_said_not_to_need_it():
    """The clause for the memory roof, on the ladder's grid-stride kernel (a Triton kernel records no shapes, so its
    bytes are the capture's count, as the occupancy drill reads them)."""
    from tracetriage.analyzers.analyses.occupancy import launch_shapes, verdict
    from tracetriage.analyzers.loading.launch_args import read_launch_args
    from tracetriage.analyzers.triage.execution import OccupancyNote
    from tracetriage.analyzers.voice.execution import occupancy_clause

    s = launch_shapes(read_launch_args(ROOT / "traces/ladder/M03.01/occ-stream-ilp-w4.json.gz"))[0]
    gbps = 2 * (1 << 28) * 4 / (s.median_us * 1e3)
    v = verdict(s, gbps, None, 4236.0, None)
    text = occupancy_clause(OccupancyNote(s.kernel, s, v, 1.0))
    share = round(100 * v.roof_share)
    assert text == (f"; its top kernel (_stream_scale, 100% of kernel time) reaches {share}% of the memory roof"
                    " at 6.25% occupancy (1 block of 4 warps per SM: the grid's 132 over the SMs): "
                    "occupancy is not its lever")
