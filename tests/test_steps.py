"""Iterations and prefill/decode found without named ranges (tracetriage.analyzers.analyses.steps, .inference).

Hand-built timelines with a known answer (a training loop with one slow step, a single forward of many
layers, a trace with nothing repeated, a continuous-batching engine's mixed step), the bundled prefill+decode
traces with their ranges removed (the split must match what the ranges say), a CPU training loop captured
here with torch.profiler, and the H200 HF `generate` captures when they are in traces/.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import kineto_factory as kf
from sweep import sweep
from tracetriage.analyzers.analyses import idle, steps
from tracetriage.analyzers.analyses.inference import StepKind
from tracetriage.analyzers.analyses.steps import Boundary, NoSteps, StepsFrom
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause, Construct
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.output.strip_ranges import strip
from tracetriage.analyzers.triage.report import analyze_file, analyze_trace
from tracetriage.analyzers.voice.report import five_lines

ROOT = Path(__file__).resolve().parent.parent
US, MS = 1_000, 1_000_000


# --- hand-built timelines ---------------------------------------------------------------------------------

class Timeline:
    """Ops on one host thread, each launching one kernel; times in ns from the trace start."""

    def __init__(self):
        self.launches: list[kf.Launch] = []
        self.extra: list[dict] = []
        self.dims: dict[int, list] = {}     # launch index -> Input Dims
        self.t = 100 * US                   # the host's clock
        self.gpu = 0                        # when the GPU is free

    def op(self, name: str, kernel_ns: int = 20 * US, dims: list | None = None, kernel: str | None = None):
        call = self.t + 2 * US
        g = max(call + 5 * US, self.gpu)
        if dims is not None:
            self.dims[len(self.launches)] = dims
        self.launches.append(kf.Launch(op_start=self.t, op_end=self.t + 8 * US, call_start=call, call_end=call + 4 * US,
                                       gpu_start=g, gpu_end=g + kernel_ns, op=name,
                                       kernel=kernel or f"void {name.split('::')[-1]}_kernel<float>(float*)"))
        self.gpu = g + kernel_ns
        self.t += 10 * US

    def sync(self):
        """.item(): the host waits until the GPU drains."""
        end = max(self.t + 5 * US, self.gpu + 3 * US)
        self.extra.append({"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": kf.PID, "tid": kf.TID,
                           "ts": round((kf.ORIGIN_NS + self.t) / 1000, 3), "dur": round((end - self.t) / 1000, 3),
                           "args": {"External id": 900_000 + len(self.extra)}})
        self.extra.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": kf.PID,
                           "tid": kf.TID, "ts": round((kf.ORIGIN_NS + self.t + 1 * US) / 1000, 3),
                           "dur": round((end - self.t - 2 * US) / 1000, 3),
                           "args": {"cbid": 131, "correlation": 800_000 + len(self.extra)}})
        self.t = end + 2 * US

    def host(self, ns: int, name: str | None = None):
        """The host busy for ns issuing nothing: inside a named torch range when name is given."""
        if name:
            self.extra.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": kf.PID, "tid": kf.TID,
                               "ts": round((kf.ORIGIN_NS + self.t) / 1000, 3), "dur": round(ns / 1000, 3), "args": {}})
        self.t += ns

    def write(self, path: Path):
        events = kf.events_for(self.launches)
        ops = [e for e in events if e["cat"] == "cpu_op"]
        for i, dims in self.dims.items():
            ops[i]["args"]["Input Dims"] = dims
            ops[i]["args"]["Input type"] = ["float"] * len(dims)
        return load(kf.write(path, kf.document(events + self.extra)), use_cache=False)


def training_loop(tmp_path, slow_step: int | None = 7, steps_n: int = 12):
    """A DataLoader fetch, a forward, a backward, an optimizer step and loss.item() per step; one fetch slow."""
    tl = Timeline()
    for i in range(steps_n):
        tl.host(40 * MS if i == slow_step else 300 * US, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
        for name in ("aten::linear", "aten::gelu", "aten::linear", "aten::mse_loss"):
            tl.op(name, 200 * US)
        for name in ("autograd::engine::evaluate_function: AddmmBackward0", "aten::gelu_backward",
                     "autograd::engine::evaluate_function: AddmmBackward0"):
            tl.op(name, 300 * US)
        tl.op("aten::_foreach_add_", 100 * US)
        tl.sync()
    return tl.write(tmp_path / "train.json")


def test_a_training_loop_without_profiler_steps_has_one_step_per_iteration_each_starting_at_its_batch(tmp_path):
    tr = training_loop(tmp_path, slow_step=None)
    st = steps.find(tr, idle.analyze(tr))
    assert st.found_from is StepsFrom.REPEATED_OPS
    assert len(st.steps) == 12 and st.boundary is Boundary.AT_DATALOADER
    assert st.summary.outlier is None
    # each step: 0.3 ms fetch + ~2 ms of kernels
    assert 1.8 * MS < st.summary.median_ns < 3 * MS


def test_the_outlier_step_is_named_with_its_cause_and_the_construct_that_held_the_host(tmp_path):
    tr = training_loop(tmp_path, slow_step=7)
    a = analyze_trace(tr)
    o = a.steps.summary.outlier
    assert o is not None and o.step == 7
    assert o.cause is Cause.HOST_WORK and o.gap_ns > 35 * MS
    assert o.host_op == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert o.ratio > 10
    line = five_lines(a)[0]
    assert "12 steps (the repeated op sequence, each starting at a DataLoader fetch)" in line
    assert o.construct is Construct.DATALOADER     # tracetriage.analyzers.analyses.framework: whose code held the host
    assert f"step 7 took {o.ratio:.1f}× the median" in line and "host stretch in the DataLoader's __next__" in line


def test_a_host_stall_inside_one_step_of_a_loop_cut_at_its_second_op_names_that_step(tmp_path):
    """20 iterations of linear, gelu, linear, loss, backward, optimizer, no sync and no DataLoader: the loop's first
    op (aten::linear) occurs twice per iteration, so the sequence is cut at gelu. Iteration 11 stalls 40 ms between
    its forward and backward. The steps are the 20 iterations, and the outlier is step 11 (it read 21 steps, a
    one-op prologue, and named step 12)."""
    tl = Timeline()
    for i in range(20):
        for name in ("aten::linear", "aten::gelu", "aten::linear", "aten::mse_loss"):
            tl.op(name, 200 * US)
        if i == 11:
            tl.host(40 * MS)
        for name in ("autograd::engine::evaluate_function: AddmmBackward0", "aten::gelu_backward",
                     "autograd::engine::evaluate_function: AddmmBackward0"):
            tl.op(name, 300 * US)
        tl.op("aten::_foreach_add_", 100 * US)
    a = analyze_trace(tl.write(tmp_path / "stall.json"))
    st = a.steps
    assert st.boundary is Boundary.AT_OP and len(st.steps) == 20 and all(s.kernels == 8 for s in st.steps)
    assert st.summary.outlier is not None and st.summary.outlier.step == 11
    line = five_lines(a)[0]
    assert "20 steps (the repeated op sequence" in line and "step 11 took" in line


def test_a_loop_cut_inside_its_iteration_after_a_prologue_starts_each_step_where_the_iteration_does(tmp_path):
    """A prologue, then 20 iterations of three copy_, a fill_ and an mm (heldout-user19 gp_cudagraph: eleven copies
    into a graph's inputs, the replay's fill_ and its launch). copy_ occurs thrice per iteration, so the loop is cut
    at fill_: step 0 took the prologue and the first iteration's copies, and the last step was a fill_ and an mm.
    The steps are the prologue and the 20 iterations, each starting at its first copy_."""
    tl = Timeline()
    for name in ("aten::zeros", "aten::zeros", "aten::matmul", "aten::ones"):
        tl.op(name, 50 * US)
    for _ in range(20):
        for name in ("aten::copy_", "aten::copy_", "aten::copy_", "aten::fill_", "aten::mm"):
            tl.op(name, 30 * US)
    st = steps.find(tl.write(tmp_path / "rotated.json"))
    assert st.boundary is Boundary.AT_OP and st.anchor == "aten::copy_"
    assert len(st.steps) == 21 and [s.kernels for s in st.steps] == [4] + [5] * 20


def test_profiler_steps_are_the_steps_when_the_trace_has_them(tmp_path):
    tl = Timeline()
    for i in range(4):
        t0 = tl.t
        for name in ("aten::mm", "aten::add"):
            tl.op(name)
        tl.sync()
        tl.extra.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": kf.PID,
                         "tid": kf.TID, "ts": round((kf.ORIGIN_NS + t0 - 1 * US) / 1000, 3),
                         "dur": round((tl.t - t0) / 1000, 3), "args": {}})
    tr = tl.write(tmp_path / "prof.json")
    st = steps.find(tr, idle.analyze(tr))
    assert st.found_from is StepsFrom.PROFILER_STEP and len(st.steps) == 4
    assert "4 steps (ProfilerStep ranges)" in five_lines(analyze_trace(tr))[0]


def test_a_slow_profiler_step_is_said_by_its_name_in_the_trace_not_a_0_based_index(tmp_path):
    """A schedule(wait=1, warmup=1, active=3) records ProfilerStep#2..#4; the slow one is #4. The report said "step 2"
    (its index among the three), which in the trace is the fast one (t4_fp32_train.json, a T4: the engineer opened
    ProfilerStep#2 and found nothing)."""
    tl = Timeline()
    for i in (2, 3, 4):
        t0 = tl.t
        if i == 4:
            tl.host(40 * MS)
        for name in ("aten::mm", "aten::add"):
            tl.op(name, 2 * MS)
        tl.sync()
        tl.extra.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": kf.PID,
                         "tid": kf.TID, "ts": round((kf.ORIGIN_NS + t0 - 1 * US) / 1000, 3),
                         "dur": round((tl.t - t0) / 1000, 3), "args": {}})
    a = analyze_trace(tl.write(tmp_path / "named.json"))
    o = a.steps.summary.outlier
    assert o is not None and o.step == 2 and o.name == "ProfilerStep#4"
    line = five_lines(a)[0]
    assert "ProfilerStep#4 took" in line and "step 2 took" not in line


