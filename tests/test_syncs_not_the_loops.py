"""remove_syncs removes the loop's syncs, not the copy's own wait nor the window's edge (issue 33, fresh3
bert_pad_max_length-before: "remove or defer the syncs (a tensor in an if (bool(t)), aten::is_nonzero) ... −8%",
where is_nonzero's syncs waited 10 µs; 5.3 ms of the saving was the cudaDeviceSynchronize that drains the unrecorded
warm-up steps' kernels at the window's start, and 4.7 ms the blocking .to(device) of the pageable ids and mask,
which pinning and non_blocking (async_copies) fix, not keeping values on the device)."""
from __future__ import annotations

import kineto_factory as kf
from test_warm_up_drain import drained_warm_up
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.whatif import predict as whatif

US = 1_000


def _pageable_inputs_each_step(steps: int = 4) -> dict:
    """Each step: .to(device) of a pageable batch (cudaMemcpyAsync, then cudaStreamSynchronize that waits until the
    copy, queued behind the previous step's 20 kernels of 1 ms, is done), then 20 kernels launched 50 µs apart."""
    ev: list[dict] = []
    launches: list[kf.Launch] = []
    t, gpu_free, corr = 100 * US, 0, 10_000
    for _ in range(steps):
        copy_start = max(gpu_free, t + 20 * US)
        copy_end = copy_start + 200 * US
        ev += [kf.op("aten::to", t, copy_end + 30 * US),
               kf.call("cudaMemcpyAsync", t + 5 * US, t + 15 * US, corr),
               kf.gpu("Memcpy HtoD (Pageable -> Device)", copy_start, copy_end, corr, cat="gpu_memcpy"),
               kf.call("cudaStreamSynchronize", t + 20 * US, copy_end + 20 * US)]
        corr += 1
        t, g = copy_end + 40 * US, copy_end
        for i in range(20):
            c = t + 50 * US * i
            g = max(g, c + 10 * US)
            launches.append(kf.Launch(op_start=c, op_end=c + 20 * US, call_start=c + 2 * US, call_end=c + 12 * US,
                                      gpu_start=g, gpu_end=g + 1_000 * US, kernel=f"void k{i}<float>(float*)"))
            g += 1_000 * US
        t, gpu_free = t + 20 * 50 * US + 100 * US, g
    return kf.document(ev + kf.events_for(launches))


def test_a_sync_that_waits_for_its_own_host_to_device_copy_is_the_copys_not_a_sync_to_remove(tmp_path):
    path = kf.write(tmp_path / "pageable.json", _pageable_inputs_each_step())
    w = whatif.predict(load(path, use_cache=False), ["remove_syncs", "async_copies"])
    syncs, copies = w.lever("remove_syncs"), w.lever("async_copies")
    assert syncs.assumption.count == 0 and syncs.saving_ns == 0
    assert copies.saving_ns > 0                          # pinned and non_blocking, the copy no longer waits
    a = analyze_file(path)
    assert a.next_experiment.lever is None or a.next_experiment.lever.lever != "remove_syncs"
    assert claims.check(serialize.report(a)) == []


def test_the_sync_that_drains_the_unrecorded_warm_up_is_the_windows_edge_not_the_loops(tmp_path):
    path = kf.write(tmp_path / "drain.json", drained_warm_up())
    w = whatif.predict(load(path, use_cache=False), ["remove_syncs"])
    assert w.lever("remove_syncs").assumption.count == 0
    assert w.lever("remove_syncs").predicted_ns == w.baseline_ns


def test_the_checker_refuses_a_copies_because_that_gives_the_whole_idle_as_the_copies():
    """bert_pad_max_length-before said "compute idles 9% while copies run" where the Idle line gave data transfer
    1%: the checker holds the copies' because to the data-transfer share."""
    from pathlib import Path
    trace = Path(__file__).resolve().parent.parent / "traces" / "probe-transfer-from-numpy.json.gz"
    out = serialize.report(analyze_file(trace))       # idle 100% of the span, data transfer 94%
    assert out["next_experiment"]["kind"] == "overlap_copies"
    assert claims.check(out) == []
    span = out["span_us"]
    copies = out["idle"]["by_cause_us"]["data_transfer"] / span
    assert out["idle_us"] / span - copies > 0.05                  # the whole idle is not the copies' share here
    out["claims"].append({"key": "next.because.idle_share", "value": out["idle_us"] / span, "said": "x%"})
    assert any("while copies run" in p for p in claims.check(out))
