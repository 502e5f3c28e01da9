"""The command line behaves as Python CLIs do: help with no command, --version, a help line on every argument,
--quiet wherever a trace loads, and a bad option value as one `error:` line (exit 2), never a page of usage.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from tracetriage import cli

ROOT = Path(__file__).resolve().parent.parent
SYNC = str(ROOT / "traces/smell-sync-item.json.gz")
EAGER, TRITON = str(ROOT / "traces/chain-eager-large.json.gz"), str(ROOT / "traces/chain-triton-large.json.gz")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as e:   # argparse's --help and --version exit; the house's errors return
        code = e.code if isinstance(e.code, int) else 0
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_no_command_prints_the_help_with_every_command(capsys):
    code, out, err = run(capsys)
    assert code == 0 and not err
    assert out.startswith("usage: tracetriage")
    for command in ("report", "diff", "whatif", "capture", "drill", "dashboard", "annotate", "schema"):
        assert command in out
    assert "cmd" not in out.split()   # the internal name of the subcommand slot never shows


def test_version_is_the_installed_distributions(capsys):
    from importlib.metadata import version

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"tracetriage {version('tracetriage')}"


def _actions(parser: argparse.ArgumentParser, path: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{path} {name}")
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, action


def test_every_argument_and_option_of_every_command_has_a_help_line():
    missing = [f"{path}: {a.option_strings or a.dest}" for path, a in _actions(cli.build_parser(), "tracetriage")
               if not a.help]
    assert not missing, missing


def test_every_command_that_loads_a_trace_takes_quiet():
    for command in ("report", "diff", "whatif", "annotate"):
        p = cli.build_parser()
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
        assert any("--quiet" in a.option_strings for a in sub._actions), command


def test_diff_and_whatif_run_with_quiet(capsys):
    code, out, err = run(capsys, "diff", "--quiet", EAGER, TRITON)
    assert code == 0 and out.startswith("Diff: ") and not err
    code, out, err = run(capsys, "whatif", SYNC, "--quiet", "--lever", "remove_syncs")
    assert code == 0 and "remove_syncs" in out and not err


@pytest.mark.parametrize("argv, phrase", [
    (("report", SYNC, "--format", "xml"), "invalid choice: 'xml'"),
    (("report", SYNC, SYNC), "unrecognized arguments"),
    (("dashboard", "--port", "abc"), "not a port number: 'abc'"),
    (("capture", "list", "--steps", "x"), "not a whole number: 'x'"),
    (("frobnicate",), "invalid choice: 'frobnicate'"),
])
def test_a_bad_option_value_is_one_error_line_naming_the_commands_help(capsys, argv, phrase):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert phrase in one_error_line(err) and "--help" in err


def test_an_empty_range_is_refused(capsys):
    code, _, err = run(capsys, "report", SYNC, "--range", "")
    assert code == 2 and "--range needs the name of a range" in one_error_line(err)


@pytest.mark.parametrize("pct", ["100", "150"])
def test_an_idle_gate_that_can_never_fail_is_refused(capsys, pct):
    code, _, err = run(capsys, "report", SYNC, "--fail-if-idle-above", pct)
    assert code == 2 and "can never fail" in one_error_line(err)


def test_an_idle_gate_just_under_100_is_taken(capsys):
    code, out, err = run(capsys, "report", SYNC, "--fail-if-idle-above", "99.5")
    assert code == 0 and out.startswith("Measured: ") and err.startswith("gate passed: ")


def test_report_of_standard_input_says_it_reads_files_and_how_to_save_one(capsys):
    code, _, err = run(capsys, "report", "-")
    assert code == 2 and "not standard input" in one_error_line(err) and "> trace.json.gz" in err


def test_a_symlink_loop_is_named_as_one_not_as_a_missing_file(tmp_path, capsys):
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    os.symlink(b, a)
    os.symlink(a, b)
    code, _, err = run(capsys, "report", str(a))
    assert code == 2 and "loop of symbolic links" in one_error_line(err)


def test_a_dangling_symlink_names_its_missing_target(tmp_path, capsys):
    link = tmp_path / "trace.json.gz"
    os.symlink(tmp_path / "gone.json.gz", link)
    code, _, err = run(capsys, "report", str(link))
    assert code == 2 and "symbolic link to" in one_error_line(err) and "gone.json.gz" in err


def test_report_dir_as_markdown_has_a_table_of_ranks_and_the_straggler(capsys):
    code, out, err = run(capsys, "report", str(ROOT / "traces/ddp-skewed"), "--format", "markdown", "--quiet")
    assert code == 0 and not err
    assert out.startswith("### tracetriage report: ranks")
    head = next(line for line in out.splitlines() if line.startswith("| rank |"))
    assert "idle" in head and "waiting for a peer" in head
    rows = [line for line in out.splitlines() if line.startswith("| 0 |") or line.startswith("| 1 |")]
    assert len(rows) == 2
    assert "**Straggler**: rank 1" in out and "**Next**: " in out
