"""The real-world ground-truth captures (capture/realworld*.py) run on the CPU: every scenario and variant profiles
a window and writes a trace, and the traces hold what each capture relies on. Scenarios that need torchvision or
transformers skip without them (CI installs neither); torch.compile ones skip without a C++ compiler."""
import functools
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

torch = pytest.importorskip("torch")

from sweep import sweep  # noqa: E402
from tracetriage.capture import fixes  # noqa: E402
from tracetriage.capture.fixes import BEFORE, FixWorkload, profile_window, wall_ms  # noqa: E402
from tracetriage.capture.realworld import REALWORLD, run, summary_line  # noqa: E402
from tracetriage.capture.realworld_common import trace_facts  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COMPILES = {"recompile", "recompile_batch", "recompile_gpt2", "rmsnorm_swiglu_large", "rmsnorm_swiglu_mid",
            "rmsnorm_swiglu_small", "chain6_large", "hf_llama_generate"}
# What the clocks themselves leave between a host reading and the trace: Kineto writes µs to the ns, and torch
# stamps events with its own cycle counter mapped onto the wall clock by a fit over the window (on 2,000
# record_function spans between two time.time_ns() readings, none came out of them).
TOLERANCE_US = 1.0


def _has_cxx() -> bool:
    return shutil.which(os.environ.get("CXX", "g++")) is not None or shutil.which("clang++") is not None


def _skip_unless_runnable(kind: str) -> None:
    for module in REALWORLD[kind].needs:
        pytest.importorskip(module)
    if kind in COMPILES and not _has_cxx():
        pytest.skip("torch.compile on the CPU needs a C++ compiler")


