"""A step already at the compute roof, with the GPU idle a sliver of the span, gets no quick experiment dressed as
one: its Next says there is no one-line lever and names the heavy options as such (a bf16 GEMM sweep on an H200 at
97% of the peak, traces/matmul-sweep-bf16), and the checker holds the words to the reach they state."""
from pathlib import Path

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.roof import AT_THE_ROOF, ROOF_IDLE

TRACES = Path(__file__).resolve().parent.parent / "traces"


def _report(name: str) -> dict:
    return serialize.report(analyze_trace(load(TRACES / name)))


def test_a_gemm_sweep_at_the_roof_is_told_there_is_no_one_line_lever():
    out = _report("matmul-sweep-bf16.json.gz")
    nxt = out["lines"][4]
    assert nxt.startswith("Next: no one-line lever: the step is already at the roof")
    assert "fp8 matmuls (a change of the training recipe, not a flag)" in nxt
    assert "skip work (causal masks" not in nxt
    assert claims.check(out) == []


def test_the_checker_catches_no_lever_said_below_the_roof():
    out = _report("matmul-sweep-bf16.json.gz")
    for c in out["claims"]:
        if c["key"] == "next.roof.reach":
            c["value"] = AT_THE_ROOF - 0.2
    assert any("no one-line lever is said at" in p for p in claims.check(out))


def test_a_step_at_the_roof_whose_idle_is_mostly_queued_kernels_is_told_there_is_no_one_line_lever():
    """Was: "do less arithmetic or cheaper arithmetic: ... (fp8), skip work" on a step at 91% of the peak whose GPU
    idles 5.2% of the span, most of it between kernels queued back to back (the device's own spacing, which no host
    fix shortens): the idle a fix could reach is the dry-queue gaps and the other causes', 4% of the span."""
    out = _report("healthy-overlap.json.gz")
    nxt = out["lines"][4]
    assert nxt.startswith("Next: no one-line lever: the step is already at the roof")
    reachable = next(c for c in out["claims"] if c["key"] == "next.roof.reachable_share")
    assert reachable["value"] < ROOF_IDLE <= out["idle_share"]
    assert claims.check(out) == []


def test_the_checker_catches_no_lever_beside_an_idle_a_fix_could_reach():
    out = _report("healthy-overlap.json.gz")
    for c in out["claims"]:
        if c["key"] == "next.roof.reachable_share":
            c["value"] = ROOF_IDLE + 0.01
    assert any("not the report's, or not small" in p for p in claims.check(out))
