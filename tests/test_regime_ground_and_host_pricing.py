"""What a report may claim of a step's regime, which cause its Next and waste weigh, and how host work is priced
(heldout-user16's FALSE CLASSES C, D, F, G, J and fresh10's class 7), each on a synthetic trace that shows it."""
from __future__ import annotations

import dataclasses

from kineto_factory import Launch, chain, document, events_for, op, write
from tracetriage.analyzers.model.verdicts import Cause, Regime
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

US, MS = 1_000, 1_000_000


def _with_device(doc: dict, name: str) -> dict:
    for p in doc["deviceProperties"]:
        p["name"] = name
    return doc


def _dense_busy_loop(tmp_path, name: str = "Mystery Accelerator 9000"):
    """40 fp32 [2048x2048] matmuls queued back to back (the device busy), on a device with no peak table entry."""
    launches = [Launch(op_start=100 * US + 10 * US * i, op_end=100 * US + 10 * US * i + 8 * US,
                       call_start=100 * US + 10 * US * i + 2 * US, call_end=100 * US + 10 * US * i + 6 * US,
                       gpu_start=200 * US + 2 * MS * i, gpu_end=200 * US + 2 * MS * (i + 1) - 1 * US,
                       op="aten::mm", kernel="Cijk_Ailk_Bljk_SB_MT128x128x16_MI32x32x2x1(float*)")
                for i in range(40)]
    ev = events_for(launches)
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"]["Input Dims"] = [[2048, 2048], [2048, 2048]]
    return write(tmp_path / "dense.json", _with_device(document(ev), name))


def test_dense_ops_on_a_device_with_no_peak_are_not_called_compute_bound(tmp_path):
    """Was: "Regime: compute-bound: of kernel time, 31% is compute-bound ... compute-bound ops reach 11 TFLOP/s (no
    peak table entry for this device)" (cifar_mi300_r0, an unnamed MI300X: MIOpen convolutions at ~1% of its fp16
    peak). Without the device's peaks a dense op's place is its kind, not a roof it reaches."""
    a = analyze_file(_dense_busy_loop(tmp_path))
    assert a.verdict.regime is Regime.COMPUTE and a.roof.peaks is None
    regime = five_lines(a)[3]
    assert "compute-bound" not in regime, regime
    assert regime.startswith("Regime: mostly dense arithmetic, its roof unknown: ") and "dense ops reach" in regime


def test_a_known_device_keeps_its_compute_bound_verdict(tmp_path):
    a = analyze_file(_dense_busy_loop(tmp_path, "NVIDIA H200"))
    assert a.roof.peaks is not None
    assert five_lines(a)[3].startswith("Regime: compute-bound: ")


def test_a_span_whose_kernel_time_is_mostly_collectives_is_not_headlined_by_a_roof():
    """Was: cifar_mi300_r0 "Regime: compute-bound:" with 58% of its kernel time in all-reduces waiting on a straggler
    (31% compute)."""
    from types import SimpleNamespace

    from tracetriage.analyzers.voice import ground
    v = SimpleNamespace(kernel_us=100.0, comm_us=58.0)
    assert ground.headline(v, "compute-bound", False).startswith("mostly collectives")
    assert ground.headline(SimpleNamespace(kernel_us=100.0, comm_us=8.0), "compute-bound", True) == "compute-bound"


