"""`tracetriage try SCRIPT`: the knobs the report proposes, turned in child processes on the user's own script,
with predicted beside measured. CI has no GPU: these run CPU scripts (tiny, --repeats 1); the full runs are slow.
"""
from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tracetriage import cli
from tracetriage.analyzers.whatif.levers.catalogue import from_outside
from tracetriage.trial import measure
from tracetriage.trial.measure import Saving, Verdict

TRAIN = """import torch
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(32, 32) for _ in range(4)])
opt = torch.optim.AdamW(model.parameters(), foreach=False)
x = torch.randn(16, 32)
for _ in range(3):
    opt.zero_grad(set_to_none=False)
    model(x).sum().backward()
    opt.step()
"""

# refuses the fused optimizer: the fused_adamw knob's row must say it failed, and the other knob still runs
REFUSES_FUSED = TRAIN + 'assert not opt.defaults.get("fused"), "this script refuses the fused optimizer"\n'


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    out, err = capsys.readouterr()
    return code, out, err


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_missing_script_is_one_error_line(capsys, tmp_path):
    code, out, err = run(capsys, "try", str(tmp_path / "nope.py"))
    assert (code, out) == (2, "")
    assert err == f"error: no such script: {tmp_path / 'nope.py'}\n"


def test_a_file_that_is_not_a_python_script_is_refused(capsys, tmp_path):
    (tmp_path / "t.json").write_text("{}")
    code, _, err = run(capsys, "try", str(tmp_path / "t.json"))
    assert code == 2 and err.startswith("error: try runs a Python script") and err.count("\n") == 1


