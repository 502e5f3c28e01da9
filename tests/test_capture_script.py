"""`tracetriage capture script PATH.py`: the user's script, profiled; its failures are its own."""
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tracetriage.analyzers.loading.load import load  # noqa: E402
from tracetriage.cli import main  # noqa: E402

OUR_CODE = ("capture/", "tracetriage/", "runpy", "torch/profiler")


def capture(capsys, tmp_path: Path, source: str, *script_args: str) -> tuple[int, str, str, Path]:
    script = tmp_path / "user_script.py"
    script.write_text(source)
    out = tmp_path / "user.json.gz"
    code = main(["capture", "--device", "cpu", "--out", str(out), "script", str(script), *script_args])
    o, e = capsys.readouterr()
    return code, o, e, out


def test_a_script_that_raises_shows_its_own_traceback_and_exits_1(tmp_path, capsys):
    code, out, err, trace = capture(capsys, tmp_path, 'def f():\n    raise ValueError("boom in user script")\n\nf()\n')
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].endswith('user_script.py", line 4, in <module>')   # their first frame comes first
    assert lines[3].endswith('user_script.py", line 2, in f')
    assert lines[-2:] == ["ValueError: boom in user script",
                          "error: your script user_script.py raised ValueError (shown above); "
                          "no trace was written"]
    assert not any(ours in err for ours in OUR_CODE), err
    assert "internal failure" not in err
    assert not trace.exists()


def test_a_failed_script_leaves_an_earlier_trace_as_it_was(tmp_path, capsys):
    (tmp_path / "user.json.gz").write_bytes(b"an earlier, good trace")
    code, _, err, trace = capture(capsys, tmp_path, "import missing_module_of_theirs\n")
    assert code == 1
    assert "ModuleNotFoundError: No module named 'missing_module_of_theirs'" in err
    assert err.splitlines()[-1].endswith(f"no trace was written ({trace} is as it was)")
    assert trace.read_bytes() == b"an earlier, good trace"


def test_a_script_with_a_syntax_error_shows_the_line_and_none_of_our_frames(tmp_path, capsys):
    code, _, err, _ = capture(capsys, tmp_path, "x = 1\ny = (\n")
    assert code == 1
    assert 'user_script.py", line 2' in err and "SyntaxError" in err
    assert "Traceback" not in err and not any(ours in err for ours in OUR_CODE), err


def test_a_script_that_exits_non_zero_passes_its_status_on(tmp_path, capsys):
    code, _, err, trace = capture(capsys, tmp_path, "import sys\nsys.exit(3)\n")
    assert code == 3
    assert err == "error: your script user_script.py exited with status 3; no trace was written\n"
    assert not trace.exists()


def test_a_script_that_runs_gets_its_trace_with_its_own_arguments(tmp_path, capsys):
    source = "import sys, torch\nassert sys.argv[1:] == ['--n', '64']\nx = torch.randn(64, 64)\n(x @ x).sum()\n"
    code, out, err, trace = capture(capsys, tmp_path, source, "--n", "64")
    assert code == 0, err
    assert out.startswith(f"wrote {trace}; Python stacks on: ")   # a script runs once: stacks on, unmeasured
    assert len(load(trace, use_cache=False).ev) > 0
