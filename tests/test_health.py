"""The health check (issue 24): a synthetic trace per problem, the captured health traces, and no false alarm
on any bundled trace."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import kineto_factory as kf
from sweep import smallest_of_each, sweep
from tracetriage.analyzers.analyses import health
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.health import Problem, Verdict
from tracetriage.analyzers.model.verdicts import Experiment, Regime
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.health import health_line
from tracetriage.analyzers.voice.report import analysis_caveats, five_lines

TRACES = Path(__file__).resolve().parent.parent / "traces"


def _write(tmp_path: Path, events: list[dict], name: str = "t.json", **doc) -> Path:
    return kf.write(tmp_path / name, kf.document(events, **doc))


def _problems(path: Path) -> dict[Problem, health.Finding]:
    a = analyze_file(path)
    return {f.problem: f for f in a.health.findings}


def _without(events: list[dict], drop) -> list[dict]:
    return [e for e in events if not drop(e)]


# --- synthetic traces, one per problem -------------------------------------------------------------------

def test_a_whole_synthetic_trace_has_no_shown_finding(tmp_path):
    a = analyze_file(_write(tmp_path, kf.events_for(kf.chain(40))))
    assert a.health.ok and health_line(a.health) is None


def test_launch_calls_without_any_gpu_activity_mean_cuda_activity_was_not_recorded(tmp_path):
    ev = _without(kf.events_for(kf.chain(40)), lambda e: e.get("cat") == "kernel")
    a = analyze_file(_write(tmp_path, ev))
    assert [f.problem for f in a.health.shown] == [Problem.GPU_ACTIVITY_NOT_RECORDED]
    assert a.health.shown[0].count == 40
    assert a.next_experiment.kind is Experiment.CAPTURE_ON_GPU
    assert "ProfilerActivity.CUDA" in health_line(a.health)
    assert "40 launch calls" in five_lines(a)[4]
    # the generic "a CPU-only capture, or CUDA activity was not recorded" gives way to the Health line
    assert not any("CPU-only capture, or" in c for c in analysis_caveats(a))


def test_cpu_ops_on_a_gpu_machine_with_cupti_running_are_the_cpu_fallback_trap(tmp_path):
    ops = [kf.op("aten::addmm", 1_000 + 50_000 * i, 40_000 + 50_000 * i, dims=[[64, 64], [64, 64]],
                 types=["float", "float"]) for i in range(30)]
    buffer = {"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0,
              "ts": kf._us(500, "torch2"), "dur": 100.0}
    a = analyze_file(_write(tmp_path, ops + [buffer]))
    assert [f.problem for f in a.health.shown] == [Problem.WORKLOAD_ON_CPU]
    assert a.next_experiment.kind is Experiment.MOVE_TO_GPU
    lines = five_lines(a)
    assert "ran on the CPU of a machine with a GPU (NVIDIA H200)" in lines[0]
    assert "model.to('cuda')" in lines[4]
    assert "never moved to the GPU" in health_line(a.health)


def test_cpu_ops_without_any_sign_of_cuda_are_a_plain_cpu_capture(tmp_path):
    ops = [kf.op("aten::addmm", 1_000 + 50_000 * i, 40_000 + 50_000 * i) for i in range(30)]
    doc = kf.document(ops)
    doc["deviceProperties"] = []                    # a machine without a GPU
    a = analyze_file(kf.write(tmp_path / "cpu.json", doc))
    assert a.health.ok
    assert a.next_experiment.kind is Experiment.CAPTURE_ON_GPU


def test_kernels_whose_launch_calls_were_dropped_withhold_the_whatif(tmp_path):
    launches = kf.chain(200, gap_ns=20_000)
    ev = kf.events_for(launches)
    calls = [e for e in ev if e.get("cat") == "cuda_runtime"]
    gone = {id(e) for e in calls[50:110]}            # 60 of 200 launch records lost mid-trace
    a = analyze_file(_write(tmp_path, [e for e in ev if id(e) not in gone]))
    f = next(x for x in a.health.shown if x.problem is Problem.KERNELS_WITHOUT_LAUNCH)
    assert (f.count, f.total) == (60, 200)
    assert a.health.withheld(Verdict.WHATIF) and a.levers is None and a.next_experiment.lever is None
    assert "the what-if is not given" in health_line(a.health)


def test_launch_calls_whose_kernels_were_dropped_are_found(tmp_path):
    ev = kf.events_for(kf.chain(200, gap_ns=20_000))
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    gone = {id(e) for e in kernels[60:100]}          # 40 kernels lost from a full activity buffer
    a = analyze_file(_write(tmp_path, [e for e in ev if id(e) not in gone]))
    f = next(x for x in a.health.shown if x.problem is Problem.LAUNCHES_WITHOUT_KERNEL)
    assert (f.count, f.total) == (40, 200)
    assert "40 of 200 launch calls have no GPU activity" in health_line(a.health)
    # a fifth of the graph missing: the idle split is said to be overstated, the what-if still stands
    assert f.withholds == (Verdict.IDLE,) and a.next_experiment.lever is not None
    assert "what-if is not given" not in health_line(a.health)


def test_a_few_kernels_missing_at_the_edges_of_the_window_are_no_alarm(tmp_path):
    ev = kf.events_for(kf.chain(200, gap_ns=20_000))
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    gone = {id(kernels[-1])}                          # the last kernel was still running at the stop
    a = analyze_file(_write(tmp_path, [e for e in ev if id(e) not in gone]))
    assert a.health.ok


def test_events_at_ts_zero_in_a_trace_whose_clock_is_elsewhere_are_bad_timestamps(tmp_path):
    ev = kf.events_for(kf.chain(40))
    stray = dict(ev[0], ts=0.0, name="aten::empty", args={})
    a = analyze_file(_write(tmp_path, ev + [stray]))
    f = next(x for x in a.health.shown if x.problem is Problem.BAD_TIMESTAMPS)
    assert f.count == 1


def test_gpu_activity_before_its_launch_call_means_the_clocks_disagree(tmp_path):
    launches = [kf.Launch(op_start=t - 2_000, op_end=t + 30_000, call_start=t, call_end=t + 4_000,
                          gpu_start=t - 10_000, gpu_end=t - 2_000) for t in range(100_000, 2_100_000, 50_000)]
    a = analyze_file(_write(tmp_path, kf.events_for(launches)))
    f = next(x for x in a.health.shown if x.problem is Problem.CLOCKS_OUT_OF_ORDER)
    assert f.count == f.total == 40


def test_clocks_that_disagree_inside_one_session_are_not_sent_to_capture_on_one_machine_again(tmp_path):
    """heldout-user21 dsv3b200: one process, one torch.profiler session on one B200, yet kernels start up to 200 µs
    before their launches; the Health line told the user to 'capture again on one machine with one torch.profiler
    session', which that capture already was."""
    launches = [kf.Launch(op_start=t - 2_000, op_end=t + 30_000, call_start=t, call_end=t + 4_000,
                          gpu_start=t - 10_000, gpu_end=t - 2_000) for t in range(100_000, 2_100_000, 50_000)]
    line = health_line(analyze_file(_write(tmp_path, kf.events_for(launches))).health)
    assert "capture again on one machine" not in line
    assert ("this is one profiler session, so the skew is in the profiler's conversion of GPU timestamps to host "
            "time, a lead of up to 10.0 µs; kernel times and the gaps between kernels (the GPU's own clock) "
            "stand") in line


