"""A span under the idle-bound share whose device still idles 40% or more of it waiting on the host says the host
paces it in the Regime headline, before its kernels' bound (heldout-user18 swin_a4000_warm: "compute-bound: of kernel
time, 56% is compute-bound ..." beside its own Idle line's 46% idle, all host work and launch overhead). Hand-built
runtime-only loop: 100 µs elementwise kernels, each launched after the host's gap."""
from __future__ import annotations

from test_runtime_only_dispatch import _eager
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Regime
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

US = 1_000


def test_a_memory_bound_span_idling_on_the_host_reads_host_paced(tmp_path):
    a = analyze_trace(load(_eager(tmp_path, ops=False, gap_ns=95 * US), use_cache=False))
    assert a.verdict.regime is Regime.MEMORY and 0.4 <= a.verdict.idle_share <= 0.5
    out = serialize.report(a)
    assert out["lines"][3].startswith("Regime: host-paced, its kernels memory-bound: the device idles ")
    assert "of the span waiting on the host (host work then launch overhead); of kernel time" in out["lines"][3]
    assert out["regime"] == "memory" and claims.check(out) == []


def test_a_busy_span_keeps_its_kernels_headline(tmp_path):
    a = analyze_trace(load(_eager(tmp_path, ops=False, gap_ns=30 * US), use_cache=False))
    assert serialize.report(a)["lines"][3].startswith("Regime: memory-bound")


def test_the_pacing_threshold_is_the_verdicts_idle_bound():
    from tracetriage.analyzers.analyses.roofline import OVERHEAD_IDLE_SHARE
    from tracetriage.analyzers.voice import host_paced
    assert host_paced.OVERHEAD_IDLE_SHARE == OVERHEAD_IDLE_SHARE
