"""Work the report asks of one trace from several places is done once: each thread's top-level op extents (the idle
analysis's host context and the library syncs' outermost ops), the unprofiled replay of a lever's plan that is its
base's (every such plan replays alike), and no pass of the cyclic garbage collector over a one-file report's objects.
The answers are the ones each place found for itself before."""
from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.analyses import library_syncs
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.op_extents import NO_EXTENTS, op_extents
from tracetriage.analyzers.model.trace import CPU_OP, NONE
from tracetriage.analyzers.triage import report as report_mod
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.cli import main

ROOT = Path(__file__).resolve().parents[1]
US = 1_000


def _two_threads(tmp_path) -> Path:
    """Nested ops on two threads (an op inside an op, two extents that touch, one lone op), a cudaDeviceSynchronize
    inside an op and one outside any, and a thread with calls but no op."""
    ev, corr = [], 100
    for tid, t0 in ((1, 0), (2, 5 * US)):
        ev.append(op("aten::linear", t0, t0 + 50 * US, tid=tid))
        ev.append(op("aten::addmm", t0 + 5 * US, t0 + 40 * US, tid=tid))
        ev.append(op("aten::relu", t0 + 50 * US, t0 + 60 * US, tid=tid))
        ev.append(op("aten::item", t0 + 100 * US, t0 + 130 * US, tid=tid))
        ev.append(call("cudaLaunchKernel", t0 + 10 * US, t0 + 14 * US, corr, tid=tid))
        ev.append(gpu("gemm", t0 + 20 * US, t0 + 60 * US, corr))
        ev.append(call("cudaDeviceSynchronize", t0 + 105 * US, t0 + 125 * US, None, tid=tid))
        ev.append(call("cudaDeviceSynchronize", t0 + 200 * US, t0 + 210 * US, None, tid=tid))
        corr += 1
    ev.append(call("cudaMemsetAsync", 300 * US, 302 * US, None, tid=3))
    return write(tmp_path / "t.json.gz", document(ev))


def _extents_each_thread_found(trace) -> dict:
    """What the host context found per thread before: the union of its ops and the first op of each extent."""
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    out = {}
    for tid in np.unique(ev.tid[ops]).tolist():
        o = ops[ev.tid[ops] == tid]
        s, e = iv.union(ev.start[o], ev.end[o])
        out[tid] = (s, e, o[np.searchsorted(ev.start[o], s)])
    return out


def test_each_threads_op_extents_are_the_union_of_its_ops_and_the_outermost_op_of_each(tmp_path):
    trace = load(_two_threads(tmp_path))
    found = op_extents(trace)
    expected = _extents_each_thread_found(trace)
    assert sorted(found) == sorted(expected) == [1, 2]
    for tid, (s, e, rows) in expected.items():
        fs, fe, frows = found[tid]
        assert np.array_equal(fs, s) and np.array_equal(fe, e) and np.array_equal(frows, rows)
        # linear+addmm+relu touch: one extent from linear's start to relu's end, held by aten::linear
        assert [trace.name_of(int(r)) for r in frows] == ["aten::linear", "aten::item"]
    assert 3 not in found and all(len(a) == 0 for a in NO_EXTENTS)


def test_the_library_syncs_read_the_op_extents_the_host_context_found(tmp_path, monkeypatch):
    trace = load(_two_threads(tmp_path))
    op_extents(trace)      # (the idle analysis's host context asks first)
    merged = []
    monkeypatch.setattr(iv, "union", lambda *a: merged.append(a) or (_ for _ in ()).throw(AssertionError))
    ev = trace.ev
    syncs = np.flatnonzero(ev.name == trace.names.index("cudaDeviceSynchronize"))
    outer = library_syncs._outermost_ops(trace, syncs)
    assert merged == []
    assert [trace.name_of(int(o)) if o != NONE else None for o in outer] == ["aten::item", "aten::item", None, None]


def test_plans_that_are_their_base_replay_without_the_profiler_once(monkeypatch):
    trace = load(ROOT / "traces" / "probe-transfer-unpinned-batches.json.gz")
    each = whatif.predict(trace, unprofiled=True)
    replayed = []
    bare = whatif._bare_ratio

    def counted(trace, g, p, run, unchanged, *rest):
        replayed.append(not unchanged and p.same_as_source())
        return bare(trace, g, p, run, unchanged, *rest)

    monkeypatch.setattr(whatif, "_bare_ratio", counted)
    once = whatif.predict(trace, unprofiled=True)
    # six levers' plans here are their base's, of two kinds (moving host work or not): two replays, not six
    assert sum(replayed) <= 2
    assert [(p.lever, p.unprofiled_ratio) for p in once.levers] == [(p.lever, p.unprofiled_ratio) for p in each.levers]
    base_ratios = {p.unprofiled_ratio for p in once.levers if p.unprofiled_ratio is not None}
    assert base_ratios        # (the trace asks unprofiled ratios at all)


def test_a_one_file_report_analyses_without_the_garbage_collector_and_gives_it_back(tmp_path, monkeypatch, capsys):
    path = _two_threads(tmp_path)
    seen = []
    analyze = report_mod.analyze_trace

    def watched(*a, **k):
        seen.append(gc.isenabled())
        return analyze(*a, **k)

    monkeypatch.setattr(report_mod, "analyze_trace", watched)
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")
    assert gc.isenabled()
    assert main(["report", str(path), "--quiet"]) == 0
    assert seen == [False]
    assert gc.isenabled()
    assert "Measured:" in capsys.readouterr().out


def test_the_levers_child_reads_the_setup_windows_and_top_level_ops_the_report_hands_it(monkeypatch):
    # the top-level ops: found by the parent for the windows, read by the child's levers as the ops' sequence (0.03-0.05
    # s of the child's CPU at x5 where it found them again)
    from tracetriage.analyzers.analyses import roofline, setup, steps

    path = ROOT / "traces" / "realworld" / "warm_up_cold--before.json.gz"
    trace = load(path)
    here = report_mod._levers(trace)            # (the levers replayed in this process, finding the windows themselves)
    excess = setup.windows(trace, cold_pass=setup.one_pass(trace))
    assert len(excess[0])      # (a cold trace: set-up windows to hand)
    handed = (roofline.analyze(trace), steps.search(trace), excess, setup.top_level_ops(trace))
    monkeypatch.setattr(setup, "windows", lambda *a, **k: pytest.fail("the child found the windows again"))
    monkeypatch.setattr(setup, "_top_level", lambda *a, **k: pytest.fail("the child found the top-level ops again"))
    child = report_mod._levers(load(path), handed=lambda: handed)     # (a trace of its own, as the fork's is)
    assert [(p.lever, p.predicted_ns, p.unprofiled_ratio) for p in child.all.levers] == \
        [(p.lever, p.predicted_ns, p.unprofiled_ratio) for p in here.all.levers]
