"""'N launches in K calls': K is how often the named construct ran, never its marking events on two threads."""
from __future__ import annotations

from kineto_factory import TID, Launch, document, events_for, op, write
from tracetriage.analyzers.model.constructs import Construct
from tracetriage.analyzers.triage.report import analyze_file

US = 1000
BACKWARD_TID = TID + 1


def test_a_compiled_call_and_its_backward_count_as_one_call(tmp_path):
    """Was: heldout-user17 r18compile "inside torch.compile's compiled code (Torch-Compiled Region: 0/0): 465
    launches in 6 calls" where the trace has 3 regions, one per iteration: each iteration's CompiledFunctionBackward,
    on autograd's thread, was counted as a call of its own."""
    ev, t, corr = [], 100 * US, 1
    for _ in range(3):
        region = t
        launches = [Launch(op_start=t + 40 * US * i, op_end=t + 40 * US * i + 10 * US,
                           call_start=t + 40 * US * i + 2 * US, call_end=t + 40 * US * i + 8 * US,
                           gpu_start=t + 40 * US * i + 12 * US, gpu_end=t + 40 * US * i + 15 * US, op="aten::mm")
                    for i in range(10)]
        ev += events_for(launches, first_id=corr)
        corr += 10
        t += 400 * US
        ev += [op("Torch-Compiled Region: 0/0", region - 5 * US, t), op("CompiledFunction", region - 4 * US, t - US)]
        back = t + 50 * US
        ev += [op("CompiledFunctionBackward", back, back + 100 * US, tid=BACKWARD_TID)]
        t = back + 300 * US
    a = analyze_file(write(tmp_path / "compiled.json", document(ev)))
    compiled = next(x for x in a.framework.constructs if x.construct is Construct.COMPILED)
    assert compiled.ranges == 3, compiled


def test_a_ranges_busy_counts_the_backward_its_thread_waited_for_on_autograds_thread(tmp_path):
    """Was: heldout-user17 compilecold "by range, resnet18 compile 1.16 ms busy" where the range's CPU interval holds
    3.43 ms of kernels: the backward's were launched from autograd's thread, whose calls no range on it held."""
    from kineto_factory import annotation

    ev, corr = [], 1
    fwd = [Launch(op_start=100 * US + 20 * US * i, op_end=100 * US + 20 * US * i + 10 * US,
                  call_start=100 * US + 20 * US * i + 2 * US, call_end=100 * US + 20 * US * i + 8 * US,
                  gpu_start=100 * US + 20 * US * i + 10 * US, gpu_end=100 * US + 20 * US * i + 20 * US,
                  op="aten::mm") for i in range(5)]                       # 5 kernels of 10 µs
    bwd = [Launch(op_start=300 * US + 50 * US * i, op_end=300 * US + 50 * US * i + 10 * US,
                  call_start=300 * US + 50 * US * i + 2 * US, call_end=300 * US + 50 * US * i + 8 * US,
                  gpu_start=300 * US + 50 * US * i + 10 * US, gpu_end=300 * US + 50 * US * i + 40 * US,
                  op="aten::mm") for i in range(4)]      # 4 kernels of 30 µs, launched from autograd's thread
    back = events_for(bwd, first_id=corr + 10)
    for e in back:
        if e.get("tid") == TID:
            e["tid"] = BACKWARD_TID
    ev += events_for(fwd, first_id=corr) + back
    ev += [op("autograd::engine::evaluate_function: MmBackward0", 300 * US + 50 * US * i - US,
              300 * US + 50 * US * i + 12 * US, tid=BACKWARD_TID) for i in range(4)]
    ev += [annotation("train_step", 90 * US, 520 * US)]
    a = analyze_file(write(tmp_path / "step.json", document(ev)))
    step = next(r for r in a.ranges if r.name == "train_step")
    assert step.kernel_busy_us == 5 * 10 + 4 * 30, step.kernel_busy_us
