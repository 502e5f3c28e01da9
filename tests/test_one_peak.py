"""One trace, one peak (issue 33): a measured ceiling is a ceiling, so where a kernel of the trace passes one the
ceiling was under-measured and the trace is judged against the best rate a kernel reached (the roof the device is
known to sustain; DevicePeaks.judged_by says why not the datasheet's); every audience reads the same peaks, the
Regime line says which figure and why, and the claim checker fails any report that states an achieved rate above the
peak it states.

The traces are the bundled H200 captures whose kernels pass the ceilings measured beside them
(traces/ceilings.json: 4,246 GB/s, fp32 50.9 TFLOP/s; traces/ladder/*/ceilings.json: 4,236 GB/s, bf16 801)."""
import copy
from pathlib import Path

import pytest

from tracetriage.analyzers.analyses.peaks import lookup
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.whatif import depgraph
from tracetriage.analyzers.whatif.levers.knob import peaks_of
from tracetriage.analyzers.whatif.levers.spec import Context

TRACES = Path(__file__).resolve().parent.parent / "traces"
PASSED_BANDWIDTH = TRACES / "chain-eager-large.json.gz"          # a copy chain at 4,255 GB/s, ceiling 4,246
PASSED_FP32 = TRACES / "fixes/knobs/tf32_gemm--before.json.gz"   # an fp32 GEMM at 51.3 TFLOP/s, ceiling 50.9


@pytest.fixture(scope="module")
def chain():
    return analyze_file(PASSED_BANDWIDTH)


def test_a_kernel_past_the_measured_bandwidth_ceiling_raises_the_peak_to_the_rate_it_reached(chain):
    pk = chain.roof.peaks
    (p,) = pk.passed
    assert (p.what, round(p.was / 1e9), round(p.reached / 1e9)) == ("bandwidth", 4246, 4312)
    assert pk.bytes_per_s == p.reached
    lines = serialize.report(chain)["lines"]
    assert "ops move 4,255 GB/s of the 4,312 GB/s peak (99%)" in lines[3]
    assert "HBM 4,312 GB/s, the best a kernel here reached, past the measured 4,246 GB/s" in lines[3]
    # the measured figure is never the peak a rate is judged against, and every point sits under the peak said
    assert "of the 4,246 GB/s peak" not in " ".join(lines)
    assert all(x.achieved_gbps <= x.peak_gbps == pk.bytes_per_s / 1e9 for x in chain.roof.points)


def test_a_gemm_past_the_measured_fp32_ceiling_is_judged_at_its_own_rate_and_allow_tf32_lands_on_the_measured():
    """tf32_gemm: an fp32 GEMM at 51.3 TFLOP/s against a measured 50.9. Against the datasheet's 67 the GEMM would
    keep 77% of the peak and allow_tf32 would predict 21.8 ms -> 3.77 ms; at its own rate, 2.97 ms; measured 2.98 ms
    (traces/fixes/knobs/measured.json)."""
    a = analyze_file(PASSED_FP32)
    assert round(a.roof.peaks.flops("fp32") / 1e12, 1) == 51.3
    assert [p.what for p in a.roof.peaks.passed] == ["fp32"]
    lines = serialize.report(a)["lines"]
    assert "51.3 TFLOP/s of the 51.3 TFLOP/s peak" in lines[3]
    assert "of the 50.9 TFLOP/s" not in " ".join(lines)
    assert "2.97 ms" in lines[4] and "51.3 TFLOP/s fp32 → 420 TFLOP/s TF32" in lines[4]


def test_a_ceiling_no_kernel_passes_stays_the_measured_one():
    a = analyze_file(TRACES / "matmul-sweep-bf16.json.gz")     # 787 TFLOP/s against a measured 808
    assert a.roof.peaks.passed == ()
    assert round(a.roof.peaks.flops("bf16") / 1e12) == 808
    assert "787 TFLOP/s of the 808 TFLOP/s peak" in serialize.report(a)["lines"][3]


def test_the_whatif_and_the_drills_judge_a_trace_against_the_reports_peak(chain):
    trace = load(PASSED_BANDWIDTH)
    assert peaks_of(Context(trace, depgraph.build(trace))).bytes_per_s == chain.roof.peaks.bytes_per_s
    from tracetriage.drills.ladder.facts import kernel_launch

    facts = kernel_launch(TRACES / "ladder/M03.02/tr-add-contig.json.gz", "traces/ladder/M03.02/tr-add-contig.json.gz")
    report = analyze_file(TRACES / "ladder/M03.02/tr-add-contig.json.gz")
    assert facts["peak_gbps"] == round(report.roof.peaks.bytes_per_s / 1e9, 1)
    assert facts["gbps"] <= facts["peak_gbps"]
    assert "past the measured 4,236 GB/s" in facts["peaks_source"]


