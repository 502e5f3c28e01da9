"""The device-side scripts of capture/ (the library, the ceilings, the README's sweeps and tables, the stacks'
cost, the multi-rank capture, the example scripts), each run on the CPU at its smallest."""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tracetriage.cli import main

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parent.parent


def test_the_tables_script_prints_the_readmes_tables_from_the_libraries_files(capsys):
    from tracetriage.capture import tables

    assert tables.main([str(ROOT / "traces")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### Fusion sweep\n\n| elements | eager µs | Triton µs |")
    measured = json.loads((ROOT / "traces" / "measurements.json").read_text())["fusion_sweep"]
    assert out.count("\n| 2^") == len(measured)                         # a row per size of the fusion sweep ...
    assert "### Matmul sweep" in out and "| M×N×K (bf16) |" in out       # ... and one per shape of the matmuls


def test_capture_ceilings_on_the_cpu_writes_what_the_roofline_reads(tmp_path, capsys):
    from tracetriage.analyzers.loading.side_inputs import load_ceilings

    out = tmp_path / "ceilings.json"
    assert main(["capture", "ceilings", "--device", "cpu", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    assert printed["copy_gbps"]["d2d"] > 0 and set(printed["matmul_tflops"]) == {"fp32"}
    assert load_ceilings(out) is not None


def test_the_fusion_sweep_counts_nine_passes_eager_and_two_fused():
    from tracetriage.capture.sweeps import fusion_sweep

    (row,) = fusion_sweep("cpu", exponents=[10], with_compile=False)
    assert row["n"] == 1024 and (row["eager_bytes_per_elem"], row["fused_bytes_per_elem"]) == (9 * 4, 2 * 4)
    assert row["eager_us"] > 0 and row["triton_us"] > 0


def test_the_library_captures_a_preset_into_its_manifest(tmp_path):
    from tracetriage.capture import library

    with contextlib.redirect_stdout(io.StringIO()):
        assert library.main(["--out", str(tmp_path), "--device", "cpu", "--only", "chain-eager-small"]) == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (entry,) = manifest["traces"]
    assert entry["preset"] == "chain-eager-small" and manifest["errors"] == {}
    assert (tmp_path / entry["file"]).exists() and (tmp_path / entry["meta"]).exists()


@pytest.mark.slow      # two profiled windows of an MLP training step on the CPU
def test_the_stacks_cost_prints_both_settings_and_their_ratio(capsys):
    from tracetriage.capture import stack_cost

    assert stack_cost.main(["--device", "cpu", "--reps", "1", "--steps", "1"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(out["span_ms"]) == {"with_stack", "without_stack"}
    assert out["with_over_without"] == pytest.approx(out["median_ms"]["with_stack"] / out["median_ms"]["without_stack"])


@pytest.mark.slow      # two ranks, gloo, each importing torch
def test_the_multi_rank_capture_writes_a_trace_and_a_sidecar_per_rank(tmp_path):
    subprocess.run([sys.executable, "-m", "tracetriage.capture.distributed", "--out", str(tmp_path), "--nproc", "2",
                    "--steps", "1", "--device", "cpu"], check=True, capture_output=True, cwd=tmp_path, timeout=600)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank0.json.gz", "rank0.meta.json", "rank1.json.gz",
                                                          "rank1.meta.json"]


def test_the_toy_training_script_captures_with_capture_script(tmp_path, capsys):
    out = tmp_path / "toy.json.gz"
    assert main(["capture", "--device", "cpu", "--out", str(out), "script",
                 str(ROOT / "capture" / "examples" / "toy_train.py"), "--steps", "2"]) == 0
    assert f"\nwrote {out}; " in capsys.readouterr().out and out.exists()      # after the script's own print


@pytest.mark.slow      # torch.compile on the CPU
def test_the_source_lines_sample_script_records_a_trace_with_stacks(tmp_path):
    out = tmp_path / "user.json.gz"
    subprocess.run([sys.executable, "-m", "tracetriage.capture.examples.user_train", "--out", str(out), "--steps", "1"],
                   check=True, capture_output=True, cwd=tmp_path, timeout=600)
    events = json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]
    assert any("user_train.py" in str(e.get("name")) for e in events)      # its own frames: recorded with stacks
