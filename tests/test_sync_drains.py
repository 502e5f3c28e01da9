"""A sync is counted once per call, and only where it serialises traced work (fresh4 preprocess_compiled_roof-before:
"synchronization 12%: 7 drains, after cudaDeviceSynchronize x7" where the trace holds three cudaDeviceSynchronize
calls, all the harness's at the profiled window's edges, and the workload syncs nowhere).

1. One sync call is one drain, however many launch gaps of its recovery charge_sync_recovery hands it: the real
   smell-sync-nonzero trace (80 boolean-mask indexings, one cudaStreamSynchronize each) said "235 drains ...
   cudaStreamSynchronize x235".
2. A sync before the trace's first launch drains what was queued before the profiler started, and one after its last
   waits for the window's end: the idle after them is the loop starting, not the workload syncing (a synthetic
   trace of that shape: the preprocess trace is not ours to commit)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import kineto_factory as kf
from tracetriage.analyzers.analyses import idle
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

ROOT = Path(__file__).resolve().parent.parent


def test_one_sync_call_is_one_drain_however_many_gaps_its_recovery_holds():
    tr = load(ROOT / "traces" / "smell-sync-nonzero.json.gz")
    ev = idle.analyze(tr)[0].evidence[Cause.SYNCHRONIZATION]
    assert ev.gaps > ev.drains == 80          # the recovery's gaps are more, the calls are 80
    assert [(c.name, c.count) for c in ev.sync_calls] == [("cudaStreamSynchronize", 80)]
    out = serialize.report(analyze_trace(tr))
    assert "80 drains" in out["lines"][2] and "cudaStreamSynchronize ×80" in out["lines"][2]
    assert claims.check(out) == []


def _harness_window(tmp_path) -> dict:
    """A compiled step profiled by a harness: torch.cuda.synchronize() at the window's start drains 4 kernels the
    unrecorded warm-up queued (no launch call in the trace), then 3 steps of 5 launches, the host 150 µs of Python
    between steps (no sync), and torch.cuda.synchronize() after the last launch."""
    us = 1_000
    ev = [kf.gpu("warm", k * 200 * us, (k + 1) * 200 * us, 900_000 + k) for k in range(4)]
    ev.append(kf.call("cudaDeviceSynchronize", 20 * us, 800 * us + 15 * us))
    launches, t, g = [], 900 * us, 0
    for _ in range(3):
        for i in range(5):
            c = t + 12 * us * i
            g = max(g, c + 6 * us)
            launches.append(kf.Launch(op_start=c, op_end=c + 10 * us, call_start=c + 2 * us, call_end=c + 8 * us,
                                      gpu_start=g, gpu_end=g + 40 * us, kernel=f"triton_poi_{i}"))
            g += 40 * us
        t = g + 150 * us
    ev.append(kf.call("cudaDeviceSynchronize", g - 30 * us, g + 5 * us))
    return kf.document(ev + kf.events_for(launches))


def test_harness_syncs_at_the_windows_edges_are_not_the_workloads_syncs(tmp_path):
    tr = load(kf.write(tmp_path / "edges.json", _harness_window(tmp_path)), use_cache=False)
    d = idle.analyze(tr)[0]
    assert d.by_cause_ns[Cause.SYNCHRONIZATION] == 0
    assert d.evidence[Cause.SYNCHRONIZATION].drains == 0
    assert d.idle_ns > 0 and int(np.sum(list(d.by_cause_ns.values()))) == d.idle_ns
    out = serialize.report(analyze_trace(tr))
    assert "synchronization" not in out["lines"][2] and "cudaDeviceSynchronize" not in out["lines"][2]


def test_the_checker_catches_a_sync_call_counted_once_per_gap():
    out = serialize.report(analyze_trace(load(ROOT / "traces" / "smell-sync-nonzero.json.gz")))
    ev = out["idle"]["evidence"]["synchronization"]
    ev["sync_calls"] = [dict(ev["sync_calls"][0], count=ev["gaps"])]
    assert claims.check(out) == [f"the syncs are named {ev['gaps']} times after 80 drains: a call counted once per gap"]
