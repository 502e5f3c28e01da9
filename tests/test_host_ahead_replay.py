"""A host that runs milliseconds ahead of a device still busy with a backlog queued before the profiled window (the
profiler's warm-up steps), as a whole-step torch.cuda.graph loop does: the replay keeps the queue's order and lets
faster kernels finish sooner (public trace_with_manual_capture, 98% busy: kernels_2x said −11% where halving the
kernels halves the span)."""
from __future__ import annotations

import numpy as np

from tests.kineto_factory import annotation, call, document, gpu, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import depgraph
from tracetriage.analyzers.whatif import predict as whatif

US = 1_000
KERNEL_NS = 100 * US


def _host_ahead(tmp_path, steps: int = 5, per_step: int = 10, backlog: int = 20):
    """`backlog` kernels with no launch call in the trace run first, back to back; meanwhile the host launches one
    graph of `per_step` kernels a step, 50 µs apart, and then waits in cudaDeviceSynchronize for all of it."""
    ev, t, corr = [], 200 * US, 1
    for _ in range(backlog):                      # queued before the window: no call carries their correlation
        ev.append(gpu("void backlog<float>(float*)", t, t + KERNEL_NS, 900_000 + corr))
        t += KERNEL_NS
        corr += 1
    for s in range(steps):
        c0 = 100 * US + 50 * US * s
        ev.append(annotation(f"ProfilerStep#{s + 3}", c0 - 5 * US, c0 + 40 * US))
        ev.append(call("cudaGraphLaunch", c0, c0 + 30 * US, corr=corr))
        for _ in range(per_step):                 # each waits behind the backlog and the steps before it
            ev.append(gpu("void step<float>(float*)", t, t + KERNEL_NS, corr))
            t += KERNEL_NS
        corr += 1
    sync0 = 100 * US + 50 * US * steps
    ev.append(call("cudaDeviceSynchronize", sync0, t + 10 * US, corr=corr))
    return write(tmp_path / "host_ahead.json", document(ev)), t


def test_a_backlog_before_the_window_keeps_its_place_at_the_head_of_its_queue(tmp_path):
    path, _ = _host_ahead(tmp_path)
    g = depgraph.build(load(path))
    order = np.lexsort((g.g_start, g.g_queue))
    in_queue_order = np.arange(len(g.g_row))
    # the graph's queue order (queue, call, start) is the order the activities ran in
    assert (order == in_queue_order).all()


def test_a_host_far_ahead_is_no_launch_latency_of_its_kernels(tmp_path):
    path, _ = _host_ahead(tmp_path)
    g = depgraph.build(load(path))
    # every launched kernel waited behind the queue: none shows how long a launch takes to start one
    assert g.lat_typ_ns <= depgraph.DEFAULT_LAT_NS


def test_halving_the_kernels_of_a_busy_device_halves_its_span(tmp_path):
    path, _ = _host_ahead(tmp_path)
    w = whatif.predict(load(path), ["kernels_2x"])
    busy = (20 + 5 * 10) * KERNEL_NS
    # the device is busy for all but the first 100 µs and the sync's tail: half the kernel time comes off
    assert abs(w.lever("kernels_2x").saving_ns - busy / 2) < 0.05 * busy
