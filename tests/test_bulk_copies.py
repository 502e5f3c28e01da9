"""Bulk copies to and from the host (MB each, pageable) are data the host needs, not values it reads: the sync lever
leaves them to pinned memory and non_blocking (async_copies), where a scalar read (.item(), 8 bytes) stays its own.
(heldout-user19 gp_streams: 100 pageable `.to("cpu")` of 4 MB each were called syncs to "remove or defer ... read
once every N steps", −26%, and pinning was demoted as "a bigger change".)"""
import kineto_factory as kf
from kineto_factory import call, document, gpu, op
from other_peoples_traces import US, with_device
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.whatif import predict as whatif


def _products_and_copies(rounds: int = 20, nbytes: int = 4_194_304, d2h_ns: int = 800 * US) -> dict:
    """Each round: one 1 ms GEMM, a blocking pageable `.to("cpu")` of its result (the call holds the host for the
    copy, then the stream sync torch adds) and a blocking pageable `.to("cuda")` of the next input, `nbytes` each."""
    ev, t, ext, corr = [], 100 * US, 1, 1000
    g = t
    for _ in range(rounds):
        ev += [op("aten::mm", t, t + 20 * US, ext), call("cudaLaunchKernel", t + 5 * US, t + 12 * US, corr, ext),
               gpu("ampere_sgemm_128x64_nn", max(g, t + 15 * US), max(g, t + 15 * US) + 1000 * US, corr)]
        g = max(g, t + 15 * US) + 1000 * US
        t, ext, corr = t + 30 * US, ext + 1, corr + 1
        # the copy off the device waits for the GEMM (same stream), then runs d2h_ns
        c0 = max(g, t + 10 * US)
        ev += [op("aten::copy_", t, c0 + d2h_ns + 40 * US, ext),
               call("cudaMemcpyAsync", t + 5 * US, c0 + d2h_ns + 20 * US, corr, ext),
               gpu("Memcpy DtoH (Device -> Pageable)", c0, c0 + d2h_ns, corr, cat="gpu_memcpy", bytes=nbytes),
               call("cudaStreamSynchronize", c0 + d2h_ns + 25 * US, c0 + d2h_ns + 35 * US, corr + 1, ext)]
        g = c0 + d2h_ns
        t, ext, corr = c0 + d2h_ns + 60 * US, ext + 1, corr + 2
        ev += [op("aten::copy_", t, t + d2h_ns + 60 * US, ext),
               call("cudaMemcpyAsync", t + 5 * US, t + d2h_ns + 30 * US, corr, ext),
               gpu("Memcpy HtoD (Pageable -> Device)", t + 20 * US, t + 20 * US + d2h_ns, corr, cat="gpu_memcpy",
                   bytes=nbytes),
               call("cudaStreamSynchronize", t + d2h_ns + 35 * US, t + d2h_ns + 50 * US, corr + 1, ext)]
        g = max(g, t + 20 * US + d2h_ns)
        t, ext, corr = t + d2h_ns + 80 * US, ext + 1, corr + 2
    ev.append(call("cudaDeviceSynchronize", t, max(t, g) + 10 * US, corr))
    return with_device(document(ev), "NVIDIA A100-SXM4-80GB")


def _report(tmp_path, doc):
    path = kf.write(tmp_path / "t.json", doc)
    return path, serialize.report(analyze_file(path))


def test_bulk_pageable_copies_are_priced_by_pinning_not_by_removing_syncs(tmp_path):
    path, out = _report(tmp_path, _products_and_copies())
    nx = out["lines"][4]
    assert out["next_experiment"]["whatif_lever"] == "async_copies"
    assert nx.startswith("Next: pin host memory, copy with non_blocking=True")
    assert "remove or defer the syncs" not in nx and "read them once every N steps" not in nx
    levers = {x.lever: x for x in whatif.predict(load(path), ['remove_syncs']).levers}
    assert levers["remove_syncs"].assumption.count == 0      # the 4 MB copies are no syncs to remove
    assert claims.check(out) == []


def test_scalar_reads_off_the_device_stay_the_sync_levers(tmp_path):
    # the same loop reading 8 bytes a round (.item()): values the host reads, which can stay on the device
    path, _ = _report(tmp_path, _products_and_copies(nbytes=8, d2h_ns=3 * US))
    levers = {x.lever: x for x in whatif.predict(load(path), ['remove_syncs']).levers}
    assert levers["remove_syncs"].assumption.count >= 20


