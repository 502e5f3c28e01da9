"""The regression gates for CI: exit 1 with the one line that says why; 2 for a user error; 0 otherwise.

Exit codes are the CLI's contract: 1 = the gate failed, 2 = a user error, 3 = an internal failure.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tracetriage.cli import main

ROOT = Path(__file__).resolve().parent.parent
T = "traces"
EAGER, TRITON = f"{T}/chain-eager-large.json.gz", f"{T}/chain-triton-large.json.gz"
SYNC = f"{T}/smell-sync-item.json.gz"


def process(*args):
    """The command line in a process of its own: the exit code the shell sees."""
    return subprocess.run([sys.executable, "-m", "tracetriage.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=180)


@pytest.fixture
def cli(capsys, monkeypatch):
    """The command line's main(argv) in this process (its return is the process's exit code: test_cli_exit.py), its
    two streams as a process's: a child's start-up and imports cost ~0.5 s of a core a call."""
    monkeypatch.chdir(ROOT)

    def run(*args):
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["tracetriage", *args], code, out, err)
    return run


def spans(cli, before, after):
    d = json.loads(cli("diff", "--json", before, after).stdout)
    return d["before"]["span_us"], d["after"]["span_us"]


def test_diff_fails_the_gate_with_exit_1_and_one_line_when_after_is_slower(cli):
    p = cli("diff", TRITON, EAGER, "--fail-if-slower", "5")
    assert p.returncode == 1
    b, a = spans(cli, TRITON, EAGER)
    line, = p.stderr.splitlines()
    assert line.startswith(f"gate failed: chain-eager-large.json.gz is {100 * (a / b - 1):.1f}% slower than "
                           "chain-triton-large.json.gz (GPU span 25.9 ms → 115.0 ms), more than the 5% allowed: "
                           "kernel busy +88.2 ms")
    assert p.stdout.startswith("Diff: chain-triton-large.json.gz → chain-eager-large.json.gz")   # the diff itself


def test_diff_passes_the_gate_when_after_is_faster_or_within_the_limit(cli):
    p = cli("diff", EAGER, TRITON, "--fail-if-slower", "5")
    assert p.returncode == 0
    assert p.stderr.strip() == ("gate passed: chain-triton-large.json.gz is 4.44× faster than "
                                "chain-eager-large.json.gz (GPU span 115.0 ms → 25.9 ms, 77.5% less time), "
                                "within the 5% allowed")
    same = cli("diff", SYNC, SYNC, "--fail-if-slower", "0")      # 0% slower is not more than 0%
    assert same.returncode == 0 and "within the 0% allowed" in same.stderr


def test_the_gate_keeps_stdout_the_json_object(cli):
    p = cli("diff", "--json", TRITON, EAGER, "--fail-if-slower", "10")
    assert p.returncode == 1 and json.loads(p.stdout)["schema_version"]
    assert p.stderr.startswith("gate failed: ")


def test_report_fails_the_idle_gate_with_exit_1_and_names_the_dominant_cause(cli):
    p = process("report", SYNC, "--fail-if-idle-above", "10")     # a real process: the exit code the shell sees
    assert p.returncode == 1
    idle = json.loads(cli("report", "--json", SYNC).stdout)["idle_share"]
    assert p.stderr.strip() == (f"gate failed: the GPU is idle {100 * idle:.1f}% of the span in "
                                "smell-sync-item.json.gz (9.86 ms of 52.2 ms), above the 10% allowed; "
                                "mostly synchronization (12.5% of the span)")
    assert p.stdout.startswith("Measured: smell-sync-item.json.gz")


def test_report_passes_the_idle_gate_under_the_limit(cli):
    p = cli("report", SYNC, "--fail-if-idle-above", "25%")
    assert p.returncode == 0 and p.stderr.startswith("gate passed: the GPU is idle 18.9% of the span")


def test_a_gate_given_no_percentage_is_a_user_error_with_exit_2(cli):
    for args in (["report", SYNC, "--fail-if-idle-above", "lots"], ["diff", EAGER, TRITON, "--fail-if-slower", "-5"]):
        p = cli(*args)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr.startswith("error: --fail-if-") and len(p.stderr.splitlines()) == 1


def test_a_gate_on_a_trace_with_no_gpu_timeline_is_a_user_error_not_a_pass(tmp_path, cli):
    cpu = tmp_path / "cpu.json"     # a CPU-only trace: one op, no GPU activity
    cpu.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
                                                "ts": 10.0, "dur": 5.0}]}))
    p = cli("report", str(cpu), "--fail-if-idle-above", "10")
    assert p.returncode == 2
    assert p.stderr.strip() == f"error: --fail-if-idle-above needs a GPU timeline; {cpu} has no GPU activity"


def test_an_internal_failure_exits_3_not_the_gates_1(monkeypatch, capsys):
    from tracetriage import cli as cli_mod
    from tracetriage.analyzers.triage import report as report_mod

    def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(report_mod, "analyze_file", broken)
    monkeypatch.delenv("TRACETRIAGE_DEBUG", raising=False)
    assert cli_mod.main(["report", str(ROOT / SYNC)]) == cli_mod.EXIT_INTERNAL == 3
    assert "internal failure (RuntimeError: boom)" in capsys.readouterr().err
