"""A compute- or memory-bound verdict that rests on kernels' names (no FLOPs or bytes of its own) states no
intensity against a ridge: that average is the costed ops', not the kernels the verdict is about (fresh4
mlp_gemm_roof-after: compiled bf16 GEMMs said 'compute-bound ... (their FLOPs are not in the trace) ...; its ops
average 0.2 FLOP/byte against a fp32 ridge of 20', the intensity of its fp32 casts). On the real chain-triton-large
capture: Triton kernels with no shapes, memory-bound by their names."""
from __future__ import annotations

import copy
from pathlib import Path

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace

ROOT = Path(__file__).resolve().parent.parent


def test_a_verdict_by_kernel_names_states_no_intensity_and_the_checker_holds_it():
    out = serialize.report(analyze_trace(load(ROOT / "traces" / "chain-triton-large.json.gz")))
    assert out["regime"] == "memory" and out["regime_detail"]["achieved_gbps"] is None
    assert "(their bytes are not in the trace: they were launched outside any recorded op" in out["lines"][3]
    assert "FLOP/byte" not in out["lines"][3]
    assert claims.check(out) == []
    bad = copy.deepcopy(out)
    bad["lines"][3] = bad["lines"][3][:-1] + "; its ops average 0.2 FLOP/byte against a fp32 ridge of 20."
    bad["claims"].append({"key": "regime.intensity", "value": 0.2, "said": "0.2"})
    assert ("the Regime line says memory-bound by kernel names and states an intensity of 0.2 FLOP/byte, the costed "
            "ops'") in claims.check(bad)