def test_host_work_saves_no_more_without_the_profiler_than_under_it(tmp_path, monkeypatch):
    """Was: cifar_mi300_r3 "predicted −11% ...; without the profiler −32%": 40 ms saved of a span whose host-work gaps
    hold 15 ms (the profiler's per-op cost of ops in the removed stretches taken again out of the dispatch left). The
    profiler only adds host time: moving host work saves no more without it. Here the unprofiled edit is made to take
    every gap away, as that double count did."""
    from tracetriage.analyzers.whatif import predict as pr

    def greedy(trace, g, p, counts=None):
        p.c_gap[:] = 0
    monkeypatch.setattr(pr, "unprofile", greedy)
    # a launch-bound chain of 60 kernels (20 µs gaps) with one 400 µs stretch of host work in its middle
    launches = [dataclasses.replace(x, **{f: getattr(x, f) + (400 * US if i >= 30 else 0)
                                          for f in ("op_start", "op_end", "call_start", "call_end", "gpu_start",
                                                    "gpu_end")})
                for i, x in enumerate(chain(60))]
    w = pr.predict_file(write(tmp_path / "chain.json", document(events_for(launches))), ["no_host_work"])
    host = w.lever("no_host_work")
    assert host.saving_ns > 0 and host.unprofiled_ratio is not None and w.unprofiled_ns
    unprofiled_saving = (1 - host.unprofiled_ratio) * w.unprofiled_ns
    assert unprofiled_saving <= host.saving_ns * 1.001, (unprofiled_saving, host.saving_ns)


def test_the_week_s_waste_of_a_launch_bound_span_is_not_fusion():
    """Was: "Would waste the week: fusing the elementwise chains, predicted 0%" beside launch overhead holding 38-85%
    of the span in thousands of µs kernels (fresh10 conformer and convnext_accum, cifar_mi300_r3): the fuse lever
    prices one compiled call per chain, but compiling the step cuts the launches the Idle line names."""
    from tracetriage.analyzers.triage.lever_choice import LeverChoice
    from tracetriage.analyzers.triage.waste import weeks_waste
    from tracetriage.analyzers.whatif.levers.spec import Assumption

    base = 1_000_000_000
    best = LeverChoice("cuda_graphs", None, base, int(0.6 * base), Assumption("cuda_graphs", 4700))
    choices = (best, LeverChoice("kernels_2x", None, base, int(0.999 * base), Assumption("kernels_2x", 4700)),
               LeverChoice("fuse", None, base, base, Assumption("fuse", 300)))
    assert weeks_waste(choices, best).lever == "fuse"                          # elsewhere the least saving
    assert weeks_waste(choices, best, launch_bound=True).lever == "kernels_2x"


def test_the_content_of_host_work_gaps_is_what_the_large_gaps_hold(tmp_path):
    """Was: mlp_bs2056_nw8 "8 gaps ... (in Python: main, torch/optim/adam.py _multi_tensor_adam; traced CPU ops:
    aten::_foreach_add_ ...); 3 of them, 1.98 ms to 2.14 ms each, hold 88% of it": the ops were the small gaps', the
    three large ones held none. Each step: a 3 ms stretch with no op, then two 200 µs stretches each holding a CPU
    aten::_foreach_add_, a kernel after each."""
    ev, t, corr = [], 100 * US, 5000
    for _ in range(4):
        for gap, with_op in ((3 * MS, False), (200 * US, True), (200 * US, True)):
            if with_op:
                ev.append(op("aten::_foreach_add_", t + 20 * US, t + gap - 20 * US))
            t += gap
            ev += events_for([Launch(op_start=t, op_end=t + 8 * US, call_start=t + 2 * US, call_end=t + 6 * US,
                                     gpu_start=t + 10 * US, gpu_end=t + 60 * US, op="aten::mm")], first_id=corr)
            t, corr = t + 60 * US, corr + 1
    a = analyze_file(write(tmp_path / "gaps.json", document(ev)))
    host = a.evidence[Cause.HOST_WORK]
    assert "aten::_foreach_add_" not in [h.name for h in host.host_events]
    assert "_foreach_add_" not in five_lines(a)[2]


