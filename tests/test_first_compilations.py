"""A first compilation is one-time set-up to warm up; only a function compiled again (compile id N/1, N/2 ...) is a
recompile (issue 33: "stop the recompiles: torch.compile(dynamic=True) ..." on a compile-warm-up trace in which two
functions each compiled once, compile_warmup_resnet18_4090)."""
from __future__ import annotations

import gzip
from pathlib import Path

from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

TRACES = Path(__file__).resolve().parent.parent / "traces" / "realworld"


def _next_line(path: Path) -> str:
    return five_lines(analyze_file(path))[4]


def test_a_function_compiled_again_is_told_to_stop_the_recompiles():
    line = _next_line(TRACES / "recompile--before.json.gz")      # compile ids 0/0, 0/1, 0/2: one frame, 3 times
    assert line.startswith("Next: stop the recompiles: torch.compile(dynamic=True)")


def test_functions_each_compiled_once_are_warmed_up_not_made_dynamic(tmp_path):
    text = gzip.decompress((TRACES / "recompile--before.json.gz").read_bytes()).decode()
    for before, after in (("0/1", "1/0"), ("0/2", "2/0")):         # three frames, each compiled once
        text = text.replace(f"Torch-Compiled Region: {before}", f"Torch-Compiled Region: {after}")
        text = text.replace(f"compile_id={before}", f"compile_id={after}")
    path = tmp_path / "first-compiles.json"
    path.write_text(text)
    line = _next_line(path)
    assert "recompile" not in line and "dynamic=True" not in line and "mark_dynamic" not in line
    assert line.startswith("Next: warm up the compiled code first")
    assert "are first compilations (no function compiles again): one-time set-up" in line