def test_the_profilers_empty_closing_step_is_no_step(tmp_path):
    """abenich_ariel_2080ti (heldout-user3): ProfilerStep#3 holds the work (4.87 ms), ProfilerStep#4 is a 38 µs stub
    that launches nothing; the report said '2 steps ... 2.47 ms per step (median)', a median describing neither."""
    def traced(with_stub: bool):
        tl = Timeline()
        for i in range(3):
            t0 = tl.t
            for name in ("aten::mm", "aten::add"):
                tl.op(name, 2 * MS)
            tl.sync()
            tl.extra.append(kf.annotation(f"ProfilerStep#{i}", t0 - 1 * US, tl.t))
        if with_stub:
            tl.extra.append(kf.annotation("ProfilerStep#3", tl.t + 5 * US, tl.t + 43 * US))
        return analyze_trace(tl.write(tmp_path / f"stub{with_stub}.json"))
    a, without = traced(True), traced(False)
    assert len(a.steps.steps) == 3 and [s.name for s in a.steps.steps][-1] == "ProfilerStep#2"
    assert a.steps.summary.median_ns == without.steps.summary.median_ns > 4 * MS
    assert "3 steps (ProfilerStep ranges; ProfilerStep#3 (38.0 µs) left out" in five_lines(a)[0]


