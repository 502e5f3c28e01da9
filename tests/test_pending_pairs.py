"""The pinned_batches lever's predictions beside the ratios measured on an H100 (capture/pending_pairs.py;
traces/pending: each variant timed in 5 unprofiled runs and profiled once, pending_pairs.truth.json). The lever
stays in CAPTURE_PENDING (its pairs are not in the fixes folders' format: five profiled spans a variant), so these
pairs are its check against fixes really made."""
import json
from pathlib import Path

import numpy as np
import pytest

from sweep import sweep
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif

PENDING = Path(__file__).resolve().parent.parent / "traces" / "pending"
TRUTH = {w["name"]: w for w in json.loads((PENDING / "pending_pairs.truth.json").read_text())["workloads"]}
WIDEN = 0.05      # the same tolerance around the measured spread as tests/test_knobs.py
# Misses said rather than fitted away.
KNOWN_MISSES = {
    "tabular_slices_pageable": "predicted 0.450 against 0.356-0.396 (+0.05: 0.446): pinned, the step's launch and host "
    "gaps shrank too (5.4 -> 3.2 ms over the two traced steps: the pageable copy's staging on the host left them), "
    "which the replay keeps; the copy itself it prices right (10.6 -> 1.5 ms measured)",
}
# tabular_mlp_pageable (a shuffled TensorDataset fetched row by row) lands inside its spread only because the spread
# is wide (0.43-0.93 over the run pairs: the host's fetch dominates and varies); its 0.96 is the copy alone.


def measured_spread(w: dict) -> tuple[float, float]:
    """after/before over every pairing of the unprofiled runs: its p10 and p90."""
    r = sorted(a / b for a in w["after"]["runs_ms"] for b in w["before"]["runs_ms"])
    p10, p90 = np.quantile(r, [0.1, 0.9])
    return float(p10), float(p90)


def test_every_pending_pair_has_both_traces_and_five_runs_a_variant():
    assert len(TRUTH) == 6
    for name, w in TRUTH.items():
        assert w["status"] == "ok", name
        assert len(w["before"]["runs_ms"]) >= 5 and len(w["after"]["runs_ms"]) >= 5, name
        assert (PENDING / f"{name}-before.json.gz").exists() and (PENDING / f"{name}-after.json.gz").exists(), name


@pytest.mark.parametrize("name", [
    p if p.id not in KNOWN_MISSES else pytest.param(*p.values, id=p.id, marks=[
        *p.marks, pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[p.id])])
    for p in sweep(sorted(TRUTH), ["audio_mels_pageable"], ids=sorted(TRUTH))])
def test_pinned_batches_prediction_lands_in_the_measured_spread(name):
    p10, p90 = measured_spread(TRUTH[name])
    pred = whatif.predict(load(PENDING / f"{name}-before.json.gz")).lever("pinned_batches").predicted_ratio
    assert p10 - WIDEN <= pred <= p90 + WIDEN, f"{name}: predicted {pred:.3f}, measured [{p10:.3f}, {p90:.3f}]"
