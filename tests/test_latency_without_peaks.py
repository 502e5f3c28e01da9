"""Without the device's peaks there are no roofs to place a kernel under: a kernel of a few µs is latency-bound
(its launch and ramp), not split into compute- and memory-bound by its intensity. A hand-built timeline."""
from __future__ import annotations

import kineto_factory as kf
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace


def test_without_the_devices_peaks_kernels_of_a_few_us_are_latency_bound_not_split_by_intensity(tmp_path):
    """wenlu_train_opt_4090m (heldout-user3), an RTX 4090 Laptop GPU the peak table does not list: a 32x100 MLP's
    1-3 µs kernels read '17% compute-bound and 44% memory-bound'. Without roofs to measure against, a kernel of a few
    µs is its launch and ramp."""
    def regime(kernel_ns: int, name: str):
        doc = kf.document(kf.events_for(kf.chain(20, kernel_ns=kernel_ns)))
        doc["deviceProperties"][0]["name"] = "Some Unlisted GPU"
        out = serialize.report(analyze_trace(load(kf.write(tmp_path / name, doc), use_cache=False)))
        assert out["peaks"] is None and claims.check(out) == []
        return out
    tiny, long_ = regime(2_000, "tiny.json"), regime(50_000, "long.json")
    assert tiny["regime_detail"]["latency_us"] == tiny["kernel_busy_us"]
    assert "100% latency-bound (kernels of a few µs: launch and ramp, no roof)" in tiny["lines"][3]
    assert long_["regime_detail"]["latency_us"] == 0
