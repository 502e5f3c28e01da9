"""Source lines: the user's own frame behind every hotspot, idle cause and the Next line, on traces
recorded with stacks; Inductor kernels mapped back to the ATen ops they fused.

The sample is real: capture/examples/user_train.py run on an H200 with stacks
(traces/script-user-train-stacks.json.gz, its Inductor wrappers beside it); the CPU capture below
records a script written into a temp dir, so its file:line is a real file too.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracetriage.analyzers.analyses import frames, inductor
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "traces" / "script-user-train-stacks.json.gz"
SCRIPT = "capture/examples/user_train.py"


def line_of(text: str, path: str = SCRIPT) -> int:
    """The line of the script that holds `text` (so the test follows the file, not a number)."""
    lines = (ROOT / path).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


@pytest.fixture(scope="module")
def sample():
    cwd = os.getcwd()
    os.chdir(ROOT)          # where a user runs the report: beside their code
    try:
        return analyze_file(SAMPLE)
    finally:
        os.chdir(cwd)


# --- which frame is the user's ------------------------------------------------------------------

@pytest.mark.parametrize("file, library", [
    ("train.py", False), ("pkg/model.py", False), ("/home/me/proj/train.py", False),
    ("torch/nn/modules/module.py", True), ("threading.py", True), ("contextlib.py", True),
    ("transformers/models/qwen2/modeling_qwen2.py", True), ("/usr/lib/python3.11/runpy.py", True),
    ("/venv/lib/python3.12/site-packages/foo/bar.py", True), ("/tmp/torchinductor_root/ab/cab.py", True),
    ("capture/harness.py", True), ("<frozen importlib._bootstrap>", True), ("<eval_with_key>.3", True),
])
def test_library_frames_are_never_the_users_own(file, library):
    assert frames.is_library(file) is library


@pytest.mark.parametrize("name, call", [
    ("<built-in method item of Tensor object at 0x7f00>", ("item", "method")),
    ("<built-in method tensor of type object at 0x7f00>", ("tensor", "function")),
    ("<built-in function linear>", ("linear", "function")),
    ("nn.Module: Linear_0", ("Linear", "module")),
    ("torch/nn/modules/module.py(1782): _call_impl", (None, "module")),
    ("torch/optim/optimizer.py(480): wrapper", ("wrapper", "python")),
])
def test_what_the_users_line_called_is_named_from_the_frame_below_it(name, call):
    assert frames.call_of(name) == call


def test_every_hotspot_the_main_thread_launched_names_a_frame_of_the_users_script(sample):
    src = sample.source_lines
    assert src is not None and src.python_events > 5000
    named = {h.name: src.hotspots[h.name][0] for h in sample.hotspots if h.name in src.hotspots}
    assert {"aten::addmm", "aten::mean", "aten::_local_scalar_dense"} <= set(named)
    assert all(x.file == SCRIPT for x in named.values())
    assert named["aten::addmm"].function == "train_step" and named["aten::addmm"].call == "Sequential"
    assert named["aten::_local_scalar_dense"].function == "log_loss"
    # the recorder's own frames (capture/harness.py, torch) are in the trace, never in the answer
    assert any("capture/harness.py" in n for n in sample.trace.names)
    every = [x for lines in (*src.hotspots.values(), *src.kernels.values(), *src.idle.values()) for x in lines]
    assert every and all(not frames.is_library(x.file) for x in every)


def test_each_idle_cause_names_where_the_host_was(sample):
    idle = sample.source_lines.idle
    sync = idle[Cause.SYNCHRONIZATION][0]
    assert (sync.function, sync.call, sync.call_kind) == ("log_loss", "item", "method")
    assert sync.line == line_of("def log_loss") and sync.call_line == line_of("loss.item()")
    assert sample.dominant is Cause.HOST_WORK
    host = idle[Cause.HOST_WORK][0]
    assert (host.function, host.call) == ("make_batch", "tensor")
    assert host.call_line == line_of("return torch.tensor(rows")
    assert host.us > 0.5 * sample.by_cause_ns[sample.dominant] / 1e3     # it holds most of the host work


def test_the_next_line_names_the_users_line_of_the_lever_it_chose(sample):
    lines = five_lines(sample)
    nx = sample.next_source
    assert sample.next_experiment.cause is Cause.HOST_WORK and nx.function == "make_batch"
    want = f"in your code: the `tensor()` at {SCRIPT}:{line_of('return torch.tensor(rows')} in `make_batch`"
    assert want in lines[4] and lines[4].startswith("Next: take the host work off the critical path")
    assert want in lines[2]                          # the Idle line names the dominant cause's line too
    assert f"from the `Sequential(...)` in `train_step` ({SCRIPT}:{line_of('def train_step')})" in lines[1]
    out = serialize.report(sample)
    assert out["stacks"] == {"recorded": True, "python_events": sample.source_lines.python_events}
    assert out["source_lines"]["next"]["function"] == "make_batch"
    assert out["source_lines"]["idle"]["synchronization"][0]["call"] == "item"


def test_without_the_source_file_the_report_names_where_the_function_starts(tmp_path):
    shutil.copy(SAMPLE, tmp_path / SAMPLE.name)       # no user_train.py under tmp_path, nor beside the copy
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        a = analyze_file(tmp_path / SAMPLE.name)
    finally:
        os.chdir(cwd)
    nx = a.next_source
    assert nx.call_line is None and nx.line == line_of("def make_batch")
    assert f"in your code: the `tensor()` in `make_batch` ({SCRIPT}:{nx.line})" in five_lines(a)[4]


def test_a_trace_without_stacks_says_nothing_of_source_lines():
    a = analyze_file(ROOT / "traces" / "smell-sync-item.json.gz")
    assert a.source_lines is None and a.next_source is None
    assert not any("in your code" in line for line in five_lines(a))
    assert serialize.report(a)["stacks"] == {"recorded": False, "python_events": 0}


def test_a_host_gap_is_charged_to_the_frame_that_ran_through_it_not_a_short_call_inside():
    """user_frames_over: of the user frames at the gap's middle, the innermost that covers half of it."""
    import numpy as np

    from tracetriage.analyzers.model.trace import NONE

    # outer (0..100) > inner loop body calls (40..45) at the middle of a gap 10..90
    st = frames.Stacks(start=np.array([0, 40], np.int64), end=np.array([100, 45], np.int64),
                       name=np.array([0, 1], np.int32), parent=np.array([NONE, 0], np.int64),
                       user=np.array([0, 1], np.int64), callee=np.array([NONE, NONE], np.int64),
                       by_tid={7: np.array([0, 1])})
    frame, _ = frames.user_frames_over(st, np.array([7]), np.array([10]), np.array([90]))
    assert frame.tolist() == [0]
    frame, _ = frames.user_frames_over(st, np.array([7]), np.array([41]), np.array([44]))
    assert frame.tolist() == [1]


