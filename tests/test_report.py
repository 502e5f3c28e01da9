"""The report on the real H200 sample library: right answers, the JSON contract, the CLI."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sweep import sweep
from tracetriage.analyzers.model.evidence import HostEvidence, TransferEvidence
from tracetriage.analyzers.model.verdicts import Cause, Experiment, Regime
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice import report as voice

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
MANIFEST = json.loads((TRACES / "manifest.json").read_text())["traces"]
LABELLED_IDLE = [e for e in MANIFEST if e["label"]["idle_cause"]]
LABELLED_REGIME = [e for e in MANIFEST if e["label"]["regime"]]
# The fast suite's share: the first trace of each label (one trace stands for its label's rule); the slow step the rest.
_FIRST_IDLE = list({e["label"]["idle_cause"]: e["name"] for e in reversed(LABELLED_IDLE)}.values())
_FIRST_REGIME = list({e["label"]["regime"]: e["name"] for e in reversed(LABELLED_REGIME)}.values())


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "tracetriage.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, **kw)


@pytest.mark.parametrize("entry", sweep(LABELLED_IDLE, [e for e in LABELLED_IDLE if e["name"] in _FIRST_IDLE],
                                         ids=[e["name"] for e in LABELLED_IDLE]))
def test_dominant_idle_cause_matches_the_label(entry):
    a = analyze_file(TRACES / entry["file"])
    assert a.dominant == entry["label"]["idle_cause"], voice.five_lines(a)[2]


@pytest.mark.parametrize("entry", sweep(LABELLED_REGIME, [e for e in LABELLED_REGIME if e["name"] in _FIRST_REGIME],
                                         ids=[e["name"] for e in LABELLED_REGIME]))
def test_regime_matches_the_label(entry):
    a = analyze_file(TRACES / entry["file"])
    assert a.verdict.regime == entry["label"]["regime"], voice.five_lines(a)[3]


def test_every_gap_has_one_cause_and_gaps_never_overlap():
    a = analyze_file(TRACES / "gpt-eager.json.gz")
    g = a.devices[0].gaps
    assert len(g) > 1000
    assert (g.end > g.start).all()
    assert (g.start[1:] >= g.end[:-1]).all()
    assert sum(a.by_cause_ns.values()) == a.idle_ns


def test_idle_plus_busy_kernel_time_fills_the_span():
    a = analyze_file(TRACES / "healthy-overlap.json.gz")
    d = a.devices[0]
    assert d.idle_ns + d.kernel_busy_ns == d.span_ns


def test_report_has_five_sentences_each_with_a_number():
    a = analyze_file(TRACES / "smell-host-numpy.json.gz")
    assert len(voice.five_lines(a)) == 5
    for prefix, line in zip(("Measured:", "Time:", "Idle:", "Regime:", "Next:"), voice.five_lines(a)):
        assert line.startswith(prefix) and line.endswith(".")
        assert any(ch.isdigit() for ch in line), line


def test_host_work_evidence_names_the_traced_cpu_ops_not_the_launching_ones():
    a = analyze_file(TRACES / "smell-host-cpu-ops.json.gz")
    ev = a.evidence[Cause.HOST_WORK]
    assert isinstance(ev, HostEvidence)
    names = [h.name for h in ev.host_events]
    assert "aten::std" in names or "aten::avg_pool2d" in names
    assert "aten::mm" not in names and "aten::matmul" not in names


def test_transfer_evidence_gives_copy_kind_bytes_and_rate():
    a = analyze_file(TRACES / "smell-transfer-pageable-h2d.json.gz")
    ev = a.evidence[Cause.DATA_TRANSFER]
    assert isinstance(ev, TransferEvidence)
    top = ev.copies[0]
    assert "HtoD" in top.name and "Pageable" in top.name
    assert top.bytes >= 10 * 128 * 2**20
    assert 1 < top.gbps < 60


def test_prefill_decode_report_speaks_of_both_phases():
    a = analyze_file(TRACES / "gpt-graphs.json.gz")
    line = voice.five_lines(a)[0]
    assert "prefill (TTFT)" in line and "per token" in line
    assert a.phases.prefill.regime is Regime.COMPUTE
    assert a.phases.decode.regime is Regime.MEMORY
    assert a.phases.per_token_us < a.phases.ttft_us


def test_json_contract_keys_are_present():
    out = serialize.report(analyze_file(TRACES / "gpt-eager.json.gz"))
    for k in ("trace", "span_us", "kernel_busy_us", "copy_us", "idle_us", "idle_share", "idle", "regime",
              "hotspots", "ranges", "roofline", "lines", "next_experiment"):
        assert k in out
    assert set(out["trace"]) >= {"path", "events", "device_name"}
    assert set(out["idle"]["by_cause_us"]) == {"launch_overhead", "host_work", "synchronization",
                                             "data_transfer", "other"}
    assert set(out["idle"]) >= {"dominant", "gaps", "evidence"}
    assert set(out["hotspots"][0]) >= {"name", "device_us", "share", "calls"}
    assert set(out["ranges"][0]) >= {"name", "count", "wall_us", "kernel_busy_us", "regime", "idle_dominant"}
    assert set(out["roofline"][0]) >= {"name", "flops", "bytes", "intensity", "achieved_tflops", "achieved_gbps",
                                       "bound"}
    assert set(out["next_experiment"]) == {"lever", "why", "waste", "kind", "predicted_ratio", "whatif_lever", "only",
                                          "acts_on", "baseline_us", "unprofiled_ratio", "own_fix"}
    assert 0 < out["next_experiment"]["predicted_ratio"] < 1
    assert len(out["lines"]) == 5


def test_cli_json_prints_one_object_and_nothing_else():
    r = _cli("report", str(TRACES / "smell-host-sleep.json.gz"), "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["idle"]["dominant"] == "host_work"


def test_cli_report_never_imports_torch_triton_or_streamlit():
    code = ("import sys; from tracetriage.cli import main; "
            f"rc = main(['report', {str(TRACES / 'smell-host-sleep.json.gz')!r}]); "
            "bad = [m for m in ('torch', 'triton', 'streamlit', 'pandas') if m in sys.modules]; "
            "print('IMPORTED', bad); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "IMPORTED []" in r.stdout


def test_range_option_restricts_the_report_to_that_range():
    a = analyze_file(TRACES / "gpt-graphs.json.gz", "decode_step")
    full = analyze_file(TRACES / "gpt-graphs.json.gz")
    assert a.span_ns < full.span_ns
    assert "range decode_step" in voice.five_lines(a)[0]


@pytest.mark.parametrize("args,needle", [
    (["report", "/no/such/trace.json"], "no such file"),
    (["report", str(TRACES / "gpt-graphs.json.gz"), "--range", "nope"], "no range named 'nope'"),
])
def test_cli_user_errors_print_one_line_and_exit_2(args, needle):
    r = _cli(*args)
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and needle in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_cli_rejects_a_file_that_is_not_json(tmp_path):
    p = tmp_path / "notes.json"
    p.write_text("this is not a trace\n")
    r = _cli("report", str(p))
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "not valid JSON" in r.stderr


def test_a_cpu_only_trace_gets_a_report_that_says_there_is_no_gpu_timeline(tmp_path, capsys):
    from tracetriage.capture.harness import capture_workload
    from tracetriage.capture.presets import get
    from tracetriage.cli import main

    p = get("chain-eager-small")
    wl = p.build("cpu", steps=2, warmup=1)
    capture_workload(wl, tmp_path / "cpu", name="cpu", time_repeats=2)
    capsys.readouterr()
    # main(argv) in this process (the real process's exit codes: test_cli_exit.py): two children cost ~1.5 s of a core
    assert main(["report", str(tmp_path / "cpu.json.gz")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Measured: cpu.json.gz has no GPU activity")
    assert "aten::mul" in lines[1]
    assert lines[3].startswith("Regime: not decidable from a CPU-only trace")
    assert "--device cuda" in lines[4]
    assert main(["report", str(tmp_path / "cpu.json.gz"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["regime"] is None and out["idle"]["dominant"] is None


def test_one_time_setup_in_first_calls_becomes_a_caveat_and_the_next_experiment_is_a_warm_up():
    # the toy training script was profiled from its first step: cuBLAS init inside the first
    # aten::linear (80 ms), lazy kernel loading in the first _foreach_sqrt (26 ms), ...
    a = analyze_file(TRACES / "script-toy-train.json.gz")
    warm = {w.name: w for w in a.warmup}
    assert warm["aten::linear"].first_call_us > 50_000
    assert warm["aten::linear"].later_median_us < 1_000
    assert any(c.startswith("the profile includes one-time set-up") for c in voice.analysis_caveats(a))
    assert a.next_experiment.kind is Experiment.WARM_UP
    assert voice.next_experiment(a)["lever"].startswith("warm up first")
    # a steady-state trace has no such caveat
    b = analyze_file(TRACES / "gpt-eager.json.gz")
    assert not any("one-time set-up" in c for c in voice.analysis_caveats(b))
    assert b.next_experiment.kind is not Experiment.WARM_UP
