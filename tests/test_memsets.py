"""Memsets are memsets: they fill memory on the device and move nothing between memories, so the Measured line does
not call them copies (heldout-user3 hpdl_vgg16_t4: six gpu_memset events, 22.0 µs, read '22.0 µs of copies' on a
trace with no memcpy at all). A hand-built timeline."""
from __future__ import annotations

import kineto_factory as kf
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace


def _report(tmp_path, with_copy: bool):
    launches = kf.chain(20)
    t = launches[-1].gpu_end + 50_000
    extra = [kf.Launch(op_start=t - 10_000, op_end=t + 5_000, call_start=t - 8_000, call_end=t - 4_000,
                       gpu_start=t, gpu_end=t + 4_000, op="aten::zero_", cat="gpu_memset", call="cudaMemsetAsync",
                       kernel="Memset (Device)")]
    if with_copy:
        extra.append(kf.Launch(op_start=t + 10_000, op_end=t + 30_000, call_start=t + 12_000, call_end=t + 28_000,
                               gpu_start=t + 14_000, gpu_end=t + 24_000, op="aten::copy_", cat="gpu_memcpy",
                               call="cudaMemcpyAsync", kernel="Memcpy HtoD (Pinned -> Device)"))
    tr = load(kf.write(tmp_path / f"m{with_copy}.json", kf.document(kf.events_for(launches + extra))), use_cache=False)
    return serialize.report(analyze_trace(tr))


def test_a_trace_whose_only_transfers_are_memsets_says_no_copies(tmp_path):
    out = _report(tmp_path, with_copy=False)
    assert out["memset_us"] == out["copy_us"] == 4.0
    assert "(20 kernels, no copies, 4.0 µs of memsets)" in out["lines"][0]
    assert claims.check(out) == []


def test_copies_and_memsets_are_said_apart(tmp_path):
    out = _report(tmp_path, with_copy=True)
    assert out["memset_us"] == 4.0 and out["copy_us"] == 14.0
    assert "(20 kernels, 10.0 µs of copies, 4.0 µs of memsets)" in out["lines"][0]

