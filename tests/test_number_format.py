"""One number format everywhere (issue 21, item 4): every command on every bundled trace writes its counts
with thousands separators, no float with more than three decimals, and 'an' before a number said with a
vowel ('an 11.29× speedup', 'an 18.6 ms GPU span'). The formats are analyzers/model/units.py's; the scanner
that reads the words is tests/number_scan.py.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from memo import analysed_once
from number_scan import json_words, number_slips
from sweep import sweep
from tracetriage.analyzers.model import units
from tracetriage.cli import main
from tracetriage.dashboard import words as dash

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
RANK_DIRS = ["traces/ddp", "traces/ddp-skewed"]
# every bundled trace file, the rank directories' members aside (`report DIR` reads those)
TRACE_FILES = sorted(str(p.relative_to(ROOT)) for p in TRACES.rglob("*.json.gz")
                     if str(p.parent.relative_to(ROOT)) not in RANK_DIRS)


# --- the formats ------------------------------------------------------------------------------------


def test_counts_have_thousands_separators():
    assert units.integer(22270) == "22,270"
    assert units.integer(1234.6) == "1,235"          # a per-step mean of a count rounds
    assert units.count(22270, "kernel") == "22,270 kernels"
    assert units.count(1, "copy", "copies") == "1 copy"
    assert units.plural(21919, "gap") == "21,919 gaps"


@pytest.mark.parametrize("text,art", [
    ("8", "an"), ("8.53× speedup", "an"), ("80", "an"), ("808 TFLOP/s", "an"), ("8,192-token prompt", "an"),
    ("11", "an"), ("11.29× speedup", "an"), ("11,000", "an"), ("18", "an"), ("18.6 ms", "an"), ("18,500", "an"),
    ("800,000", "an"), ("1", "a"), ("1.8", "a"), ("0.8", "a"), ("110", "a"), ("180", "a"), ("1,100", "a"),
    ("110,000", "a"), ("1.16 s", "a"), ("100", "a"), ("2.05× speedup", "a"),
])
def test_the_article_follows_the_sound_of_the_number(text, art):
    assert units.a_or_an(text) == f"{art} {text}"


def test_factors_and_speedups_keep_two_decimals_with_separators():
    assert units.speed(11.29) == "11.29× speedup"
    assert units.speed(0.8) == "1.25× slowdown"
    assert units.times(1204.5) == "1,204.50×"
    assert units.ratio(4.5, same=False) == "4.50× fewer"


@pytest.mark.parametrize("x,text", [(1365.3, "1,365"), (37.23, "37.2"), (4.5, "4.5"), (0.0523, "0.052"),
                                    (0.123456, "0.123"), (-0.0001, "0"), (0.0002, "under 0.001"),
                                        (None, "none")])
def test_a_measured_figure_has_three_significant_digits_and_at_most_three_decimals(x, text):
    assert units.num(x) == text


def test_rates_name_their_unit():
    assert units.gbps(4255.4) == "4,255 GB/s"
    assert units.tflops(787.2) == "787 TFLOP/s"


@pytest.mark.parametrize("us,text", [(999.94, "999.9 µs"), (999.96, "1.00 ms"), (9_994, "9.99 ms"),
                                     (999_949, "999.9 ms"), (999_951, "1.00 s"), (1.5e9, "1,500.00 s")])
def test_a_duration_moves_to_the_next_unit_where_its_rounding_would_write_1000(us, text):
    assert units.duration_us(us) == text


@pytest.mark.parametrize("n,text", [(999.96e3, "1.0 MB"), (999.96e6, "1.00 GB"), (2e12, "2,000.00 GB")])
def test_bytes_move_to_the_next_unit_where_their_rounding_would_write_1000(n, text):
    assert units.size(n) == text


# --- the scanner finds what it is for, and only that -----------------------------------------------


@pytest.mark.parametrize("text,kind", [
    ("because the GPU idles 90% between 22270 kernels", "unseparated"),
    ("mostly launch overhead: 21919 gaps", "unseparated"),
    ("(3000 calls)", "unseparated"),
    ("a 1234-token prompt", "unseparated"),
    ("its host queued all 1234 steps", "unseparated"),   # 'steps' counts; 'step 1234' names one
    ("median launch delay 319.6803125 µs", "decimals"),
    ("the GPU span went from 23.6 ms to 2.05 ms, a 11.49× speedup.", "article"),
    ("a 8.67 ms GPU span", "article"),
    ("a 18.6 ms GPU span", "article"),
    ("of a 808 TFLOP/s peak", "article"),
    ("an 110 ms span", "article"),
    ("<p>a 82.1 ms span</p>", "article"),
])
def test_the_scanner_finds_each_kind_of_slip(text, kind):
    assert [s.kind for s in number_slips(text)] == [kind]


@pytest.mark.parametrize("text", [
    "22,270 kernels, an 11.29× speedup, an 18.6 ms GPU span, a 1.16 s GPU span, an 808 TFLOP/s peak",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64 at 2048x4096",
    "void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false> 13% (2,049 calls)",
    "vectorized_elementwise_kernel<1024, at::native::AUnaryFunctor<flo… 13%",
    "| `void k<float, 1024>` | 12.3 ms |",
    "aten::add [4194304] at 5,109 GB/s",
    "captured 2026-12-01 with torch 2.13.0 from traces/rank1024.json.gz",
    "host thread 2557, stream 7, rank 12, collective #1234",
    "Measured: linear-train.json.gz on NVIDIA GeForce RTX 2080 Ti: 1,234 events",
])
def test_the_scanner_leaves_names_shapes_dates_and_ids_alone(text):
    assert number_slips(text) == []


# --- every command on every bundled trace ----------------------------------------------------------


@pytest.fixture(scope="module")
def once():
    """Each trace analysed (and replayed) once for its three formats: the formats are what is under test,
    and the analysis a command prints is the same frozen object whichever format prints it."""
    with analysed_once():
        yield


def cli(argv: list[str]) -> tuple[int, str]:
    """(exit code, stdout) of the CLI run in-process from the repo root, as a user types it."""
    out, cwd = io.StringIO(), os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(argv)
    finally:
        os.chdir(cwd)
    return code, out.getvalue()


def slips_of(argv: list[str]) -> list[str]:
    """What the command's words get wrong (its --json: the string fields); a command that refuses the
    trace (exit 2, e.g. whatif on a CPU-only trace) has no words on stdout to scan."""
    code, out = cli(argv)
    assert code in (0, 2), f"tracetriage {' '.join(argv)} exited {code}"
    if code:
        return []
    words = "\n".join(json_words(json.loads(out))) if "--json" in argv else out
    return [f"tracetriage {' '.join(argv)}: {s}" for s in number_slips(words)]


REPORT_FORMATS = [[], ["--json"], ["--format", "markdown"]]


# The scan over every trace, pair and drill is the slow step's; these stand for them in the fast suite: a sync, a
# launch-bound chain with its Triton sidecar, CUDA graphs, a fix pair and a health case.
FAST_TRACES = ["traces/smell-sync-item.json.gz", "traces/chain-triton-small.json.gz", "traces/gpt-graphs.json.gz",
               "traces/fixes/item_python--before.json.gz", "traces/health/health-accidental-cpu.json.gz"]


@pytest.mark.parametrize("trace", sweep(TRACE_FILES, FAST_TRACES))
def test_report_and_whatif_write_every_number_in_the_one_format(trace, once):
    slips = [s for fmt in REPORT_FORMATS for s in slips_of(["report", "--quiet", *fmt, trace])]
    slips += [s for fmt in REPORT_FORMATS for s in slips_of(["whatif", *fmt, trace])]
    assert not slips, "\n".join(slips)


@pytest.mark.parametrize("trace,name", sweep([("traces/gpt-eager.json.gz", "decode_step"),
                                              ("traces/smell-sync-item.json.gz", "iteration"),
                                              ("traces/smell-launch-per-param.json.gz", "optimizer_step")],
                                             [("traces/smell-sync-item.json.gz", "iteration")]))
def test_a_range_report_writes_every_number_in_the_one_format(trace, name):
    slips = [s for fmt in REPORT_FORMATS for s in slips_of(["report", "--quiet", *fmt, "--range", name, trace])]
    assert not slips, "\n".join(slips)


@pytest.mark.slow
@pytest.mark.parametrize("run", RANK_DIRS)
def test_report_of_a_directory_of_ranks_writes_every_number_in_the_one_format(run):
    slips = [s for fmt in REPORT_FORMATS for s in slips_of(["report", "--quiet", *fmt, run])]
    assert not slips, "\n".join(slips)


def _diff_pairs() -> list[tuple[str, str]]:
    """The golden diffs, and each ground-truth fix against the trace before it (traces/fixes/)."""
    from golden import DIFF_PAIRS

    pairs = [(f"traces/{b}.json.gz", f"traces/{a}.json.gz") for b, a in DIFF_PAIRS]
    for before in sorted((TRACES / "fixes").glob("*--before.json.gz")):
        scenario = before.name[:-len("--before.json.gz")]
        pairs += [(str(before.relative_to(ROOT)), str(after.relative_to(ROOT)))
                  for after in sorted((TRACES / "fixes").glob(f"{scenario}--*.json.gz")) if after != before]
    return pairs


@pytest.mark.parametrize("before,after", sweep(_diff_pairs(), [
    ("traces/chain-eager-small.json.gz", "traces/chain-triton-small.json.gz"),
    ("traces/fixes/item_python--before.json.gz", "traces/fixes/item_python--remove_syncs.json.gz")],
    ids=[f"{Path(b).name}->{Path(a).name}" for b, a in _diff_pairs()]))
def test_diff_writes_every_number_in_the_one_format(before, after):
    slips = [s for fmt in REPORT_FORMATS for s in slips_of(["diff", *fmt, before, after])]
    assert not slips, "\n".join(slips)


# HTA's own figures, beside ours: long launch delays (ms), many launches, an idle of over a second
HTA_TRACES = ["traces/smell-sync-item.json.gz", "traces/chain-eager-large.json.gz", "traces/smell-transfer-d2h.json.gz",
              "traces/probe-launch-row-softmax.json.gz"]


@pytest.mark.parametrize("trace", sweep(HTA_TRACES, ["traces/smell-transfer-d2h.json.gz"]))
def test_report_beside_hta_writes_every_number_in_the_one_format(trace):
    pytest.importorskip("hta")
    code, out = cli(["report", "--quiet", "--hta", trace])
    assert code == 0 and "HTA " in out and "unavailable" not in out, out[-300:]
    assert not number_slips(out), "\n".join(map(str, number_slips(out)))


def _drill_ids() -> list[str]:
    return [d["id"] for d in json.loads(cli(["drill", "list", "--json"])[1])]


# Slips in analyzers/voice/drills.py, issue 22's file (not this one's): its named-range row writes
# 'all instances   1122.72 ms' (a duration in ms with no unit change and no separators).
DRILLS_VOICE_KNOWN = ("all instances",)


@pytest.mark.parametrize("drill", sweep(_drill_ids(), ["M01.05-a", "M02.01-d", "M02.03-c"]))
def test_drill_show_writes_every_number_in_the_one_format(drill):
    slips = [s for s in slips_of(["drill", "show", drill]) + slips_of(["drill", "show", drill, "--json"])
             if not any(k in s for k in DRILLS_VOICE_KNOWN)]
    assert not slips, "\n".join(slips)


@pytest.mark.parametrize("trace", sweep([t for t in TRACE_FILES if "/" not in t[len("traces/"):]],
                                         ["traces/smell-sync-item.json.gz", "traces/chain-triton-small.json.gz"]))
def test_notebook_reprs_write_every_number_in_the_one_format(trace, once):
    import tracetriage

    a = tracetriage.analyze(ROOT / trace)
    slips = [s for text in (repr(a), a._repr_markdown_(), a._repr_html_()) for s in number_slips(text)]
    assert not slips, "\n".join(map(str, slips))


def test_the_dashboards_words_write_every_number_in_the_one_format():
    said = [
        dash.upload_too_large("big.json.gz", 1_234_567_890, 1000),
        dash.cause_evidence("launch_overhead", 21919, 38.6, 1551.13, []),
        dash.idle_bar_label(1_047_700.0, "90%"),
        dash.phase_summary(18_800.0, 17_600.0, 1024, 4096),
        dash.window_caption(22270, 0.0, 1122.7236, 5000, 400),
        dash.ceilings_caption("NVIDIA H200", "datasheet", "bf16", 989.4567, 4800.123, 206.1234),
        dash.ridge_label(1365.3),
        dash.points_caption(1234, 5678, "bf16"),
        dash.diff_headline("a", "b", 11.29, "launch_overhead"),
        dash.diff_headline("a", "b", 0.8, "kernels"),
        " ".join(dash.diff_measure("launch calls", "count", 22270, 1234, ratio_value=18.05)),
        dash.whatif_caption(1_160_000_000.0, 1_158_000_000.0, 1_050_000_000.0),
        dash.lever_line("cuda_graphs", 135_500_000.0, 0.117, 1_024_500_000.0, 1_160_000_000.0),
        dash.span_note(1_160_000_000.0, 1_050_000_000.0, False, 110_000.0),
        dash.whatif_timeline_caption(22270, True, 400, 5000),
        dash.annotated_caption(21919),
    ]
    slips = [s for text in said for s in number_slips(text)]
    assert not slips, "\n".join(map(str, slips))
    assert "11.29× speedup" in said[8]
    assert "1.25× slowdown" in said[9]   # a speedup under 1 is a slowdown, not a '0.80× speedup'


@pytest.mark.slow      # a capture on the CPU
def test_the_clis_own_prints_write_every_number_in_the_one_format(tmp_path):
    code, captured = cli(["capture", "smell-sync-item", "--device", "cpu", "--out", str(tmp_path / "c.json.gz"),
                          "--steps", "1"])
    assert code == 0 and captured.startswith("wrote "), captured
    code, annotated = cli(["annotate", "traces/gpt-eager.json.gz", "--out", str(tmp_path / "a.json.gz")])
    assert code == 0 and "idle gaps named by cause" in annotated, annotated
    slips = number_slips(captured) + number_slips(annotated)
    assert not slips, "\n".join(map(str, slips))


def test_a_stacks_cost_past_a_thousand_percent_has_its_separator():
    # regression: a capture on a loaded machine printed 'spread 3895%' and stacks costing '+1234%'
    from tracetriage.capture import stacks

    assert "they cost +1,234% of profiled step time" in stacks.choose("auto", lambda: 12.34).why
    assert units.share(38.95) == "3,895%"
