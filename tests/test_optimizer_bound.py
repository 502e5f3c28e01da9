"""Steps the optimizer holds: a foreach Adam step priced as one fused pass, its multi_tensor_apply kernels placed as
memory-bound, and launch calls that return when their kernel ends read as waiting, not as launch cost; hand-written
attention priced on a device the peak table does not know. Small synthetic traces (tests/kineto_factory.py)."""
from __future__ import annotations

import numpy as np

from tests.kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.lockstep import lockstep_awaited
from tracetriage.analyzers.model.trace import NONE
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.depgraph import build
from tracetriage.analyzers.whatif.levers import sdpa
from tracetriage.analyzers.whatif.levers.spec import Context

MTA = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
       "TensorListMetadata<{d}>, at::native::(anonymous namespace)::{f}<float>, float>(...)")
# Adam's foreach update: (op, its TensorList inputs)
ADAM = [("aten::_foreach_lerp_", 2), ("aten::_foreach_mul_", 1), ("aten::_foreach_addcmul_", 3),
        ("aten::_foreach_sqrt", 1), ("aten::_foreach_div_", 1), ("aten::_foreach_add_", 1),
        ("aten::_foreach_addcdiv_", 3)]
SGD_PLAIN = [("aten::_foreach_add_", 2)]


def _optimizer_trace(tmp_path, update=ADAM, cls="Adam", lockstep=True, steps=3, pass_ns=600_000):
    """`steps` iterations: 40 small forward kernels (5 µs, launched 20 µs apart), then the optimizer's foreach passes,
    each one kernel of pass_ns x (its lists + 1) / 3; with lockstep, each pass's launch call returns 2 µs after its
    own kernel ends (the host waits in the launch)."""
    ev, t, i = [], 0, 0
    for _ in range(steps):
        for _ in range(40):
            i += 1
            ev += [op("aten::relu", t, t + 12_000, i, dims=[[1024]], types=["float"]),
                   call("cudaLaunchKernel", t + 2_000, t + 10_000, 100_000 + i, i),
                   gpu("void elementwise_kernel<relu>(...)", t + 12_000, t + 17_000, 100_000 + i)]
            t += 20_000
        s0 = t
        for name, lists in update:
            i += 1
            k_ns = pass_ns * (lists + 1) // 3
            c_end = t + 9_000 + k_ns + 2_000 if lockstep else t + 10_000
            ev += [op(name, t, c_end + 1_000, i, dims=[[] for _ in range(lists + 1)],
                      types=["TensorList"] * lists + ["Scalar"]),
                   call("cudaLaunchKernel", t + 1_000, c_end, 100_000 + i, i),
                   gpu(MTA.format(d=lists, f="Functor"), t + 9_000, t + 9_000 + k_ns, 100_000 + i)]
            t = max(c_end + 2_000, t + 9_000 + k_ns + 1_000)
        ev.append(annotation(f"Optimizer.step#{cls}.step", s0 - 500, t))
        t += 10_000
    doc = document(ev)
    doc["deviceProperties"][0]["name"] = "NVIDIA GeForce RTX 2060"
    return load(write(tmp_path / "adam.json", doc))


def test_a_foreach_adam_step_is_priced_as_one_fused_pass(tmp_path):
    tr = _optimizer_trace(tmp_path)
    lv = whatif.predict(tr).lever("fused_optimizer")
    fe = lv.assumption.foreach
    assert (fe.optimizer, fe.steps, fe.passes, fe.fused_accesses) == ("Adam", 3, 7, 7)
    assert fe.accesses == 19          # 3 + 2 + 4 + 2 + 2 + 2 + 4: lists read, one written
    assert fe.fused_ns < 0.5 * fe.kernel_ns
    assert lv.predicted_ratio < 0.8


def test_a_plain_foreach_sgd_step_is_one_pass_already(tmp_path):
    tr = _optimizer_trace(tmp_path, update=SGD_PLAIN, cls="SGD")
    assert whatif.predict(tr).lever("fused_optimizer").assumption.foreach.steps == 0


def test_a_foreach_step_of_a_class_without_fused_is_not_priced(tmp_path):
    tr = _optimizer_trace(tmp_path, cls="NAdam")
    assert whatif.predict(tr).lever("fused_optimizer").assumption.count == 0


def test_launch_calls_that_return_when_their_kernel_ends_are_waiting_not_launch_cost(tmp_path):
    tr = _optimizer_trace(tmp_path)
    g = build(tr)
    assert g.launch_cost_ns <= 10_000                  # the forward's 8 µs launches, not the passes' ~0.6-1.2 ms
    assert int(g.c_blocked.sum()) == 21                # the 7 passes x 3 steps wait on their own kernels
    # a faster kernel shortens them: halving kernel time is no longer worth nothing
    assert whatif.predict(tr).lever("kernels_2x").predicted_ratio < 0.8


def test_long_launches_that_end_apart_from_any_kernel_are_launch_cost(tmp_path):
    tr = _optimizer_trace(tmp_path, lockstep=False)
    assert not build(tr).c_blocked.any()
    calls = np.unique(tr.launch_of[tr.launch_of != NONE])
    assert (lockstep_awaited(tr, calls) == NONE).all()