def test_no_ladder_drill_states_a_kernel_rate_above_the_peak_it_states():
    """The drills quote a kernel's median launch: occ-mm-cublas reaches 814.1 TFLOP/s a launch against 813.4 on
    average, so the peak rises to the median run too (and, where the capture counted the bytes, as occ-stream-full's
    4,245.5 GB/s, the drill raises the ceiling the same way)."""
    from tracetriage.drills.ladder.facts import kernel_launch

    for name in ("M03.01/occ-mm-cublas", "M03.01/occ-stream-full", "M03.02/tr-mm-tview", "M03.02/tr-add-contig"):
        path = TRACES / f"ladder/{name}.json.gz"
        f = kernel_launch(path, path)
        assert (f["tflops"] or 0) <= (f["peak_tflops"] or 0) or not f["tflops"], name
        assert f["gbps"] <= f["peak_gbps"], name
        if f["cost_source"] == "shapes":
            pk = analyze_file(path).roof.peaks
            assert f["peak_gbps"] == round(pk.bytes_per_s / 1e9, 1), name


def test_a_passed_ceiling_rises_to_the_rate_reached_and_one_not_passed_stays():
    ceil = {"device_name": "NVIDIA H200", "copy_gbps": {"d2d": 1000.0}, "matmul_tflops": {"bf16": 100.0}}
    pk = lookup("NVIDIA H200", ceil).judged_by(1100e9, {"bf16": 90e12})
    assert (pk.bytes_per_s, pk.flops("bf16")) == (1100e9, 100e12)
    (p,) = pk.passed
    assert (p.what, p.was, p.reached) == ("bandwidth", 1000e9, 1100e9)
    assert lookup("NVIDIA H200", ceil).judged_by(900e9, {"bf16": 90e12}).passed == ()


def test_the_checker_fails_a_report_stating_a_rate_above_its_own_peak(chain):
    """main before this change: 'memory-bound ops move 4,255 GB/s of the 4,246 GB/s peak (at the ceiling)'."""
    out = serialize.report(chain)
    assert claims.check(out) == []
    bad = copy.deepcopy(out)
    bad["lines"][3] = bad["lines"][3].replace("of the 4,312 GB/s peak (99%)", "of the 4,246 GB/s peak (at the ceiling)")
    bad["peaks"]["bytes_per_s"] = 4246.05e9
    for c in bad["claims"]:
        if c["key"] == "regime.peak_gbps":
            c.update(value=4246.05, said="4,246 GB/s")
    assert claims.check(bad) == ["the regime line says 4,255 GB/s reached, above the 4,246 GB/s peak it states"]


def test_a_rate_above_a_datasheet_peak_is_said_as_the_cache_or_the_timer_with_its_margin_not_a_faster_device():
    """A T4 read 'HBM 323 GB/s, the best a kernel here reached, past the datasheet's 320 GB/s': a datasheet figure is
    no ceiling measured on the day, so a kernel above it is the cache or the timer, said with its margin."""
    from tracetriage.analyzers.analyses.peaks import lookup
    from tracetriage.analyzers.output import claims
    from tracetriage.analyzers.voice import peaks as peak_words

    sheet = lookup("Tesla T4")
    assert sheet.source == "datasheet"
    judged = sheet.judged_by(sheet.bytes_per_s * 1.0094, {})
    words = peak_words.passed(judged)
    assert "under 1% over the datasheet's 320 GB/s: data the cache served or a short kernel's time rounded by the " \
           "timer, not a faster memory" in words and "past the datasheet" not in words
    assert "3% over" in peak_words.passed(sheet.judged_by(sheet.bytes_per_s * 1.034, {}))
    # a T4's memory is GDDR6: its bandwidth is 'memory', never 'HBM' (heldout-user3); an H200's is HBM
    assert words.startswith("memory judged at ") and "HBM" not in words
    h200 = lookup("NVIDIA H200")
    assert peak_words.passed(h200.judged_by(h200.bytes_per_s * 1.02, {})).startswith("HBM ")
    old = {"lines": ["", "", "", "Regime: x (datasheet peaks; HBM 323 GB/s, the best a kernel here reached, past the "
                     "datasheet's 320 GB/s).", ""], "peaks": {"bytes_per_s": 323e9, "flops_per_s": {}}, "trace": {}}
    assert any("passed the datasheet's peak as a fact" in p for p in claims._one_peak(claims.Said([]), old))
