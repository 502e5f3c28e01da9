"""Capture on the CPU: the harness, the named ranges, the honest timer, the library manifest."""
import json
from pathlib import Path

import pytest
import torch

from analyzers.loading.load import load
from analyzers.model.trace import USER_ANNOTATION
from capture.harness import capture_workload, sidecar_path
from capture.presets import CPU_OVERRIDES, PRESETS, get
from capture.timer import CpuFallbackError, honest_time

ROOT = Path(__file__).resolve().parent.parent


def test_cpu_capture_yields_a_loadable_trace_with_the_named_ranges(tmp_path):
    preset = get("gpt-eager")
    wl = preset.build("cpu", **CPU_OVERRIDES[preset.workload], steps=1, warmup=1)
    meta = capture_workload(wl, tmp_path / "gpt", name="gpt-eager", label=preset.label(), time_repeats=2)
    trace_path = tmp_path / "gpt.json.gz"
    tr = load(trace_path)
    ranges = {tr.names[n] for n in tr.ev.name[tr.ev.cat == USER_ANNOTATION]}
    assert {"prefill", "decode_step"} <= ranges
    side = json.loads(sidecar_path(trace_path).read_text())
    assert side["workload"] == "prefill_decode" and side["params"]["model"] == "tiny"
    assert side["versions"]["torch"] == torch.__version__
    assert side["timing_per_step"]["median_ms"] > 0
    assert meta["label"]["idle_cause"] == "launch_overhead"


def test_every_preset_builds_on_the_cpu():
    for name, p in PRESETS.items():
        wl = p.build("cpu", **CPU_OVERRIDES.get(p.workload, {}))
        assert wl.device == "cpu", name


def test_honest_timer_refuses_to_time_cpu_tensors_as_a_gpu_workload():
    x = torch.randn(16)
    with pytest.raises(CpuFallbackError, match="refusing to time"):
        honest_time(lambda: x * 2, device="cuda", tensors=[x])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_honest_timer_refuses_a_gpu_timing_whose_output_lands_on_the_cpu():
    x = torch.randn(16, device="cuda")
    with pytest.raises(CpuFallbackError, match="is on cpu"):
        honest_time(lambda: (x * 2).cpu(), device="cuda", tensors=[x])


def test_honest_timer_reports_median_and_spread_on_the_cpu():
    x = torch.randn(256, 256)
    t = honest_time(lambda: x @ x, device="cpu", tensors=[x], warmup=1, repeats=5)
    assert t.method == "perf_counter" and t.repeats == 5
    assert t.min_ms <= t.median_ms <= t.p90_ms
    assert t.spread_pct >= 0


def test_manifest_entries_point_at_traces_that_parse():
    manifest = json.loads((ROOT / "traces" / "manifest.json").read_text())
    entries = manifest["traces"]
    gpu = [e for e in entries if e["device"] and "H200" in e["device"]]
    assert len(gpu) >= 12
    total = 0
    for e in entries:
        p = ROOT / "traces" / e["file"]
        tr = load(p)
        assert tr.device_name() == e["device"], e["name"]
        assert (ROOT / "traces" / e["meta"]).exists()
        total += p.stat().st_size
    assert total < 30e6


def test_every_manifest_label_is_the_presets_label():
    manifest = json.loads((ROOT / "traces" / "manifest.json").read_text())
    for e in manifest["traces"]:
        assert e["label"] == PRESETS[e["preset"]].label(), e["name"]


@pytest.mark.parametrize("name", [n for n, p in PRESETS.items()
                                  if p.overrides.get("impl") != "compile" and p.overrides.get("mode") not in ("compile", "graphs")])
def test_every_preset_runs_a_step_on_the_cpu(name):
    p = PRESETS[name]
    wl = p.build("cpu", **CPU_OVERRIDES.get(p.workload, {}))
    wl.setup()
    wl.step()


def test_the_compiled_chain_runs_on_the_cpu_and_matches_eager():
    p = PRESETS["chain-compile-large"]
    wl = p.build("cpu", **CPU_OVERRIDES[p.workload])
    wl.setup()
    from kernels.fused_chain import chain_eager

    assert torch.allclose(wl.step(), chain_eager(wl.x), rtol=1e-5, atol=1e-6)
