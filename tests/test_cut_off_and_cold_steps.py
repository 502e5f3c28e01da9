"""Steps that describe a step (analyses.profiler_steps, analyses.steps' set-up steps) and the claim checker's
relations on them (output.claims_setup): a ProfilerStep the profiler's stop cut through is no step, a short real
step is; a cold first step of a short loop is kept apart from the steady figure; a Caveat's set-up share is the
warm-up Next's saving."""
from __future__ import annotations

import dataclasses

import kineto_factory as kf
from test_steps import MS, US, Timeline
from tracetriage.analyzers.analyses import idle, setup, steps
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.trace import CPU_OP
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.output.claims_said import Said
from tracetriage.analyzers.output.claims_setup import (
    caveat_setup_is_the_nexts,
    construct_share_is_of_the_idle_it_names,
    no_step_is_a_fragment,
    steady_step_holds_no_setup,
)
from tracetriage.analyzers.triage.report import analyze_file, analyze_trace
from tracetriage.analyzers.voice.report import five_lines


def _profiled(tmp_path, name: str, tail_us: float, tail_ops: int, step_ops: int = 4):
    """ProfilerStep#3 holding step_ops ops of 200 µs kernels and a sync; ProfilerStep#4 tail_us long holding
    tail_ops ops (0: the profiler stopped right after it opened)."""
    tl = Timeline()
    t0 = tl.t
    for _ in range(step_ops):
        tl.op("aten::mul", 200 * US)
    tl.sync()
    tl.extra.append(kf.annotation("ProfilerStep#3", t0 - 1 * US, tl.t))
    t1 = tl.t + 2 * US
    tl.t = t1
    for _ in range(tail_ops):
        tl.op("aten::mul", 200 * US)
    tl.extra.append(kf.annotation("ProfilerStep#4", t1, t1 + int(tail_us * US)))
    return analyze_trace(tl.write(tmp_path / f"{name}.json"))


def test_a_last_profiler_step_cut_off_by_the_profilers_stop_is_left_out_and_named(tmp_path):
    """heldout-user11 h2d_pageable_h100: ProfilerStep#3 (1.07 ms) holds the work, #4 an 18 µs tail (1.7% of it,
    above the stub's 1%) holds no op: '2 steps: 554.5 µs per step (median)' described no step."""
    a = _profiled(tmp_path, "tail", tail_us=14, tail_ops=0)
    assert [s.name for s in a.steps.steps] == ["ProfilerStep#3"]
    assert a.steps.cut_off and a.steps.cut_off[0][0] == "ProfilerStep#4"
    line = five_lines(a)[0]
    assert "1 step (ProfilerStep ranges; ProfilerStep#4 (14.0 µs) left out" in line
    assert f": {a.steps.steps[0].wall_ns / 1e3:.1f} µs" in line or " ms." in line


def test_a_short_profiler_step_that_runs_its_own_kernels_stays_a_step(tmp_path):
    """The negative: a short last step of a decode loop launches its own kernels (here 1 op against the first's
    8): it is a step, however short."""
    a = _profiled(tmp_path, "short", tail_us=60, tail_ops=1, step_ops=8)
    assert [s.name for s in a.steps.steps] == ["ProfilerStep#3", "ProfilerStep#4"]
    assert not a.steps.cut_off


