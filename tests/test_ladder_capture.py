"""The capture script for the six ladder rungs of issue 37 (tools/ladder_h200), run on the CPU at small sizes."""
from __future__ import annotations

import gzip
import json
import tarfile

import pytest
import torch

from tools.ladder_h200 import capture
from tools.ladder_h200.workloads import LEDGERS, RUNGS, VIEWS


def _aliases(out: torch.Tensor, sources: list[torch.Tensor]) -> bool:
    """torch's own record of a view: the result is a source, or its _base is one; or it reinterprets a source's
    very bytes (x.view(torch.int32): autograd keeps no _base for a dtype view, but no byte moves)."""
    ids = {id(s) for s in sources}
    same_bytes = any(out.data_ptr() == s.data_ptr() and out.nbytes == s.nbytes for s in sources)
    return id(out) in ids or (out._base is not None and id(out._base) in ids) or same_bytes


@pytest.mark.parametrize("case", VIEWS, ids=lambda c: c.name)
def test_each_ops_view_or_copy_fact_agrees_with_torchs_view_base(case):
    run = case.build("cpu", True)
    from tools.ladder_h200.workloads import VIEW_OPS_IMAGE, VIEW_OPS_MATRIX, _image_env, _matrix_env

    ops, env = ((VIEW_OPS_MATRIX, _matrix_env("cpu", True)) if case.name.endswith("matrix")
                else (VIEW_OPS_IMAGE, _image_env("cpu", True)))
    sources = [v for v in env.values() if isinstance(v, torch.Tensor)]
    facts = run.facts["ops"]
    assert [f["code"] for f in facts] == [code for code, _ in ops]
    for f, (code, fn) in zip(facts, ops):
        assert f["view"] == _aliases(fn(env), sources), code
        assert (f["new_storage_bytes"] == 0) == f["view"], code
    assert {True, False} <= {f["view"] for f in facts}     # a set of one kind would teach nothing


def test_a_ledger_line_that_copies_owns_exactly_its_results_bytes_and_a_view_owns_none():
    run = next(c for c in LEDGERS if c.name == "ledger-audio").build("cpu", True)
    lines = {ln["code"].split(" = ")[1]: ln for ln in run.facts["lines"]}
    assert lines["wav.unfold(-1, n_fft, hop)"]["view"] and lines["wav.unfold(-1, n_fft, hop)"]["new_storage_bytes"] == 0
    windowed = lines["frames * window"]
    assert not windowed["view"] and windowed["new_storage_bytes"] == windowed["numel_bytes"]
    # the framed view has hop < n_fft, so materialising it takes more bytes than the waveform it views
    p = run.facts["params"]
    assert windowed["numel_bytes"] > p["batch"] * p["samples"] * 4


def test_every_rung_of_the_issue_has_at_least_two_variants():
    assert sorted(RUNGS) == ["M00.02", "M01.01", "M01.02", "M01.06", "M03.01", "M03.02"]
    assert all(len(cases) >= 2 for cases in RUNGS.values())
    names = [c.name for cases in RUNGS.values() for c in cases]
    assert len(names) == len(set(names))


@pytest.mark.slow
def test_a_cpu_capture_writes_each_variants_median_trace_and_no_trace_names_its_variant(tmp_path):
    rc = capture.main(["--device", "cpu", "--reps", "3", "--out", str(tmp_path), "--only", "M01.02", "M03.02"])
    assert rc == 0
    with tarfile.open(tmp_path / "ladder.tar.gz") as tar:
        tar.extractall(tmp_path / "x", filter="data")
    for rung in ("M01.02", "M03.02"):
        m = json.loads((tmp_path / "x" / "ladder" / rung / "measured.json").read_text())
        assert not m["errors"] and set(m["variants"]) == {c.name for c in RUNGS[rung]}
        for name, v in m["variants"].items():
            spans = v["span_us"]["runs"]
            assert len(spans) == 3 and len(v["wall_ms"]["runs"]) == 3
            trace = json.loads(gzip.decompress((tmp_path / "x" / "ladder" / rung / v["trace"]).read_bytes()))
            assert capture.span_us(trace) == pytest.approx(spans[1])       # the run kept is the median one
            assert name not in json.dumps({k: x for k, x in trace.items() if k != "traceEvents"})
            ranges = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation"}
            assert all(r.startswith("op_") for r in ranges)
