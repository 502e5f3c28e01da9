"""An MLP block in training (Linear -> ReLU -> Dropout, public leimao common.py's MLPBlock) runs two elementwise
chains a step: ReLU into Dropout in the forward, Dropout's backward into ReLU's in the backward. The cost model knows
those ops, so the fuse lever sees the chains (it said "no eager chain of elementwise ops" there); a fill_ writes its
tensor and reads none, so it continues no chain (a backward's zeros_like joined the previous step's bias sum)."""
from __future__ import annotations

from kineto_factory import Launch, document, events_for, write
from tracetriage.analyzers.analyses.fusion import chain_table
from tracetriage.analyzers.analyses.opcost import op_cost
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers.fuse import says

X = [640, 2048]


def test_dropout_and_the_activations_backward_are_elementwise_ops_with_their_bytes():
    drop = op_cost("aten::native_dropout", [X, [], []], ["float", "Scalar", "Scalar"])
    n = 640 * 2048
    assert drop.kind == "elementwise" and drop.bytes == 4 * n + 4 * n + n    # x read, the output and its bool mask
    back = op_cost("aten::native_dropout_backward", [X, X, []], ["float", "bool", "Scalar"])
    assert back.kind == "elementwise" and back.bytes == 4 * n + n + 4 * n    # the gradient and the mask in, one out
    relu_back = op_cost("aten::threshold_backward", [X, X, []], ["float", "float", "Scalar"])
    assert relu_back.kind == "elementwise" and relu_back.bytes == 3 * 4 * n


def _mlp_steps(tmp_path, steps: int = 3):
    """Each step: addmm, clamp_min (ReLU), native_dropout; then the backward's native_dropout_backward,
    threshold_backward, mm, and the bias's sum; the next step's backward starts with a fill_ of the loss gradient."""
    ops = [("aten::addmm", [[2048], [640, 4096], [4096, 2048], [], []], ["float"] * 3 + ["Scalar"] * 2),
           ("aten::clamp_min", [X, []], ["float", "Scalar"]),
           ("aten::native_dropout", [X, [], []], ["float", "Scalar", "Scalar"]),
           ("aten::fill_", [[640, 256], []], ["float", "Scalar"]),
           ("aten::native_dropout_backward", [X, X, []], ["float", "bool", "Scalar"]),
           ("aten::threshold_backward", [X, X, []], ["float", "float", "Scalar"]),
           ("aten::mm", [X, [2048, 4096]], ["float", "float"]),
           ("aten::sum", [X, [], [], []], ["float", "ScalarList", "Scalar", ""])]
    launches, shapes, t = [], [], 100_000
    for _ in range(steps):
        for name, dims, types in ops:
            launches.append(Launch(op_start=t, op_end=t + 15_000, call_start=t + 5_000, call_end=t + 12_000,
                                   gpu_start=t + 14_000, gpu_end=t + 18_000, op=name,
                                   kernel=f"void {name.split('::')[-1]}_kernel<float>(float*)"))
            shapes.append((dims, types))
            t += 20_000
        t += 1_500_000                               # the loop's Python before the next step
    events = events_for(launches)
    ops_rows = [e for e in events if e["cat"] == "cpu_op"]
    for e, (dims, types) in zip(ops_rows, shapes):
        e["args"]["Input Dims"], e["args"]["Input type"] = dims, types
    return load(write(tmp_path / "mlp.json", document(events)))


def test_relu_into_dropout_and_their_backward_are_chains(tmp_path):
    trace = _mlp_steps(tmp_path)
    names = [[trace.names[trace.ev.name[r]] for r in ch.ops] for ch in chain_table(trace, shapeless=True).chains()]
    assert names.count(["aten::clamp_min", "aten::native_dropout"]) == 3
    assert names.count(["aten::native_dropout_backward", "aten::threshold_backward"]) == 3


def test_a_fill_continues_no_chain(tmp_path):
    trace = _mlp_steps(tmp_path)
    chains = chain_table(trace, shapeless=True).chains()
    assert not any("aten::fill_" in [trace.names[trace.ev.name[r]] for r in ch.ops] for ch in chains)


def test_chains_found_but_not_worth_a_compiled_call_each_are_said_found(tmp_path):
    fuse = whatif.predict(_mlp_steps(tmp_path), ["fuse"]).lever("fuse")
    # the chains' dispatch (two ops, ~35 µs) is less than one compiled call's: none is fused, all six are found
    assert fuse.assumption.count == 0 and fuse.assumption.found == 6
    said = says(fuse.assumption)
    assert said.startswith("6 eager chains of elementwise ops found, none worth fusing on its own")
