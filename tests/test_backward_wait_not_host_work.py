"""The forward's thread waiting in torch.autograd.backward while the autograd engine's thread issues the backward
(and the engine's thread idle through the next forward) is no host work: no_host_work prices only what a thread
runs after its work was handed to it. leimao's eager MLP had 18.5 ms of such waits priced as host work in a
17.5 ms span. Hand-built two-thread trace."""
from __future__ import annotations

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.whatif import predict as whatif

US = 1_000
MAIN, ENGINE = 1, 2
STEPS, LAUNCHES, STEP = 4, 10, 260 * US


def _launches(tid: int, t0: int, n: int, first: int) -> list[dict]:
    out = []
    for i in range(n):
        s, k = t0 + i * 10 * US, first + i
        out += [op("aten::mm", s, s + 8 * US, ext=k, tid=tid), call("cudaLaunchKernel", s + 2 * US, s + 7 * US, k, k,
                                                                       tid=tid),
                gpu("gemm", s + 10 * US, s + 18 * US, k)]
    return out


def _train_loop(tmp_path, python_after_backward: int = 0):
    """STEPS steps: a forward of 10 launches on the main thread, the backward's 10 on the engine's thread, the
    optimizer's launch on the main thread 20 µs after the engine's last (plus `python_after_backward` of host work
    that issues nothing)."""
    ev, k = [], 1
    for s in range(STEPS):
        t0 = s * (STEP + python_after_backward)
        ev += _launches(MAIN, t0, LAUNCHES, k)
        k += LAUNCHES
        ev += _launches(ENGINE, t0 + 120 * US, LAUNCHES, k)
        k += LAUNCHES
        ev += _launches(MAIN, t0 + 240 * US + python_after_backward, 1, k)
        k += 1
    return write(tmp_path / "train.json.gz", document(ev))


def test_the_forward_threads_wait_for_the_backward_is_no_host_work(tmp_path):
    lever = whatif.predict_file(_train_loop(tmp_path), levers=["no_host_work"]).lever("no_host_work")
    # before: each step's ~130 µs wait of the main thread and the engine thread's ~280 µs through the forward
    assert lever.detail["host_ns"] == 0
    assert lever.predicted_ratio > 0.999


def test_host_work_after_the_backward_hands_back_is_still_priced(tmp_path):
    lever = whatif.predict_file(_train_loop(tmp_path, 150 * US), levers=["no_host_work"]).lever("no_host_work")
    assert STEPS * 140 * US <= lever.detail["host_ns"] <= STEPS * 175 * US
    assert lever.predicted_ratio < 0.8
