"""A warm-up's remainder that is mostly the host after the last GPU work names that tail and the call holding it
(heldout-user18 dynavis_rtx6000: "2.57 s → 1.41 s" where 1.27 s is one cudaDeviceSynchronize after the last kernel,
named nowhere). Hand-built: an add, a 60 ms first call of aten::mul, five warm rounds, then a 40 ms sync."""
from __future__ import annotations

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.triage.report import analyze_trace

US, MS = 1_000, 1_000_000


def _cold_then_tail(tmp_path, tail_ns: int):
    ev, t, k = [], 0, 1
    for name, host_ns in [("aten::add", 10 * US), ("aten::mul", 60 * MS)] + [("aten::mul", 10 * US)] * 5:
        end = t + host_ns
        ev += [op(name, t, end + 5 * US, ext=k), call("cudaLaunchKernel", end - 5 * US, end, k, k),
               gpu(f"{name[6:]}_kernel", end + 5 * US, end + 505 * US, k)]
        t, k = end + 510 * US, k + 1
    if tail_ns:
        ev.append(call("cudaDeviceSynchronize", t, t + tail_ns))
    return write(tmp_path / "tail.json.gz", document(ev))


def test_a_warm_ups_remainder_names_the_host_tail_after_the_last_kernel(tmp_path):
    a = analyze_trace(load(_cold_then_tail(tmp_path, 40 * MS), use_cache=False))
    assert a.next_experiment.kind is Experiment.WARM_UP
    nxt = serialize.report(a)["lines"][4]
    assert ("40.0 ms of it the host after the last GPU work in cudaDeviceSynchronize, with no kernel left to wait on "
            "(no GPU work: the profiler's stop, or host work the trace does not show)") in nxt


def test_no_tail_no_words(tmp_path):
    a = analyze_trace(load(_cold_then_tail(tmp_path, 0), use_cache=False))
    assert "after the last GPU work" not in serialize.report(a)["lines"][4]
