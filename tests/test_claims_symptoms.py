"""Each false sentence of issue 33, on a synthetic trace that shows it (tests/claim_traces.py): the report says
what the trace holds, and the claim checker finds nothing."""
import dataclasses
from pathlib import Path

import pytest

from claim_traces import (
    cold_compiled_start_without_ops,
    cold_first_compiled_step,
    context_created_by_cudafree,
    dataloader_ranges_as_ops,
    dataloader_with_workers,
    first_compiled_calls,
    fp32_gemms_on_a_t4,
    graph_broken_steps,
    long_kernels_behind_slow_dispatch,
    runtime_only,
    waiting_rank_launch_bound,
)
from kineto_factory import write
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice import steps as step_words
from tracetriage.analyzers.voice.report import _idle_why, five_lines

TRACES = Path(__file__).resolve().parent.parent / "traces"


def test_context_creation_cudafree_is_no_sync_to_remove(tmp_path):
    a = analyze_file(write(tmp_path / "ctx.json", context_created_by_cudafree()))
    syncs = next((c for c in a.lever_choices if c.lever == "remove_syncs"), None)
    # the 500 ms of cudaFree before the first kernel are set-up: removing the syncs saves at most the real one
    assert syncs is None or syncs.saving_ns < 1 * 1_000_000
    assert "the syncs serialise the host" not in five_lines(a)[2]
    assert claims.check(serialize.report(a)) == []


def test_a_launch_bound_because_never_says_a_launch_outlasts_a_longer_kernel(tmp_path):
    a = analyze_file(write(tmp_path / "long.json", long_kernels_behind_slow_dispatch()))
    ev = a.evidence[Cause.LAUNCH_OVERHEAD]
    assert ev.kernel_median_us > ev.launch_call_median_us          # 172 µs kernels, 7 µs launch calls
    why = _idle_why(a, Cause.LAUNCH_OVERHEAD, ev, 0.25)
    assert "while each launch costs the host more" not in why
    assert why.endswith("in 39 gaps (median 60.0 µs) where the queue ran dry while the host dispatched and launched "
                        "the next")


def test_a_host_work_because_names_the_stretches_the_replay_removes_not_a_median_gap_of_nothing(tmp_path):
    a = analyze_file(write(tmp_path / "long.json", long_kernels_behind_slow_dispatch()))
    nxt = five_lines(a)[4]
    assert "median gap 0.0 µs" not in nxt
    assert "in 39 stretches between launches of 70.0 µs or more, and the GPU waits them out" in nxt
    assert claims.check(serialize.report(a)) == []


def test_dataloader_workers_are_not_advised_where_the_trace_shows_them_on(tmp_path):
    on = analyze_file(write(tmp_path / "workers.json", dataloader_with_workers()))
    nxt = five_lines(on)[4]
    assert "num_workers=4" not in nxt and "they are on already (_MultiProcessingDataLoaderIter)" in nxt
    assert claims.check(serialize.report(on)) == []
    off = analyze_file(write(tmp_path / "single.json", dataloader_with_workers("_SingleProcessDataLoaderIter")))
    assert "DataLoader(..., num_workers=4" in five_lines(off)[4]      # no workers in the trace: ask for them


def test_a_runtime_only_trace_gets_a_health_finding(tmp_path):
    a = analyze_file(write(tmp_path / "runtime.json", runtime_only()))
    out = serialize.report(a)
    assert [f["problem"] for f in out["health"]["findings"] if f["shown"]] == ["ops_not_recorded"]
    assert out["health"]["line"].startswith("Health: 40 launch calls but no CPU op recorded (a runtime-only capture)")
    assert claims.check(out) == []


def test_a_ttft_longer_than_the_gpu_span_says_host_time_before_the_first_kernel_is_counted():
    a = analyze_file(TRACES / "generate" / "generate-gpt2-b1-eager.json.gz")
    assert a.phases is not None and a.phases.ttft_us < a.span_ns / 1e3
    inside = step_words.phases_clause(a.phases, a.span_ns / 1e3)
    assert "host time before the first kernel" not in inside
    # the same prefill measured from a request that began 400 ms before its first kernel (HF generate's set-up)
    longer = dataclasses.replace(a.phases, ttft_us=a.span_ns / 1e3 + 400_000)
    assert "(from the request's first host call: host time before the first kernel counted)" in \
        step_words.phases_clause(longer, a.span_ns / 1e3)


def test_report_dir_gives_each_ranks_exposed_communication():
    from tracetriage.analyzers.runs.pool import report_object

    lines = serialize.ranks(report_object(TRACES / "ddp"))["lines"]
    assert "623.1 ms exposed (no compute beside it)" in lines[1] and "2.99 ms exposed" in lines[2]


