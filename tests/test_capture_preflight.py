"""capture warns before it writes a trace that will fail the health check (issue 24 item 4)."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import torch

from tracetriage.capture import preflight
from tracetriage.capture.harness import record

TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_a_gpu_machine_profiled_without_cuda_activity_is_warned_about():
    lines = preflight.settings_warnings("cpu", cuda_activity=False, record_shapes=True, gpu_name="NVIDIA H200")
    assert len(lines) == 1
    assert "NVIDIA H200" in lines[0] and "no CUDA activity" in lines[0] and "--device cuda" in lines[0]


def test_shapes_off_is_warned_about_and_a_cpu_machine_on_the_cpu_is_not():
    assert preflight.settings_warnings("cpu", cuda_activity=False, record_shapes=True, gpu_name=None) == []
    (line,) = preflight.settings_warnings("cuda", cuda_activity=True, record_shapes=False, gpu_name="NVIDIA H200")
    assert "record_shapes=True" in line


def test_a_recorded_trace_that_fails_the_health_check_is_warned_about(tmp_path):
    raw = tmp_path / "trace.json"
    raw.write_bytes(gzip.decompress((TRACES / "health" / "health-accidental-cpu.json.gz").read_bytes()))
    (line,) = preflight.trace_warnings(raw)
    assert "never moved to the GPU" in line


def test_a_whole_recorded_trace_gives_no_warning(tmp_path):
    shutil.copy(TRACES / "health" / "health-reference.json.gz", tmp_path / "t.json.gz")
    assert preflight.trace_warnings(tmp_path / "t.json.gz") == []


def test_a_cpu_capture_on_a_machine_without_a_gpu_writes_its_trace_without_a_warning(tmp_path, capsys):
    x = torch.randn(64, 64)
    record(lambda: x @ x, device="cpu", steps=2, out_path=tmp_path / "t.json.gz")
    assert (tmp_path / "t.json.gz").stat().st_size > 0
    assert "warning:" not in capsys.readouterr().err


def test_a_cpu_capture_on_a_gpu_machine_warns_before_recording(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(preflight, "this_gpu", lambda: "NVIDIA H200")
    import tracetriage.capture.harness as harness

    monkeypatch.setattr(harness, "this_gpu", lambda: "NVIDIA H200")
    x = torch.randn(64, 64)
    record(lambda: x @ x, device="cpu", steps=2, out_path=tmp_path / "t.json.gz")
    err = capsys.readouterr().err
    assert "warning: this machine has a GPU (NVIDIA H200) but the capture records no CUDA activity" in err
    assert (tmp_path / "t.json.gz").exists()        # the trace is still written: a CPU capture may be the intent


def test_the_profiler_overhead_measurement_runs_its_cpu_loop_and_writes_its_figures(tmp_path, monkeypatch):
    import json

    from tracetriage.capture import profiler_overhead

    monkeypatch.setattr(profiler_overhead, "COUNTS", (10, 50))
    assert profiler_overhead.main(["--out", str(tmp_path), "--device", "cpu", "--runs", "2"]) == 0
    r = json.loads((tmp_path / "profiler_overhead.json").read_text())
    assert set(r["loops"]) == {"cpu_op"} and set(r["loops"]["cpu_op"]) == {"10", "50"}
    assert all(len(v["profiled_ms"]) == 2 for v in r["loops"]["cpu_op"].values())
    assert list(tmp_path.glob("*.json.gz")) == []
