"""Host work, input copies and data loading on traces nobody here tuned for (heldout-user6, public RTX 3080 traces
that may not be committed): each pattern on a synthetic trace that shows it (tests/claim_traces.py). The Next names
the knob the trace shows, its because agrees, the Idle and Regime lines say what the device waits on, and the claim
checker finds nothing; where the old sentence comes back, the checker catches it."""
from claim_traces import (
    host_randn_then_copy,
    pageable_batches_with_a_feeder_thread,
    tiny_training_steps_at_a_small_batch,
)
from kineto_factory import write
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines
from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, PINNED_BATCHES, TENSORS_ON_DEVICE


def _report(tmp_path, name, doc):
    a = analyze_file(write(tmp_path / f"{name}.json", doc))
    return a, five_lines(a), serialize.report(a)


def _with_line(out: dict, i: int, line: str) -> dict:
    lines = list(out["lines"])
    lines[i] = line
    return {**out, "lines": lines}


def test_a_tensor_made_on_the_host_and_copied_is_made_on_the_device_without_shapes(tmp_path):
    """Was: "take the host work off the critical path ... profile the host (py-spy)" beside 60 ms of CPU aten::randn
    a step and its copy: the factory counted only where its recorded size made the copy's bytes, and the trace
    recorded no shapes."""
    a, lines, out = _report(tmp_path, "randn", host_randn_then_copy())
    nx = a.next_experiment
    assert nx.lever.lever == TENSORS_ON_DEVICE and nx.lever.predicted_ratio < 0.1
    assert 'device="cuda"' in lines[4] and "py-spy" not in lines[4]
    # the because names the op and both things that go: its host time and the copies
    assert "by aten::randn" in lines[4] and "of copies" in lines[4]
    assert "at an assumed 1 TB/s" in lines[4]        # no memory-bound kernel, no peak table entry: said as assumed
    assert claims.check(out) == []


def test_the_idle_line_names_the_host_op_that_holds_the_gap_and_the_gap_that_holds_the_idle(tmp_path):
    """Was: "3 gaps with a median of 17.8 ms ... (5% untraced)": the one 654 ms gap a step and the aten::randn that
    held the host through it (it began while the kernel before the gap still ran) went unnamed."""
    a, lines, _ = _report(tmp_path, "randn", host_randn_then_copy(steps=2))   # its 3 gaps: 2 ms, 59 ms, 2 ms
    ev = a.evidence[Cause.HOST_WORK]
    assert ev.host_events and ev.host_events[0].name == "aten::randn"
    assert "traced CPU ops: aten::randn 59.0 ms in 1 call (94% of it)" in lines[2]
    assert "3 gaps, the largest 59.1 ms (94% of it), in which" in lines[2] and "median" not in lines[2]


def test_a_device_waiting_on_host_work_is_host_bound_not_overhead_bound(tmp_path):
    a, lines, out = _report(tmp_path, "randn", host_randn_then_copy())
    assert lines[3].startswith("Regime: host-bound, not launch overhead")
    assert out["regime_detail"]["bound"] == "host"
    assert claims.check(out) == []
    said = lines[3].split(":", 1)[1]
    old = _with_line(out, 3, "Regime: overhead-bound" + said.split(", 85% of the idle")[0][len(" host-bound, not "
                                                                                               "launch overhead"):])
    old["regime_detail"] = {**out["regime_detail"], "bound": "overhead"}
    assert any("host-bound" in p for p in claims.check(old)), claims.check(old)


