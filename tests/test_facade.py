"""`import tracetriage`: the typed results for notebooks, each displaying itself, and profile() around a cell."""
import subprocess
import sys
from pathlib import Path

import pytest

import tracetriage
from tracetriage.analyzers.triage.diff import Diff
from tracetriage.analyzers.triage.report import Analysis
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.whatif.predict import WhatIf

ROOT = Path(__file__).resolve().parent.parent
SYNC = ROOT / "traces" / "smell-sync-item.json.gz"


def test_importing_the_package_imports_no_torch_triton_or_streamlit():
    code = ("import sys, tracetriage; "
            "print(sorted(m for m in ('torch', 'triton', 'streamlit', 'altair') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_analyze_returns_the_typed_analysis_the_report_prints():
    a = tracetriage.analyze(SYNC)
    assert isinstance(a, Analysis)
    assert a.dominant.value == "synchronization" and 0.15 < a.idle_share < 0.25
    assert repr(a).splitlines()[:5] == five_lines(a)


def test_an_analysis_shows_its_five_lines_and_the_idle_bar_in_a_notebook():
    a = tracetriage.analyze(SYNC)
    html = a._repr_html_()
    assert html.count("<p") >= 5 and "Next:" in html and "Measured:" in html
    # the idle-by-cause bar: one cell per cause present, widths summing to the span
    assert 'title="synchronization 13%"' in html and 'title="busy 81%"' in html
    assert a._repr_markdown_().startswith("Measured: smell-sync-item.json.gz")


def test_names_from_the_trace_are_escaped_in_the_html(tmp_path):
    from dataclasses import replace

    from kineto_factory import chain, document, events_for, write

    launches = [replace(x, op="<script>alert(1)</script>") for x in chain(20)]
    p = write(tmp_path / "x.json", document(events_for(launches)))
    html = tracetriage.analyze(p)._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_range_restricts_the_analysis_like_report_range():
    a = tracetriage.analyze(ROOT / "traces" / "gpt-eager.json.gz", range="decode_step")
    assert a.range_filter == "decode_step"


def test_diff_and_whatif_give_their_typed_results():
    d = tracetriage.diff(ROOT / "traces" / "chain-eager-large.json.gz", ROOT / "traces" / "chain-triton-large.json.gz")
    assert isinstance(d, Diff) and d.explained_by == "bytes"
    assert repr(d).startswith("Diff: chain-eager-large.json.gz → chain-triton-large.json.gz")
    w = tracetriage.whatif(SYNC)
    assert isinstance(w, WhatIf) and w.levers[0].predicted_ns <= w.levers[-1].predicted_ns
    assert "<table>" in w._repr_html_()


def test_a_path_that_is_no_trace_raises_a_one_line_trace_error(tmp_path):
    with pytest.raises(tracetriage.TraceError, match="no such file"):
        tracetriage.analyze(tmp_path / "missing.json.gz")
    with pytest.raises(tracetriage.TraceError, match="no lever named"):
        tracetriage.whatif(SYNC, ["faster_everything"])


def test_profile_records_the_block_and_gives_its_analysis(tmp_path):
    import torch

    with tracetriage.profile(tmp_path / "cell.json.gz") as p:
        x = torch.randn(64, 64)
        for _ in range(5):
            x = torch.tanh(x @ x)
    assert p.path.exists() and p.path.stat().st_size > 0
    a = p.analysis
    assert isinstance(a, Analysis)
    assert a.host_only is not None and a.host_only.ops > 0        # a CPU run: the host's ops, no GPU timeline
    assert {h.name for h in a.host_only.hotspots} & {"aten::matmul", "aten::mm", "aten::tanh"}
    assert "has no GPU activity" in repr(a).splitlines()[0] and "Next:" in repr(a)