def test_a_closing_synchronize_after_the_loop_is_no_part_of_its_last_step(tmp_path):
    """wenlu_train_opt_4090m (heldout-user3): a cudaDeviceSynchronize 14.4 ms after the loop's last kernel stretched
    the last step to 9.9x the median, said 'its host took the time'; that is the script after the loop."""
    tl = Timeline()
    for _ in range(12):
        tl.host(300 * US, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
        for name in ("aten::linear", "aten::gelu", "aten::linear", "aten::mse_loss"):
            tl.op(name, 200 * US)
        tl.op("aten::_foreach_add_", 100 * US)
        tl.extra.append(kf.annotation("Optimizer.step#AdamW.step", tl.t, tl.t + 50 * US))
        tl.t += 60 * US
    tl.t += 15 * MS   # the script after the loop, then its closing synchronize
    tl.extra.append(kf.call("cudaDeviceSynchronize", tl.t, tl.t + 14 * US))
    a = analyze_trace(tl.write(tmp_path / "tail.json"))
    st = a.steps
    assert len(st.steps) == 12 and st.summary.outlier is None
    assert st.steps[-1].wall_ns < 2 * st.summary.median_ns
    assert "took" not in five_lines(a)[0]


def test_torch_1x_profiler_steps_recorded_as_ops_are_the_steps(tmp_path):
    """torch 1.x writes ProfilerStep#N as an Operator (cpu_op), not as a user_annotation."""
    tl = Timeline()
    for i in range(3):
        t0 = tl.t
        for name in ("aten::conv2d", "aten::relu", "aten::conv2d", "aten::relu"):
            tl.op(name)
        tl.extra.append({"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{i}", "pid": kf.PID, "tid": kf.TID,
                         "ts": round((kf.ORIGIN_NS + t0 - 1 * US) / 1000, 3), "dur": round((tl.t - t0) / 1000, 3),
                         "args": {}})
    tr = tl.write(tmp_path / "torch1.json")
    st = steps.find(tr, idle.analyze(tr))
    assert st.found_from is StepsFrom.PROFILER_STEP and len(st.steps) == 3


def test_steps_whose_ops_interleave_in_another_order_are_alike(tmp_path):
    """The autograd thread's ops land beside the main thread's in whatever order the threads ran."""
    tl = Timeline()
    for i in range(6):
        tl.op("aten::linear")
        tl.op("aten::relu")
        pair = ("aten::mse_loss", "aten::threshold_backward")
        for name in (pair if i % 2 else pair[::-1]):
            tl.op(name)
        tl.op("aten::_foreach_add_")
        tl.sync()
    tr = tl.write(tmp_path / "interleaved.json")
    st = steps.find(tr, idle.analyze(tr))
    assert len(st.steps) == 6 and all(s.regular for s in st.steps)


def test_a_trace_with_nothing_repeated_says_so_and_invents_no_step(tmp_path):
    tl = Timeline()
    for i, name in enumerate(["aten::mm", "aten::add", "aten::softmax", "aten::mul", "aten::sub", "aten::div",
                              "aten::exp", "aten::sum"]):
        tl.op(name)
    tr = tl.write(tmp_path / "once.json")
    a = analyze_trace(tr)
    assert not a.steps.found and a.steps.why_none is NoSteps.NO_REPETITION
    assert five_lines(a)[0].endswith("; no repeated steps.")
    assert serialize.report(a)["steps"]["count"] == 0


def test_one_forward_of_many_layers_is_one_pass_not_steps(tmp_path):
    """24 alike layers between an embedding lookup and an LM head: layers, not iterations."""
    tl = Timeline()
    tl.op("aten::embedding", dims=[[32000, 896], [1, 512]])
    for _ in range(24):
        for name in ("aten::mul", "aten::linear", "aten::scaled_dot_product_attention", "aten::linear", "aten::silu",
                     "aten::linear", "aten::add"):
            tl.op(name, 50 * US)
    tl.op("aten::linear", 400 * US)
    tr = tl.write(tmp_path / "forward.json")
    a = analyze_trace(tr)
    assert not a.steps.found and a.steps.why_none is NoSteps.ONE_PASS and a.steps.repeats >= 23
    assert a.phases is None
    assert "no repeated steps: one pass" in five_lines(a)[0]
    assert steps.why_none(tr) is NoSteps.ONE_PASS      # (what setup.one_pass asks, without building steps)


def test_why_there_are_no_steps_is_what_find_says_without_building_them(tmp_path):
    """steps.why_none (setup.one_pass asks it of every large trace) answers as find does: None where find builds
    steps, else find's reason, on a loop, a profiler-step trace and traces of each kind of no steps."""
    looped = training_loop(tmp_path)
    once = Timeline()
    for name in ("aten::mm", "aten::add", "aten::softmax", "aten::mul", "aten::sub", "aten::div", "aten::exp"):
        once.op(name)
    bundled = Path(__file__).resolve().parents[1] / "traces" / "gpt-eager.json.gz"
    traces = [looped, once.write(tmp_path / "once.json"), load(bundled)]
    reasons = [steps.why_none(tr) for tr in traces]
    assert reasons == [steps.find(tr, idle.analyze(tr)).why_none for tr in traces]
    assert reasons[0] is None and reasons[1] is NoSteps.NO_REPETITION


def test_the_first_step_that_pays_setup_is_kept_apart_from_the_median(tmp_path):
    tl = Timeline()
    for i in range(8):
        tl.op("aten::mm", 100 * US)
        if i == 0:   # the first step grows the allocator: cudaMalloc holds the host 5 ms
            tl.extra.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": kf.PID, "tid": kf.TID,
                             "ts": round((kf.ORIGIN_NS + tl.t) / 1000, 3), "dur": 5000.0,
                             "args": {"cbid": 20, "correlation": 700_001}})
            tl.host(5 * MS)
        for name in ("aten::relu", "aten::mm"):
            tl.op(name, 100 * US)
        tl.sync()
    tr = tl.write(tmp_path / "setup.json")
    st = steps.find(tr, idle.analyze(tr))
    assert len(st.steps) == 8 and [s.setup for s in st.steps] == [True] + [False] * 7
    assert st.summary.steps == 7 and st.summary.max_ns < 2 * st.summary.median_ns
    assert st.setup_ns > 4 * MS
    assert "step 0 (" in five_lines(analyze_trace(tr))[0] and "paying set-up, kept apart" in five_lines(
        analyze_trace(tr))[0]


