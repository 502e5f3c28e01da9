"""On a span the device idles most of, the idle cause that holds more of it than faster kernels would win is the Next,
not the headroom's "move fewer bytes" (public hta-a100-80gb-rank0: 66% idle, 32% of the span compute idle behind
pinned input copies, was told to move fewer bytes once the replay priced halving its kernels at 8%)."""
from __future__ import annotations

from kineto_factory import Launch, document, events_for, write
from tracetriage.analyzers.model.verdicts import Cause, Experiment, Regime
from tracetriage.analyzers.triage.report import analyze_file

US = 1_000


def _copy_bound_loop(tmp_path, steps: int = 8):
    """Each step: a pinned 4 MB host-to-device copy of 1.2 ms on the compute stream, then one 600 µs kernel that
    reads it; the host queues both and runs ahead (no sync), so the device runs copy, kernel, copy, kernel back to
    back."""
    launches, t, busy = [], 100 * US, 0
    for _ in range(steps):
        c0 = max(t + 15 * US, busy)
        launches.append(Launch(op_start=t, op_end=t + 20 * US, call_start=t + 5 * US, call_end=t + 15 * US,
                               gpu_start=c0, gpu_end=c0 + 1200 * US, kernel="Memcpy HtoD (Pinned -> Device)",
                               op="aten::copy_", cat="gpu_memcpy", call="cudaMemcpyAsync"))
        k0 = c0 + 1200 * US
        launches.append(Launch(op_start=t + 30 * US, op_end=t + 50 * US, call_start=t + 35 * US,
                               call_end=t + 45 * US, gpu_start=k0, gpu_end=k0 + 600 * US, op="aten::mul",
                               kernel="void elementwise_kernel<float>(float*)"))
        busy, t = k0 + 600 * US, t + 200 * US
    return write(tmp_path / "copy_bound.json", document(events_for(launches)))


def test_the_dominant_idle_cause_goes_before_faster_kernels_on_an_idle_span(tmp_path):
    a = analyze_file(_copy_bound_loop(tmp_path))
    assert a.verdict.regime is Regime.OVERHEAD
    head = next(c for c in a.lever_choices if c.lever == "kernels_2x")
    assert head.saving_ns >= 0.05 * head.baseline_ns                       # faster kernels would buy something ...
    assert a.by_cause_ns[Cause.DATA_TRANSFER] > head.saving_ns             # ... less than the copies' idle holds
    assert a.next_experiment.kind is Experiment.OVERLAP_COPIES



def test_the_week_s_waste_beside_an_idle_cause_is_never_that_cause_s_own_lever():
    """Was: "overlap the copies with compute ... Would waste the week: pinned memory and async copies, predicted 0%"
    (hta-a100-80gb-rank0: the cause's fixed waste words gave way to a lever once faster kernels priced 8%)."""
    from tracetriage.analyzers.triage.lever_choice import LeverChoice
    from tracetriage.analyzers.triage.waste import waste_beside_words
    from tracetriage.analyzers.whatif.levers.spec import Assumption

    base = 1_000_000_000
    choices = (LeverChoice("kernels_2x", None, base, int(0.92 * base), Assumption("kernels_2x", 6080)),
               LeverChoice("remove_syncs", None, base, int(0.996 * base), Assumption("remove_syncs", 34)),
               LeverChoice("async_copies", None, base, base, Assumption("async_copies", 35)))
    waste = waste_beside_words(Cause.DATA_TRANSFER, choices, False, 0.05)
    assert waste is not None and waste.lever == "remove_syncs"
