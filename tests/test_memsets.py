"""Memsets are memsets: they fill memory on the device and move nothing between memories, so the Measured line does
not call them copies (heldout-user3 hpdl_vgg16_t4: six gpu_memset events, 22.0 µs, read '22.0 µs of copies' on a
trace with no memcpy at all). A device-to-device copy likewise reads and writes the device's own memory: both are
device work, counted busy, never idle 'data transfer' (fresh4 gpt2_manual_attention-before: 18 GB of DtoD copies
from .contiguous() inside attention read as idle data transfer on a 97%-busy device). A hand-built timeline."""
from __future__ import annotations

import kineto_factory as kf
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace


def _report(tmp_path, with_copy: bool, copy_kind: str = "Memcpy HtoD (Pinned -> Device)"):
    launches = kf.chain(20)
    t = launches[-1].gpu_end + 50_000
    extra = [kf.Launch(op_start=t - 10_000, op_end=t + 5_000, call_start=t - 8_000, call_end=t - 4_000,
                       gpu_start=t, gpu_end=t + 4_000, op="aten::zero_", cat="gpu_memset", call="cudaMemsetAsync",
                       kernel="Memset (Device)")]
    if with_copy:
        extra.append(kf.Launch(op_start=t + 10_000, op_end=t + 30_000, call_start=t + 12_000, call_end=t + 28_000,
                               gpu_start=t + 14_000, gpu_end=t + 24_000, op="aten::copy_", cat="gpu_memcpy",
                               call="cudaMemcpyAsync", kernel=copy_kind))
    path = tmp_path / f"m{with_copy}{copy_kind[7:11]}.json"
    tr = load(kf.write(path, kf.document(kf.events_for(launches + extra))), use_cache=False)
    return serialize.report(analyze_trace(tr))


def test_a_trace_whose_only_transfers_are_memsets_says_no_copies(tmp_path):
    out = _report(tmp_path, with_copy=False)
    assert out["memset_us"] == 4.0 and out["copy_us"] == 0.0
    assert "(20 kernels, no copies, 4.0 µs of memsets)" in out["lines"][0]
    assert out["idle"]["by_cause_us"]["data_transfer"] == 0.0      # the memset is work, not a transfer
    assert claims.check(out) == []


def test_copies_and_memsets_are_said_apart(tmp_path):
    out = _report(tmp_path, with_copy=True)
    assert out["memset_us"] == 4.0 and out["copy_us"] == 10.0
    assert "(20 kernels, 10.0 µs of copies, 4.0 µs of memsets)" in out["lines"][0]
    assert out["idle"]["by_cause_us"]["data_transfer"] == 10.0     # the host copy is, while no kernel runs


def test_a_device_to_device_copy_is_device_work_not_idle_data_transfer(tmp_path):
    host = _report(tmp_path, with_copy=True)
    out = _report(tmp_path, with_copy=True, copy_kind="Memcpy DtoD (Device -> Device)")
    assert out["copy_us"] == 0.0 and out["dtod_copy_us"] == 10.0 and out["memset_us"] == 4.0
    assert "(20 kernels, no host copies, 10.0 µs of device-to-device copies, 4.0 µs of memsets)" in out["lines"][0]
    assert out["idle"]["by_cause_us"]["data_transfer"] == 0.0
    # the copy's 10 µs moved from idle to busy: the same span, the same total
    assert out["kernel_busy_us"] == host["kernel_busy_us"] + 10.0
    assert out["idle_us"] == host["idle_us"] - 10.0
    assert "data transfer" not in out["lines"][2]
    assert claims.check(out) == []



def test_the_checker_catches_device_work_counted_as_idle_data_transfer(tmp_path):
    out = _report(tmp_path, with_copy=True)
    assert claims.check(out) == []
    ev = out["idle"]["evidence"]["data_transfer"]
    ev["copies"] = [dict(ev["copies"][0], name="Memcpy DtoD (Device -> Device)")]
    out["idle"]["by_cause_us"]["data_transfer"] = out["idle_us"] + 10.0
    assert claims.check(out)[-2:] == [
        "the idle's data transfer counts Memcpy DtoD (Device -> Device) (device work, not a copy over the link)",
        f"the idle's data transfer ({out['idle_us'] + 10.0:.1f} µs) is longer than the idle ({out['idle_us']} µs)"]
