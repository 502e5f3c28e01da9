"""--format markdown for report, diff and whatif: the lines first, then a table per section, PR-comment sized."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from golden import run_cli
from tracetriage.analyzers.model.units import duration_us
from tracetriage.analyzers.voice.markdown import cell

ROOT = Path(__file__).resolve().parent.parent
PR_COMMENT_LIMIT = 65_536      # GitHub's limit on a comment's body, in characters


def md(*argv: str) -> str:
    return run_cli(list(argv))


def test_report_markdown_puts_the_five_lines_first_then_a_table_per_section():
    out = md("report", "--format", "markdown", "traces/smell-sync-item.json.gz")
    text = run_cli(["report", "traces/smell-sync-item.json.gz"]).splitlines()
    lines = out.splitlines()
    assert lines[0] == "### tracetriage report: `smell-sync-item.json.gz`"
    body = [x for x in lines[2:7]]
    for got, want in zip(body, text[:5]):
        head, _, rest = want.partition(": ")
        assert got.rstrip() == f"**{head}**: {rest}"
    assert "| hotspot | device time | share | calls |" in out
    assert "| idle cause | time | of the span | gaps | evidence |" in out
    assert "| what-if lever | predicted span | change |" in out
    assert out.index("**Next**") < out.index("| hotspot")
    assert len(out) < 8_000 < PR_COMMENT_LIMIT


def test_report_markdown_of_a_trace_with_stacks_has_the_users_lines_in_the_tables():
    out = md("report", "--format", "markdown", "traces/script-user-train-stacks.json.gz")
    assert "| hotspot | device time | share | calls | where in your code |" in out
    assert "the `.item()` at capture/examples/user_train.py:" in out     # the synchronization row
    assert len(out) < PR_COMMENT_LIMIT


def test_diff_markdown_has_the_lines_and_a_before_after_table_and_the_gate():
    p = subprocess.run([sys.executable, "-m", "tracetriage.cli", "diff", "--format", "markdown",
                        "--fail-if-slower", "5", "traces/chain-triton-large.json.gz",
                        "traces/chain-eager-large.json.gz"],
                       capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert p.returncode == 1
    out = p.stdout
    assert out.startswith("### tracetriage diff: `chain-triton-large.json.gz` → `chain-eager-large.json.gz`")
    assert "> **gate failed: chain-eager-large.json.gz is" in out
    assert "**Diff**: chain-triton-large.json.gz → chain-eager-large.json.gz" in out
    assert "|  | before | after | change |" in out and "| GPU span | 25.9 ms | 115.0 ms | +89.1 ms |" in out
    assert len(out) < 8_000


def test_whatif_markdown_is_a_table_of_levers_best_first():
    out = md("whatif", "--format", "markdown", "traces/smell-sync-item.json.gz")
    w = json.loads(md("whatif", "--json", "traces/smell-sync-item.json.gz"))
    rows = [x for x in out.splitlines() if x.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [x["lever"] for x in w["levers"]]
    assert "| lever | predicted span | ratio | saving | assumes |" in out
    # the baseline says it holds host time too (the report's Measured line gives the shorter GPU span)
    assert f"Traced span, host and GPU: {duration_us(w['baseline_us'])};" in out


def test_whatifs_first_line_says_its_span_holds_host_time_too():
    first = md("whatif", "traces/smell-sync-item.json.gz").splitlines()[0]
    assert first.startswith("traces/smell-sync-item.json.gz: traced span, host and GPU, 55.5 ms ("), first
    assert "52.2 ms GPU span" in md("report", "traces/smell-sync-item.json.gz")      # the report's, shorter


def test_format_json_is_the_same_object_as_json():
    assert md("report", "--format", "json", "traces/smell-sync-item.json.gz") == \
        md("report", "--json", "traces/smell-sync-item.json.gz")


def test_json_and_another_format_together_are_a_user_error():
    p = subprocess.run([sys.executable, "-m", "tracetriage.cli", "report", "--json", "--format", "markdown",
                        "traces/smell-sync-item.json.gz"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and p.stderr.strip() == "error: --json and --format markdown disagree: give one"


def test_a_pipe_in_a_name_does_not_break_the_table():
    assert cell("a|b\nc") == "a\\|b c"
