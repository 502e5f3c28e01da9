"""The outlier step and the diff say what the timeline shows (issue 33): on a real workload profiled with a
schedule, the first recorded step opens with a synchronize that drains kernels the unrecorded warm-up steps
queued, so it is long because it waited for earlier work, not because its own kernels ran longer. Built as a small
synthetic trace of that shape (vit_fp32_train-before, captured on an H100, held 725 such kernels, 141.7 ms, in
ProfilerStep#3). A diff against such a trace compares the mean steps without the drained work, not the spans it
inflated."""
import pytest

from kineto_factory import Launch, annotation, call, document, events_for, gpu, write
from tracetriage.analyzers.analyses.steps import OutlierWhy
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.diff import diff_files
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.diff import diff_lines
from tracetriage.analyzers.voice.report import five_lines

MS = 1_000_000
KERNEL_NS = MS        # every kernel runs 1 ms, before and inside the window alike
PER_STEP = 10         # kernels each step launches
QUEUED = 30           # kernels the three unrecorded steps left on the stream


def _step(first: int, t0: int, gpu_from: int, kernel_ns: int) -> tuple[list[Launch], int, int]:
    """One step's launches: the host issues a kernel every 100 µs, the GPU runs them back to back."""
    out, g = [], gpu_from
    for i in range(PER_STEP):
        c = t0 + 100_000 * i
        g = max(g, c + 10_000)
        out.append(Launch(op_start=c, op_end=c + 20_000, call_start=c + 2_000, call_end=c + 12_000,
                          gpu_start=g, gpu_end=g + kernel_ns, kernel=f"add_{i}"))
        g += kernel_ns
    return out, g, first + PER_STEP


def drained_warm_up(kernels_longer: bool = False, kernel_ns: int = KERNEL_NS, queued: bool = True) -> dict:
    """ProfilerStep#3 to #6; #3 starts with cudaDeviceSynchronize while the 30 queued kernels (no launch call in
    the trace) run, then launches its own 10. With `kernels_longer`, nothing is queued and #3's own kernels run 4 ms
    each instead: a step whose kernels did run longer. `kernel_ns`: each kernel's run; `queued`: whether the warm-up
    left work on the stream."""
    ev: list[dict] = []
    launches: list[Launch] = []
    t = 50_000
    g = 0
    if queued and not kernels_longer:
        for k in range(QUEUED):   # launched before the window: a correlation no call in the trace has
            ev.append(gpu(f"add_{k % PER_STEP}", k * kernel_ns, (k + 1) * kernel_ns, 900_000 + k))
        g = QUEUED * kernel_ns
        ev.append(call("cudaDeviceSynchronize", t, g + 20_000))
        t = g + 50_000
    first = 0
    starts = [50_000]
    for step in range(4):
        mine, g_end, first = _step(first, t, g, kernel_ns)
        if kernels_longer and step == 0:
            mine = [Launch(**{**x.__dict__, "gpu_start": x.gpu_start + 3 * i * KERNEL_NS,
                              "gpu_end": x.gpu_start + 3 * i * KERNEL_NS + 4 * KERNEL_NS}) for i, x in enumerate(mine)]
            g_end = mine[-1].gpu_end
        launches += mine
        # the host blocks on the step's last result (loss.item()), so each step starts when the GPU is done
        t, g = g_end + 50_000, g_end
        starts.append(t)
    for n in range(4):
        ev.append(annotation(f"ProfilerStep#{3 + n}", starts[n], starts[n + 1] - 10_000))
    return document(ev + events_for(launches))


def test_a_first_step_that_drains_queued_warm_up_work_is_said_to_have_waited_for_it(tmp_path):
    a = analyze_file(write(tmp_path / "drain.json", drained_warm_up()))
    o = a.steps.summary.outlier
    assert o is not None and o.name == "ProfilerStep#3"
    assert o.why is OutlierWhy.QUEUED
    assert (o.queued_kernels, o.own_kernels, o.unrecorded_before) == (QUEUED, PER_STEP, 3)
    assert o.queued_busy_ns == QUEUED * KERNEL_NS - 50_000   # the first began 50 µs before the step's range did
    assert o.own_busy_ns == o.median_own_busy_ns == PER_STEP * KERNEL_NS   # its own kernels ran as every step's
    assert o.waited_in == "cudaDeviceSynchronize"
    measured = five_lines(a)[0]
    assert "its kernels ran longer" not in measured
    assert ("ProfilerStep#3 took 4.0× the median (40.1 ms): it first ran 30 kernels (29.9 ms) queued before the "
            "profiled window (the profiler ran ProfilerStep#0 to #2 unrecorded before it), the host waiting 30.0 ms "
            "in cudaDeviceSynchronize; its own 10 kernels ran 10.0 ms against the median step's 10.0 ms") in measured
    assert claims.check(serialize.report(a)) == []