def test_ranges_recorded_as_ops_do_not_hide_the_host_work_inside_them(tmp_path):
    from tracetriage.analyzers.whatif.predict import predict_file

    w = predict_file(write(tmp_path / "torch19.json", dataloader_ranges_as_ops()))
    host = next(p for p in w.levers if p.lever == "no_host_work")
    # 8 steps x ~5 ms in the DataLoader's __next__: the lever takes most of it (was 0: ProfilerStep# covered it)
    assert host.assumption.count == 8 and host.saving_ns > 30 * 1_000_000


def test_compute_advice_names_only_the_precisions_the_device_runs_faster():
    from tracetriage.analyzers.analyses.peaks import lookup
    from tracetriage.analyzers.voice.claims import has_fp8
    from tracetriage.analyzers.voice.common import cheaper_arithmetic

    h100, a100, v100 = (lookup(n) for n in ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB"))
    assert "(TF32 or bf16)" in cheaper_arithmetic(h100, "fp32") and "(fp8)" in cheaper_arithmetic(h100, "bf16")
    assert "(TF32 or bf16)" in cheaper_arithmetic(a100, "fp32") and "fp8" not in cheaper_arithmetic(a100, "fp32")
    assert cheaper_arithmetic(a100, "bf16", headroom=True) == \
        "less arithmetic (bf16 is already the cheapest precision this device runs faster)"   # no fp8 on an A100
    assert "(fp16 on tensor cores)" in cheaper_arithmetic(v100, "fp32", headroom=True)   # Volta: fp16, no bf16/TF32
    assert has_fp8(h100) and not has_fp8(a100) and not has_fp8(v100)


def test_code_compiled_already_is_not_told_to_torch_compile_and_the_checker_catches_it():
    # hta-v100-rank1 (a public trace): the launch idle sits in autograd's evaluate_function: CompiledFunctionBackward,
    # and the Next said "torch.compile to fuse" (issue 32: never torch.compile on code already compiled)
    from tracetriage.analyzers.model.verdicts import Cause
    from tracetriage.analyzers.output.claims import check
    from tracetriage.analyzers.output.claims_next import compiled_already
    from tracetriage.analyzers.voice.common import advice

    said = advice(Cause.LAUNCH_OVERHEAD, compiled=True)
    assert "torch.compile to fuse" not in said and "mode='reduce-overhead'" in said
    assert "torch.compile to fuse" in advice(Cause.LAUNCH_OVERHEAD)
    framework = [{"construct": "backward", "idle_share": 0.53,
                  "names": ["autograd::engine::evaluate_function: CompiledFunctionBackward"]}]
    assert compiled_already(framework) and not compiled_already([{"construct": "backward", "idle_share": 0.53,
                                                                  "names": ["x"]}])
    # tracelens-b200-eager (vLLM): one compiled region with 0.8% of the idle, 89% in eager module forwards
    assert not compiled_already([{"construct": "module", "idle_share": 0.89, "names": ["nn.Module: GptOss"]},
                                 {"construct": "compiled", "idle_share": 0.008, "names": ["Torch-Compiled Region"]}])
    lines = ["Measured: x", "Time: x", "Idle: x", "Regime: x",
             "Next: cut launches: torch.compile to fuse, then CUDA graphs (mode='reduce-overhead'), because x."]
    out = {"lines": lines, "framework": framework, "span_us": 0, "idle_us": 0, "trace": {},
           "idle": {"by_cause_us": {}, "evidence": {}}, "next_experiment": {},
           "claims": [{"key": "next.asks.torch_compile", "value": 1, "said": "torch.compile to fuse"}]}
    assert "the trace runs torch.compile's code already, yet the Next says to torch.compile it" in check(out)
    # the advice records what it asks for as it is built
    from tracetriage.analyzers.voice.said import recorded
    with recorded() as said:
        advice(Cause.LAUNCH_OVERHEAD)
    assert [c.key for c in said] == ["next.asks.torch_compile"]


def test_a_rank_that_waits_for_its_peers_also_gets_its_own_fix(tmp_path):
    """PARAM's DLRM rank 1: its only Next was "find the rank the others wait for ... report every rank's trace
    together", though its own timeline is launch-bound: the user got no fix until they re-ran. The straggler stays
    the Next's kind (it needs every rank), and the rank's own fix is said beside it with its own prediction."""
    from tracetriage.analyzers.model.verdicts import Experiment

    a = analyze_file(write(tmp_path / "rank1.json", waiting_rank_launch_bound()))
    nx = a.next_experiment
    assert nx.kind is Experiment.FIND_STRAGGLER and nx.own_fix is not None
    own = nx.own_fix.lever
    assert nx.own_fix.kind is Experiment.CUT_LAUNCHES and own.saving_ns > 0.1 * own.baseline_ns
    line = five_lines(a)[4]
    assert line.startswith("Next: find the rank the others wait for: report every rank's trace together")
    assert "; meanwhile this rank's own fix, with its collectives as they ran: cut launches" in line
    assert "; on its own timeline, the GPU idles 25% between 366 kernels that run 3.0 µs (median)" in line
    out = serialize.report(a)
    assert out["next_experiment"]["kind"] == "find_straggler"
    assert out["next_experiment"]["own_fix"]["whatif_lever"] == "cuda_graphs"
    own = {c["key"]: c for c in out["claims"] if c["key"].startswith("next.own.")}
    assert own["next.own.saving"]["value"] == pytest.approx(1 - out["next_experiment"]["own_fix"]["predicted_ratio"],
                                                            abs=1e-4)
    assert claims.check(out) == []
    # the own fix is held to a Next's relations: a saving that is not its lever's ratio is caught
    out["next_experiment"]["own_fix"]["predicted_ratio"] = 0.5
    assert any("rank own fix says" in p for p in claims.check(out))


def test_back_to_back_kernels_a_rounding_apart_are_no_idle(tmp_path):
    """TraceLens's MI300X elementwise trace: 10 adds back to back, each start a ns after the previous end (Kineto
    rounds a start and a duration to the ns). It read "idle <1% of the span (0.0 µs) ... 9 gaps with a median of
    0 µs": a figure rounded to nothing, from gaps that are the timestamps' rounding."""
    from kineto_factory import Launch, document, events_for

    launches, t = [], 100 * 1000
    for i in range(10):
        g = t + 1 if i else t
        launches.append(Launch(op_start=g - 30_000 + i, op_end=g - 20_000, call_start=g - 28_000, call_end=g - 22_000,
                               gpu_start=g, gpu_end=g + 422_500))
        t = g + 422_500
    a = analyze_file(write(tmp_path / "adds.json", document(events_for(launches))))
    assert a.idle_ns == 0
    assert five_lines(a)[2] == "Idle: the GPU never idles inside its span."
    assert claims.check(serialize.report(a)) == []


def test_one_forward_cut_by_its_router_syncs_is_one_pass_with_no_prefill_or_decode(tmp_path):
    from claim_traces import one_moe_forward

    a = analyze_file(write(tmp_path / "moe.json", one_moe_forward()))
    measured = five_lines(a)[0]
    assert a.inference is None and "prefill" not in measured and "decode" not in measured
    assert "no repeated steps: one pass (its 20 repeats of one op sequence" in measured
    assert claims.check(serialize.report(a)) == []


def test_a_warm_up_predicting_far_less_than_its_first_calls_gives_its_saving_as_the_set_up_share():
    # (graphbreak_mlp_4090: "predicted −7% ..., because 49% of the span is one-time set-up", the replay having taken
    # 4.3 ms of lazy module loading for the profiler's own work; heldout-user7 tp2x4090: "−8% ..., because 52% ...;
    # of it, 8% lies on the critical path": the because's share is its prediction, the first calls' said beside)
    a = analyze_file(TRACES / "script-toy-train.json.gz")
    nx = a.next_experiment
    lv = dataclasses.replace(nx.lever, predicted_ns=int(0.9 * nx.lever.baseline_ns))       # a −10% replay
    small = dataclasses.replace(a, next_experiment=dataclasses.replace(nx, lever=lv))
    line = five_lines(small)[4]
    assert "(predicted −10% of the traced span" in line
    assert "because 10% of the traced span is one-time set-up on the critical path (first calls of " in line
    assert "61% of the span in all, the rest the replay finds overlapped with GPU work or waited out anyway)" in line
    assert claims.check(serialize.report(small)) == []


def test_an_idle_line_names_the_host_inside_first_calls_set_up_not_host_work_that_issues_nothing(tmp_path):
    # (moe_fp32_bs8_a100: "12 gaps ... in which the host issued no GPU work" while the host sat in one 15.3 ms
    # cudaLaunchKernel of a first call, the Caveat and the Next calling the same stretch set-up)
    from other_peoples_traces import setup_in_a_launch_call

    a = analyze_file(write(tmp_path / "first-launch.json", setup_in_a_launch_call()))
    idle = five_lines(a)[2]
    assert "mostly host work, most of it one-time set-up: 1 gap with a median of 51.0 ms, 50.0 ms of it the host in " \
           "one-time set-up (first calls of cudaLaunchKernel (the longest in aten::conv2d), cudaFree (the longest in " \
           "aten::conv2d)), which the steady state never pays" in idle
    assert "issued no GPU work" not in idle
    assert claims.check(serialize.report(a)) == []


def test_fp32_math_on_cuda_cores_gets_mixed_precision_not_a_lever_that_wins_less(tmp_path):
    a = analyze_file(write(tmp_path / "t4.json", fp32_gemms_on_a_t4()))
    host = next(c for c in a.lever_choices if c.lever == "no_host_work")
    assert 0.03 < host.saving_ns / host.baseline_ns < 0.2          # the host stalls are there to win, a little
    out = serialize.report(a)
    assert out["next_experiment"]["kind"] == "mixed_precision", five_lines(a)[4]
    assert claims.check(out) == []
    # the checker holds the relation: the host work's Next beside the fp32 kernels is caught
    bad = dict(out, next_experiment=dict(out["next_experiment"], whatif_lever="no_host_work",
                                         predicted_ratio=host.predicted_ns / host.baseline_ns))
    assert any("would give back at least" in p for p in claims.check(bad))


def test_a_cold_compiled_start_without_ops_is_warmed_up_not_priced_as_host_work_to_move(tmp_path):
    a = analyze_file(write(tmp_path / "cold.json", cold_compiled_start_without_ops()))
    warm = next(c for c in a.lever_choices if c.lever == "warm_up")
    # the start-up lead, the compilation and the first launch's module load: all set-up the steady state never pays
    assert warm.assumption.count >= 3 and warm.saving_ns > 0.9 * warm.baseline_ns
    out = serialize.report(a)
    assert out["next_experiment"]["whatif_lever"] == "warm_up", five_lines(a)[4]
    assert claims.check(out) == []


def _with_claim(out: dict, key: str, value: float, said: str) -> dict:
    """The report with one claim's figure changed, as a report that said so would carry it."""
    return dict(out, claims=[dict(c, value=value, said=said) if c["key"] == key else c for c in out["claims"]])


def test_first_compilations_are_set_up_that_a_warm_up_removes_whole(tmp_path):
    # (heldout-user6 rtx4090d_compile_warmup: "90% of the idle is inside torch.compile compiling", then "warm up
    # first ... predicted −3% ..., because 32% of the span is one-time set-up ...; of it, 3% ... on the critical path")
    a = analyze_file(write(tmp_path / "first-compiles.json", first_compiled_calls()))
    lines = five_lines(a)
    assert "100% of the idle is inside torch.compile compiling" in lines[2]
    assert "first calls of torch.compile compiling 2 functions" in lines[2]
    assert lines[4].startswith("Next: warm up the compiled code first: call it a few times before the profiler "
                               "starts (torch.profiler.schedule(wait=1, warmup=2, active=3))")
    assert "TORCHINDUCTOR_FX_GRAPH_CACHE=1" in lines[4] and "CUDA_MODULE_LOADING" not in lines[4]
    assert "(predicted −100% of the traced span" in lines[4]
    assert "because 100% of the traced span is one-time set-up" in lines[4]
    out = serialize.report(a)
    assert next(x for x in out["framework"] if x["construct"] == "compile")["first_compilations"] is True
    assert claims.check(out) == []
    # the checker catches the warm-up that counts only the gaps before the first launches as set-up, and its replay
    small = _with_claim(_with_claim(out, "next.because.setup_share", 0.32, "32%"), "next.saving", 0.03, "−3%")
    found = claims.check(small)
    assert any("the warm-up's because says 32% of the span is set-up, but the device idles 100% of it while "
               "torch.compile compiles functions for the first time" in p for p in found), found
    assert any("the warm-up predicts −3%, but the device idles 100% of the span while torch.compile compiles "
               "functions for the first time, all of it on the critical path" in p for p in found), found


def test_recompilations_are_not_set_up(tmp_path):
    doc = first_compiled_calls()
    for e in doc["traceEvents"]:
        if e.get("name") == "Torch-Compiled Region: 1/0":
            e["name"] = "Torch-Compiled Region: 0/1"      # frame 0 compiled again: new shapes, it recurs
    a = analyze_file(write(tmp_path / "recompile.json", doc))
    assert not a.framework.first_compilations
    assert not any(w.name.startswith("torch.compile compiling") for w in a.warmup)
    assert a.next_experiment.lever is None or a.next_experiment.lever.lever != "warm_up"


def test_a_warm_up_beside_an_idle_loop_names_the_graph_breaks_and_no_waste_that_denies_the_loop(tmp_path):
    # (heldout-user6 rtx4090d_graphbreaks: 4 compiled regions per step never named, and "would waste the week:
    # optimising what this profile shows: its biggest gaps do not recur" beside "a steady step idles 90%")
    a = analyze_file(write(tmp_path / "breaks.json", graph_broken_steps()))
    assert (a.graph_breaks.per_step, a.graph_breaks.frames) == (4, 4)
    lines = five_lines(a)
    assert "a steady step idles 97% of its time (median)" in lines[3]
    assert lines[4].startswith("Next: warm up first")
    assert ("; then the loop, whose steady steps still idle most of their time: each step enters 4 compiled regions "
            "(4 compiled frames, Torch-Compiled Region N/0): graph breaks split the compiled code") in lines[4]
    assert "torch.compile(fullgraph=True) raises at each one), then compile with mode=\"reduce-overhead\"" in lines[4]
    cuda_graphs = next(c for c in a.lever_choices if c.lever == "cuda_graphs")
    assert a.next_experiment.then == cuda_graphs and cuda_graphs.saving_ns > 0.3 * cuda_graphs.baseline_ns
    assert "CUDA graphs to cut launches: predicted −41% from this trace" in lines[4]
    assert "do not recur" not in lines[4] and "Would waste the week: faster kernels, predicted 0%." in lines[4]
    out = serialize.report(a)
    assert claims.check(out) == []
    # the checker catches the waste that says nothing recurs beside the idle steady steps
    said = dict(out, claims=out["claims"] + [{"key": "waste.nothing_recurs", "value": 1, "said": "its biggest gaps"}])
    assert any("the waste line says the profile's gaps do not recur, but a steady step idles 97% of its time" in p
               for p in claims.check(said))


def test_one_compiled_region_per_step_is_no_graph_break(tmp_path):
    a = analyze_file(write(tmp_path / "one.json", graph_broken_steps(regions=1)))
    assert a.graph_breaks is None
    assert "graph break" not in five_lines(a)[4]


def test_a_cold_first_compiled_step_is_warmed_up_not_host_work_to_take_off_the_critical_path(tmp_path):
    # (heldout-user6 rtx4090d_resnet_compiled: "take the host work off the critical path ... profile the host
    # (py-spy)", because "median gap 8.73 ms", every one of those gaps in its first iteration)
    a = analyze_file(write(tmp_path / "cold-step.json", cold_first_compiled_step()))
    warm = next(c for c in a.lever_choices if c.lever == "warm_up")
    assert warm.assumption.early_steps == 1            # 3 entries of Torch-Compiled Region: 0/0 are its steps
    assert warm.saving_ns > 0.8 * warm.baseline_ns     # the first step's 24 ms of host time above a steady one's
    line = five_lines(a)[4]
    assert line.startswith("Next: warm up first")
    assert ("because 83% of the traced span is one-time set-up (the first step's host time above a steady "
            "step's)") in line
    assert "host work" not in line and "py-spy" not in line
    out = serialize.report(a)
    assert claims.check(out) == []
    # the checker catches the host-work Next whose every gap is in the cold first step
    host = next(c for c in a.lever_choices if c.lever == "no_host_work")
    bad = dict(out, next_experiment=dict(out["next_experiment"], kind="move_host_work", whatif_lever="no_host_work",
                                         predicted_ratio=host.predicted_ns / host.baseline_ns))
    assert any("the Next removes host work, but 99% of that idle over the 3 steps is in the first one" in p
               for p in claims.check(bad)), claims.check(bad)


def test_no_waste_line_says_nothing_recurs_beside_steady_steps_idling_a_quarter_of_each(tmp_path):
    """heldout-user17 r18compile: 'Would waste the week: optimising what this profile shows: its biggest gaps do not
    recur' beside a Regime line saying 'the steady steps after it idle 35% of each (median), mostly launch overhead,
    which a warm-up leaves': the loop's own fix (CUDA graphs) dismissed. The waste line and the Regime line read the
    same bound (model.verdicts.LOOP_IDLES_TOO); the checker holds the waste line to it."""
    out = serialize.report(analyze_file(write(tmp_path / "breaks.json", graph_broken_steps())))
    summary = out["steps"]["summary"]
    said = dict(out, claims=out["claims"] + [{"key": "waste.nothing_recurs", "value": 1, "said": "its biggest gaps"}])
    for idle, flagged in ((0.35, True), (0.20, False)):
        said["steps"] = dict(out["steps"], summary=dict(summary, median_idle_us=idle * summary["median_us"]))
        found = [p for p in claims.check(said) if "the waste line says the profile's gaps do not recur" in p]
        assert bool(found) is flagged, (idle, found)
