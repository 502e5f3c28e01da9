"""One-time costs named right: host self-time inside a traced op is traced (not 'untraced Python') whichever thread
traced more in all."""
from __future__ import annotations

from kineto_factory import TID, Launch, document, events_for, write
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.triage.report import analyze_file

US, MS = 1000, 1_000_000
AUTOGRAD_TID = TID + 1


def _launch(op: str, op_start: int, call_at: int, kernel_us: int = 10) -> Launch:
    return Launch(op_start=op_start, op_end=call_at + 8 * US, call_start=call_at, call_end=call_at + 6 * US,
                  gpu_start=call_at + 10 * US, gpu_end=call_at + (10 + kernel_us) * US, op=op)


def test_a_gap_inside_a_traced_op_on_the_main_thread_is_traced_beside_autograds_longer_gaps(tmp_path):
    """Was: heldout-user17 r18compile "64% untraced: Python, numpy, sleeping" where a 9.77 ms gap was self-time of the
    first aten::_convolution (cuDNN's first-call set-up) on the main thread: the untraced share was read on the one
    thread whose ops covered most of the gaps in all (autograd's), so the main thread's stall counted untraced."""
    main = events_for([_launch("aten::mm", 0, 10 * US), _launch("aten::_convolution", 40 * US, 5 * MS)])
    autograd = events_for([_launch("autograd::engine::evaluate_function: SumBackward0", 5_100 * US, 12 * MS)],
                          first_id=10)
    for e in autograd:
        if e.get("tid") == TID:
            e["tid"] = AUTOGRAD_TID
    a = analyze_file(write(tmp_path / "two_threads.json", document(main + autograd)))
    host = a.evidence[Cause.HOST_WORK]
    assert host.gaps == 2
    assert host.untraced_share < 0.05, host.untraced_share


def test_an_op_torch_compile_traces_while_it_compiles_is_no_first_call(tmp_path):
    """Was: heldout-user17 compilecold "first calls of torch.compile compiling 2 functions 1.53 s (once), ...,
    aten::batch_norm 13.3 ms (later 612.6 µs)": every aten::batch_norm there ran inside Dynamo's bytecode_tracing on
    fake tensors and launched no kernel: the compile's own time, said twice."""
    from kineto_factory import annotation, op

    def report(traced_while_compiling: bool):
        ev = events_for([_launch("aten::mm", 0, 10 * US)])
        if traced_while_compiling:
            ev += [annotation("bytecode_tracing (dynamo_timed)", 50 * US, 30 * MS)]
        ev += [op("aten::batch_norm", 100 * US, 20 * MS)]     # 19.9 ms, no launch inside
        ev += events_for([_launch("aten::batch_norm", 31 * MS + 200 * US * i, 31 * MS + 200 * US * i + 20 * US)
                          for i in range(5)], first_id=20)
        return analyze_file(write(tmp_path / f"bn{int(traced_while_compiling)}.json", document(ev)))

    warm = [c.name for c in report(False).evidence[Cause.HOST_WORK].warmup]
    assert "aten::batch_norm" in warm       # outside a compile: a first call that held the host
    compiling = [c.name for c in report(True).evidence[Cause.HOST_WORK].warmup]
    assert "aten::batch_norm" not in compiling, compiling


def test_a_first_call_inside_a_region_called_once_a_step_is_named(tmp_path):
    """Was: heldout-user17 r18compile named the first aten::convolution's 9.8 ms stall (cuDNN's first-call set-up,
    later convolutions 20-40 µs) nowhere: only outermost ops were judged, and its outermost op, the compiled region
    (called once a step, its later calls a few ms), is no first call of its own."""
    from kineto_factory import op

    ev, corr, t = events_for([_launch("aten::mm", 0, 10 * US)]), 2, 100 * US   # a kernel before: the span's start
    for step in range(3):
        region = t
        convs = []
        if step == 0:   # the first convolution holds the host 9 ms before its launch
            convs.append(Launch(op_start=t + 100 * US, op_end=t + 9_110 * US, call_start=t + 9_100 * US,
                                call_end=t + 9_106 * US, gpu_start=t + 9_110 * US, gpu_end=t + 9_200 * US,
                                op="aten::convolution"))
            t += 9_200 * US
        for i in range(30):    # then convolutions of 20 µs, their kernels 100 µs: the device busy
            convs.append(Launch(op_start=t + 100 * US * i, op_end=t + 100 * US * i + 20 * US,
                                call_start=t + 100 * US * i + 5 * US, call_end=t + 100 * US * i + 11 * US,
                                gpu_start=t + 100 * US * i + 12 * US, gpu_end=t + 100 * US * (i + 1) + 10 * US,
                                op="aten::convolution"))
        t += 3_100 * US
        ev += events_for(convs, first_id=corr)
        corr += len(convs)
        ev.append(op("Torch-Compiled Region: 0/0", region + 50 * US, t - 50 * US))
    a = analyze_file(write(tmp_path / "region.json", document(ev)))
    warm = {c.name: c for c in a.evidence[Cause.HOST_WORK].warmup}
    assert "aten::convolution" in warm, warm
    assert "Torch-Compiled Region: 0/0" not in warm
