"""A busy decode's host work is not priced from the window's edges, an overlap or a host-side fix saves no more than
the idle, the Regime line's uncosted split keeps each kernel's why, inductor's generated code is not "your code", a
sparse COO product's own syncs end no step and name their fix, a sync-bound span says so, queued kernel-boundary gaps
are not launch overhead, and a few large gaps are said beside the median. Hand-built traces: the public ones
(heldout-user9) are not committed."""
from __future__ import annotations

import numpy as np

import kineto_factory as kf
from kineto_factory import call, document, gpu, op, write
from test_loop_window import STALL, STEPS, _script
from tracetriage.analyzers.analyses.frames import is_library
from tracetriage.analyzers.analyses.sparse_syncs import coalesce_syncs
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output.claims_idle import within_the_idle
from tracetriage.analyzers.output.claims_said import Said
from tracetriage.analyzers.triage.lever_choice import LeverChoice
from tracetriage.analyzers.triage.next_experiment import priced_beyond_the_idle
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.whatif import predict as whatif

US, MS = 1_000, 1_000_000


# --- 1. the window's edges are in no step -------------------------------------------------------------------------

def test_no_host_work_prices_none_of_the_tail(tmp_path):
    # the loop's 11 stalls between its 12 steps and the first step's own (the lead-in's last 1 ms), never the 15 ms
    # of script after the loop's last GPU work (before: capped at one stall, 13 ms in all)
    gone = whatif.predict(_script(tmp_path), levers=["no_host_work"]).lever("no_host_work").saving_ns
    assert 0.8 * (STEPS - 1) * STALL <= gone <= 1.05 * STEPS * STALL


