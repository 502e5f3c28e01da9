"""One-time set-up in the profile (analyses/first_calls, called from analyses/idle): an op's first call that held
the host against its later calls, and set-up held in an API call; found in one pass over the trace."""
import dataclasses
from pathlib import Path

import numpy as np

import kineto_factory as kf
from tracetriage.analyzers.analyses import idle
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.evidence import FirstCall

TRACES = Path(__file__).resolve().parent.parent / "traces"
US = 1000


class _Launches:
    """cpu_ops on one thread, each launching one 10 µs kernel (times in ns from the trace start)."""

    def __init__(self):
        self.events: list[dict] = []
        self.corr = 0

    def op(self, name: str, start: int, end: int, call_at: int, gpu_at: int, tid: int = kf.TID) -> None:
        self.corr += 1
        c = self.corr
        self.events += [kf.op(name, start, end, ext=c, tid=tid),
                        kf.call("cudaLaunchKernel", call_at, call_at + 4 * US, corr=c, ext=c, tid=tid),
                        kf.gpu("void k<float>(float*)", gpu_at, gpu_at + 10 * US, c)]


def _setup_trace(tmp_path: Path) -> Path:
    """aten::linear's first call holds the host 5 ms (its later calls take 50 µs), then the allocator grows
    its pool in a 3 ms cudaMalloc outside any op (a later cudaMalloc takes 5 µs); aten::mul is always quick."""
    t = _Launches()
    t.op("aten::mul", 0, 10 * US, 2 * US, 8 * US)
    t.op("aten::linear", 20 * US, 5020 * US, 5010 * US, 5015 * US)
    at = 5030 * US
    for _ in range(3):
        t.op("aten::mul", at, at + 10 * US, at + 2 * US, at + 8 * US)
        at += 20 * US
        t.op("aten::linear", at, at + 50 * US, at + 40 * US, at + 45 * US)
        at += 60 * US
    t.events.append(kf.call("cudaMalloc", at, at + 3000 * US))
    at += 3010 * US
    t.events.append(kf.call("cudaMalloc", at, at + 5 * US))
    at += 10 * US
    t.op("aten::mul", at, at + 10 * US, at + 2 * US, at + 8 * US)
    return kf.write(tmp_path / "setup.json.gz", kf.document(t.events))


def test_an_ops_slow_first_call_and_a_long_allocator_call_are_the_set_up_and_nothing_else(tmp_path):
    (dev,) = idle.analyze(load(_setup_trace(tmp_path), use_cache=False))
    s = dev.setup
    assert s.calls == (FirstCall("aten::linear", 5000.0, 50.0, 4995.0), FirstCall("cudaMalloc", 3000.0, 5.0, 3000.0))
    # the windows: the first aten::linear and the long cudaMalloc, on their thread
    origin = kf.ORIGIN_NS
    assert (s.start - origin).tolist() == [20 * US, 5270 * US] and (s.end - origin).tolist() == [5020 * US, 8270 * US]
    assert s.pid.tolist() == [kf.PID] * 2 and s.tid.tolist() == [kf.TID] * 2


def test_the_set_up_of_the_toy_training_script_profiled_from_its_first_step():
    (dev,) = idle.analyze(load(TRACES / "script-toy-train.json.gz"))
    assert dev.setup.calls == (
        FirstCall("aten::linear", 80424.3, 97.7, 80390.4),   # (later: its calls on a shape seen before)
        FirstCall("autograd::engine::evaluate_function: AddmmBackward0", 33455.8, 122.0, 33414.2),
        FirstCall("aten::mse_loss", 30331.8, 63.4, 30322.0),
        FirstCall("aten::_foreach_sqrt", 26197.4, 43.9, 26170.3),
        FirstCall("autograd::engine::evaluate_function: MseLossBackward0", 24135.5, 132.9, 24132.7))
    assert len(dev.setup.start) == 13


class _CountedNames(np.ndarray):
    """The trace's name column, counting the elements every ufunc (==, != ...) reads from it."""
    read = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        plain = [x.view(np.ndarray) if isinstance(x, _CountedNames) else x for x in inputs]
        _CountedNames.read += max(np.size(x) for x in plain)
        return getattr(ufunc, method)(*plain, **kw)


def _names_read(tmp_path: Path, n_ops: int) -> int:
    """Elements of the name column first_calls compares when every one of n_ops outermost ops (three names,
    each op 50 µs, one launch each) lies in an idle gap: every op is a candidate."""
    t = _Launches()
    for i in range(n_ops):
        at = i * 100 * US
        t.op(("aten::mul", "aten::add", "aten::linear")[i % 3], at, at + 50 * US, at + 40 * US, at + 45 * US)
    trace = load(kf.write(tmp_path / f"ops{n_ops}.json.gz", kf.document(t.events)), use_cache=False)
    trace = dataclasses.replace(trace, ev=dataclasses.replace(trace.ev, name=trace.ev.name.view(_CountedNames)))
    ctx = idle._host_context(trace)
    ev = trace.ev
    _CountedNames.read = 0
    idle.first_calls(trace, np.array([int(ev.start.min())]), np.array([int(ev.end.max())]), ctx, host_long=0)
    return _CountedNames.read


def test_first_calls_reads_the_names_a_bounded_number_of_times_per_op_not_once_per_candidate(tmp_path):
    # a pass over the thread's names per candidate op was quadratic: 4x the ops read 16x the names
    small, large = _names_read(tmp_path, 100), _names_read(tmp_path, 400)
    assert large <= 4.5 * small
    assert large <= 10 * 400