def test_a_step_whose_own_kernels_ran_longer_says_so_with_both_figures(tmp_path):
    a = analyze_file(write(tmp_path / "longer.json", drained_warm_up(kernels_longer=True)))
    o = a.steps.summary.outlier
    assert o is not None and o.why is OutlierWhy.KERNELS and o.queued_kernels == 0
    assert "its kernels ran longer (its own 10 kernels ran 40.0 ms against the median step's 10.0 ms), not its " \
           "gaps" in five_lines(a)[0]
    assert claims.check(serialize.report(a)) == []


def test_the_checker_refuses_kernels_ran_longer_where_the_step_drained_queued_work(tmp_path):
    out = serialize.report(analyze_file(write(tmp_path / "drain.json", drained_warm_up())))
    extra = out["steps"]["summary"]["outlier"]["extra_us"]
    out["claims"].append({"key": "measured.outlier.kernels_longer", "value": extra, "said": ""})
    assert any("its kernels ran longer, but its own kernels ran" in p for p in claims.check(out))


def test_a_diff_compares_mean_steps_without_the_drained_work_not_a_span_it_inflated(tmp_path):
    before = write(tmp_path / "fp32.json", drained_warm_up())
    after = write(tmp_path / "bf16.json", drained_warm_up(kernel_ns=KERNEL_NS // 2, queued=False))
    d = diff_files(before, after)
    assert d.per_step and d.compared_before.steps == d.compared_after.steps == 4
    assert d.compared_before.queued_us == pytest.approx(29_950.0) and d.compared_after.queued_us == 0
    # per step the kernels run half as long: about 2×, not the 70.2 ms → 20.2 ms of the whole spans (3.5×)
    assert d.before.span_us / d.after.span_us > 3
    assert d.speedup == pytest.approx(2.0, rel=0.03)
    # the same ten launch calls and kernels per step, though the before window holds 70 kernels for 40 calls
    assert (d.before.kernels, d.before.launch_calls) == (70, 40)
    assert (d.compared_before.kernels, d.compared_before.launch_calls) == (PER_STEP, PER_STEP)
    assert d.launch_ratio == 1.0 and d.kernel_ratio == 1.0
    lines = diff_lines(d)
    assert lines[0].endswith("the profiled step went from 10.1 ms to 5.06 ms (the mean of 4 steps; 29.9 ms of "
                             "kernels queued before the before trace's window left out; the whole GPU spans "
                             "70.2 ms → 20.2 ms), a 1.99× speedup.")
    assert lines[2].startswith("Launches and bytes: 10 → 10 launch calls per step (about the same) for 10 → 10 "
                               "kernels")
    assert -d.time_saved_us == pytest.approx(d.busy_change_us + sum(d.idle_change_us.values()), abs=0.05)


def test_a_lever_that_shortens_the_drained_kernels_shortens_the_sync_that_waits_for_them(tmp_path):
    """The queued kernels have no launch call in the window; in the replay they follow each other on their stream,
    not the clock times they ran at, so kernels at half their time drain in half the wait (vit_fp32_train-before:
    the 143 ms cudaDeviceSynchronize stayed 143 ms under autocast_bf16, predicting 0.70 of the span against 0.37
    measured)."""
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.whatif import depgraph, replay
    from tracetriage.analyzers.whatif import predict as whatif

    path = write(tmp_path / "drain.json", drained_warm_up())
    t = load(path)
    g = depgraph.build(t)
    base = replay.Plan.of(g)
    assert replay.replay(g, base).span_ns == g.span_ns          # the unchanged graph still gives the trace
    halved = base.copy()
    halved.g_dur[:] = halved.g_dur // 2
    r = replay.replay(g, halved)
    sync = int(next(i for i in range(g.n_calls) if g.c_blocked[i]))
    assert r.c_end[sync] - g.span_start <= QUEUED * KERNEL_NS // 2 + 100_000    # was 30 ms, pinned to the clock
    # kernels_2x saves the queued kernels' half too (the steps here wait for host time the trace shows between
    # them, which stays): at least 15 ms, where the pinned backlog saved none of it
    pred = {lv.lever: lv.predicted_ns for lv in whatif.predict(t, ["kernels_2x"]).levers}["kernels_2x"]
    assert g.span_ns - pred >= QUEUED * KERNEL_NS // 2 - 100_000
