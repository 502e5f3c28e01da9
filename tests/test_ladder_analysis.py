"""The ladder's analysis numbers (issue 37) against what the capture recorded as true
(traces/ladder/RUNG/measured.json): storage sharing per op and per line, launch knobs, analytic FLOPs and
bytes. The analysis reads only the trace;
the capture's facts are the answers it must reach."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracetriage.analyzers.analyses.occupancy import launch_shapes
from tracetriage.analyzers.analyses.storage import ledger
from tracetriage.analyzers.analyses.strided import copy_costings, layouts
from tracetriage.analyzers.loading.launch_args import read_launch_args
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.drills.ladder import facts

ROOT = Path(__file__).resolve().parent.parent
LADDER = ROOT / "traces" / "ladder"
ALLOCATOR_BLOCK = 512       # the CUDA caching allocator hands out blocks in 512-byte steps


def measured(rung: str) -> dict:
    return json.loads((LADDER / rung / "measured.json").read_text())


def ledgers(rung: str, variant: str):
    p = LADDER / rung / f"{variant}.json.gz"
    a = analyze_trace(load(p))
    return ledger(a.trace, list(a.ranges), read_launch_args(p).memory)


def _same_storage(kept: int, truth: int, allocations: int) -> bool:
    """The allocator's bytes against the tensor's storage: equal, or rounded up to the allocator's blocks."""
    return truth <= kept <= truth + ALLOCATOR_BLOCK * max(allocations, 1)


@pytest.mark.parametrize("variant", ["viewcopy-matrix", "viewcopy-image"])
def test_each_ops_view_or_copy_verdict_and_bytes_are_the_captures_storage_truth(variant):
    truth = measured("M01.02")["variants"][variant]["facts"]["ops"]
    rows = ledgers("M01.02", variant)
    assert [r.name for r in rows] == [t["range"] for t in truth]
    for r, t in zip(rows, truth):
        assert r.view == t["view"], (t["code"], r)
        assert _same_storage(r.kept_bytes, t["new_storage_bytes"], r.allocations), (t["code"], r)


@pytest.mark.parametrize("variant", ["ledger-image", "ledger-tokens", "ledger-audio"])
def test_each_lines_storage_is_the_captures_storage_truth(variant):
    truth = measured("M01.01")["variants"][variant]["facts"]["lines"]
    rows = ledgers("M01.01", variant)
    assert len(rows) == len(truth)
    for r, t in zip(rows, truth):
        assert r.view == t["view"], (t["code"], r)
        assert _same_storage(r.kept_bytes, t["new_storage_bytes"], r.allocations), (t["code"], r)
        assert (r.kept_host_bytes > 0) == (not t["view"] and t["device"] == "cpu"), (t["code"], r)


def test_the_host_to_device_line_moves_the_float_tensor_over_the_bus():
    truth = {ln["code"]: ln for ln in measured("M01.01")["variants"]["ledger-image"]["facts"]["lines"]}
    moved = next(r for r, code in zip(ledgers("M01.01", "ledger-image"), truth) if code == "x = x.to(device)")
    assert moved.copies >= 1 and moved.copy_bytes == truth["x = x.to(device)"]["numel_bytes"]


@pytest.mark.parametrize("variant", ["occ-stream-ilp-w4", "occ-stream-ilp-w8", "occ-stream-full", "occ-stream-starved",
                                     "occ-stream-starved-x16", "occ-mm-bigtile", "occ-mm-smalltile"])