def test_dry_run_lists_the_runs_and_runs_and_writes_nothing(capsys, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    before = digest(tmp_path)
    code, out, err = run(capsys, "try", "--dry-run", "--device", "cpu", "--out", str(tmp_path / "o"), str(script))
    assert code == 0 and err == ""
    assert "nothing is run" in out and "the first capture (profiled, no knob)" in out
    assert "fused_adamw" in out and "zero_grad_to_none" in out
    assert "  allow_tf32 (" not in out         # a GPU-only knob is not proposed to a CPU run
    assert digest(tmp_path) == before and not (tmp_path / "o").exists()


def test_an_unknown_knob_is_one_error_line_naming_the_knobs(capsys, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    code, out, err = run(capsys, "try", "--knob", "warp_drive", str(script))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("error: no knob named warp_drive; choose from: ") and "dataloader_workers" in err


def test_dry_run_with_knob_lists_only_the_knobs_named(capsys, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    code, out, _ = run(capsys, "try", "--dry-run", "--json", "--device", "cpu", "--knob", "fused_adamw", str(script))
    keys = [json.loads(r["command"][r["command"].index("--outside") + 1])["key"] for r in json.loads(out)["runs"]]
    assert code == 0 and keys == ["baseline", "baseline", "fused_adamw"]


def test_dry_run_json_is_one_object_of_commands(capsys, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    code, out, _ = run(capsys, "try", "--dry-run", "--json", "--device", "cuda", str(script))
    obj = json.loads(out)
    assert code == 0 and obj["dry_run"] and obj["schema_version"] == 1
    keys = {json.loads(r["command"][r["command"].index("--outside") + 1])["key"] for r in obj["runs"]}
    assert {"baseline", "allow_tf32", "cudnn_benchmark", "fused_adamw", "pin_memory"} <= keys


@pytest.mark.parametrize("path", sorted({p for e in from_outside() for p in e.outside.paths()}))
def test_every_library_path_a_knob_turns_exists_in_this_torch(path):
    from tracetriage.capture.knob_runner import _resolve

    _resolve(path)


def test_every_precision_knob_says_it_changes_numerics_and_only_gpu_knobs_need_a_gpu():
    by_key = {e.outside.key: e.outside for e in from_outside()}
    assert {k for k, o in by_key.items() if o.numerics} == {"allow_tf32", "autocast_bf16"}
    assert not by_key["fused_adamw"].gpu_only and by_key["allow_tf32"].gpu_only


@pytest.mark.slow   # a child that imports torch (~4.5 s of a core); the failing child below keeps the runner fast
def test_the_child_turns_the_knob_and_leaves_the_script_untouched(tmp_path):
    script = tmp_path / "sees.py"
    script.write_text("import torch\nopt = torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))], foreach=False)\n"
                      "assert opt.defaults['fused'] is True, opt.defaults\n")
    before = digest(tmp_path)
    knob = next(e.outside for e in from_outside() if e.outside.key == "fused_adamw")
    result = tmp_path / "r.json"
    subprocess.run([sys.executable, "-P", "-m", "tracetriage.capture.knob_runner", "--outside",
                    json.dumps(knob.to_json()), "--result", str(result), "--", str(script)], check=False,
                   capture_output=True, cwd=tmp_path)
    assert "wall_ns" in json.loads(result.read_text())
    after = digest(tmp_path)
    assert {k: v for k, v in after.items() if k != "r.json"} == before


def test_a_script_that_fails_under_the_knob_is_a_failed_result_not_a_crash(tmp_path):
    script = tmp_path / "refuses.py"
    script.write_text(REFUSES_FUSED)
    knob = next(e.outside for e in from_outside() if e.outside.key == "fused_adamw")
    result = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-P", "-m", "tracetriage.capture.knob_runner", "--outside",
                        json.dumps(knob.to_json()), "--result", str(result), "--", str(script)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 3
    assert json.loads(result.read_text()) == {"failed": "AssertionError: this script refuses the fused optimizer",
                                              "device_start_ns": 0}


@pytest.mark.parametrize(("predicted", "runs", "verdict"), [
    (0.20, Saving(0.19, 0.17, 0.22, 3), Verdict.AS_PREDICTED),
    (0.20, Saving(0.08, 0.06, 0.10, 3), Verdict.LESS),
    (0.05, Saving(0.30, 0.28, 0.33, 3), Verdict.MORE),
    (0.20, Saving(0.005, -0.01, 0.015, 3), Verdict.NO_CHANGE),
    (0.20, Saving(-0.30, -0.35, -0.25, 3), Verdict.SLOWER),
    (None, Saving(0.30, 0.28, 0.33, 3), Verdict.MEASURED_ONLY),
    (0.20, None, Verdict.NOT_RUN),
])
def test_the_verdict_says_where_the_prediction_fell_against_the_measured_spread(predicted, runs, verdict):
    assert measure.verdict(predicted, runs) is verdict


def test_the_spread_runs_from_the_slowest_after_over_the_fastest_before_to_the_reverse():
    s = measure.saving([100, 110, 90], [80, 85, 75])
    assert s is not None and s.median == pytest.approx(0.2)
    assert (s.low, s.high) == (pytest.approx(1 - 85 / 90), pytest.approx(1 - 75 / 110))


def test_each_measured_run_of_a_priced_knob_is_a_calibration_row(tmp_path):
    from tracetriage.analyzers.whatif.levers import FUSED_OPTIMIZER, LEVERS
    from tracetriage.drills.predictions import Log, calibration_by_quantity
    from tracetriage.trial import calibrate
    from tracetriage.trial.plan import Proposal
    from tracetriage.trial.results import Row

    knob = next(e.outside for e in from_outside() if e.outside.key == "fused_adamw")
    row = Row(Proposal(knob, FUSED_OPTIMIZER, "AdamW(fused=True)", None, 0.25, 0.2),
              after_traces=["a0.json.gz", "a1.json.gz"], after_spans=[80, 70])
    unpriced = Row(Proposal(knob, None, "AdamW(fused=True)", None, None, None), after_traces=["b.json.gz"],
                   after_spans=[90])
    db = tmp_path / "log.sqlite3"
    ids = calibrate.record([row, unpriced], [100, 100, 100], "before.json.gz", "train.py", str(db))
    log = Log(db)
    rows = log.predictions()
    log.close()
    assert len(ids) == 2 and [r["quantity"] for r in rows] == [LEVERS[FUSED_OPTIMIZER].quantity] * 2
    assert [(r["predicted"], r["measured"]) for r in rows] == [(0.75, 0.8), (0.75, 0.7)]
    per = calibration_by_quantity(rows)[LEVERS[FUSED_OPTIMIZER].quantity]
    assert per.measured == 2
    assert per.median_ratio == pytest.approx(statistics.median([0.8 / 0.75, 0.7 / 0.75]), abs=1e-4)


@pytest.mark.slow
def test_try_on_a_cpu_script_prints_one_table_and_a_failing_knobs_row(capsys, tmp_path):
    script = tmp_path / "refuses.py"
    script.write_text(REFUSES_FUSED)
    before = hashlib.sha256(script.read_bytes()).hexdigest()
    code, out, err = run(capsys, "try", "--repeats", "1", "--device", "cpu", "--out", str(tmp_path / "o"),
                         "--db", str(tmp_path / "log.sqlite3"), "--json", str(script))
    assert code == 0, err
    res = json.loads(out)
    rows = {r["knob"]: r for r in res["knobs"]}
    assert set(rows) == {"zero_grad_to_none", "fused_adamw"}
    assert rows["fused_adamw"]["verdict_words"] == "failed with AssertionError: this script refuses the fused optimizer"
    z = rows["zero_grad_to_none"]
    assert z["measured"]["profiled"]["runs"] == 1 and z["measured"]["unprofiled"]["runs"] == 1
    assert z["predicted"]["profiled"] is None          # a CPU trace has no GPU timeline to replay
    assert "allow_tf32" in res["gpu_only"] and len(res["before"]["profiled_span_ns"]) == 1
    # the first capture (a cold machine's first process) proposes; the baseline measured is a run of its own
    assert Path(res["before_trace"]).name == "first-capture.json.gz"
    assert (tmp_path / "o" / "baseline-profiled-0.json.gz").is_file()
    assert hashlib.sha256(script.read_bytes()).hexdigest() == before
    kept = tmp_path / "o" / "try.json"      # the table is kept beside the traces, for the dashboard's try page
    assert json.loads(kept.read_text()) == res
    assert kept.with_suffix(".txt").read_text().startswith("tracetriage try ")
    assert "| knob | the change in your code |" in kept.with_suffix(".md").read_text()
    for t in z["after_traces"]:            # the after traces are kept, a pair for tracetriage diff
        assert Path(t).is_file()
    code, out, _ = run(capsys, "diff", res["before_trace"], z["after_traces"][0])
    assert code in (0, 2) and (out or code == 2)


@pytest.mark.slow
def test_try_prints_the_table_as_text_and_markdown(capsys, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    code, out, err = run(capsys, "try", "--repeats", "1", "--device", "cpu", "--out", str(tmp_path / "o"),
                         "--max-runs", "3", "--db", str(tmp_path / "log.sqlite3"), str(script))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"tracetriage try {script}: 2 knobs to turn without editing your code, on the CPU")
    assert lines[1].split()[:2] == ["knob", "the"]
    assert "Stopped early: the --max-runs/--timeout budget was spent" in out
    assert "Only mean something on a GPU, so not run here: allow_tf32" in out
    code, out, _ = run(capsys, "try", "--repeats", "1", "--device", "cpu", "--out", str(tmp_path / "o2"),
                       "--max-runs", "2", "--db", str(tmp_path / "log.sqlite3"), "--format", "markdown", str(script))
    assert code == 0 and "| knob | the change in your code |" in out


def test_a_frame_name_with_raw_quotes_is_mended_so_the_runs_trace_parses(tmp_path):
    import gzip

    from tracetriage.capture.knob_runner import repair_names

    # as torch 2.13's Python tracer wrote it on the CPU: a stale line of source as a frame's name
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(b'{"traceEvents": [\n  {\n    "ph": "X",\n    "name": "torch/profiler/_cupti_monitor'
                                b'.py(0): """",\n    "pid": 1\n  },\n  {\n    "name": "ok \\"quoted\\"",\n'
                                b'    "pid": 2\n  }\n]}\n'))
    assert repair_names(p) == 1
    names = [e["name"] for e in json.loads(gzip.decompress(p.read_bytes()))["traceEvents"]]
    assert names == ['torch/profiler/_cupti_monitor.py(0): """', 'ok "quoted"']
    assert repair_names(p) == 0


KNOBS = Path(__file__).resolve().parent.parent / "traces" / "fixes" / "knobs"


def test_on_an_h200_trace_of_fp32_matmuls_try_proposes_tf32_and_bf16_with_their_predictions_largest_first():
    from tracetriage.analyzers.triage.report import analyze_file
    from tracetriage.trial.plan import propose

    proposals, gpu_only = propose(analyze_file(KNOBS / "tf32_mlp_train--before.json.gz"), has_gpu=True)
    assert [p.key for p in proposals] == ["allow_tf32", "autocast_bf16"] and gpu_only == []
    assert all(p.predicted is not None and p.predicted >= 0.03 for p in proposals)
    assert proposals[0].predicted >= proposals[1].predicted
    assert proposals[0].change.startswith("torch.backends.cuda.matmul.allow_tf32 = True")


def test_a_knob_no_lever_prices_is_proposed_only_where_the_trace_holds_what_it_acts_on():
    from tracetriage.analyzers.triage.report import analyze_file
    from tracetriage.trial.plan import propose

    convs, _ = propose(analyze_file(KNOBS / "autocast_resnet_train--before.json.gz"), has_gpu=True)
    assert [(p.key, p.predicted, p.why_unpriced) for p in convs] == [("cudnn_benchmark", None, "no lever prices it")]
    gemms, _ = propose(analyze_file(KNOBS / "tf32_mlp_train--before.json.gz"), has_gpu=True)
    assert "cudnn_benchmark" not in [p.key for p in gemms] and "empty_cache_noop" not in [p.key for p in gemms]


def test_the_unprofiled_clock_starts_no_device_on_a_cpu(tmp_path):
    from tracetriage.capture.knob_runner import start_device

    assert start_device("cpu") == 0


TF32_H100 = Path(__file__).resolve().parent.parent / "traces" / "try-h100" / "tf32_mlp--baseline.json.gz"


def test_the_change_names_the_scripts_own_line_though_the_profiler_named_the_module_frame_line_0():
    """torch 2.11 on the H100 names the script's frame `tf32_mlp.py(0): <module>` and try's trace lies in its out
    folder: the line comes from the script's own file (line 7 builds the Sequential), and no `:0` is printed."""
    from tracetriage.trial.command import _proposals

    script = str(Path(__file__).resolve().parent.parent / "tools" / "try_h200" / "tf32_mlp.py")
    line = 1 + next(i for i, t in enumerate(Path(script).read_text().splitlines()) if "Sequential(" in t)
    with_script = {p.key: p.source for p in _proposals(str(TF32_H100), "cuda", (), script)[0]}
    assert with_script["allow_tf32"] == f"the `Sequential(...)` at tf32_mlp.py:{line} in `<module>`", with_script
    without = {p.key: p.source for p in _proposals(str(TF32_H100), "cuda", ())[0]}
    assert all(":0" not in (s or "") for s in without.values()), without