# --- prefill and decode ------------------------------------------------------------------------------------

def forward(tl: Timeline, batch: int | None, tokens: int, layers: int = 2, attention: tuple[str, ...] = ()):
    """One forward: embedding lookup, layers, LM head, argmax; [B, T] ids, or [N] when batch is None. `attention`:
    kernel names the attention op launches (one op each) instead of aten's."""
    ids = [batch, tokens] if batch else [tokens]
    rows = (batch or 1) * tokens
    tl.op("aten::embedding", 10 * US, dims=[[32000, 512], ids])
    for _ in range(layers):
        tl.op("aten::linear", 30 * US + rows * 100, dims=[ids + [512], [1536, 512]])
        if attention:
            for k in attention:
                tl.op("flashinfer::attention", 20 * US, kernel=k)
        else:
            tl.op("aten::scaled_dot_product_attention", 20 * US + rows * 50)
        tl.op("aten::linear", 30 * US + rows * 100, dims=[ids + [512], [512, 512]])
    tl.op("aten::linear", 40 * US, dims=[ids + [512], [32000, 512]])
    tl.op("aten::argmax", 5 * US)


def test_prefill_and_decode_are_found_from_the_embedding_shapes_with_ttft_and_per_token(tmp_path):
    tl = Timeline()
    for _ in range(2):          # two requests: prefill 256 tokens, then 16 decode steps, batch 8
        forward(tl, 8, 256)
        for _ in range(16):
            forward(tl, 8, 1)
            tl.host(200 * US)   # sampling on the host
    tr = tl.write(tmp_path / "gen.json")
    a = analyze_trace(tr)
    p = a.phases
    assert p is not None and p.found_from.value == "shapes"
    assert p.requests == 2 and p.decode.count == 32 and p.batch == 8 and p.prompt_tokens == 256
    assert p.mixed_steps == 0
    kinds = [k.kind for k in a.inference.steps]
    assert kinds.count(StepKind.PREFILL) == 2 and kinds.count(StepKind.DECODE) == 32
    assert p.ttft_us > 2 * p.per_token_median_us
    assert p.per_token_p90_us >= p.per_token_median_us
    line = five_lines(a)[0]
    assert "prefill (TTFT)" in line and "found from the ops' shapes (a 256-token prompt, batch 8" in line
    assert "prefill is" in five_lines(a)[3] and "decode" in five_lines(a)[3]


