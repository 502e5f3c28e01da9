"""Launch shapes and occupancy from Kineto's kernel args (analyses.occupancy): computed again from the device's
limits, they agree with Kineto's own estimate wherever its calculator works, and give the kernels with more than
48 KiB of shared memory the occupancy Kineto's calculator leaves at 0."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tracetriage.analyzers.analyses.occupancy import NEAR_ROOF, LaunchShape, Occupancy, launch_shapes, verdict
from tracetriage.analyzers.loading.launch_args import read_launch_args

ROOT = Path(__file__).resolve().parent.parent
H200_TRACES = ["traces/gpt-eager.json.gz", "traces/chain-triton-large.json.gz", "traces/gpt-compile.json.gz"]


@pytest.mark.parametrize("name", H200_TRACES)
def test_the_occupancy_agrees_with_kinetos_estimate_wherever_its_calculator_worked(name):
    shapes = launch_shapes(read_launch_args(ROOT / name))
    checked = [s for s in shapes if s.kineto_pct and s.kineto_pct > 0]
    assert checked
    off = [(s.kernel[:50], s.grid, s.block, s.regs, s.shared, s.achieved_pct, s.kineto_pct) for s in checked
           if abs(s.achieved_pct - s.kineto_pct) > 1.0]     # Kineto rounds to a whole percent
    assert off == []


@pytest.mark.slow      # every bundled trace: ~4,000 launch shapes, 600 of them with Kineto's 0
def test_the_occupancy_agrees_with_kinetos_estimate_on_every_bundled_trace():
    checked = zero = 0
    for p in sorted((ROOT / "traces").rglob("*.json.gz")):
        for s in launch_shapes(read_launch_args(p)):
            if s.kineto_pct is None:
                continue
            if s.kineto_pct == 0:
                # Kineto's calculator is called without opt-in shared memory, so a block over 48 KiB fails it; a
                # block of fewer threads than a warp holds a whole warp's slot here, Kineto counts its threads
                zero += s.shared > 48 * 1024 or s.achieved_pct < 1.0
                continue
            checked += 1
            # Kineto counts a block's threads, CUDA's occupancy its warps: they differ where a block is not whole
            # warps (cuFFT's 100-thread blocks hold 4 warps' slots: 75% of the warps, 59% of the threads)
            kineto_way = 100 * min(s.resident_blocks, s.blocks_per_sm) * s.threads_per_block / 2048
            assert abs(kineto_way - s.kineto_pct) <= 1.0, (p.name, s)
            if s.threads_per_block % 32 == 0:
                assert abs(s.achieved_pct - s.kineto_pct) <= 1.0, (p.name, s)
    assert checked > 1000 and zero > 100


def test_a_cublas_kernel_with_opt_in_shared_memory_gets_the_occupancy_kineto_leaves_at_zero():
    shapes = launch_shapes(read_launch_args(ROOT / "traces/gpt-eager.json.gz"))
    big = [s for s in shapes if s.shared > 48 * 1024 and s.kernel.startswith("nvjet")]
    assert big and all(s.kineto_pct == 0 for s in big)
    s = big[0]
    # 384 threads (12 warps), 168 registers, ~208 KiB of shared memory: one block fits an SM's 228 KiB
    assert (s.threads_per_block, s.regs) == (384, 168) and s.resident_blocks == 1
    # (its registers would allow one block too: 168 x 32 a warp, 3 warps in each quarter of the register file)
    assert s.limiter in ("shared memory", "registers") and s.theoretical_pct == pytest.approx(100 * 12 / 64)


def test_registers_cap_a_block_of_four_warps_at_twelve_per_sm():
    # 34 registers a thread: 1,088 a warp, allocated as 1,280; each quarter of the 65,536 registers holds 12 warps
    shapes = launch_shapes(read_launch_args(ROOT / "traces/gpt-eager.json.gz"))
    s = next(x for x in shapes if x.regs == 34 and x.threads_per_block == 128 and x.blocks_per_sm > 12)
    assert (s.resident_blocks, s.limiter, s.theoretical_pct, s.kineto_pct) == (12, "registers", 75.0, 75.0)


def test_a_grid_smaller_than_the_sms_sets_the_occupancy_not_the_kernel():
    shapes = launch_shapes(read_launch_args(ROOT / "traces/gpt-eager.json.gz"))
    s = next(x for x in shapes if x.blocks < 132 and x.threads_per_block == 512)
    assert s.grid_limited and s.achieved_pct < s.theoretical_pct
    assert s.achieved_pct == pytest.approx(100 * s.blocks / 132 * 16 / 64)


def test_a_cpu_trace_has_no_launch_shapes(tmp_path):
    import gzip
    import json

    p = tmp_path / "cpu.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0}]}).encode()))
    assert launch_shapes(read_launch_args(p)) == ()


def _shape(achieved: float, limiter: str = "threads", grid_limited: bool = False) -> LaunchShape:
    per_sm = 1.0 if grid_limited else 8.0
    return LaunchShape("k", 0, 5, 100.0, 500.0, (132, 1, 1), (128, 1, 1), 132, 128, 4, 32, 0, per_sm, 4, limiter,
                       achieved, achieved, None)


def test_a_kernel_at_its_memory_roof_is_a_sideshow_whatever_its_occupancy():
    v = verdict(_shape(6.25), gbps=0.8 * 4800, tflops=None, peak_gbps=4800, peak_tflops=989.5)
    assert v.verdict is Occupancy.SIDESHOW and v.roof == "memory"


def test_a_kernel_far_below_both_roofs_at_low_occupancy_is_the_lever():
    v = verdict(_shape(3.1), gbps=0.2 * 4800, tflops=None, peak_gbps=4800, peak_tflops=989.5)
    assert v.verdict is Occupancy.LEVER


def test_a_big_tile_at_the_compute_roof_capped_by_shared_memory_is_harm():
    v = verdict(_shape(12.5, "shared memory"), gbps=100.0, tflops=NEAR_ROOF * 989.5 + 1, peak_gbps=4800,
                peak_tflops=989.5)
    assert v.verdict is Occupancy.HARM and v.roof == "compute"
    # the same rate from a kernel whose grid, not its tiles, holds the occupancy down: more blocks cost no reuse
    assert verdict(_shape(12.5, "shared memory", grid_limited=True), gbps=100.0, tflops=NEAR_ROOF * 989.5 + 1,
                   peak_gbps=4800, peak_tflops=989.5).verdict is Occupancy.SIDESHOW


def test_launch_shapes_group_launches_and_order_them_by_device_time():
    shapes = launch_shapes(read_launch_args(ROOT / "traces/chain-triton-large.json.gz"))
    assert sum(s.launches for s in shapes) == len(read_launch_args(ROOT / "traces/chain-triton-large.json.gz").kernels)
    assert list(np.argsort([-s.total_us for s in shapes], kind="stable")) == list(range(len(shapes)))
