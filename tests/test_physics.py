"""Issue 15: physically right on every trace. One small synthetic trace per class (tests/physics_traces.py says
which public trace each one mimics), with what a reader of that timeline says of it."""
import json
from pathlib import Path

import pytest

import cli_in_process
import physics_traces as pt
from kineto_factory import write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.loading.merged import MergedRanks, rank_trace, ranks_of
from tracetriage.analyzers.model.trace import TraceError
from tracetriage.analyzers.output import invariants, serialize
from tracetriage.analyzers.triage.report import analyze_file, analyze_trace
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args):
    return cli_in_process.run(*args)


# --- a: kernels charged to the op that made them, not to the one their External id names ------------

def test_launch_whose_external_id_is_its_correlation_is_charged_to_the_op_around_it(tmp_path):
    tr = load(write(tmp_path / "t.json", pt.external_id_is_correlation()), use_cache=False)
    names = {tr.name_of(int(r)) for r in range(len(tr.ev)) if tr.name_of(int(r)) == "cudaLaunchKernel"}
    call = next(r for r in range(len(tr.ev)) if tr.name_of(r) in names)
    assert tr.name_of(int(tr.op_of[call])) == "aten::addmm"        # not aten::clamp_min, whose id it carries
    a = analyze_trace(tr)
    assert [h.name for h in a.hotspots] == ["aten::addmm"]
    assert [p.name for p in a.roof.points] == ["aten::addmm"]      # clamp_min gets no rate: it ran no kernel
    assert a.roof.points[0].achieved_tflops == pytest.approx(17.2, abs=0.1)
    assert any(c.kind == "external_id_by_time" and c.count == 1 for c in tr.caveats)
    assert any(s.startswith("1 of 1 runtime call carries an External id that names no op around them")
               for s in analysis_caveats(a))