def test_a_host_side_fix_priced_past_the_idle_into_the_tail_is_not_called_for():
    syncs = LeverChoice("remove_syncs", "aten::to", 378 * MS, 338 * MS)      # 40 ms saved beside 28 ms of idle
    assert priced_beyond_the_idle(syncs, Cause.SYNCHRONIZATION, idle_ns=28 * MS, tail_ns=97 * MS)
    # a first iteration's host work before its first launch, no tail to run into: priced (traces/fixes host_numpy)
    numpy = LeverChoice("no_host_work", None, 28 * MS, 3 * MS)
    assert not priced_beyond_the_idle(numpy, Cause.HOST_WORK, idle_ns=22 * MS, tail_ns=MS // 10)
    # a real host-bound loop: its saving lies inside its idle, whatever its tail
    assert not priced_beyond_the_idle(syncs, Cause.SYNCHRONIZATION, idle_ns=60 * MS, tail_ns=97 * MS)
    # a fix that makes kernels faster is not bounded by the idle
    assert not priced_beyond_the_idle(LeverChoice("autocast_bf16", None, 100 * MS, 40 * MS), Cause.OTHER, MS, 90 * MS)


def _said(*claims):
    return Said([{"key": k, "value": v, "said": s} for k, v, s in claims])


def test_the_checker_catches_an_overlap_longer_than_the_idle():
    out = {"idle_us": 28_600.0}
    bad = within_the_idle(_said(("idle.syncs.overlap_us", 40_300.0, "40.3 ms")), out)
    assert len(bad) == 1 and "overlaps 40.3 ms" in bad[0]
    assert within_the_idle(_said(("idle.syncs.overlap_us", 20_000.0, "20.0 ms")), out) == []


def test_generated_inductor_code_is_not_your_code():
    for path in ("/root/.cache/vllm/torch_compile_cache/db06/rank_0_0/inductor_cache/lh/clhg.py",
                 "/tmp/torchinductor_root/ab/cabc.py", "debug/torch_compile_debug/run/output_code.py"):
        assert is_library(path), path
    for path in ("train.py", "/home/me/proj/model/llama.py", "pkg/inductor_like.py"):
        assert not is_library(path), path


# --- 2. the uncosted split keeps each kernel's why -------------------------------------------------------------------

def _replays_beside_eager(tmp_path):
    """No shapes: 10 graph replays of a 300 µs GEMM beside 10 eager 100 µs GEMMs launched by an op with no shapes."""
    ev, t = [], 0
    for i in range(10):
        ev.append(call("cudaGraphLaunch", t, t + 5 * US, 5000 + i))
        ev.append(gpu("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64", t + 8 * US, t + 308 * US, 5000 + i))
        t += 320 * US
        ev.append(op("aten::mm", t, t + 10 * US, 100 + i))
        ev.append(call("cudaLaunchKernel", t + 2 * US, t + 6 * US, 7000 + i, 100 + i))
        ev.append(gpu("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", t + 8 * US, t + 108 * US,
                      7000 + i))
        t += 120 * US
    return load(write(tmp_path / "replays.json", document(ev)), use_cache=False)


def test_the_uncosted_split_gives_graph_replays_their_own_share(tmp_path):
    a = analyze_trace(_replays_beside_eager(tmp_path))
    why = a.verdict.uncosted_why_us
    assert why.get("graph_replay", 0) > 2 * why.get("no_shapes", 0) > 0
    regime = five_lines(a)[3]
    assert regime.index("CUDA-graph replays") < regime.index("recorded no shapes")   # the larger share first
    assert "(75%)" in regime and "(25%)" in regime


def test_the_checker_catches_a_swapped_split():
    out = {"regime_detail": {"uncosted_why_us": {"graph_replay": 126.7, "no_shapes": 82.2}}}
    swapped = _said(("regime.uncosted_why.no_shapes", 0.606, "61%"), ("regime.uncosted_why.graph_replay", 0.394, "39%"))
    assert len(within_the_idle(swapped, out)) == 2
    right = _said(("regime.uncosted_why.graph_replay", 0.606, "61%"), ("regime.uncosted_why.no_shapes", 0.394, "39%"))
    assert within_the_idle(right, out) == []


# --- 5. a sparse COO product's own syncs ----------------------------------------------------------------------------

def _sparse_forward(tmp_path, n: int = 5, sync_op: str = "aten::_coalesce", name: str = "sparse.json"):
    """One forward of n sparse layers (reshape, matmul, add), each matmul coalescing its COO operand: a 20 µs sort
    kernel, then a 2 ms wait in a cudaStreamSynchronize inside `sync_op` while the device idles (the index count
    read back), then the product's kernel; a closing read-back (aten::to) and synchronize."""
    ev, t, corr = [], 0, 9000
    for i in range(n):
        ev.append(op("aten::reshape", t, t + 20 * US))
        t += 30 * US
        ev.append(op("aten::matmul", t, t + 2_400 * US))
        ev.append(op("aten::_sparse_addmm", t + 10 * US, t + 2_390 * US))
        ev.append(op(sync_op, t + 20 * US, t + 2_200 * US, 300 + i))
        ev.append(call("cudaLaunchKernel", t + 30 * US, t + 34 * US, corr, 300 + i))
        ev.append(gpu("void cub::DeviceRadixSortOnesweepKernel<long>", t + 40 * US, t + 60 * US, corr))
        ev.append(call("cudaStreamSynchronize", t + 40 * US, t + 2_110 * US))
        ev.append(op("aten::addmm", t + 2_210 * US, t + 2_380 * US, 400 + i))
        ev.append(call("cudaLaunchKernel", t + 2_220 * US, t + 2_224 * US, corr + 1, 400 + i))
        ev.append(gpu("void cusparse::csrmm_kernel<float>", t + 2_230 * US, t + 2_300 * US, corr + 1))
        ev.append(op("aten::add", t + 2_410 * US, t + 2_430 * US, 500 + i))
        ev.append(call("cudaLaunchKernel", t + 2_412 * US, t + 2_416 * US, corr + 2, 500 + i))
        ev.append(gpu("void at::native::vectorized_elementwise_kernel<4>", t + 2_420 * US, t + 2_440 * US, corr + 2))
        t, corr = t + 2_500 * US, corr + 3
    ev.append(op("aten::to", t, t + 200 * US, 999))
    ev.append(call("cudaStreamSynchronize", t + 10 * US, t + 150 * US))
    ev.append(call("cudaDeviceSynchronize", t + 300 * US, t + 400 * US))
    return load(write(tmp_path / name, document(ev)), use_cache=False)


def test_a_single_sparse_forward_has_no_steps_and_names_coalescing(tmp_path):
    trace = _sparse_forward(tmp_path)
    c = coalesce_syncs(trace)
    assert c is not None and c.syncs == 5 and c.total == 7 and c.share > 0.9
    a = analyze_trace(trace)
    lines = five_lines(a)
    assert "no repeated steps: one pass" in lines[0]
    assert lines[3].startswith("Regime: sync-bound")
    assert ".to_sparse_csr()" in lines[4] and ".coalesce()" in lines[4] and "every N steps" not in lines[4]


def test_a_loop_that_syncs_in_item_keeps_its_steps_and_the_generic_sync_fix(tmp_path):
    trace = _sparse_forward(tmp_path, n=6, sync_op="aten::item", name="item_loop.json")
    assert coalesce_syncs(trace) is None
    a = analyze_trace(trace)
    lines = five_lines(a)
    assert "steps (" in lines[0]
    assert ".to_sparse_csr()" not in lines[4]


# --- 4. queued kernel-boundary gaps; 6. a few large gaps ------------------------------------------------------------

def _queued_decode(tmp_path):
    """400 kernels of 4 µs, each queued long before it runs (the launch calls far ahead), 0.5 µs apart: the device's
    own spacing; two short host stalls let the queue run dry."""
    launches, t_host, t_gpu = [], 0, 1_000 * US
    for i in range(400):
        if i in (100, 300):
            t_host = t_gpu + 2 * US           # the host fell behind: the queue ran dry
            t_gpu = t_host + 5 * US
        launches.append(kf.Launch(op_start=t_host, op_end=t_host + 3 * US, call_start=t_host + 1 * US,
                                  call_end=t_host + 2 * US, gpu_start=t_gpu, gpu_end=t_gpu + 4 * US, op="aten::mm"))
        t_host += 3 * US
        t_gpu += 4_500
    return load(write(tmp_path / "queued.json", document(kf.events_for(launches))), use_cache=False)


def test_gaps_between_queued_kernels_are_not_called_launch_overhead(tmp_path):
    a = analyze_trace(_queued_decode(tmp_path))
    assert a.dominant is Cause.LAUNCH_OVERHEAD
    idle = five_lines(a)[2]
    assert "mostly gaps between kernels queued already" in idle and "the queue ran dry in only 2 of them" in idle


def test_a_launch_bound_loop_whose_queue_runs_dry_keeps_launch_overhead(tmp_path):
    # 200 tiny kernels, each launched 20 µs after the last ended: the queue runs dry before every one
    launches = kf.chain(200, gap_ns=20 * US, kernel_ns=3 * US)
    trace = load(write(tmp_path / "chain.json", document(kf.events_for(launches))), use_cache=False)
    idle = five_lines(analyze_trace(trace))[2]
    assert "queued already (counted as launch overhead" not in idle


def _host_gaps(tmp_path, big: list[int]):
    """Kernels of 100 µs; between them host gaps: 20 of 300 µs, and the `big` ones (a step's scheduling)."""
    ev, t, k = [], 0, 0
    gaps = [300 * US] * 20 + big
    rng = np.random.default_rng(0)
    rng.shuffle(gaps)
    for i, g in enumerate(gaps):
        ev.append(op("aten::relu", t, t + 10 * US, 10 + i))
        ev.append(call("cudaLaunchKernel", t + 2 * US, t + 6 * US, 5000 + i, 10 + i))
        ev.append(gpu("void relu_kernel<float>", t + 10 * US, t + 110 * US, 5000 + i))
        ev.append(op("aten::slice", t + 120 * US, t + 120 * US + g - 30 * US))   # CPU work that issues nothing
        t += 120 * US + g
        k += 1
    return load(write(tmp_path / f"host{len(big)}.json", document(ev)), use_cache=False)


def test_a_few_large_gaps_are_said_beside_the_median(tmp_path):
    idle = five_lines(analyze_trace(_host_gaps(tmp_path, [25 * MS] * 6)))[2]
    assert "6 of them" in idle and "hold" in idle


def test_gaps_of_one_size_say_only_their_median(tmp_path):
    idle = five_lines(analyze_trace(_host_gaps(tmp_path, [])))[2]
    assert " of them, " not in idle
