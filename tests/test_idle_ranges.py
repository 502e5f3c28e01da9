"""Host-work idle inside a range the user (or the framework) recorded is not 'untraced': its range names it
(heldout-user3 wenlu_train_opt_4090m: 8.6 ms of the in-window idle inside enumerate(DataLoader) ranges said '89%
untraced: Python, numpy, sleeping'). On the real probe-host-dataloader capture: the DataLoader's __next__ holds the
host-work gaps, with no op in most of them."""
from __future__ import annotations

from pathlib import Path

import kineto_factory as kf
from tracetriage.analyzers.analyses import idle
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

ROOT = Path(__file__).resolve().parent.parent
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def test_host_work_inside_the_dataloaders_range_is_named_not_untraced():
    tr = load(ROOT / "traces" / "probe-host-dataloader.json.gz")
    ev = idle.analyze(tr)[0].evidence[Cause.HOST_WORK]
    names = [r.name for r in ev.ranges]
    assert LOADER in names and not any(n.startswith("ProfilerStep#") for n in names)
    assert ev.in_ranges_share > 0.8 and ev.untraced_share < 0.05      # was '85% untraced'
    assert ev.untraced_share + ev.in_ranges_share <= 1.0
    out = serialize.report(analyze_trace(tr))
    idle_line = out["lines"][2]
    assert f"inside {LOADER} (the DataLoader making batches: the input pipeline)" in idle_line
    assert "untraced: Python, numpy, sleeping" not in idle_line
    assert claims.check(out) == []


def test_without_a_range_around_it_host_work_stays_untraced(tmp_path):
    # 20 kernels, the host 500 µs away between launches with no op and no range: untraced
    tr = load(kf.write(tmp_path / "bare.json", kf.document(kf.events_for(kf.chain(20, gap_ns=500_000)))),
              use_cache=False)
    ev = idle.analyze(tr)[0].evidence[Cause.HOST_WORK]
    assert ev.ranges == () and ev.in_ranges_share == 0.0 and ev.untraced_share > 0.9


def test_a_users_own_range_names_the_time_the_ops_do_not(tmp_path):
    # the same, each host stretch inside a record_function("tokenize") range
    launches = kf.chain(20, gap_ns=500_000)
    ranges = [kf.annotation("tokenize", a.gpu_end + 10_000, b.op_start - 10_000)
              for a, b in zip(launches, launches[1:])]
    tr = load(kf.write(tmp_path / "ranged.json", kf.document(ranges + kf.events_for(launches))), use_cache=False)
    ev = idle.analyze(tr)[0].evidence[Cause.HOST_WORK]
    assert [r.name for r in ev.ranges] == ["tokenize"] and ev.in_ranges_share > 0.9 and ev.untraced_share < 0.1
    assert "inside tokenize" in serialize.report(analyze_trace(tr))["lines"][2]