def test_multi_tensor_kernels_make_the_regime_memory_bound_and_the_next_names_fused(tmp_path):
    out = serialize.report(analyze_trace(_optimizer_trace(tmp_path)))
    assert out["regime"] == "memory"
    # their bytes are not recorded: no rate quoted from the few costed ops beside them
    assert out["regime_detail"]["achieved_gbps"] is None
    assert "torch.optim.Adam(..., fused=True)" in out["lines"][4]
    assert claims.check(out) == []


def _attention_trace(tmp_path, between=True):
    """A hand-written fp32 attention (bmm, div, softmax, bmm) twice, beside two projections, on an RTX A5000 (no
    peak table entry); between=False puts the softmax after both products."""
    h, t_, d = 16, 1024, 64
    qk = ("aten::bmm", [[h, t_, d], [h, d, t_]], ["float", "float"], 2_000_000)
    div = ("aten::div", [[h, t_, t_], []], ["float", "double"], 1_000_000)
    soft = ("aten::_softmax", [[h, t_, t_], [], []], ["float", "Scalar", "Scalar"], 1_200_000)
    pv = ("aten::bmm", [[h, t_, t_], [h, t_, d]], ["float", "float"], 2_000_000)
    proj = ("aten::mm", [[t_, h * d], [h * d, h * d]], ["float", "float"], 800_000)
    seq = [proj, qk, div, soft, pv, proj] if between else [proj, qk, pv, div, soft, proj]
    ev, t, i = [], 0, 0
    for _ in range(2):
        for name, dims, types, k_ns in seq:
            i += 1
            ev += [op(name, t, t + 10_000, i, dims=dims, types=types),
                   call("cudaLaunchKernel", t + 2_000, t + 8_000, 100_000 + i, i),
                   gpu(f"ampere_sgemm_128x64_tn_{i}" if "mm" in name else "softmax_kernel", t + 9_000,
                       t + 9_000 + k_ns, 100_000 + i)]
            t += 9_000 + k_ns + 1_000
    doc = document(ev)
    doc["deviceProperties"][0]["name"] = "NVIDIA RTX A5000"
    return load(write(tmp_path / "attn.json", doc))


def test_hand_written_attention_is_priced_at_the_traces_own_gemm_rate_without_a_peak_table(tmp_path):
    lv = whatif.predict(_attention_trace(tmp_path)).lever("sdpa")
    a = lv.assumption
    assert (a.count, a.source, a.precision) == (2, "trace", "fp32")
    assert 0 < a.fused_ns < a.kernel_ns
    assert lv.predicted_ratio < 1.0


def test_a_softmax_not_between_two_products_is_no_attention(tmp_path):
    tr = _attention_trace(tmp_path, between=False)
    assert sdpa.find(Context(tr, build(tr))) == []


def test_a_foreach_op_with_list_shapes_costs_its_lists_read_and_one_written():
    from tracetriage.analyzers.analyses.opcost import op_cost

    c = op_cost("aten::_foreach_lerp_", [[[1000], [24]], [[1000], [24]], []], ["TensorList", "TensorList", "Scalar"])
    assert (c.kind, c.bytes, c.flops) == ("foreach", 3 * 1024 * 4, 2 * 1024)
    assert c.intensity < 1            # far under any GPU's ridge: memory-bound wherever it is placed
    # torch versions that write [] for each list: nothing to cost, the kernel's name places it
    assert op_cost("aten::_foreach_lerp_", [[], [], []], ["TensorList", "TensorList", "Scalar"]) is None
    fused = op_cost("aten::_fused_adam_", [[[1024]]] * 5 + [[]], ["TensorList"] * 5 + ["Scalar"])
    assert fused.bytes == (5 + 4) * 1024 * 4     # param, grad, exp_avg, exp_avg_sq, steps read; all but grad written


def _launch_evidence(gap_us: float, launch_us: float, queued: int = 0):
    from tracetriage.analyzers.model.evidence import LaunchEvidence
    from tracetriage.analyzers.model.verdicts import Cause

    return LaunchEvidence(Cause.LAUNCH_OVERHEAD, gaps=100, total_us=100 * gap_us, median_gap_us=gap_us,
                          max_gap_us=2 * gap_us, next_kernel_median_us=2.0, launch_call_median_us=launch_us,
                          queued_gaps=queued, launching_ops=(), kernels=100, kernel_median_us=2.0)


def test_launch_gaps_several_launch_calls_long_are_said_to_be_dispatch():
    from tracetriage.analyzers.voice.common import evidence_phrase

    assert "dispatch between launches" in evidence_phrase(_launch_evidence(39.0, 12.0))
    assert "dispatch" not in evidence_phrase(_launch_evidence(20.0, 12.0))        # a launch and a little more
    assert "dispatch" not in evidence_phrase(_launch_evidence(39.0, 12.0, queued=80))   # the device's own spacing