def test_a_lead_over_the_launches_that_grows_through_the_trace_is_said_to_drift(tmp_path):
    """dsv3b200's GPU clock ran 1.5% behind the host's: the lead grew from 90 µs to 187 µs over 6.4 ms."""
    launches = [kf.Launch(op_start=t - 2_000, op_end=t + 30_000, call_start=t, call_end=t + 4_000,
                          gpu_start=t - 3 * t // 200, gpu_end=t - 3 * t // 200 + 5_000)
                for t in range(200_000, 6_200_000, 100_000)]
    f = next(x for x in analyze_file(_write(tmp_path, kf.events_for(launches))).health.shown
             if x.problem is Problem.CLOCKS_OUT_OF_ORDER)
    assert f.one_process and f.drift_ns / f.drift_over_ns == pytest.approx(0.015, rel=0.05)
    line = health_line(analyze_file(_write(tmp_path, kf.events_for(launches))).health)
    assert "and it drifts: the GPU's lead over its launches grows by 1.5% of the time elapsed, up to 91.5 µs" in line
    assert "profile a shorter window (schedule(active=1)) so a drift has less time to grow" in line


def test_no_input_shapes_withhold_a_compute_or_memory_verdict(tmp_path):
    # a device-bound chain: idle under half the span, so the regime is the roofline's to give, and it has none
    ev = kf.events_for(kf.chain(40, queued=True, kernel_ns=200_000))
    for e in ev:
        e.get("args", {}).pop("Input Dims", None)
        e.get("args", {}).pop("Input type", None)
    a = analyze_file(_write(tmp_path, ev))
    assert Problem.SHAPES_NOT_RECORDED in {f.problem for f in a.health.shown}
    assert a.verdict.regime is Regime.UNKNOWN
    assert "record_shapes=True" in health_line(a.health)


def test_missing_stacks_are_a_note_in_the_json_not_an_alarm(tmp_path):
    a = analyze_file(_write(tmp_path, kf.events_for(kf.chain(40))))
    note = next(f for f in a.health.findings if f.problem is Problem.STACKS_NOT_RECORDED)
    assert not note.shown
    j = serialize.report(a)["health"]
    assert j["ok"] and j["line"] is None
    assert {"problem": "stacks_not_recorded", "shown": False}.items() <= j["findings"][0].items()


def test_stream_waits_without_cuda_sync_events_are_a_note_in_the_json(tmp_path):
    ev = kf.events_for(kf.chain(20, stream=7) + kf.chain(20, stream=9, t0=150_000))
    ev.append(kf.call("cudaStreamWaitEvent", 90_000, 92_000))
    a = analyze_file(_write(tmp_path, ev))
    f = next(x for x in a.health.findings if x.problem is Problem.SYNC_EVENTS_NOT_RECORDED)
    assert not f.shown and f.count == 1 and f.withholds == (Verdict.STREAMS,)
    assert "enable_cuda_sync_events=True" in serialize.report(a)["health"]["findings"][-1]["says"]


def test_a_last_step_cut_short_with_its_kernels_missing_is_cut_mid_step(tmp_path):
    # 6 steps of 10 launches, each ending in a sync; the profiler stops 3 launches into a seventh
    launches, t = [], 100_000
    syncs = []
    for step in range(7):
        n = 10 if step < 6 else 3
        for i in range(n):
            launches.append(kf.Launch(op_start=t, op_end=t + 9_000, call_start=t + 2_000, call_end=t + 6_000,
                                      gpu_start=t + 8_000, gpu_end=t + 18_000, op=f"aten::op{i}"))
            t += 20_000
        if step < 6:
            syncs.append(kf.call("cudaDeviceSynchronize", t, t + 15_000))
            t += 40_000
    ev = kf.events_for(launches) + syncs
    cut = [e for e in ev if e.get("cat") == "kernel"][-3:]
    ev = [e for e in ev if all(e is not c for c in cut)]
    a = analyze_file(_write(tmp_path, ev))
    assert a.steps is not None and a.steps.found
    f = next(x for x in a.health.shown if x.problem is Problem.CUT_MID_STEP)
    assert f.count == 3


# --- the captured health traces (traces/health, an H200) -------------------------------------------------

@pytest.mark.parametrize("name, problem", [
    ("health-accidental-cpu", Problem.WORKLOAD_ON_CPU),
    ("health-cuda-activity-off", Problem.GPU_ACTIVITY_NOT_RECORDED),
    ("health-no-shapes", Problem.SHAPES_NOT_RECORDED),
])
def test_each_captured_health_trace_shows_the_setting_it_was_captured_without(name, problem):
    a = analyze_file(TRACES / "health" / f"{name}.json.gz")
    assert [f.problem for f in a.health.shown] == [problem]


def test_the_two_traces_without_gpu_events_are_told_apart():
    cpu = analyze_file(TRACES / "health" / "health-accidental-cpu.json.gz")
    off = analyze_file(TRACES / "health" / "health-cuda-activity-off.json.gz")
    assert cpu.next_experiment.kind is Experiment.MOVE_TO_GPU
    assert off.next_experiment.kind is Experiment.CAPTURE_ON_GPU
    assert five_lines(cpu)[4] != five_lines(off)[4]


def test_the_reference_and_no_sync_events_health_traces_raise_no_alarm():
    for name in ("health-reference", "health-no-sync-events"):
        assert analyze_file(TRACES / "health" / f"{name}.json.gz").health.ok, name
    truth = json.loads((TRACES / "health" / "health-no-sync-events.truth.json").read_text())
    assert truth["cuda_sync_events"] is False
    found = _problems(TRACES / "health" / "health-no-sync-events.json.gz")
    assert not found[Problem.SYNC_EVENTS_NOT_RECORDED].shown   # one stream: nothing waits across streams


# --- no false alarm on any bundled trace --------------------------------------------------------------------

# The sample traces at the top of traces/ are checked through their golden reports (below); of the fix pairs,
# the traces before each fix (the fixes' after-traces are the same programs, changed where the lever acts).
BUNDLED = sorted(p for p in TRACES.glob("*/*.json.gz")
                 if p.parent.name != "health" and ("--" not in p.name or "--before" in p.name))
# the smallest of each folder stands for its folder here (each capture's format and device); the slow step loads the
# other ~60
FAST_BUNDLED = smallest_of_each(BUNDLED, lambda p: p.parent)


@pytest.mark.parametrize("path", sweep(BUNDLED, FAST_BUNDLED, ids=[str(p.relative_to(TRACES)) for p in BUNDLED]))
def test_no_bundled_trace_raises_a_health_alarm(path):
    t = load(path)
    if t.merged_ranks:
        pytest.skip("a merged multi-rank file: each rank is checked on its own")
    assert health.check(t).ok, [f for f in health.check(t).findings if f.shown]


def test_no_golden_report_of_a_sample_trace_has_a_health_line():
    """The golden reports are every sample trace's full report (steps found, so the cut-step check runs too)."""
    golden = Path(__file__).resolve().parent / "golden" / "report"
    texts = sorted(golden.glob("*.txt"))
    assert texts
    assert [p.name for p in texts if "\nHealth: " in p.read_text()] == []


def test_lazy_module_loading_in_cuptis_overhead_rows_is_not_called_the_profilers_own_work(tmp_path):
    # (resnet18_compiled_train_4090, graphbreak_mlp_4090: "the profiler's own activity-buffer requests ... take
    # 5.22 ms ... no fix removes them", of which 4.33 ms was "Runtime Triggered Module Loading": CUDA loading the
    # program's kernels on first launch, which warm-up or CUDA_MODULE_LOADING=EAGER removes)
    launches = kf.chain(40, gap_ns=20_000)
    first = launches[0]
    launches[0] = kf.Launch(**{**first.__dict__, "call_end": first.call_start + 5_000_000,
                               "op_end": first.call_start + 5_010_000})
    shift = 5_000_000
    launches[1:] = [kf.Launch(**{**x.__dict__, **{k: getattr(x, k) + shift for k in
                                                  ("op_start", "op_end", "call_start", "call_end", "gpu_start",
                                                   "gpu_end")}}) for x in launches[1:]]
    launches[0] = kf.Launch(**{**launches[0].__dict__, "gpu_start": launches[0].call_end + 5_000,
                               "gpu_end": launches[0].call_end + 15_000})
    own = lambda name, at, dur: {"ph": "X", "cat": "overhead", "name": name, "pid": -1, "tid": 0,  # noqa: E731
                                 "ts": kf._us(first.call_start + at, "torch2"), "dur": dur / 1000}
    rows = [own("Activity Buffer Request", 10_000, 900_000),
            own("Runtime Triggered Module Loading", 1_000_000, 3_900_000)]
    a = analyze_file(_write(tmp_path, kf.events_for(launches) + rows))
    said = [c for c in analysis_caveats(a) if "activity-buffer" in c]
    assert said == ["the profiler's own activity-buffer requests (CUPTI, inside the first launches) take 900.0 µs: "
                    "not your code; a profiler schedule (torch.profiler.schedule(wait=1, warmup=1, active=3)) or "
                    "starting the profiler before the measured region keeps them out of the recorded trace"]
    # recorded under a schedule already (its first step ProfilerStep#3), the requests still inside: no schedule
    # advice (fresh11 streaming_conformer_compiled_no_cudagraphs was told to use the schedule it used)
    end = max(x.gpu_end for x in launches)
    step = kf.annotation("ProfilerStep#3", first.op_start - 1_000, end + 1_000)
    a = analyze_file(_write(tmp_path, kf.events_for(launches) + rows + [step], name="scheduled.json"))
    said = [c for c in analysis_caveats(a) if "activity-buffer" in c]
    assert len(said) == 1 and "torch.profiler.schedule" not in said[0], said
    assert "recorded under one already: its first step is ProfilerStep#3" in said[0]
