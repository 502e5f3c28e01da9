"""Physically right on every trace: the invariants of tracetriage.analyzers.output.invariants hold on every trace in the
repository (the sample library, the fix pairs, the rank runs), whole and, where a trace has named ranges,
for its busiest range; and the checker itself catches each kind of break."""
import copy
from pathlib import Path

import pytest

from sweep import family, smallest_of_each, sweep
from tracetriage.analyzers.loading.load import find_traces
from tracetriage.analyzers.output import invariants, serialize
from tracetriage.analyzers.triage.report import analyze_file

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
_SIDE_FILES = ("ceilings.json", "measured.json", "measurements.json",      # beside the traces, not traces
               "profiler_cost.json", "profiler_overhead.json",                # (traces/overhead: timings)
               "truth.json")                                                  # (traces/fresh5: the measured medians)
# every folder of traces/ (the sample library, the fix pairs, the rank runs, the real-library captures ...)
EVERY_TRACE = sorted(p for d in [TRACES, *sorted(x for x in TRACES.rglob("*") if x.is_dir())]
                     for p in find_traces(d) if p.name not in _SIDE_FILES and not p.name.endswith(".truth.json"))


def _id(p: Path) -> str:
    return str(p.relative_to(TRACES))


# the two biggest samples take seconds each: the slow step's; every other trace stands for them here
BIG = (TRACES / "gpt-eager.json.gz", TRACES / "gpt-compile.json.gz")
# The fast suite's share of a sweep over every trace: the smallest sample of each family of the library (one per
# construct and cause a user brings: probe-sync-*, smell-launch-*, chain-eager-* ...) and the smallest trace of each
# other folder (each capture's format and device): 41 of 282; the slow step runs the others, whose reports cost a
# minute of a 2-core machine's fast suite (the library's other 23 samples ~8 CPU-s of the four sweeps over it).
FAST_SHARE = (smallest_of_each((p for p in EVERY_TRACE if p.parent == TRACES and p not in BIG), family)
              + smallest_of_each(sorted((p for p in EVERY_TRACE if p.parent != TRACES), key=lambda p: p.parent),
                                 lambda p: p.parent))


@pytest.mark.parametrize("path", sweep(EVERY_TRACE, FAST_SHARE, ids=[_id(p) for p in EVERY_TRACE]))
def test_every_report_adds_up_stays_under_the_peak_acts_on_the_trace_and_keeps_one_baseline(path):
    a = analyze_file(path)
    assert invariants.check(serialize.report(a)) == []
    for d in a.devices:      # per device, exactly, in ns
        assert d.kernel_busy_ns + d.idle_ns == d.span_ns
        assert sum(d.by_cause_ns.values()) == d.idle_ns
    pk = a.roof.peaks
    for p in a.roof.points:
        if pk is not None:
            assert p.achieved_gbps * 1e9 <= 1.05 * pk.limit_bytes_per_s()
            assert p.achieved_tflops * 1e12 <= 1.05 * pk.limit_flops(p.dtype)


RANGED = [p for p in EVERY_TRACE if p.parent == TRACES and p.name.startswith(("gpt-", "smell-sync-item"))]


@pytest.mark.parametrize("path", sweep(RANGED, [p for p in RANGED if p not in BIG], ids=[_id(p) for p in RANGED]))
def test_a_ranges_report_keeps_its_own_numbers_on_its_own_span(path):
    whole = analyze_file(path)
    name = max(whole.named_ranges, key=lambda r: r.kernel_busy_us).name
    a = analyze_file(path, name)
    out = serialize.report(a)
    assert invariants.check(out) == []
    assert out["range"] == name


# --- the checker catches what it is for ------------------------------------------------------------

@pytest.fixture(scope="module")
def sound() -> dict:
    return serialize.report(analyze_file(TRACES / "smell-sync-item.json.gz"))


def test_checker_finds_time_that_does_not_add_up(sound):
    out = copy.deepcopy(sound)
    out["idle_us"] += 100.0
    assert any("!= span" in p for p in invariants.check(out))


def test_checker_finds_a_point_above_its_peak(sound):
    out = copy.deepcopy(sound)
    out["roofline"][0]["achieved_tflops"] = 2.0 * out["peaks"]["limit_flops_per_s"]["bf16"] / 1e12
    assert any(p.startswith("roofline point aten::mm") for p in invariants.check(out))


def test_checker_finds_a_next_lever_with_nothing_to_act_on(sound):
    out = copy.deepcopy(sound)
    out["next_experiment"].update(kind="overlap_copies", whatif_lever=None)
    out["idle"]["by_cause_us"]["data_transfer"] = 0.0
    assert "Next is overlap_copies but the trace has no data_transfer idle" in invariants.check(out)
    out = copy.deepcopy(sound)
    out["next_experiment"].update(whatif_lever="async_copies", acts_on=0)
    assert "Next's lever async_copies finds nothing in the trace to change" in invariants.check(out)


def test_checker_finds_a_prediction_on_another_baseline(sound):
    out = copy.deepcopy(sound)
    out["lines"][4] = out["lines"][4].replace(" of the traced span (host and GPU)", "")
    assert any("names no baseline" in p for p in invariants.check(out))
    out = copy.deepcopy(sound)
    out["next_experiment"]["baseline_us"] = out["span_us"]     # the GPU span, not the traced span it says
    assert any("is not the lever's" in p for p in invariants.check(out))