def _compiled_bf16_step(tmp_path, kernel: str):
    """60 bf16 elementwise adds of 16M elements queued back to back (the device busy), their kernels named `kernel`."""
    launches = [Launch(op_start=100 * US + 10 * US * i, op_end=100 * US + 10 * US * i + 8 * US,
                       call_start=100 * US + 10 * US * i + 2 * US, call_end=100 * US + 10 * US * i + 6 * US,
                       gpu_start=200 * US + 60 * US * i, gpu_end=200 * US + 60 * US * (i + 1) - 1 * US,
                       op="aten::add", kernel=kernel)
                for i in range(60)]
    ev = events_for(launches)
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"]["Input Dims"] = [[16777216], [16777216]]
            e["args"]["Input type"] = ["c10::BFloat16", "c10::BFloat16"]
    return write(tmp_path / "compiled.json", document(ev))


def test_a_compiled_bf16_step_with_no_copies_is_called_healthy_not_told_to_move_fewer_bytes(tmp_path):
    """Was: fresh10 convnext_compiled_scoring_healthy "Next: move fewer bytes: fuse elementwise chains, keep
    activations/weights in lower precision, avoid materialised copies" on a step compiled by Inductor, in bf16, with
    no copies, 95% busy: every way named was taken (measured 1.00x)."""
    a = analyze_file(_compiled_bf16_step(tmp_path, "triton_poi_fused_add_0"))
    assert a.next_experiment.moved_well is not None
    nxt = five_lines(a)[4]
    assert "the step is healthy" in nxt and "fuse elementwise chains" not in nxt, nxt


def test_an_eager_bf16_step_is_still_told_to_move_fewer_bytes(tmp_path):
    a = analyze_file(_compiled_bf16_step(tmp_path, "void at::native::vectorized_elementwise_kernel<4, add>(bf16*)"))
    assert a.next_experiment.moved_well is None
    assert "move fewer bytes" in five_lines(a)[4]


def test_host_work_the_next_takes_away_is_not_priced_again_beside_it(tmp_path):
    """Was: square_randn "... 1.31 s of host work by aten::randn goes ...; host work holds more of the idle, but taking
    host work off the critical path predicts only −90%": the copies upload what the randn makes, so that host work
    cannot run beside the GPU work it feeds; the Next's knob takes it away already."""
    from claim_traces import host_randn_then_copy

    a = analyze_file(write(tmp_path / "randn.json", host_randn_then_copy(steps=3)))
    assert a.next_experiment.lever.lever == "tensors_on_device" and a.next_experiment.dominant is None
    assert "holds more of the idle" not in five_lines(a)[4]


def test_the_rewrite_after_a_knob_is_priced_with_the_knob_made_and_names_its_action():
    """Was: "then taking host work off the critical path, a bigger change to the code, predicted −96% from this trace"
    after DataLoader workers at −75% (the bundled probe-host-dataloader; heldout-user16 mlp_bs2056_nw8 likewise after
    pinned batches): each priced alone, though the workers take most of the same host work, and no change named."""
    from pathlib import Path

    a = analyze_file(Path(__file__).resolve().parents[1] / "traces" / "probe-host-dataloader.json.gz")
    nx = a.next_experiment
    assert nx.then is not None and nx.then.lever == "no_host_work" and nx.then_joint_ratio is not None
    further = nx.lever.predicted_ratio - nx.then_joint_ratio
    assert 0 <= further < nx.then.saving_ns / nx.then.baseline_ns
    line = five_lines(a)[4]
    assert "a further" in line and "after the knob" in line and "move the rest out of the loop" in line, line


def test_without_peaks_the_compute_share_is_not_said_to_be_every_matmul():
    """mlp_bs16_nw0 (an RTX 3080, no peak entry): its GEMMs (15% of kernel time) sit under every ridge, so the
    compute share is 0%; '0% is dense arithmetic (matmuls, convolutions ...)' read as 'no matmuls ran'."""
    from tracetriage.analyzers.voice import ground

    words = ground.compute_words(roofs=False)
    assert "ridge" in words and "matmuls" not in words
    assert ground.compute_words(roofs=True) == "compute-bound"