def test_pageable_batches_from_a_dataloader_get_pinned_memory_and_the_gap_stays_on_the_launching_thread(tmp_path):
    """Was: "take the host work off the critical path ... py-spy", its host gap said to be "in Python: acquire of
    _thread.lock, threading.py wait" on the queue's feeder thread, which launches nothing."""
    a, lines, out = _report(tmp_path, "batches", pageable_batches_with_a_feeder_thread())
    assert "_thread.lock" not in lines[2] and "threading.py" not in lines[2]
    assert not any("_thread.lock" in f.name for f in a.evidence[Cause.HOST_WORK].python_functions)
    nx = a.next_experiment
    assert nx.lever.lever == PINNED_BATCHES and nx.lever.predicted_ratio < 0.8
    assert "pin_memory=True" in lines[4] and "non_blocking=True" in lines[4]
    assert "keep it there (TensorDataset(X.to(device), y.to(device))" in lines[4]
    assert "the 4 pageable copies of the batches" in lines[4]
    assert lines[3].startswith("Regime: host-bound")
    assert claims.check(out) == []


def test_a_pageable_copy_outside_a_dataloader_is_no_batch_to_pin(tmp_path):
    a, _, _ = _report(tmp_path, "randn", host_randn_then_copy())
    assert a.levers.all.lever(PINNED_BATCHES).assumption.count == 0


def test_tiny_training_steps_at_a_small_batch_follow_the_launch_overhead_and_never_pin_tiny_copies(tmp_path):
    """Was: "load the batches in worker processes: DataLoader(..., num_workers=4, pin_memory=True ...)" (its copies
    3.5 µs each) while the Idle line said mostly launch overhead, and no word of the batch size."""
    a, lines, out = _report(tmp_path, "tiny", tiny_training_steps_at_a_small_batch())
    assert a.dominant is Cause.LAUNCH_OVERHEAD
    assert a.next_experiment.lever.lever == CUDA_GRAPHS
    assert lines[4].startswith("Next: more work per launch: a bigger batch (DataLoader(..., batch_size=<larger>))")
    assert "reduce-overhead" in lines[4] and "pin_memory" not in lines[4] and "non_blocking" not in lines[4]
    # the loader's knob, on the smaller cause, is said beside the Next, not as it
    assert "a one-line knob is in hand first: DataLoader(..., num_workers=4)" in lines[4]
    assert claims.check(out) == []


def test_the_checker_catches_pinned_memory_asked_for_copies_too_small_to_matter(tmp_path):
    a, lines, out = _report(tmp_path, "tiny", tiny_training_steps_at_a_small_batch())
    old = _with_line(out, 4, "Next: load the batches in worker processes: DataLoader(..., num_workers=4, "
                             "pin_memory=True, persistent_workers=True) and .to(device, non_blocking=True).")
    assert any("pin_memory=True" in p for p in claims.check(old)), claims.check(old)


def test_the_dataloader_advice_drops_pinning_where_the_copies_hold_under_one_percent(tmp_path):
    """The knob's own advice, asked for where the loader holds the idle: workers, and no pinning for tiny copies."""
    from tracetriage.analyzers.model.constructs import Construct
    from tracetriage.analyzers.voice.common import advice

    a, _, _ = _report(tmp_path, "tiny", tiny_training_steps_at_a_small_batch())
    words = advice(Cause.HOST_WORK, a.evidence[Cause.HOST_WORK], construct=Construct.DATALOADER, pin_pays=False)
    assert "num_workers=4" in words and "pin_memory" not in words and "non_blocking" not in words
    assert "pin_memory=True" in advice(Cause.HOST_WORK, a.evidence[Cause.HOST_WORK], construct=Construct.DATALOADER)


def test_a_copy_knob_beside_dominant_host_work_still_goes_before_the_rewrite(tmp_path):
    """The host side is one cause for the off-cause rule: a pageable copy's knob is not off the cause where the host
    work that follows it dominates (the rewrite, saving more, is said as "then")."""
    a, lines, _ = _report(tmp_path, "batches", pageable_batches_with_a_feeder_thread())
    nx = a.next_experiment
    assert a.dominant is Cause.HOST_WORK and nx.lever.lever == PINNED_BATCHES
    assert nx.then is not None and nx.then.saving_ns > nx.lever.saving_ns
    assert "then taking host work off the critical path" in lines[4]