def test_a_continuous_batching_step_with_a_prefill_chunk_and_running_decodes_is_mixed(tmp_path):
    """Flattened token counts ([N]): decode steps of 4 sequences, then one step of 4 + 64 new prompt tokens."""
    tl = Timeline()
    forward(tl, None, 128)
    for i in range(12):
        forward(tl, None, 4 + 64 if i == 6 else 4)
    tr = tl.write(tmp_path / "engine.json")
    a = analyze_trace(tr)
    kinds = [k.kind for k in a.inference.steps]
    assert kinds[0] is StepKind.PREFILL and kinds[7] is StepKind.MIXED
    assert kinds.count(StepKind.DECODE) == 11
    assert a.phases.mixed_steps == 1 and "1 mixed step (prefill and decode tokens in one batch)" in five_lines(a)[0]


def test_a_step_with_prefill_and_decode_attention_kernels_is_mixed(tmp_path):
    tl = Timeline()
    forward(tl, 4, 100, layers=1, attention=("BatchPrefillWithPagedKVCacheKernel",))
    for i in range(8):
        forward(tl, 4, 1, layers=1, attention=("BatchDecodeWithPagedKVCacheKernel",) + (
            ("BatchPrefillWithPagedKVCacheKernel",) if i == 4 else ()))
    tr = tl.write(tmp_path / "fi.json")
    a = analyze_trace(tr)
    assert [k.kind for k in a.inference.steps].count(StepKind.MIXED) == 1


