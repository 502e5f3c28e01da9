"""A runtime-only capture (CUDA activity alone, no CPU op) whose host work is short untraced stretches between
launches: the Next names the knob that cuts the ops' eager dispatch (torch.compile, CUDA graphs), says the capture
lacks CPU ops and that the host-work saving is a bound, not "take the host work off the critical path ... py-spy"
(heldout-user18 swin_a4000_warm: 464 launches, the GPU idle 46% in gaps holding only a launch). Hand-built."""
from __future__ import annotations

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

US = 1_000


def _eager(tmp_path, *, ops: bool, gap_ns: int = 120 * US, n: int = 60):
    """n launches of a 100 µs kernel, each call made gap_ns after the last kernel ended (the host dispatching the next
    op); `ops` False: no CPU op recorded around them."""
    ev, t = [], 0
    for k in range(1, n + 1):
        if ops:
            ev.append(op("aten::mul", t, t + gap_ns - 5 * US, ext=k))
        c0 = t + gap_ns - 15 * US
        ev.append(call("cudaLaunchKernel", c0, c0 + 8 * US, k, k if ops else None))
        ev.append(gpu("elementwise_kernel", c0 + 12 * US, c0 + 112 * US, k))
        t = c0 + 112 * US
    return write(tmp_path / ("ops.json.gz" if ops else "runtime.json.gz"), document(ev))


def test_a_runtime_only_captures_dispatch_gaps_get_compile_and_graphs_not_py_spy(tmp_path):
    a = analyze_trace(load(_eager(tmp_path, ops=False), use_cache=False))
    assert a.next_experiment.cause is Cause.HOST_WORK
    out = serialize.report(a)
    nxt = out["lines"][4]
    assert nxt.startswith("Next: cut the ops' eager dispatch between launches: torch.compile the model")
    assert "the capture recorded no CPU op (a runtime-only capture)" in nxt
    assert "py-spy" not in nxt and "precompute" not in nxt
    assert "every untraced host gap gone, a bound on what cutting the dispatch saves" in nxt
    assert claims.check(out) == []


def test_host_work_inside_recorded_ops_keeps_its_own_advice(tmp_path):
    # (CPU ops recorded: the gaps are the ops' own host time, named by them; the runtime-only words are not said)
    a = analyze_trace(load(_eager(tmp_path, ops=True), use_cache=False))
    assert "runtime-only capture" not in serialize.report(a)["lines"][4]
