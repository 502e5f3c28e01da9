"""A small model's step, its kernels a sliver of it and the host's own work the rest, is offered the knob that
amortises the per-step host cost (a bigger batch, the data on the GPU, CUDA graphs over the step) beside its
host-work Next (heldout-user18 lstmtrain_4090l: a 1.73 ms step, 95% idle, told only to tune its workers and that
taking host work off the critical path "predicts about as much"). Hand-built: ten ProfilerSteps of three 20 µs
kernels and 2 ms of untraced host time."""
from __future__ import annotations

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

US, MS = 1_000, 1_000_000


def _tiny_steps(tmp_path, host_ns: int = 2 * MS, loader: str = ""):
    ev, t, k = [], 0, 1
    for n in range(10):
        s0 = t
        if loader:      # the step's batch fetched first, its host time inside the loader's __next__ range
            ev.append(annotation(loader, t, t + host_ns))
            t += host_ns + 5 * US
        for name in ("aten::mm", "aten::add", "aten::relu"):
            ev += [op(name, t, t + 15 * US, ext=k), call("cudaLaunchKernel", t + 5 * US, t + 12 * US, k, k),
                   gpu(f"{name[6:]}_kernel", t + 14 * US, t + 34 * US, k)]
            t, k = t + 40 * US, k + 1
        t += 0 if loader else host_ns   # the step's own Python: nothing traced
        ev.append(annotation(f"ProfilerStep#{n}", s0, t))
    return write(tmp_path / "tiny.json.gz", document(ev))


def test_a_tiny_models_host_work_next_offers_more_work_per_step(tmp_path):
    a = analyze_trace(load(_tiny_steps(tmp_path), use_cache=False))
    assert a.next_experiment.cause is Cause.HOST_WORK
    out = serialize.report(a)
    assert ("the model is small beside its per-step host cost, which more work per step amortises where that cost "
            "does not grow with the batch: a bigger batch, the data kept on the GPU, CUDA graphs over the whole step"
            ) in out["lines"][4]
    assert claims.check(out) == []


def test_a_busy_step_is_not_told_to_amortise(tmp_path):
    a = analyze_trace(load(_tiny_steps(tmp_path, host_ns=20 * US), use_cache=False))
    assert "amortises" not in serialize.report(a)["lines"][4]


def test_batches_made_in_the_main_process_are_not_told_their_host_cost_is_flat(tmp_path):
    # a single-process DataLoader's __next__ runs __getitem__ per sample and the collate: a bigger batch makes that
    # host cost longer in proportion (traces/probe-host-dataloader), so "more work per step amortises it" is false
    a = analyze_trace(load(_tiny_steps(tmp_path, loader="enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
                           use_cache=False))
    assert a.next_experiment.cause is Cause.HOST_WORK
    assert "amortises" not in serialize.report(a)["lines"][4]


def test_a_worker_fed_loaders_receive_cost_keeps_the_clause(tmp_path):
    # the main process of a worker-fed loader only receives each batch: about flat whatever the batch
    fed = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    a = analyze_trace(load(_tiny_steps(tmp_path, loader=fed), use_cache=False))
    assert a.next_experiment.cause is Cause.HOST_WORK
    assert "amortises" in serialize.report(a)["lines"][4]
