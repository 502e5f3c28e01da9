"""The Regime verdict reads the work that recurs: a cold start's gaps are taken out of the idle and the span before
the verdict, so collectives (or kernels with a roof) that hold the rest name the regime, and the cold start is its
qualifier and the Next's warm-up (heldout-user18 llama4l_4090: "set-up-bound (a cold start)" over NCCL
reduce-scatters and all-gathers holding 85% of the kernel time, the device busy 97% after its 426 ms of first calls;
its rank 1, a little less idle, read "communication-bound"). The week's waste beside it no longer says that nothing
the profile shows recurs. Hand-built: an mm, a 60 ms first call of aten::index_put_, then 10 rounds of a 4 ms
all-reduce and a 0.5 ms mm, launched back to back."""
from __future__ import annotations

import copy

import pytest

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Experiment, Regime
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

US, MS = 1_000, 1_000_000
AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GRAD = 64 << 20


def _cold_collectives(tmp_path, setup_ns: int = 60 * MS, rounds: int = 10):
    ev, k = [], 1

    def launch(name, t, host_ns, kernel, kernel_ns, **args):
        nonlocal k
        end = t + host_ns   # the op's launch call returns at `end`, its kernel starts 5 µs later
        ev.extend([op(name, t, end + 5 * US, ext=k), call("cudaLaunchKernel", t + 2 * US, end, k, k),
                   gpu(kernel, end + 5 * US, end + 5 * US + kernel_ns, k, **args)])
        k += 1
        return end + 5 * US + kernel_ns

    t = launch("aten::mm", 0, 10 * US, "mm_kernel", 500 * US)
    t = launch("aten::index_put_", t + 20 * US, setup_ns, "index_put_kernel", 10 * US)   # the first call: set-up
    for _ in range(rounds):
        t = launch("aten::index_put_", t + 20 * US, 10 * US, "index_put_kernel", 10 * US)
        t = launch("record_param_comms", t + 20 * US, 10 * US, AR, 4 * MS, **{
            "Collective name": "allreduce", "In msg nelems": GRAD, "Out msg nelems": GRAD, "Group size": 2,
            "dtype": "BFloat16"})
        t = launch("aten::mm", t + 20 * US, 10 * US, "mm_kernel", 500 * US)
    return write(tmp_path / "cold_collectives.json.gz", document(ev, rank=0))


@pytest.fixture
def cold(tmp_path):
    a = analyze_trace(load(_cold_collectives(tmp_path), use_cache=False))
    return a, serialize.report(a)


def test_collectives_after_a_cold_start_name_the_regime_and_the_cold_start_qualifies_it(cold):
    a, out = cold
    assert a.verdict.idle_share > 0.5   # the span's own idle, as the Idle line says it: 60 ms of 107
    assert a.verdict.regime is Regime.COMMUNICATION
    assert a.next_experiment.kind is Experiment.WARM_UP
    regime = out["lines"][3]
    assert regime.startswith("Regime: communication-bound: collectives with no compute kernel beside them hold 88%")
    assert "set-up-bound" not in regime
    assert regime.endswith("; a cold start beside it holds 56% of the traced span (host and GPU), which the steady "
                           "state never pays: the device idles 57% of the span with it.")
    assert claims.check(out) == []


def test_the_waste_beside_a_recurring_bound_does_not_dismiss_the_profile(cold):
    _, out = cold
    nxt = out["lines"][4]
    assert "optimising what this profile shows" not in nxt
    assert "the profile's length, not the workload's" not in nxt
    assert nxt.endswith("Would waste the week: working on the cold start's gaps: they do not recur, the bound the "
                        "Regime line names does.")


def test_the_checker_catches_nothing_recurs_beside_a_recurring_bound(cold):
    _, out = cold
    bad = copy.deepcopy(out)
    for c in bad["claims"]:
        if c["key"] == "waste.nothing_recurs":
            c["said"] = "optimising what this profile shows: its biggest gaps do not recur"
    assert ("the waste line says nothing the profile shows recurs, but the Regime line bounds the work after the "
            "cold start (communication): it recurs") in claims.check(bad)


def test_a_cold_start_with_no_recurring_work_after_it_stays_idle_bound(tmp_path):
    # (no round after the set-up: nothing recurs to bound, so the span stays idle-bound and no qualifier is said)
    a = analyze_trace(load(_cold_collectives(tmp_path, rounds=0), use_cache=False))
    assert a.verdict.regime is Regime.OVERHEAD
    assert "a cold start beside it" not in serialize.report(a)["lines"][3]
