"""A step figure leaves out work queued before the profiled window where no outlier clause says it: with two
ProfilerSteps (too few to name an outlier) the first one's drain of the warm-up steps' kernels made the median the
mean of a drained and a plain step (fresh6 fno_default_float64-before, an H100: "55.2 ms per step (p90 74.2 ms)"
where each step took 31.6 ms of its own, 46.4 ms of queued work drained first). Built from the drained warm-up of
test_warm_up_drain, cut to two recorded steps."""
from kineto_factory import write
from test_warm_up_drain import KERNEL_NS, PER_STEP, QUEUED, drained_warm_up
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines


def _two_steps() -> dict:
    doc = drained_warm_up()
    keep = [e for e in doc["traceEvents"] if e.get("name") not in ("ProfilerStep#5", "ProfilerStep#6")]
    return {**doc, "traceEvents": keep}


def test_two_steps_leave_the_first_ones_drain_out_of_the_step_figures(tmp_path):
    a = analyze_file(write(tmp_path / "two.json", _two_steps()))
    s = a.steps.summary
    first = a.steps.steps[0]
    assert s.outlier is None and s.drained_step == "ProfilerStep#3"
    assert s.drained_ns == QUEUED * KERNEL_NS - 50_000      # the step's range opens 50 µs into the queued 30 ms
    own = first.wall_ns - s.drained_ns
    assert abs(own - PER_STEP * KERNEL_NS) <= 200_000        # its own 10 kernels of 1 ms, as every step's
    assert s.median_ns < first.wall_ns - QUEUED * KERNEL_NS // 2
    measured = five_lines(a)[0]
    assert "ProfilerStep#3's first 29.9 ms left out: it drained work queued before the profiled window" in measured
    assert claims.check(serialize.report(a)) == []


def test_four_steps_keep_the_outlier_clause_that_says_the_drain(tmp_path):
    """With an outlier to name, its clause says the queued work (test_warm_up_drain): no figure is left out."""
    a = analyze_file(write(tmp_path / "four.json", drained_warm_up()))
    assert a.steps.summary.outlier is not None and a.steps.summary.drained_ns == 0
