"""Framework phases: each idle gap and each launch charged to the construct whose code made it."""
from dataclasses import replace
from pathlib import Path

from kineto_factory import PID, TID, _dur, _us, chain, document, events_for, write
from tracetriage.analyzers.analyses import framework, idle
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.constructs import construct_of, optimizer_class
from tracetriage.analyzers.model.verdicts import Construct
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

ROOT = Path(__file__).resolve().parent.parent


def test_each_construct_is_told_by_what_torch_profiler_records_by_default():
    assert construct_of("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__") is Construct.DATALOADER
    assert construct_of("Optimizer.step#AdamW.step") is Construct.OPTIMIZER
    assert construct_of("Optimizer.zero_grad#SGD.zero_grad") is Construct.OPTIMIZER
    assert construct_of("autograd::engine::evaluate_function: AddmmBackward0") is Construct.BACKWARD
    assert construct_of("_compile.compile_inner (dynamo_timed)") is Construct.COMPILE
    assert (construct_of("entire_frame_compile_data: fn_name=_compile.compile_inner, compile_id=0/1")
            is Construct.COMPILE)
    assert construct_of("Torch-Compiled Region: 0/0") is Construct.COMPILED
    assert construct_of("cudaFree") is Construct.ALLOCATOR and construct_of("hipMalloc") is Construct.ALLOCATOR
    assert construct_of("c10d::allreduce_") is Construct.COLLECTIVE
    assert construct_of("aten::mm") is None and construct_of("cudaLaunchKernel") is None
    assert optimizer_class("Optimizer.step#AdamW.step") == "AdamW"


def test_the_dataloader_host_stretches_are_charged_to_the_dataloader():
    a = analyze_file(ROOT / "traces" / "probe-host-dataloader.json.gz")
    assert a.framework.idle_share(Construct.DATALOADER) > 0.9
    assert a.construct_named.construct is Construct.DATALOADER
    assert "of the idle is inside the DataLoader's __next__" in five_lines(a)[2]


def test_one_time_set_up_is_its_own_construct_and_the_optimizer_names_its_class():
    a = analyze_file(ROOT / "traces" / "script-toy-train.json.gz")
    assert a.framework.top.construct is Construct.SETUP and a.framework.idle_share(Construct.SETUP) > 0.5
    opt = a.framework.share_of(Construct.OPTIMIZER)
    assert a.framework.optimizer == "AdamW" and opt.launches > 100 and opt.ranges == 20   # 20 steps (zero_grads aside)
    # set-up is said in its own caveat, not named as the construct of the idle
    assert a.construct_named is None or a.construct_named.construct is not Construct.SETUP


def test_every_ns_of_idle_is_charged_once():
    for name in ("gpt-eager", "smell-sync-item", "chain-compile-large", "script-toy-train"):
        a = analyze_file(ROOT / "traces" / f"{name}.json.gz")
        assert a.framework.idle_ns == a.idle_ns, name
        assert sum(x.idle_ns for x in a.framework.constructs) == a.idle_ns, name


def _annotation(name: str, start_ns: int, end_ns: int, cat: str = "user_annotation") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": _us(start_ns, "torch2"),
            "dur": _dur(end_ns - start_ns, "torch2"), "args": {}}


def test_where_constructs_nest_the_earlier_one_wins_compile_inside_backward_is_compile(tmp_path):
    launches = chain(10, gap_ns=200_000)          # host-bound: 200 µs stretches before each launch
    lo, hi = launches[0].op_start - 1_000, launches[-1].op_end + 1_000
    mid = launches[5].op_start
    events = events_for(launches) + [
        _annotation("autograd::engine::evaluate_function: AddmmBackward0", lo, hi, "cpu_op"),
        _annotation("_compile.compile_inner (dynamo_timed)", mid - 500_000, mid, "cpu_op")]
    t = load(write(tmp_path / "nest.json", document(events)))
    fw = framework.analyze(t, idle.analyze(t))
    assert fw.share_of(Construct.COMPILE).idle_ns > 0
    assert fw.share_of(Construct.BACKWARD).idle_ns > 0
    assert fw.idle_ns == sum(d.idle_ns for d in idle.analyze(t))
    # the compiled stretch is not also counted as backward: together they cover the idle once
    assert fw.share_of(Construct.COMPILE).idle_ns + fw.share_of(Construct.BACKWARD).idle_ns <= fw.idle_ns


def test_a_construct_under_a_quarter_of_the_idle_is_not_named(tmp_path):
    launches = chain(20, gap_ns=100_000)
    # a DataLoader range around 2 of the 20 host stretches: ~10% of the idle
    events = events_for(launches) + [_annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                                                 launches[i].op_start - 90_000, launches[i].op_start) for i in (3, 9)]
    a = analyze_file(write(tmp_path / "dl.json", document(events)))
    assert 0 < a.framework.idle_share(Construct.DATALOADER) < 0.25
    assert a.construct_named is None and "DataLoader" not in five_lines(a)[2]


def test_launches_are_charged_to_the_construct_around_their_call(tmp_path):
    launches = [replace(x, op="aten::add_") for x in chain(12)]
    lo, hi = launches[4].op_start - 100, launches[7].op_end + 100
    events = events_for(launches) + [_annotation("Optimizer.step#SGD.step", lo, hi)]
    a = analyze_file(write(tmp_path / "opt.json", document(events)))
    opt = a.framework.share_of(Construct.OPTIMIZER)
    assert opt.launches == 4 and opt.ranges == 1 and a.framework.optimizer == "SGD"