# --- the bundled prefill+decode traces, ranges removed ------------------------------------------------------

class _Stripped(dict):
    """name -> (the trace's analysis, its analysis with the ranges removed), each analysed on first use."""

    def __init__(self, d):
        super().__init__()
        self.d = d

    def __missing__(self, name):
        self[name] = (analyze_file(ROOT / "traces" / f"{name}.json.gz"),
                      analyze_file(strip(ROOT / "traces" / f"{name}.json.gz", self.d / f"{name}.json.gz")))
        return self[name]


@pytest.fixture(scope="module")
def stripped(tmp_path_factory):
    return _Stripped(tmp_path_factory.mktemp("noranges"))


# gpt-eager and gpt-compile take seconds each to analyse twice: gpt-graphs stands for them here
@pytest.mark.parametrize("name", sweep(["gpt-eager", "gpt-compile", "gpt-graphs"], ["gpt-graphs"]))
def test_without_ranges_the_split_matches_what_the_ranges_say_within_one_step(stripped, name):
    ranged, bare = stripped[name]
    assert ranged.phases.found_from.value == "ranges" and not any(r.name == "prefill" for r in bare.ranges)
    r, p = ranged.phases, bare.phases
    assert p is not None and p.found_from.value == "shapes"
    assert p.requests == r.requests == 2
    assert abs(p.decode.count - r.decode.count) <= 2          # within one step a request
    # each prefill step begins within one decode step of its range
    pre_range = sorted(next(x for x in ranged.ranges if x.name == "prefill").windows[0].tolist())
    pre_steps = [bare.steps.steps[i].host_start_ns for i in bare.inference.prefill.steps]
    for a_, b_ in zip(pre_range, pre_steps):
        assert abs(a_ - b_) <= r.per_token_us * 1e3 * 1.5
    assert p.ttft_us == pytest.approx(r.ttft_us, rel=0.1)
    assert p.per_token_median_us == pytest.approx(r.per_token_median_us, rel=0.1)
    assert (p.prefill.regime, p.decode.regime) == (r.prefill.regime, r.decode.regime)
    assert p.prompt_tokens == 2048 and p.batch == 1


def test_cuda_graph_decode_records_no_shapes_and_is_said_to_be_taken_from_the_structure(stripped):
    _, bare = stripped["gpt-graphs"]
    assert bare.phases.decode_inferred
    assert "decode steps record no shapes (compiled code or CUDA-graph replays)" in five_lines(bare)[0]


