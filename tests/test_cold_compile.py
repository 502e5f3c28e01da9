"""A cold start that compiles, read as one (heldout-user3 cs521_induction_a10g, a torch.compile first call profiled
whole: 62 µs of GPU work in a 3.2 s span). Three mechanisms, each on a small synthetic trace (the public trace is not
ours to commit):

1. a host stretch of set-up length that ends at the first launch of an Inductor kernel is torch.compile compiling:
   one-time set-up, not host work to take off the critical path (the report said 'host work 100%', no set-up caveat);
2. a kernel of a few µs that has no cost is latency-bound whatever its name says ('24% compute-bound, 76%
   memory-bound' for six kernels of 1-5 µs);
3. removing syncs cannot overlap more than the GPU's work ('removing them overlaps 2.64 s' beside 62 µs): the Idle
   line does not say it, and the claim checker catches a line that does."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import kineto_factory as kf
from tracetriage.analyzers.analyses import idle
from tracetriage.analyzers.analyses.roofline import COMPUTE, LATENCY
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import KERNEL
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

ROOT = Path(__file__).resolve().parent.parent
US, MS = 1_000, 1_000_000


def _cold(tmp_path, kernel: str, first_seen_before: bool = False):
    """Ten 3 µs kernels launched 20 µs apart, then 300 ms of host time with no op, then `kernel`'s launch, then ten
    more. With `first_seen_before`, `kernel` also ran once at the start (so the stretch is not before its first)."""
    ls = kf.chain(10, kernel_ns=3 * US)
    if first_seen_before:
        ls[0] = dataclasses.replace(ls[0], kernel=kernel)
    t = ls[-1].gpu_end + 300 * MS
    ls.append(kf.Launch(op_start=t - 2 * US, op_end=t + 6 * US, call_start=t, call_end=t + 4 * US,
                        gpu_start=t + 5 * US, gpu_end=t + 9 * US, kernel=kernel, op="Torch-Compiled Region: 0/0"))
    ls += kf.chain(10, kernel_ns=3 * US, t0=t + 40 * US)
    name = f"cold{len(kernel)}{first_seen_before}.json"
    return load(kf.write(tmp_path / name, kf.document(kf.events_for(ls))), use_cache=False)


def test_the_stretch_before_a_generated_kernels_first_launch_is_compiling_set_up(tmp_path):
    tr = _cold(tmp_path, "triton_poi_fused_add_mul_0")
    d = idle.analyze(tr)[0]
    calls = d.evidence[Cause.HOST_WORK].warmup
    assert calls and calls[0].name == "torch.compile before triton_poi_fused_add_mul_0's first launch"
    assert calls[0].idle_us >= 299_000
    out = serialize.report(analyze_trace(tr))
    assert out["lines"][3].startswith("Regime: set-up-bound (a cold start)")
    assert claims.check(out) == []


def test_the_same_stretch_before_a_kernel_that_ran_before_is_not_compiling(tmp_path):
    for tr in (_cold(tmp_path, "triton_poi_fused_add_mul_0", first_seen_before=True),
               _cold(tmp_path, "void at::native::elementwise_kernel<float>")):
        calls = idle.analyze(tr)[0].evidence[Cause.HOST_WORK].warmup
        assert not any(c.name.startswith("torch.compile before") for c in calls)


def test_a_kernel_of_a_few_us_with_no_cost_is_latency_bound_whatever_its_name(tmp_path):
    ls = kf.chain(10, kernel_ns=3 * US) + kf.chain(10, kernel_ns=80 * US, t0=2 * MS)
    ls = [dataclasses.replace(x, kernel="ampere_sgemm_128x64_tn", op="my_ext::gemm") for x in ls]
    ls[0] = dataclasses.replace(ls[0], kernel="ampere_sgemm_64x64_nn")
    ls = [dataclasses.replace(x, kernel="ampere_sgemm_64x64_nn") if x.gpu_end - x.gpu_start == 3 * US else x
          for x in ls]
    tr = load(kf.write(tmp_path / "names.json", kf.document(kf.events_for(ls))), use_cache=False)
    a = analyze_trace(tr)
    ev = tr.ev
    kern = [r for r in range(len(ev.start)) if ev.cat[r] == KERNEL]
    bound = {tr.names[ev.name[r]]: int(a.roof.kernel_bound[r]) for r in kern}
    assert bound == {"ampere_sgemm_64x64_nn": LATENCY, "ampere_sgemm_128x64_tn": COMPUTE}


def test_the_syncs_overlap_is_not_said_where_it_exceeds_the_gpu_work():
    a = analyze_trace(load(ROOT / "traces" / "fixes" / "item_python--before.json.gz"))
    c = a.serialising_syncs
    assert c is not None and c.saving_ns <= a.kernel_busy_ns + a.copy_ns     # said: the overlap fits the work
    starved = dataclasses.replace(a, kernel_busy_ns=c.saving_ns // 10, copy_ns=0)
    assert starved.serialising_syncs is None


def test_the_checker_catches_an_overlap_longer_than_the_gpu_work():
    out = serialize.report(analyze_trace(load(ROOT / "traces" / "fixes" / "item_python--before.json.gz")))
    assert claims.check(out) == []
    overlap = next(c for c in out["claims"] if c["key"] == "idle.syncs.overlap_us")
    out["kernel_busy_us"], out["copy_us"] = overlap["value"] / 10, 0.0
    assert [p for p in claims.check(out) if "overlaps" in p] == [
        f"the idle.syncs.overlap_us claim says removing the syncs overlaps {overlap['said']}, longer than the GPU's "
        f"work ({overlap['value'] / 10:.1f} µs)"]
