"""The host-work evidence measures, of each thread's ops, only those that can hold a gap as long as it asks: an op
covers at most its own length of the gaps, so an op shorter than the threshold (host_long) is never a candidate, and
measuring its coverage (x5: 300k+ ops, ~30 ms of the report's own analyses) changed nothing. The ops that held the
host are still named: an op begun before a gap that held the host through it."""
from __future__ import annotations

import numpy as np

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.analyses import first_calls, held_host, idle
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.triage import report as report_mod

US = 1_000
SHORT = "aten::view"


def _steps_with_a_stall(tmp_path):
    """Ten steps of one launching op and a few short ops; in step 4 an aten::randn begun while the step's kernel
    still ran holds the host 5 ms and launches nothing; step 2's aten::conv holds it 4 ms before its launch, its
    later calls 30 µs."""
    ev, corr, t = [], 1, 0
    for i in range(10):
        ev.append(op("aten::linear", t, t + 20 * US))
        ev.append(call("cudaLaunchKernel", t + 5 * US, t + 10 * US, corr))
        ev.append(gpu("gemm", t + 12 * US, t + 60 * US, corr))
        corr += 1
        for j in range(4):
            ev.append(op(SHORT, t + 21 * US + j * 2 * US, t + 22 * US + j * 2 * US))
        conv = 4_000 * US if i == 2 else 30 * US
        ev.append(op("aten::conv", t + 30 * US, t + 30 * US + conv))
        ev.append(call("cudaLaunchKernel", t + 30 * US + conv - 10 * US, t + 30 * US + conv - 5 * US, corr))
        ev.append(gpu("conv_kernel", t + 30 * US + conv, t + 50 * US + conv, corr))
        corr += 1
        t += 30 * US + conv + 50 * US
        if i == 4:
            ev.append(op("aten::randn", t - 20 * US, t + 5_000 * US))
            t += 5_000 * US
    return write(tmp_path / "stall.json.gz", document(ev))


def test_short_ops_are_not_measured_and_the_ops_that_held_the_host_are_still_named(tmp_path, monkeypatch):
    trace = load(_steps_with_a_stall(tmp_path))
    ev = trace.ev
    short = np.flatnonzero(ev.name == trace.names.index(SHORT))
    short_spans = set(zip(ev.start[short].tolist(), ev.end[short].tolist()))
    asked, found = [], {}
    covered = iv.covered

    def recording(starts, ends, qs, qe):
        asked.extend(zip(np.asarray(qs).tolist(), np.asarray(qe).tolist()))
        return covered(starts, ends, qs, qe)

    events_in, calls = held_host.host_events_in, first_calls.first_calls

    def keep_events(*a, **k):
        found["events"] = events_in(*a, **k)
        return found["events"]

    def keep_calls(*a, **k):
        found["first"] = calls(*a, **k)
        return found["first"]

    monkeypatch.setattr(iv, "covered", recording)
    monkeypatch.setattr(idle, "host_events_in", keep_events)
    monkeypatch.setattr(idle, "first_calls", keep_calls)
    report_mod.analyze_trace(trace)
    assert asked and not short_spans & set(asked)
    named = [x.name for x in found["events"][0]]
    assert "aten::randn" in named
    assert found["first"].calls == ()    # (aten::conv's first call issues its kernel: host work, no set-up)