@pytest.mark.slow      # gpt-eager analysed twice; test_schema validates every golden's steps against the schema
def test_steps_and_their_kinds_are_typed_in_the_json(stripped):
    _, bare = stripped["gpt-eager"]
    j = serialize.report(bare)["steps"]
    n = j["count"]
    assert j["found_from"] == "repeated_ops" and n == len(bare.steps.steps)
    cols = j["per_step"]
    assert all(len(v) == n for k, v in cols.items() if isinstance(v, list))
    assert all(len(v) == n for v in cols["idle_by_cause_us"].values())
    assert cols["kind"].count("prefill") == 2 and cols["kind"].count("decode") == 64
    assert j["decode_summary"]["median_us"] == pytest.approx(bare.phases.per_token_median_us, abs=0.1)
    assert serialize.report(bare)["phases"]["found_from"] == "shapes"


# --- a training loop captured on the CPU here ------------------------------------------------------------

def test_a_cpu_training_loop_captured_without_profiler_steps_has_its_iterations(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(80, 64), torch.randn(80, 8)),
                                       batch_size=8)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for x, y in data:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    path = tmp_path / "cpu-train.json"
    prof.export_chrome_trace(str(path))
    a = analyze_file(path)
    st = a.steps
    assert st.found and len(st.steps) in (10, 11)     # ten batches (a last partial step: the loop's exit)
    assert st.boundary is Boundary.AT_DATALOADER
    assert not a.devices and "10 steps" in five_lines(a)[0] or "11 steps" in five_lines(a)[0]


# --- the H200 captures (traces/generate, traces/steps, traces/graphs: traces/CAPTURED.md) ----------------------

GENERATE = sorted((ROOT / "traces" / "generate").glob("*.json.gz"))


def _truth(trace: Path) -> dict:
    return json.loads(trace.with_name(trace.name.replace(".json.gz", ".truth.json")).read_text())


@pytest.mark.parametrize("path", GENERATE or [pytest.param(None, marks=pytest.mark.skip(
    reason="no HF generate capture in traces/generate"))], ids=lambda p: p.name.split(".")[0] if p else "none")
def test_hf_generate_prefill_and_decode_match_the_tokens_the_host_received(path):
    """GPT-2 and Llama configs, greedy, batch 1 and 8, eager and static cache, no named ranges: the truth is when
    each token reached the host (a streamer's put, in the trace's clock)."""
    truth = _truth(path)
    prof = truth["profiled"]
    a = analyze_file(path)
    p = a.phases
    assert p is not None and p.found_from.value == "shapes"
    assert p.requests == 1 and p.decode.count == truth["new_tokens"] - 1
    assert p.batch == truth["batch"] and p.prompt_tokens == truth["prompt_len"]
    # the first token is home when its device-to-host copy ends: within 2% of the streamer's put (GPT-2 at batch 1
    # read 8% short when the TTFT ended with the prefill step, cut at the LM head)
    assert p.ttft_us / 1e3 == pytest.approx(prof["ttft_ms"], rel=0.02)
    assert p.per_token_median_us / 1e3 == pytest.approx(float(np.median(prof["per_token_ms"])), rel=0.05)
    assert p.per_token_p90_us >= p.per_token_median_us
    # static cache compiles decode (a CUDA-graph replay in the Llama runs): said as taken from the structure
    if truth["mode"] == "eager":
        assert not p.decode_inferred


def test_the_captured_training_loop_names_its_stalled_step_and_the_dataloader():
    path = ROOT / "traces" / "steps" / "training-outlier.json.gz"
    if not path.exists():
        pytest.skip("no traces/steps capture")
    truth = _truth(path)
    a = analyze_file(path)
    st = a.steps
    assert st.found_from is StepsFrom.REPEATED_OPS and len(st.steps) == truth["steps"]
    o = st.summary.outlier
    assert o is not None and o.step == truth["outlier_step"]
    assert o.cause is Cause.HOST_WORK and o.gap_ns >= truth["stall_ms"] * MS
    assert o.construct is Construct.DATALOADER
    assert f"step {truth['outlier_step']} took" in five_lines(a)[0]