def _products_beside_longer_copies(copy_ns: int = 1_000 * US, tail_copies: int = 5) -> dict:
    """Ten 1 ms GEMMs queued on stream 7 (their launches 20 µs apart), ten pageable `.to("cuda")` of 4 MB on stream 24
    beside them (each call holding the host for its `copy_ns` copy), then `tail_copies` pageable `.to("cpu")` of 4 MB,
    1.5 ms each, after the last GEMM: the kernels keep the device busy over half the span, the copies longer."""
    ev, t, ext, corr = [], 100 * US, 1, 1000
    g = t + 20 * US
    for _ in range(10):
        ev += [op("aten::mm", t, t + 15 * US, ext), call("cudaLaunchKernel", t + 3 * US, t + 10 * US, corr, ext),
               gpu("ampere_sgemm_128x64_nn", g, g + 1000 * US, corr)]
        g, t, ext, corr = g + 1000 * US, t + 20 * US, ext + 1, corr + 1
    c = t + 10 * US
    for _ in range(10):
        ev += [op("aten::copy_", t, c + copy_ns + 10 * US, ext),
               call("cudaMemcpyAsync", t + 5 * US, c + copy_ns + 5 * US, corr, ext),
               gpu("Memcpy HtoD (Pageable -> Device)", c, c + copy_ns, corr, stream=24, cat="gpu_memcpy",
                   bytes=4_194_304)]
        t, ext, corr = c + copy_ns + 20 * US, ext + 1, corr + 1
        c = t + 10 * US
    c = max(c, g + 10 * US)
    for _ in range(tail_copies):
        ev += [op("aten::copy_", t, c + 1500 * US + 10 * US, ext),
               call("cudaMemcpyAsync", t + 5 * US, c + 1500 * US + 5 * US, corr, ext),
               gpu("Memcpy DtoH (Device -> Pageable)", c, c + 1500 * US, corr, stream=22, cat="gpu_memcpy",
                   bytes=4_194_304)]
        t, ext, corr = c + 1500 * US + 20 * US, ext + 1, corr + 1
        c = t + 10 * US
    return with_device(document(ev), "NVIDIA A100-SXM4-80GB")


def test_copies_that_hold_the_device_longer_than_the_kernels_make_the_span_transfer_bound(tmp_path):
    # (heldout-user19 gp_streams: "Regime: GPU-bound in fp32 math on CUDA cores ... the device is busy 51% of the
    # span", where the copies held the device 269.9 ms against the GEMMs' 261.7 ms and the span's last 176 ms was
    # copies alone)
    _, out = _report(tmp_path, _products_beside_longer_copies())
    assert out["idle_share"] < 0.5                     # not idle-bound: the kernels' mix decided the regime before
    regime = out["lines"][3]
    assert regime.startswith("Regime: transfer-bound: copies over the link hold the device 17.5 ms, more than its "
                             "kernels' 10.0 ms, and the span runs ")
    assert "; its kernels (" in regime
    assert out["regime_detail"]["bound"] == "transfer"
    assert claims.check(out) == []


def test_copies_shorter_than_the_kernels_leave_the_regime_to_the_kernels(tmp_path):
    _, out = _report(tmp_path, _products_beside_longer_copies(copy_ns=200 * US, tail_copies=0))
    assert not out["lines"][3].startswith("Regime: transfer-bound")
    assert out["regime_detail"]["bound"] != "transfer"
    assert claims.check(out) == []


def test_the_pinned_rate_a_trace_measures_prices_its_pageable_copies_both_ways(tmp_path):
    # (heldout-user19 gp_streams: its own pinned DtoH copies ran 12.5 GB/s beside pageable ones at 5.1 GB/s; the
    # pageable HtoD copies were priced at an assumed 16 GB/s, and the Next said no rate of the trace's pinned copies)
    doc = _products_and_copies()
    for i, e in enumerate(x for x in doc["traceEvents"] if x.get("name") == "Memcpy DtoH (Device -> Pageable)"):
        if i % 2:
            e["name"], e["dur"] = "Memcpy DtoH (Device -> Pinned)", 300     # 4 MB in 300 µs: 14.0 GB/s
    path, out = _report(tmp_path, doc)
    pin = whatif.predict(load(path), ["async_copies"]).levers[0].assumption
    assert pin.d2h_source == "trace" and pin.h2d_source == "trace_other_way" and pin.h2d_gbps == pin.d2h_gbps
    assert out["next_experiment"]["whatif_lever"] == "async_copies"
    assert "(this trace's own pinned copies run at 14 GB/s from the device: the rate the replay gives its " \
           "pageable copies pinned)" in out["lines"][4]
    assert claims.check(out) == []