# --- a CPU capture of a script in a temp dir ------------------------------------------------------

USER_SCRIPT = '''import torch


def prepare(n):
    return torch.tensor([[float(i % 7) for i in range(256)] for _ in range(n)])


def step(model, x):
    y = model(x)
    return y.sum().item()


model = torch.nn.Linear(256, 256)
for _ in range(3):
    step(model, prepare(64))
'''


@pytest.mark.slow   # a real CPU capture in a child (~4 s of a core); test_capture_script captures scripts fast
def test_capture_script_records_stacks_and_the_report_names_the_scripts_lines(tmp_path):
    script = tmp_path / "mytrain.py"
    script.write_text(USER_SCRIPT)
    out = tmp_path / "mytrain.json.gz"
    p = subprocess.run([sys.executable, "-m", "tracetriage.cli", "capture", "--device", "cpu", "--out", str(out),
                        "script", str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Python stacks on: a script runs once, so their cost was not measured" in p.stdout
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        a = analyze_file(out)
    finally:
        os.chdir(cwd)
    hot = a.source_lines.hotspots
    assert hot, "the host hotspots of a CPU trace name the script's frames"
    where = {(x.file, x.function) for lines in hot.values() for x in lines}
    assert ("mytrain.py", "step") in where or ("mytrain.py", "prepare") in where
    assert "mytrain.py:" in five_lines(a)[1]


# --- Inductor kernels back to ATen ops ------------------------------------------------------------

@pytest.mark.parametrize("kernel, kind, ops", [
    ("triton_poi_fused_add_mul_sigmoid_0", "pointwise", ("add", "mul", "sigmoid")),
    ("triton_poi_fused_add_mul_sigmoid_sigmoid_backward_0", "pointwise", ("add", "mul", "sigmoid", "sigmoid_backward")),
    ("triton_poi_fused__unsafe_view_clone_slice_transpose_13", "pointwise",
     ("_unsafe_view", "clone", "slice", "transpose")),
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "reduction",
     ("_to_copy", "add", "mean", "mul", "pow", "rsqrt")),
    ("triton_per_fused_native_layer_norm_1", "persistent reduction", ("native_layer_norm",)),
])
def test_an_inductor_kernels_name_is_split_into_the_aten_ops_it_fused(kernel, kind, ops):
    fk = inductor.from_name(kernel)
    assert (fk.kind, fk.aten_ops, fk.from_file) == (kind, ops, None)


def test_a_kernel_that_is_not_inductors_is_not_mapped():
    assert inductor.from_name("void at::native::vectorized_elementwise_kernel<4>") is None
    assert inductor.from_name("ampere_sgemm_128x64_tn") is None


def test_the_generated_wrapper_says_exactly_which_ops_and_source_nodes_a_kernel_fused(sample):
    fk = sample.fused_kernels["triton_poi_fused_add_mul_sigmoid_sigmoid_backward_0"]
    assert fk.from_file and fk.from_file.startswith("/tmp/torchinductor_")   # as the trace names it
    assert fk.aten_ops == ("mul", "add", "sigmoid", "sigmoid_backward")      # the wrapper's order, not sorted
    assert fk.source_nodes[:4] == ("mul", "add", "sigmoid", "mul_2")
    fwd = sample.fused_kernels["triton_poi_fused_add_mul_sigmoid_0"]
    assert fwd.source_nodes == ("mul", "add", "sigmoid", "mul_1")


def test_without_the_wrapper_the_ops_come_from_the_kernels_name(tmp_path):
    shutil.copy(SAMPLE, tmp_path / SAMPLE.name)       # the .inductor/ folder left behind
    fk = analyze_file(tmp_path / SAMPLE.name).fused_kernels["triton_poi_fused_add_mul_sigmoid_0"]
    assert (fk.aten_ops, fk.source_nodes, fk.from_file) == (("add", "mul", "sigmoid"), (), None)


def test_the_time_line_says_what_a_compiled_kernel_fused():
    a = analyze_file(ROOT / "traces" / "chain-compile-large.json.gz")
    assert "triton_poi_fused_add_mul_sigmoid_0 100% (200 calls; fuses add, mul, sigmoid)" in five_lines(a)[1]
    assert serialize.report(a)["fused_kernels"]["triton_poi_fused_add_mul_sigmoid_0"]["aten_ops"] == \
        ["add", "mul", "sigmoid"]


def test_the_aten_vocabulary_holds_the_ops_inductor_names():
    vocab = inductor.aten_vocabulary()
    assert {"add", "mul", "sigmoid_backward", "native_layer_norm", "_unsafe_view", "_to_copy", "mm"} <= vocab


def test_a_source_folder_named_by_the_caller_is_searched_after_the_working_directory(tmp_path, monkeypatch):
    from tracetriage.analyzers.loading.source_files import also_under, read_sources

    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "train.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    trace = tmp_path / "out" / "t.json.gz"
    assert read_sources(trace, ["train.py"]) == {}
    with also_under(tmp_path / "code"):
        assert read_sources(trace, ["train.py"]) == {"train.py": "x = 1\n"}
    assert read_sources(trace, ["train.py"]) == {}


def _a_first_linear_and_a_steady_loop(tmp_path):
    """`warm` (model.py:5) makes aten::linear's first call, which holds the host 20 ms (its later calls take 50 µs: a
    first call's set-up); then `step` (model.py:20) runs 30 steps, each 400 µs of its own Python before one launch."""
    import kineto_factory as kf
    from claim_traces import python_frame
    ev, corr, us = [], 0, 1000

    def launch(name, s, e):
        nonlocal corr
        corr += 1
        ev.extend([kf.op(name, s, e, ext=corr), kf.call("cudaLaunchKernel", e - 10 * us, e - 5 * us, corr=corr,
                                                       ext=corr),
                   kf.gpu("void k<float>(float*)", e, e + 20 * us, corr)])

    ev.append(python_frame("model.py(5): warm", 50 * us, 20_200 * us, tid=kf.TID))
    ev.append(python_frame("nn.Module: Linear_0", 90 * us, 20_150 * us, tid=kf.TID))
    launch("aten::mul", 60 * us, 80 * us)
    launch("aten::linear", 100 * us, 20_100 * us)
    t = 20_300 * us
    for i in range(30):
        ev.append(python_frame("model.py(20): step", t, t + 520 * us, tid=kf.TID))
        ev.append(python_frame(f"nn.Module: Linear_{i + 1}", t + 440 * us, t + 510 * us, tid=kf.TID))
        launch("aten::linear", t + 450 * us, t + 500 * us)
        t += 540 * us
    return analyze_file(kf.write(tmp_path / "t.json", kf.document(ev)))


def test_the_idle_pointer_names_the_steady_loop_not_a_first_calls_set_up(tmp_path):
    # (heldout-user15 switch_moe_8k: 'in your code: the `Linear(...)` in `forward` (multiquery_attention.py:770)', a
    # 27.6 ms gap that was the first Linear's cudaFree and cudaMalloc, allocator growth the steady state never pays)
    a = _a_first_linear_and_a_steady_loop(tmp_path)
    assert a.dominant is Cause.HOST_WORK
    host = a.source_lines.idle[Cause.HOST_WORK]
    assert [(x.function, x.line) for x in host] == [("step", 20)]


def _two_named_blocks_in_one_forward(tmp_path, steps: int = 6):
    """Each step `forward` (model.py:30) runs two record_function ranges: "attn" (a 200 µs stretch of its own Python,
    then 3 launches 30 µs apart under `nn.Module: MultiheadAttention_0`) and "mlp" (3 launches 60 µs apart under
    `nn.Module: Sequential_0`). The frame holding most launch idle is the Sequential's; the attn range holds more of
    the idle."""
    import kineto_factory as kf
    from claim_traces import python_frame
    ev, corr, us, t = [], 0, 1000, 100 * 1000

    def launch(at):
        nonlocal corr
        corr += 1
        ev.extend([kf.op("aten::addmm", at - 8 * us, at + 6 * us, ext=corr),
                   kf.call("cudaLaunchKernel", at, at + 5 * us, corr=corr, ext=corr),
                   kf.gpu("ampere_sgemm_64x32_nn", at + 7 * us, at + 17 * us, corr)])

    for _ in range(steps):
        t0 = t
        a0, t = t, t + 200 * us
        for _k in range(3):
            t += 30 * us
            launch(t)
        ev.append(python_frame("nn.Module: MultiheadAttention_0", a0 + 200 * us, t + 8 * us, tid=kf.TID))
        ev.append(kf.annotation("attn", a0, t + 10 * us))
        m0 = t = t + 12 * us
        for _k in range(3):
            t += 60 * us
            launch(t)
        ev.append(python_frame("nn.Module: Sequential_0", m0 + 2 * us, t + 8 * us, tid=kf.TID))
        ev.append(kf.annotation("mlp", m0, t + 10 * us))
        ev.append(python_frame("model.py(30): forward", t0 - 2 * us, t + 12 * us, tid=kf.TID))
        t += 20 * us
    return analyze_file(kf.write(tmp_path / "t.json", kf.document(ev)))


def test_where_named_ranges_split_the_idle_the_idle_line_names_them_not_one_frames_call(tmp_path):
    # (heldout-user15 gh200_encoder: 'in your code: the `Sequential(...)` in `forward` (example.py:36)', the MLP
    # block, where the Self-Attention range held more of the idle)
    a = _two_named_blocks_in_one_forward(tmp_path)
    assert a.dominant is Cause.LAUNCH_OVERHEAD
    assert a.source_lines.idle[Cause.LAUNCH_OVERHEAD][0].call == "Sequential"
    idle = five_lines(a)[2]
    assert "in your code, by named range: attn holds " in idle and "Sequential" not in idle
    (first, x), (second, y) = a.idle_by_range
    assert (first, second) == ("attn", "mlp") and x > y
    assert idle.endswith(f"attn holds {round(100 * x)}% of the idle, mlp {round(100 * y)}%.")
    assert a.next_source is None and "Sequential" not in five_lines(a)[4]   # nor the Next's pointer