def test_the_captured_trace_with_nothing_repeated_has_no_steps():
    path = ROOT / "traces" / "steps" / "norepeat.json.gz"
    if not path.exists():
        pytest.skip("no traces/steps capture")
    a = analyze_file(path)
    assert not a.steps.found and a.phases is None
    assert "no repeated steps" in five_lines(a)[0]


def test_cuda_graph_replays_outside_any_op_are_the_steps():
    """torch.cuda.graph captured in the window, then 16 graph.replay() calls: no op around them."""
    path = ROOT / "traces" / "graphs" / "decode-cudagraph.json.gz"
    if not path.exists():
        pytest.skip("no traces/graphs capture")
    st = analyze_file(path).steps
    assert st.anchor == "cudaGraphLaunch" and sum(s.regular for s in st.steps) >= 15


def test_the_dashboard_gets_one_row_per_step_with_the_outlier_flagged(tmp_path):
    from tracetriage.dashboard import data

    a = analyze_trace(training_loop(tmp_path, slow_step=7))
    f = data.steps(a)
    assert list(f.columns) == data.STEP_COLUMNS and len(f) == 12
    assert f.loc[f.outlier, "step"].tolist() == [7]
    assert (f.end_us > f.start_us).all() and (f.start_us.diff().dropna() > 0).all()
    assert f.loc[7, "idle_dominant"] == "host_work"


def test_a_scripts_closing_synchronizes_are_no_steps_where_other_ops_launch_every_kernel():
    """tools/try_h200/tf32_mlp.py on an H100 (try's baseline): ten forward-backward iterations launch all 381
    kernels, then one 847 ms cudaDeviceSynchronize drains them and two empty ones follow. The three syncs repeat
    and hold most of the host's time, but launch nothing: they were read as 3 steps of 185 µs on a 1.19 s span."""
    from tracetriage.analyzers.analyses import steps as steps_mod
    from tracetriage.analyzers.loading.load import load

    st = steps_mod.find(load(Path(__file__).resolve().parent.parent / "traces/try-h100/tf32_mlp--baseline.json.gz"))
    assert st.anchor != "cudaDeviceSynchronize", st.summary
    assert not any(s.regular and s.kernels == 0 for s in st.steps), st.steps


def test_ten_iterations_of_a_named_range_are_no_layers_of_one_pass():
    """probe-transfer-many-small: its `compute` range runs 10 times (each 200 small pageable H2D copies, then a
    stack and a sum), the units cut at aten::stack hold no mark of a step, and the harness's syncs lie outside
    them: the Measured line called it "one pass (its 10 repeats ..., are layers of it, not steps)" (issue 33)."""
    a = analyze_file(Path(__file__).resolve().parent.parent / "traces/probe-transfer-many-small.json.gz")
    assert not a.steps.found and a.steps.why_none is NoSteps.UNMARKED_LOOP and a.steps.repeats == 10
    measured = five_lines(a)[0]
    assert measured.endswith("; no steps found.") and "one pass" not in measured


def test_ten_forward_backward_iterations_of_a_six_layer_mlp_are_no_layers_of_one_pass():
    """tools/try_h200/tf32_mlp.py on an H100: `for _ in range(10): model.zero_grad(); model(x).mean().backward()`,
    then one synchronize. Its 60 per-layer backward units (6 layers x 10) win the cut; the 10 units cut at
    aten::mean each hold a forward and a backward, which no unit of a single pass does: the Measured line called
    the 60 "layers of one pass" (issue 33)."""
    a = analyze_file(Path(__file__).resolve().parent.parent / "traces/try-h100/tf32_mlp--baseline.json.gz")
    assert not a.steps.found and a.steps.why_none is NoSteps.UNMARKED_LOOP and a.steps.repeats == 60
    measured = five_lines(a)[0]
    assert measured.endswith("; no steps found.") and "one pass" not in measured