def test_the_launch_shape_read_from_the_trace_is_the_one_the_capture_launched(variant):
    m = measured("M03.01")
    f = m["variants"][variant]["facts"]
    s = launch_shapes(read_launch_args(LADDER / "M03.01" / f"{variant}.json.gz"))[0]
    assert s.launches == f["kernels_per_window"]
    if "programs" in f:
        assert s.blocks == f["programs"] and s.threads_per_block == 32 * f["num_warps"]
    else:
        bm, bn, _ = f["tile"]
        n = f["mnk"][0]
        assert s.blocks == (n // bm) * (n // bn) and s.warps_per_block == f["num_warps"]
    # the capture's own record of Kineto's estimate, where its calculator worked
    kin = m["variants"][variant]["kernels"][0]["est. achieved occupancy %"]
    if kin:
        assert abs(s.achieved_pct - kin) <= 1.0


def test_the_stream_kernels_bytes_per_launch_are_the_captures_count():
    k = facts.kernel_launch(LADDER / "M03.01" / "occ-stream-full.json.gz",
                            "traces/ladder/M03.01/occ-stream-full.json.gz")
    f = measured("M03.01")["variants"]["occ-stream-full"]["facts"]
    assert k["bytes"] == f["bytes_per_kernel"] == 2 * f["elements"] * 4 and k["dtype"] == "fp32"


def test_the_cublas_matmuls_flops_and_bytes_come_from_its_shapes_and_match_the_capture():
    k = facts.kernel_launch(LADDER / "M03.01" / "occ-mm-cublas.json.gz", "traces/ladder/M03.01/occ-mm-cublas.json.gz")
    f = measured("M03.01")["variants"]["occ-mm-cublas"]["facts"]
    assert k["cost_source"] == "shapes"
    assert k["flops"] == pytest.approx(f["flops_per_kernel"]) and k["bytes"] == pytest.approx(f["bytes_per_kernel"])


def test_in_x_t_plus_y_the_trace_shows_y_read_a_row_apart_and_the_copy_first_trace_costs_both_ways():
    f = measured("M03.02")["variants"]
    a = analyze_trace(load(LADDER / "M03.02" / "tr-add-tview.json.gz"))
    found = layouts(a.trace, read_launch_args(LADDER / "M03.02" / "tr-add-tview.json.gz").ops)
    add = next(o for o in found if o.op == "aten::add")
    assert [r.arg for r in add.strided_reads] == [1]              # y, the second operand
    assert add.strided_reads[0].useful_bytes == f["tr-add-tview"]["facts"]["tensor_bytes"]
    assert add.strided_reads[0].sector_bytes == 8 * f["tr-add-tview"]["facts"]["tensor_bytes"]
    # the capture's own record: the output took x.t()'s column-major layout
    assert f["tr-add-tview"]["facts"]["out_stride"][0] == 1
    b = analyze_trace(load(LADDER / "M03.02" / "tr-add-copyfirst.json.gz"))
    costed = copy_costings(layouts(b.trace, read_launch_args(LADDER / "M03.02" / "tr-add-copyfirst.json.gz").ops))
    assert len(costed) == f["tr-add-copyfirst"]["facts"]["window_repeats"]
    c = costed[0]
    assert c.copy.op == "aten::copy_" and c.consumer.op == "aten::add"
    assert c.copy.bytes == f["tr-add-copyfirst"]["facts"]["copy_bytes"]


def test_a_matmul_with_a_transposed_operand_launches_no_copy_and_reads_it_as_a_flag():
    a = analyze_trace(load(LADDER / "M03.02" / "tr-mm-tview.json.gz"))
    found = layouts(a.trace, read_launch_args(LADDER / "M03.02" / "tr-mm-tview.json.gz").ops)
    assert {o.kind for o in found} == {"matmul"} and all(o.transposed_free for o in found)


@pytest.mark.parametrize("variant", ["ridge-six-a", "ridge-six-b"])
def test_the_six_kernels_flops_and_bytes_are_the_captures_analytic_counts(variant):
    truth = measured("M00.02")["variants"][variant]["facts"]["ops"]
    ops = facts.costed_ops(LADDER / "M00.02" / f"{variant}.json.gz")[:6]
    assert len(ops) == len(truth) == 6
    for o, t in zip(ops, truth):
        assert o["flops"] == pytest.approx(t["flops_per_kernel"], rel=0.05), (t["code"], o)
        assert o["bytes"] == pytest.approx(t["bytes_per_kernel"], rel=0.05), (t["code"], o)


@pytest.mark.parametrize("variant", ["decode-bf16-b1", "decode-fp32-b1", "decode-bf16-b64"])
def test_the_decode_steps_matmul_flops_and_weight_bytes_are_the_captures(variant):
    f = measured("M01.06")["variants"][variant]["facts"]
    m = facts.decode_matmuls(LADDER / "M01.06" / f"{variant}.json.gz")
    assert m["steps"] == f["decode_steps"] and m["batch"] == f["batch"]
    assert m["params_per_step"] == pytest.approx(f["matmul_params"], rel=0.001)
    assert m["flops"] / m["steps"] == pytest.approx(f["matmul_flops_per_step"], rel=0.001)
    assert m["weight_bytes"] / m["steps"] == pytest.approx(f["matmul_weight_bytes_per_step"], rel=0.001)
    assert m["flops"] / m["weight_bytes"] == pytest.approx(2 * f["batch"] / f["bytes_per_param"], rel=0.001)


@pytest.mark.slow      # a CPU capture of the two storage rungs (~10 s of Triton-free work, profiled)
def test_a_cpu_capture_of_the_storage_rungs_gives_the_same_verdicts_as_torchs_storage(tmp_path):
    """The same analysis on a fresh CPU capture (host allocations in [memory] events, no kernels): every op's and
    every line's verdict and kept bytes are the capture's storage truth, to the byte."""
    import tarfile

    from tools.ladder_h200 import capture

    assert capture.main(["--device", "cpu", "--reps", "1", "--out", str(tmp_path), "--only", "M01.02", "M01.01"]) == 0
    with tarfile.open(tmp_path / "ladder.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    for rung, what in (("M01.02", "ops"), ("M01.01", "lines")):
        m = json.loads((tmp_path / "ladder" / rung / "measured.json").read_text())
        for variant, v in m["variants"].items():
            p = tmp_path / "ladder" / rung / f"{variant}.json.gz"
            a = analyze_trace(load(p))
            rows = ledger(a.trace, list(a.ranges), read_launch_args(p).memory)
            truth = v["facts"][what]
            assert len(rows) == len(truth)
            for r, t in zip(rows, truth):
                assert (r.view, r.kept_bytes) == (t["view"], t["new_storage_bytes"]), (variant, t["code"])


@pytest.mark.parametrize("card", sorted(__import__("tracetriage.analyzers.analyses.peaks", fromlist=["table"]).table()))
def test_the_ridge_and_intensity_drills_place_their_kernels_on_any_card_of_the_peak_table(card):
    """A ridge or intensity drill re-pointed at any card of the table keys without error, each peak naming its
    sheet, and every kernel lands on one side of that card's ridge for its own dtype."""
    import dataclasses

    from tracetriage.drills import bank
    from tracetriage.drills.ladder import keys as ladder_keys
    from tracetriage.drills.ladder import show

    for drill_id in ("M00.02-b", "M01.06-c"):
        d = dataclasses.replace(bank.get(drill_id), params={"cards": [card]})
        k = ladder_keys.derive(d)
        cards = show.info(d)["cards"]
        assert all(c["sheet"] for c in cards) and cards[-1]["name"] == k["cards"][-1]
        if d.kind == "ridge":
            assert set(k["below"]) <= set(k["kernels"]) and set(k["flips"]) <= set(k["kernels"])
        else:
            assert k["intensity"] == 64.0 and set(k["compute_bound_on"]) <= set(k["cards"])
