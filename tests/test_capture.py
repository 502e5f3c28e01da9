"""Capture on the CPU: the harness, the named ranges, the honest timer, the library manifest."""
import gzip
import json
from pathlib import Path

import pytest
import torch

from sweep import sweep
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import USER_ANNOTATION
from tracetriage.capture.harness import capture_workload, sidecar_path
from tracetriage.capture.presets import PRESETS, get
from tracetriage.capture.timer import CpuFallbackError, honest_time
from tracetriage.cli import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow      # a whole capture of the GPT on the CPU; the sidecar tests below stand for it
def test_cpu_capture_yields_a_loadable_trace_with_the_named_ranges(tmp_path):
    preset = get("gpt-eager")
    wl = preset.build("cpu", steps=1, warmup=1)
    meta = capture_workload(wl, tmp_path / "gpt", name="gpt-eager", label=preset.label_on("cpu"), time_repeats=2)
    trace_path = tmp_path / "gpt.json.gz"
    tr = load(trace_path)
    ranges = {tr.names[n] for n in tr.ev.name[tr.ev.cat == USER_ANNOTATION]}
    assert {"prefill", "decode_step"} <= ranges
    side = json.loads(sidecar_path(trace_path).read_text())
    assert side["workload"] == "prefill_decode" and side["params"]["model"] == "tiny"
    assert side["versions"]["torch"] == torch.__version__
    assert side["timing_per_step"]["median_ms"] > 0
    assert meta["label"]["idle_cause"] is None and meta["label"]["regime"] is None   # no GPU timeline to show one


def test_every_preset_builds_on_the_cpu():
    for name, p in PRESETS.items():
        wl = p.build("cpu")
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


@pytest.mark.slow      # loads every trace of the manifest
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


STEPPED = [n for n, p in PRESETS.items()
           if p.overrides.get("impl") != "compile" and p.overrides.get("mode") not in ("compile", "graphs")]


# (the two that take seconds: chain-triton-small stands for the interpreted Triton softmax)
@pytest.mark.parametrize("name", sweep(STEPPED, [n for n in STEPPED
                                                 if n not in ("probe-launch-lstm-cell", "softmax-triton")]))
def test_every_preset_runs_a_step_on_the_cpu(name):
    p = PRESETS[name]
    wl = p.build("cpu")
    wl.setup()
    wl.step()


@pytest.mark.slow      # Inductor compiles C++ for the CPU (two minutes on two loaded cores)
def test_the_compiled_chain_runs_on_the_cpu_and_matches_eager():
    p = PRESETS["chain-compile-large"]
    wl = p.build("cpu")
    wl.setup()
    from tracetriage.kernels.fused_chain import chain_eager

    assert torch.allclose(wl.step(), chain_eager(wl.x), rtol=1e-5, atol=1e-6)


# --- what a sidecar records, and what --set accepts -------------------------------------------------

def capture_cli(capsys, *args) -> tuple[int, str, str]:
    code = main(["capture", *map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


SYNC_ITEM_CPU_FIELDS = "steps=10, warmup=3, dim=128, matmuls=3, inner_steps=8, dtype=float32"


def test_a_cpu_capture_records_the_sizes_that_ran_and_claims_no_gpu_label(tmp_path, capsys):
    out = tmp_path / "sync.json.gz"
    code, _, err = capture_cli(capsys, "smell-sync-item", "--device", "cpu", "--out", out, "--steps", 1)
    assert code == 0, err
    side = json.loads(sidecar_path(out).read_text())
    assert side["params"] == {"device": "cpu", "steps": 1, "warmup": 3, "dim": 128, "matmuls": 3, "inner_steps": 8,
                              "dtype": "float32"}
    events = json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]
    assert {str(e["args"]["Input Dims"]) for e in events if e.get("name") == "aten::mm"} == {"[[128, 128], [128, 128]]"}
    assert side["label"]["idle_cause"] is None and side["label"]["regime"] is None
    assert side["label"]["about"].startswith(
        "smell-sync-item at its CPU sizes: a functional check with no GPU timeline")


def test_a_set_value_overrides_the_cpu_size_and_is_recorded(tmp_path, capsys):
    out = tmp_path / "sync.json.gz"
    code, _, err = capture_cli(capsys, "smell-sync-item", "--device", "cpu", "--out", out, "--steps", 1,
                               "--set", "dim=64", "matmuls=1")
    assert code == 0, err
    params = json.loads(sidecar_path(out).read_text())["params"]
    assert (params["dim"], params["matmuls"]) == (64, 1)


@pytest.mark.parametrize("setting, message", [
    ("dimm=12", f"smell-sync-item has no field 'dimm' (did you mean dim?); its fields, with their defaults on cpu: "
                f"{SYNC_ITEM_CPU_FIELDS}"),
    ("dim=abc", f"smell-sync-item: --set dim=abc: dim takes an integer; its fields, with their defaults on cpu: "
                f"{SYNC_ITEM_CPU_FIELDS}"),
    ("dim=true", "smell-sync-item: --set dim=true: dim takes an integer;"),
    ("dtype=fp8", "smell-sync-item: --set dtype=fp8: dtype takes one of float32, bfloat16, float16;"),
    ("device=cuda", "smell-sync-item: --set device is not a field to set (--device cpu|cuda sets it)"),
], ids=["unknown-key", "not-an-int", "bool-for-int", "not-a-dtype", "device"])
def test_a_bad_set_is_one_line_that_lists_the_fields_and_captures_nothing(tmp_path, capsys, setting, message):
    out = tmp_path / "x.json.gz"
    code, stdout, err = capture_cli(capsys, "smell-sync-item", "--device", "cpu", "--out", out, "--set", setting)
    assert code == 2 and stdout == ""
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert not out.exists()


def test_fields_that_do_not_fit_together_are_a_user_error(tmp_path, capsys):
    code, _, err = capture_cli(capsys, "gpt-eager", "--device", "cpu", "--out", tmp_path / "g.json.gz",
                               "--set", "prompt_len=300")
    assert code == 2
    assert err == "error: gpt-eager: prompt_len + decode_steps (300 + 4) exceeds the tiny model's max_seq of 256\n"


def test_a_presets_help_lists_its_fields_with_both_defaults(capsys):
    code, out, _ = capture_cli(capsys, "smell-sync-item", "--help")
    assert code == 0
    assert out.splitlines()[:4] == ["smell-sync-item: .item() on the output every iteration, after 0.5 ms of queued "
                                    "matmuls", "built to show, on a GPU: synchronization idle, compute-bound", "",
                                    "fields (--set KEY=VALUE; --steps N sets steps), with their defaults:"]
    assert "  dim          an integer: 4096 on a GPU, 128 on the CPU" in out.splitlines()
    assert "  dtype        one of float32, bfloat16, float16: bfloat16 on a GPU, float32 on the CPU" in out.splitlines()


def test_capture_list_points_at_the_presets_help(capsys):
    code, out, _ = capture_cli(capsys, "list")
    assert code == 0 and "`tracetriage capture PRESET --help` lists a preset's fields" in out


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_presets_defaults_are_of_their_fields_types(name):
    from tracetriage.capture.fields import check

    p = PRESETS[name]
    for device in ("cuda", "cpu"):
        d = p.defaults(device)
        assert check(p.workload_class(), d, who=name, defaults=d, where=device) == d