def test_the_link_fallback_is_cached_with_the_links(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    from tracetriage.analyzers.loading import cache

    path = write(tmp_path / "t.json", pt.external_id_is_correlation())
    cache.put(path, load(path, use_cache=False))
    hit = cache.get(path)
    assert hit is not None and any(c.kind == "external_id_by_time" for c in hit.caveats)
    call = next(r for r in range(len(hit.ev)) if hit.name_of(r) == "cudaLaunchKernel")
    assert hit.name_of(int(hit.op_of[call])) == "aten::addmm"


# --- b: a point above the peak is an attribution error ---------------------------------------------

def test_point_above_the_peak_is_left_out_of_the_roofline_and_the_vote_and_said_in_a_caveat(tmp_path):
    a = analyze_file(write(tmp_path / "t.json", pt.above_the_peak()))
    assert [p.name for p in a.roof.points] == ["triton_poi_fused_add_1"]
    bad = a.above_peak[0]
    assert bad.name == "triton_poi_fused_clone_slice_0" and bad.unit == "GB/s"
    assert bad.times_peak == pytest.approx(270.5e6 / 10e-6 / 5.3e12, rel=0.01)     # 270.5 MB in 10 µs
    v = a.verdict
    assert v.regime.value == "memory" and v.unknown_us == pytest.approx(100, abs=1)   # its 10 × 10 µs: no vote
    assert v.uncosted_why_us == {"above_peak": pytest.approx(100, abs=1)}
    assert v.achieved_gbps < 5300
    said = [c for c in analysis_caveats(a) if "above the device's peak" in c]
    assert said and "an attribution error, not an achievement" in said[0] and "5.10× the 5,300 GB/s peak" in said[0]
    out = serialize.report(a)
    assert out["above_peak"][0]["name"] == "triton_poi_fused_clone_slice_0"
    assert "triton_poi_fused_clone_slice_0" not in json.dumps(out["roofline"])
    assert invariants.check(out) == []


def test_an_fp32_gemm_on_tf32_kernels_is_placed_against_the_tf32_peak(tmp_path):
    a = analyze_file(write(tmp_path / "t.json", pt.fp32_gemm("ampere_tf32_s1688gemm_tf32_128x128_32x3_nn")))
    p = a.roof.points[0]
    assert p.dtype == "tf32" and p.peak_tflops == pytest.approx(156)
    assert p.achieved_tflops == pytest.approx(68.7, abs=0.1) and a.above_peak == ()


def test_the_same_rate_on_a_plain_sgemm_is_above_the_fp32_peak(tmp_path):
    a = analyze_file(write(tmp_path / "t.json", pt.fp32_gemm("ampere_sgemm_128x64_nn")))
    assert a.roof.points == [] and a.above_peak[0].unit == "TFLOP/s"
    assert a.above_peak[0].peak == pytest.approx(19.5)


def test_a_product_below_every_known_ridge_is_memory_bound_on_a_device_with_no_peaks(tmp_path):
    # no peak table: products are compute-bound by kind at real sizes, but not a tall-skinny one whose 16 FLOP/byte
    # sits below the lowest fp16 ridge of any device in the table: memory-bound wherever it ran
    a = analyze_file(write(tmp_path / "t.json", pt.tall_skinny_fp16_mm_on_an_unnamed_device()))
    assert a.roof.peaks is None
    assert [p.bound.value for p in a.roof.points] == ["memory"]
    assert a.verdict.regime.value == "memory"


# --- c: latency-bound, a fourth bound ------------------------------------------------------------

def test_tiny_product_far_below_both_roofs_is_latency_bound_with_its_own_next(tmp_path):
    a = analyze_file(write(tmp_path / "t.json", pt.latency_bound_mm()))
    p = a.roof.points[0]
    assert p.bound.value == "latency" and p.achieved_gbps < 1.0       # 0.6 GB/s of 5,300
    assert a.verdict.regime.value == "latency"
    lines = five_lines(a)
    assert lines[3].startswith("Regime: latency-bound: of kernel time, 0% is compute-bound and 0% memory-bound, "
                               "100% latency-bound (far below both roofs)")
    assert a.next_experiment.kind.value == "better_kernels"
    assert "torch.backends.cudnn.benchmark = True" in lines[4] and "more work per launch" in lines[4]
    assert "far below both roofs" in lines[4] and "Would waste the week: " in lines[4]
    assert invariants.check(serialize.report(a)) == []


# --- e: a merged multi-rank file is split by rank -------------------------------------------------

def test_merged_file_is_split_by_rank_and_never_read_as_one_device(tmp_path):
    path = write(tmp_path / "merged.json", pt.merged_two_ranks())
    tr = load(path, use_cache=False)
    assert ranks_of(tr) == (0, 1)
    with pytest.raises(MergedRanks, match="merges the traces of 2 ranks"):
        analyze_trace(tr)
    r1 = analyze_trace(rank_trace(tr, 1))
    assert r1.kernels == 30 and r1.trace.rank == 1
    assert r1.span_ns < 2 * 30 * 30_000            # its own ~0.9 ms, not both ranks' clocks
    assert [h.name for h in r1.hotspots] == ["aten::add"]      # External ids collide across ranks: each links alone
    with pytest.raises(TraceError, match="holds no rank 2"):
        rank_trace(tr, 2)


def test_report_on_a_merged_file_gives_the_ranks_report_like_a_directory(tmp_path):
    path = write(tmp_path / "merged.json", pt.merged_two_ranks())
    p = _cli("report", "--quiet", path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Ranks: 2 ranks on an unnamed device")
    assert "ranks from merged file (args.rank)" in p.stdout
    assert "merged.json#1 on an unnamed device" in p.stdout
    j = _cli("report", "--quiet", "--json", path)
    rows = json.loads(j.stdout)["ranks"]
    assert [(r["rank"], r["file"]) for r in rows] == [(0, "merged.json#0"), (1, "merged.json#1")]
    assert "(30 kernels" in rows[1]["lines"][0] and "(20 kernels" in rows[0]["lines"][0]
    bad = _cli("report", "--range", "x", path)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "apply to one rank's trace" in bad.stderr


def test_one_rank_of_a_merged_file_is_analysed_by_the_rank_runner(tmp_path):
    from tracetriage.analyzers.runs.pool import analyze_merged_rank

    path = write(tmp_path / "merged.json", pt.merged_two_ranks())
    r = analyze_merged_rank(str(path), 0)
    assert r.rank == 0 and r.rank_from == "merged file (args.rank)" and "(20 kernels" in r.lines[0]
    assert analyze_merged_rank(str(path), 5).message.endswith("holds no rank 5; its ranks: 0, 1")


# --- f: a user's Triton kernel is costed from its inputs and outputs --------------------------------

def test_user_triton_kernel_is_costed_from_the_op_named_after_it(tmp_path):
    out = serialize.report(analyze_file(write(tmp_path / "t.json", pt.user_triton_kernel())))
    p = next(p for p in out["roofline"] if p["name"] == "_fused_chain_kernel")
    assert p["kind"] == "triton_pass" and p["bytes"] == 10 * 2 * 67108864 * 4
    assert out["regime"] == "memory" and out["regime_detail"]["unknown_us"] == 0


# --- peaks: a device named by what the trace records beside its name --------------------------------

def test_a_device_with_no_name_is_named_by_its_properties_and_gets_its_peaks(tmp_path):
    a = analyze_file(write(tmp_path / "t.json", pt.unnamed_mi300x()))
    assert "on an unnamed device (compute 9.4, 304 multiprocessors, 192 GB)" in five_lines(a)[0]
    assert a.roof.peaks.name == "MI300X" and a.roof.peaks.sheet == "AMD Instinct MI300X datasheet"


# --- one baseline: --range keeps its own numbers -----------------------------------------------------

def test_range_report_counts_its_own_kernels_everywhere_and_predicts_on_its_own_span():
    a = analyze_file(ROOT / "traces" / "gpt-eager.json.gz", "decode_step")
    lines = five_lines(a)
    assert f"({a.kernels:,} kernels" in lines[0] and f"between {a.kernels:,} kernels" in lines[4]
    assert a.phases is None and "prefill" not in lines[0]
    assert a.next_experiment.lever is not None
    assert a.next_experiment.lever.baseline_ns == a.span_ns
    assert "of the range's 1.12 s span, 1.12 s → " in lines[4]
    for d in a.devices:
        assert d.kernel_busy_ns + d.idle_ns == d.span_ns


def test_whole_trace_prediction_names_the_traced_span_it_is_a_share_of():
    a = analyze_file(ROOT / "traces" / "smell-sync-item.json.gz")
    assert "(predicted −15% of the traced span (host and GPU), 55.5 ms → 47.3 ms" in five_lines(a)[4]
    assert "a 52.2 ms GPU span" in five_lines(a)[0]


def test_innermost_enclosing_op_matches_a_brute_force_search_on_nested_ops():
    import numpy as np

    from tracetriage.analyzers.loading.containment import innermost_enclosing
    from tracetriage.analyzers.model.trace import NONE, Events

    rng = np.random.default_rng(15)
    rows = []   # (start, end, tid): ops nest on each thread (children inside their parent, siblings apart)

    def ops(lo, hi, tid, depth):
        t = lo
        while t < hi and depth < 5:
            s = t + int(rng.integers(0, 50))
            e = min(hi, s + int(rng.integers(1, 400)))
            if e <= s:
                break
            rows.append((s, e, tid))
            ops(s, e, tid, depth + 1)
            t = e + int(rng.integers(0, 30))

    for tid in (1, 2):
        ops(0, 20_000, tid, 0)
    qs = [(int(s), int(s) + int(rng.integers(0, 20)), int(rng.integers(1, 3))) for s in rng.integers(0, 20_000, 3000)]
    every = sorted(rows + qs, key=lambda r: (r[0], -r[1]))
    qset, opset = set(qs), set(rows)
    is_q = np.array([r in qset and r not in opset for r in every])
    n = len(every)
    col = lambda i: np.array([r[i] for r in every], np.int64)  # noqa: E731
    ev = Events(cat=np.zeros(n, np.int8), name=np.zeros(n, np.int32), start=col(0), end=col(1),
                pid=np.zeros(n, np.int64), tid=col(2), device=np.zeros(n, np.int32), stream=np.zeros(n, np.int64),
                ext=np.zeros(n, np.int64), corr=np.zeros(n, np.int64), nbytes=np.zeros(n, np.int64),
                shape=np.zeros(n, np.int32), graph_node=np.full(n, -1, np.int64), group=np.full(n, -1, np.int64),
                seq=np.full(n, -1, np.int64), pyid=np.full(n, -1, np.int64))
    op_rows, q_rows = np.flatnonzero(~is_q), np.flatnonzero(is_q)
    got = innermost_enclosing(ev, op_rows, q_rows)
    for q, g in zip(q_rows, got):      # the brute force: every op on the query's thread that holds it
        around = op_rows[(ev.tid[op_rows] == ev.tid[q]) & (ev.start[op_rows] <= ev.start[q])
                         & (ev.end[op_rows] >= ev.end[q])]
        want = max(around, key=lambda o: (ev.start[o], o)) if len(around) else NONE
        assert g == want