@pytest.fixture(autouse=True)
def one_thread():
    """Small CPU ops on a shared machine run ~500x slower with an oversubscribed intra-op pool."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _trace(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


# the torch.compile scenarios compile C++ for the CPU: the slow step's; of the others the fast suite profiles one
# scenario of each module that defines them (each module's harness and imports), the slow step the rest
# (preferring one that needs no library beyond torch, so a machine without torchvision or transformers runs it)
_BY_PREFERENCE = sorted((k for k in REALWORLD if k not in COMPILES), key=lambda k: (bool(REALWORLD[k].needs), k))
ONE_PER_MODULE = list({REALWORLD[k].__module__: k for k in reversed(_BY_PREFERENCE)}.values())


@pytest.mark.parametrize("kind", sweep(sorted(REALWORLD), ONE_PER_MODULE))
def test_every_variant_of_every_real_world_scenario_profiles_a_window_on_the_cpu(kind, tmp_path):
    _skip_unless_runnable(kind)
    cls = REALWORLD[kind]
    for v in [BEFORE, *cls.levers]:
        wl = cls(device="cpu", fix=v, **cls.smoke)
        wl.setup()
        wl.before_window()
        wl.window()                                      # the harness's warm-up: compiles happen here
        span = profile_window(wl, tmp_path / f"{v}.json.gz")
        assert span > 0
        names = {e.get("name") for e in _trace(tmp_path / f"{v}.json.gz")["traceEvents"]}
        assert fixes.WINDOW in names
        assert wall_ms(wl) > 0


def test_the_optimizer_lever_has_three_workloads_each_with_hundreds_of_parameter_tensors_on_a_gpu():
    kinds = [k for k, c in REALWORLD.items() if "fused_optimizer" in c.levers]
    assert sorted(kinds) == ["adam_step_only", "adamw_foreach_off", "sgd_momentum_loop"]
    assert all(REALWORLD[k].blocks * 4 >= 500 for k in kinds)     # 4 parameter tensors a block


def test_a_per_parameter_optimizer_step_is_recorded_as_torch_optim_records_it(tmp_path):
    wl = REALWORLD["adamw_foreach_off"](device="cpu", iters=1)
    wl.setup()
    wl.window()
    profile_window(wl, tmp_path / "t.json.gz")
    names = {e.get("name") for e in _trace(tmp_path / "t.json.gz")["traceEvents"]}
    assert "Optimizer.step#AdamW.step" in names
    assert wl.record["defaults"]["foreach"] is False and wl.record["param_tensors"] == 48


@pytest.mark.slow      # torch.compile on the CPU
def test_the_recompile_window_holds_its_compiles_and_the_dynamic_one_none(tmp_path):
    _skip_unless_runnable("recompile")
    facts = {}
    for v in (BEFORE, "no_recompiles"):
        wl = REALWORLD["recompile"](device="cpu", fix=v, iters=2)
        wl.setup()
        wl.before_window()
        wl.window()
        profile_window(wl, tmp_path / f"{v}.json.gz")
        facts[v] = trace_facts(tmp_path / f"{v}.json.gz")
        assert wl.record["windows"][-1]["profiled"]
    assert facts[BEFORE]["compiles"] == 2                         # one per new sequence length
    assert facts["no_recompiles"]["compiles"] == 0 and facts["no_recompiles"]["compiled_region_calls"] == 2


def test_the_fusion_ledger_counts_each_eager_pass_and_the_fused_kernels_two():
    from tracetriage.capture.realworld_compile import byte_ledger, chain6, rmsnorm_swiglu

    x = torch.randn(1000)
    ledger = byte_ledger(chain6, x)
    assert ledger["eager_kernels"] == 6
    assert ledger["eager_bytes"] == 13 * 4000 and ledger["fused_bytes"] == 2 * 4000   # y * x reads two inputs
    x, w = torch.randn(8, 64, dtype=torch.bfloat16), torch.randn(64, dtype=torch.bfloat16)
    ledger = byte_ledger(rmsnorm_swiglu, x, w)
    assert ledger["fused_bytes"] == 8 * 64 * 2 + 64 * 2 + 8 * 32 * 2                 # x and w in, half out
    assert ledger["eager_bytes"] > 8 * ledger["fused_bytes"] and ledger["dtype"] == "bfloat16"


def test_the_half_elements_variant_of_the_chain_moves_half_the_bytes():
    big, half = (REALWORLD["chain6_large"](device="cpu", fix=v) for v in (BEFORE, "kernels_2x"))
    assert half.inputs_for(False)[0].numel() * 2 == big.inputs_for(False)[0].numel()


@dataclass
class _CountingHook(FixWorkload):
    kind: ClassVar[str] = "counting_hook"
    iters: int = 1

    def setup(self):
        self.hooks, self.x = 0, torch.ones(4)

    def before_window(self):
        self.hooks += 1
        with torch.profiler.record_function("hook_work"):
            self.x.add_(1)

    def step(self):
        return self.x * 2


def test_the_per_window_hook_runs_before_every_window_and_stays_out_of_the_trace(tmp_path):
    wl = _CountingHook(device="cpu")
    wl.setup()
    profile_window(wl, tmp_path / "t.json.gz")          # the profiler's warm-up window, then the recorded one
    assert wl.hooks == 1
    wall_ms(wl)
    assert wl.hooks == 2
    names = {e.get("name") for e in _trace(tmp_path / "t.json.gz")["traceEvents"]}
    assert "hook_work" not in names and fixes.WINDOW in names


def test_a_run_writes_fixes_measured_json_with_both_ratio_spreads_records_and_trace_facts(tmp_path, capsys):
    assert run(tmp_path, device="cpu", reps=2, only=["adam_step_only"], smoke=True) == 0
    res = json.loads((tmp_path / "measured.json").read_text())["scenarios"]["adam_step_only"]
    assert set(res["wall_ratio"]["fused_optimizer"]) == {"median", "p10", "p90", "min", "max"}
    assert isinstance(res["wall_ratio_median"]["fused_optimizer"], float)
    assert len(res["span_us"]["before"]["runs"]) == 2
    facts = res["variants"]["fused_optimizer"]["facts"]
    assert facts["optimizer_steps"] == 1 and facts["bytes_gz"] > 0
    assert res["variants"]["before"]["record"]["defaults"]["fused"] is None
    assert (tmp_path / "adam_step_only--fused_optimizer.json.gz").exists()
    assert "fused_optimizer profiled" in capsys.readouterr().out


def test_a_rerun_with_merge_replaces_the_earlier_error_of_the_same_scenario(tmp_path):
    (tmp_path / "measured.json").write_text(json.dumps({"scenarios": {}, "errors": {"empty_cache": "boom"}}))
    assert run(tmp_path, device="cpu", reps=1, only=["empty_cache"], smoke=True, merge=True) == 0
    measured = json.loads((tmp_path / "measured.json").read_text())
    assert measured["errors"] == {} and "empty_cache" in measured["scenarios"]


def test_a_dropped_lever_leaves_its_variant_out(tmp_path):
    _skip_unless_runnable("chain6_large")
    assert run(tmp_path, device="cpu", reps=1, only=["chain6_large"], smoke=True, drop={"fuse"}) == 0
    res = json.loads((tmp_path / "measured.json").read_text())["scenarios"]["chain6_large"]
    assert list(res["ratio"]) == ["kernels_2x"]


def test_the_summary_reads_measured_files_from_before_wall_ratio_had_a_spread():
    old = json.loads((ROOT / "traces" / "fixes" / "measured.json").read_text())["scenarios"]["item_python"]
    line = summary_line("item_python", old)
    assert line.startswith("item_python: before") and "remove_syncs profiled" in line


def test_a_cuda_graphs_variant_without_graph_launches_is_flagged():
    res = {"span_us": {"before": {"median": 1000}}, "wall_ms": {"before": {"median": 1.0}},
           "ratio": {"cuda_graphs": {"median": .5, "p10": .4, "p90": .6, "min": .3, "max": .7}},
           "wall_ratio": {"cuda_graphs": .6},
           "variants": {"cuda_graphs": {"facts": {"graph_launches": 0, "kernels": 40}}}}
    assert "WARNING x--cuda_graphs has no cudaGraphLaunch" in summary_line("x", res)


def test_generate_records_ttft_and_each_token_from_the_streamer():
    _skip_unless_runnable("hf_llama_generate")
    wl = REALWORLD["hf_llama_generate"](device="cpu", new_tokens=5, layers=1)
    wl.setup()
    wl.window()
    call = wl.record["windows"][-1]["calls"][0]
    assert call["new_tokens"] == 5 and len(call["per_token_ms"]) == 4
    assert 0 < call["prompt_put_ms"] < call["ttft_ms"] < call["total_ms"]


def test_bare_generate_traces_have_no_ranges_of_ours_and_truth_in_trace_time(tmp_path):
    pytest.importorskip("transformers")
    from tracetriage.capture.realworld_generate import capture_generate_trace, hf_model

    model = hf_model("gpt2", "cpu", layers=1)
    doc = capture_generate_trace(model, "gpt2", 2, "eager", tmp_path, device="cpu", prompt_len=8, new_tokens=4,
                                 warmups=1)
    events = _trace(tmp_path / "generate-gpt2-b2-eager.json.gz")["traceEvents"]
    assert not [e for e in events if e.get("cat") == "user_annotation"]      # no ProfilerStep#, no range of ours
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    lo, hi = min(e["ts"] for e in ops), max(e["ts"] + e["dur"] for e in ops)
    assert lo - 1000 < doc["start_trace_us"] < lo and all(lo < t < hi + 1000 for t in doc["put_trace_us"][1:])
    truth = json.loads((tmp_path / "generate-gpt2-b2-eager.truth.json").read_text())
    assert truth["profiled"]["new_tokens"] == 4 and truth["batch"] == 2


def test_the_training_captures_dataset_stalls_on_the_first_sample_of_its_stall_batch_alone():
    """The outlier the training capture plants (its profiled run is the slow step's, below): one slow read, the
    first sample of one batch, and the same features for an index whichever batch asks for it."""
    from tracetriage.capture.realworld_traces import StallingFeatures

    data = StallingFeatures(n=64, width=4, batch=8, stall_batch=3, stall_ms=40)
    t0 = time.perf_counter()
    x24, _ = data[24]
    stalled = time.perf_counter() - t0
    t0 = time.perf_counter()
    others = [data[i] for i in (0, 8, 23, 25, 63)]
    unstalled = time.perf_counter() - t0
    assert stalled >= 0.040 and unstalled < stalled
    assert len(data) == 64 and all(x.shape == (4,) for x, _ in others) and data[24][0].equal(x24)


@pytest.mark.slow   # a CPU capture (~10 s of a core: torch._dynamo's import by AdamW, the profiler); the test above
# keeps capture.realworld_traces in the fast suite
def test_the_training_trace_has_one_outlier_step_and_no_profiler_steps(tmp_path):
    from tracetriage.capture.realworld_traces import capture_training

    # a stall far above what a loaded machine adds to a bare __next__ (one took 26 ms at load average 15, beside
    # a 30 ms stall): the stalled step is the slowest by far, whatever else the machine runs
    stall_ms = 150
    doc = capture_training(tmp_path, "cpu", steps=9, stall_step=7, stall_ms=stall_ms)
    by_time = sorted(doc["steps_host"], key=lambda s: s["next_ms"])
    assert by_time[-1]["step"] == 7 and by_time[-1]["next_ms"] >= stall_ms and doc["outlier_step"] == 7
    assert by_time[-2]["next_ms"] < stall_ms / 2          # no other step stalled
    assert doc["facts"]["profiler_steps"] == 0 and doc["facts"]["dataloader_nexts"] == 9
    nexts = sorted((e for e in _trace(tmp_path / "training-outlier.json.gz")["traceEvents"]
                    if str(e.get("name")).startswith("enumerate(DataLoader)")), key=lambda e: e["ts"])
    assert len(nexts) == 9 and nexts[7]["dur"] >= 0.95 * stall_ms * 1e3
    # Each step's __next__ in the trace ran inside the host's clock readings around that call (next_start ..
    # batch_ready, put in trace time by trace_us), and trace_us puts every reading late by one and the same g,
    # 0 <= g <= unix_read_ns (the anchor's two clock reads). So one g must fit every step, however long the
    # machine took between a reading and the profiler's own; what is left is the clocks' (TOLERANCE_US).
    at_least = max(s["next_start_trace_us"] - e["ts"] for s, e in zip(doc["steps_host"], nexts))
    at_most = min(s["batch_ready_trace_us"] - e["ts"] - e["dur"] for s, e in zip(doc["steps_host"], nexts))
    assert max(at_least, 0) <= min(at_most, doc["run"]["unix_read_ns"] / 1e3) + TOLERANCE_US, (at_least, at_most)


@pytest.mark.slow      # four captures, two compiled; the training trace's test stands for them
def test_the_single_traces_for_repetition_graphs_and_health_are_written(tmp_path):
    from tracetriage.capture.realworld_traces import HEALTH, capture_decode, capture_health, capture_norepeat

    assert capture_norepeat(tmp_path, "cpu")["facts"]["cpu_ops"] > 0
    assert [d["trace"] for d in capture_health(tmp_path, "cpu", steps=2)] == [f"{n}.json.gz" for n in HEALTH]
    if _has_cxx():
        docs = capture_decode(tmp_path, "cpu", tokens=3)
        assert [d["mode"] for d in docs] == ["eager", "cudagraph", "reduce-overhead"]
    for truth in tmp_path.glob("*.truth.json"):
        assert (tmp_path / json.loads(truth.read_text())["trace"]).exists()


@pytest.mark.slow      # three fresh processes, each importing torch
@pytest.mark.parametrize("model", ["resnet18", "mlp", "gpt2"])
def test_the_cold_start_pairs_run_each_in_a_fresh_process(tmp_path, model):
    pytest.importorskip({"resnet18": "torchvision", "gpt2": "transformers"}.get(model, "torch"))
    from tracetriage.capture.realworld_cold import KINDS, capture_cold

    res = capture_cold(tmp_path, device="cpu", reps=1, steps=2, warmup=1, model_name=model)
    pids = ({r["pid"] for rs in res["runs"]["profiled"].values() for r in rs}
            | {r["pid"] for r in res["runs"]["unprofiled_before"]})
    assert len(pids) == 3
    assert set(res["ratio"]) == {"warm_up"} and (tmp_path / f"{KINDS[model]}--before.json.gz").exists()
    assert all(r["model"] == model for rs in res["runs"]["profiled"].values() for r in rs)


def test_the_device_script_runs_every_scenario_in_its_groups_and_parses():
    script = (ROOT / "capture" / "record_realworld.sh").read_text()
    hf_pairs = script.split("\nhf_pairs() {")[1].split("\n}")[0]
    assert "--drop-lever cuda_graphs" in script.split("\nhf_retry() {")[1].split("\n}")[0]
    groups = "\n" + script.split("\ncase $GROUP in\n")[1]
    a, b, c, knobs, knobs2, knobs3, knobs4, knobs5, loader, smoke = (
        groups.split(f"\n{g})")[1].split(";;")[0]
        for g in ("a", "b", "c", "knobs", "knobs2", "knobs3", "knobs4", "knobs5", "loader", "smoke"))
    a, b, c, smoke = (g + hf_pairs if "hf_pairs " in g else g for g in (a, b, c, smoke))
    for kind in REALWORLD:
        # each kind in one data group
        data_groups = (a, b, c, knobs, knobs2, knobs3, knobs4, knobs5, loader)
        assert sum(f"{kind} " in g or f"{kind}\n" in g for g in data_groups) == 1, kind
        assert kind in smoke, kind
    from tracetriage.capture.realworld_cold import KINDS
    for model in KINDS:
        assert sum(f"--model {model}" in g or "--model" not in g and model == "resnet18" for g in (a, b, c)
                   if "realworld_cold" in g) == 1, model
        assert model in smoke.split("realworld_cold")[1], model
    assert "realworld_cold" in a + b and "realworld_generate" in a + b and "realworld_traces" in a + b
    subprocess.run(["bash", "-n", str(ROOT / "capture" / "record_realworld.sh")], check=True)


def test_the_device_script_refuses_an_unknown_group(tmp_path):
    p = subprocess.run(["bash", str(ROOT / "capture" / "record_realworld.sh")], capture_output=True, text=True,
                       env={**os.environ, "GROUP": "z", "OUT": str(tmp_path)})
    assert p.returncode == 2
    assert "GROUP must be a, b, c, knobs, knobs2, knobs3, knobs4, knobs5, loader or smoke" in p.stderr


def test_capture_modules_import_nothing_the_device_lacks(tmp_path):
    """As record_realworld.sh imports them there: from the links of tools/pkglink.py, with -P, no msgspec."""
    from tools.pkglink import link_package

    code = ("import sys; sys.modules['msgspec'] = None\n"
            "import tracetriage.capture.realworld, tracetriage.capture.realworld_traces, "
            "tracetriage.capture.realworld_cold, tracetriage.capture.harness")
    subprocess.run([sys.executable, "-P", "-c", code], check=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(link_package(tmp_path / "pkg"))})


def test_the_hand_compiled_decode_forward_gets_the_same_arguments_as_the_eager_one():
    _skip_unless_runnable("hf_llama_generate")
    from tracetriage.capture.realworld_generate import compiled_decode_forward, generate_kwargs, hf_model

    seen = {}
    for mode in ("static", "graphs"):
        model = hf_model("llama", "cpu", layers=1)
        eager = model.forward

        @functools.wraps(eager)
        def spy(*args, __eager=eager, __mode=mode, **kwargs):
            seen.setdefault(__mode, []).append(sorted(kwargs))
            return __eager(*args, **kwargs)

        model.forward = spy
        if mode == "graphs":
            model.forward = compiled_decode_forward(model)
        kw = {**generate_kwargs(mode, False, 3), "disable_compile": True}
        kw.pop("compile_config", None)
        if mode == "graphs":
            from transformers import StaticCache

            kw["past_key_values"] = StaticCache(config=model.config, max_cache_len=9)
        ids = torch.randint(0, 100, (1, 6))
        model.generate(ids, attention_mask=torch.ones_like(ids), **kw)
    assert seen["static"] == seen["graphs"]                    # logits_to_keep and all, prompt and decode
    assert "logits_to_keep" in seen["graphs"][0]