def _loader_loop(tmp_path, name: str, cold: bool, first_fetch_ns: int = 300 * US):
    """Three batches of one evaluate (a multi-process DataLoader fetch, then a forward and .item()), then a last
    fetch that runs dry; cold: the first batch's first aten::linear pays 40 ms of set-up;
    first_fetch_ns: the first fetch (the workers starting)."""
    tl = Timeline()
    for i in range(3):
        tl.host(first_fetch_ns if i == 0 else 300 * US, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__")
        tl.op("aten::embedding", 50 * US)
        for j, op in enumerate(("aten::linear", "aten::gelu", "aten::linear")):
            start = tl.t
            if cold and i == 0 and j == 0:   # cuBLAS's handle and heuristics in the first linear
                tl.t += 40 * MS
            tl.op(op, 300 * US)
            tl.launches[-1] = dataclasses.replace(tl.launches[-1], op_start=start)
        tl.sync()
    tl.host(200 * US, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__")
    return tl.write(tmp_path / f"{name}.json")


def test_a_cold_first_batch_of_a_short_loop_is_kept_apart_from_the_steady_step(tmp_path):
    """heldout-user11 hateful_v100_infer: batches of 10.73 s (cold) and 0.32 s, then a dry fetch: '3 steps ...
    5.52 s per step (median)' described none, and 'a steady step idles 54%' rested on it."""
    tr = _loader_loop(tmp_path, "cold", cold=True)
    st = steps.find(tr, idle.analyze(tr))
    assert [s.setup for s in st.steps][0] is True
    assert st.summary.median_ns < 5 * MS < st.steps[0].wall_ns
    assert not steady_step_holds_no_setup({"steps": {"summary": {"median_us": st.summary.median_ns / 1e3},
                                                     "per_step": {"wall_us": [s.wall_ns / 1e3 for s in st.steps],
                                                                  "setup": [s.setup for s in st.steps]}}})


def test_a_warm_short_loop_keeps_every_batch_steady(tmp_path):
    """The negative: three alike batches, none paying set-up: none kept apart."""
    tr = _loader_loop(tmp_path, "warm", cold=False)
    st = steps.find(tr, idle.analyze(tr))
    assert st.found and not any(s.setup for s in st.steps)


def _said(saving: float, setup: float) -> Said:
    return Said([{"key": "next.saving", "value": saving, "said": f"−{100 * saving:.0f}%"},
                  {"key": "next.because.setup_share", "value": setup, "said": f"{100 * setup:.0f}%"}])


def test_the_checker_holds_the_caveats_set_up_share_to_the_warm_up_nexts_saving():
    caveat = ("the profile includes one-time set-up: first calls of aten::conv2d 3.75 s (later 866.0 µs), "
              "aten::linear 2.32 s (later 64.0 µs), {}% of the span; warm up before profiling")
    out = {"trace": {"caveats": [caveat.format(90)]}}
    assert caveat_setup_is_the_nexts(_said(0.47, 0.47), out)
    assert not caveat_setup_is_the_nexts(_said(0.47, 0.47), {"trace": {"caveats": [caveat.format(47)]}})


def test_the_checker_finds_a_fragment_counted_as_a_step_but_not_a_short_real_one():
    def out(walls, kernels):
        n = len(walls)
        cols = {"wall_us": walls, "kernels": kernels, "regular": [True] * n, "setup": [False] * n}
        return {"steps": {"found_from": "profiler_step", "per_step": cols}}
    assert no_step_is_a_fragment(out([1071.8, 17.9], [2, 0]))
    assert not no_step_is_a_fragment(out([100_000.0, 5_000.0], [30, 30]))     # a prefill and a decode step
    assert not no_step_is_a_fragment(out([1000.0, 1010.0, 990.0], [20, 20, 20]))


def test_the_checker_finds_a_steady_median_that_holds_the_set_up_step():
    cols = {"wall_us": [10_730_000.0, 320_600.0, 180_500.0], "setup": [False, False, False]}
    assert not steady_step_holds_no_setup({"steps": {"summary": {"median_us": 320_600.0}, "per_step": cols}})
    cols["setup"] = [True, False, False]
    assert not steady_step_holds_no_setup({"steps": {"summary": {"median_us": 250_000.0}, "per_step": cols}})
    assert steady_step_holds_no_setup({"steps": {"summary": {"median_us": 11_000_000.0}, "per_step": cols}})


def _cold_forward(tmp_path, name: str, free_during_kernel: bool):
    """One cold forward (an embedding lookup, 12 alike layers, a head): its first mul holds the host 20 ms with a
    10 µs cudaFree in it, and its head (one aten::addmm, run once) 10 ms of cuBLAS set-up around its launch.
    free_during_kernel: the cudaFree runs while a kernel does (it waits for the device: no set-up)."""
    tl = Timeline()
    tl.op("aten::embedding", dims=[[32000, 896], [1, 512]])
    for i in range(12):
        for op in ("aten::mul", "aten::linear", "aten::silu", "aten::linear", "aten::add"):
            if i == 0 and op == "aten::mul":
                start = tl.t
                at = tl.gpu - 5 * US if free_during_kernel else start + 1 * MS   # (the lookup's kernel done)
                tl.extra.append(kf.call("cudaFree", at, at + 10 * US))
                tl.t += 20 * MS
                tl.op(op, 50 * US, dims=[[i + 1, 896]])
                tl.launches[-1] = dataclasses.replace(tl.launches[-1], op_start=start)
            else:   # each layer's mul on a shape of its own (a ResNet's convolutions): no shape repeats 3 times
                tl.op(op, 50 * US, dims=[[i + 1, 896]] if op == "aten::mul" else None)
    start = tl.t
    tl.t += 10 * MS
    tl.op("aten::addmm", 100 * US)
    tl.launches[-1] = dataclasses.replace(tl.launches[-1], op_start=start)
    return tl.write(tmp_path / f"{name}.json")


def _covered_ms(tr, op_name: str) -> float:
    s, e, _ = setup.windows(tr)
    ev = tr.ev
    rows = [r for r in range(len(ev)) if tr.name_of(r) == op_name and ev.cat[r] == CPU_OP]
    r = max(rows, key=lambda r: ev.end[r] - ev.start[r])
    us, ue = iv.union(s, e)
    return float(iv.covered(us, ue, ev.start[[r]], ev.end[[r]])[0]) / MS


def test_a_cold_passs_first_calls_count_whole_a_cudafree_before_any_kernel_and_an_op_run_once(tmp_path):
    """heldout-user11 rn18_h200_cold: a 10 µs cudaFree inside the 144 ms first conv2d, before any kernel ran, kept
    that op out of the set-up (a sync is a wait), and the one aten::linear's 56.7 ms had no warm cost of its own:
    a warm-up priced at 316 -> 117 ms where a warm batch-1 forward takes 1-2 ms."""
    tr = _cold_forward(tmp_path, "cold", free_during_kernel=False)
    assert setup.one_pass(tr)
    assert _covered_ms(tr, "aten::mul") > 19
    assert _covered_ms(tr, "aten::addmm") > 9


def test_a_cudafree_that_waits_for_a_running_kernel_still_keeps_its_op_out_of_the_set_up(tmp_path):
    """The negative: a cudaFree while a kernel runs waits for the device; its op's time is the wait, no set-up."""
    tr = _cold_forward(tmp_path, "wait", free_during_kernel=True)
    assert _covered_ms(tr, "aten::mul") < 1


def test_the_checker_holds_a_constructs_share_to_the_idle_it_names():
    """rn18_h200_cold: set-up painted over the forward took 71% of the idle, the forward 28%: '28% of the idle is
    inside nn.Module forwards' named a forward that held all of it; 99% of the idle outside the set-up is true."""
    fw = [{"construct": "setup", "idle_share": 0.7141}, {"construct": "module", "idle_share": 0.2841},
          {"construct": "user", "idle_share": 0.0}]

    def out(line: str) -> dict:
        return {"lines": ["Measured: x", "Time: x", line], "framework": fw}

    def said(v: float) -> Said:
        return Said([{"key": "idle.construct_share", "value": v, "said": f"{100 * v:.0f}%"}])

    old = "Idle: ...; 28% of the idle is inside nn.Module forwards: 93 launches in 1 call"
    new = "Idle: ...; 99% of the idle outside the one-time set-up is inside nn.Module forwards: 93 launches in 1 call"
    assert construct_share_is_of_the_idle_it_names(said(0.2841), out(old))
    assert not construct_share_is_of_the_idle_it_names(said(0.2841 / (1 - 0.7141)), out(new))
    assert construct_share_is_of_the_idle_it_names(said(0.5), out(new))     # no construct's share


def test_a_warm_up_takes_out_the_cold_first_batch_not_only_its_first_calls(tmp_path):
    """hateful_v100_infer: its warm-up was priced from the first calls alone (-47%, 12.39 s -> 6.52 s) where the
    cold first batch (worker start-up, first cuDNN/cuBLAS calls: 10.73 s) sat beside a steady one of 0.32 s: the
    first step kept apart as set-up is scaled to the steady step's host time."""
    a = analyze_file(_loader_loop(tmp_path, "workers", cold=True, first_fetch_ns=30 * MS).path)
    lv = a.next_experiment.lever
    assert lv is not None and lv.lever == "warm_up" and lv.assumption.early_steps == 1
    # the 30 ms fetch and the 40 ms first linear both go: the traced span keeps about three steady batches
    assert lv.saving_ns > 65 * MS
    out = serialize.report(a)
    assert claims.check(out) == []


def test_a_first_calls_later_figure_is_its_warm_cost_on_a_shape_seen_before(tmp_path):
    """rn18_h200_cold's Caveat: 'first calls of aten::conv2d 144.3 ms (later 1.45 ms)', where each later conv2d
    was itself the first at its shape (cuDNN's per-shape heuristics) and a conv2d on a shape seen before took
    40-190 µs: the later figure is the median of the calls on a shape seen before."""
    tl = Timeline()
    tl.op("aten::add", 10 * US)                 # (the GPU span opens: the first conv2d's set-up is idle inside it)
    shapes = [1, 2, 3, 4, 5, 6, 1, 2]           # each shape's first call pays 1.5 ms, its second 40 µs
    for i, k in enumerate(shapes):
        start = tl.t
        tl.t += 20 * MS if i == 0 else (1500 * US if k not in shapes[:i] else 40 * US)
        tl.op("aten::conv2d", 30 * US, dims=[[1, 64 * k, 56, 56], [64 * k, 64 * k, 3, 3]])
        tl.launches[-1] = dataclasses.replace(tl.launches[-1], op_start=start)
        tl.op("aten::relu_", 10 * US)
    a = analyze_trace(tl.write(tmp_path / "per_shape.json"))
    conv = next(w for w in a.warmup if w.name == "aten::conv2d")
    assert conv.first_call_us > 19_000 and conv.later_median_us < 100
