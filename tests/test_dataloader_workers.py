"""The dataloader_workers lever (levers/dataloader_workers.py), which prices the knob `tracetriage try` turns, and
the measurement it is held to: DataLoader workers take the batches and start first; the report's Next, whatif and
diff name it where a DataLoader makes its batches in the main process."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import kineto_factory as kf
from tracetriage.analyzers.model.constructs import Construct
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.whatif.levers import DATALOADER_WORKERS, NO_HOST_WORK
from tracetriage.analyzers.whatif.levers import dataloader_workers as dw
from tracetriage.trial.plan import propose

REALWORLD = Path(__file__).resolve().parent.parent / "traces" / "realworld"
BATCH = dw.SINGLE_PROCESS_BATCH
MS = 1_000_000
KNOB_CHECK_WIDEN = 0.05      # tools/knob_check.py's: a prediction within the measured p10-p90 widened by this


def workers(a):
    """The lever's ratio, its ratio without the profiler, what it assumed and what it found, as the report weighed
    it."""
    p = a.levers.all.lever(DATALOADER_WORKERS)
    return p.predicted_ratio, p.unprofiled_ratio, p.assumption, p.detail


def a_script(tmp_path: Path, *, iterator: bool, dataset_ms: int = 200, batches: int = 8, loop_ms: int = 0) -> Path:
    """A whole script as try profiles it: the dataset made on the host (a CPU op, no GPU work), then an epoch of
    `batches` batches of 20 ms each made in the main process, each followed by a 2 ms step of five kernels and
    `loop_ms` of the loop's own Python (untraced); with `iterator`, the Python frame of DataLoader.__iter__ before
    the first batch (stacks recorded)."""
    ev = [kf.op("aten::randn", 1 * MS, (1 + dataset_ms) * MS)]
    t = (2 + dataset_ms) * MS
    frame = "torch/utils/data/dataloader.py(492): __iter__" if iterator else "train.py(12): <module>"
    ev.append({"ph": "X", "cat": "python_function", "name": frame, "pid": kf.PID, "tid": kf.TID,
               "ts": kf._us(t, "torch2"), "dur": kf._dur(100_000, "torch2"), "args": {}})
    t += 200_000
    corr = 1
    for _ in range(batches):
        ev.append(kf.annotation(BATCH, t, t + 20 * MS))
        t += 20 * MS + 50_000
        for _ in range(5):
            ev += [kf.op("aten::mm", t, t + 30_000, corr),
                   kf.call("cudaLaunchKernel", t + 5_000, t + 25_000, corr, corr),
                   kf.gpu("sm90_xmma_gemm_f32f32_f32f32_f32", t + 30_000, t + 430_000, corr)]
            corr += 1
            t += 40_000
        t += 2 * MS + loop_ms * MS
    return kf.write(tmp_path / "script.json.gz", kf.document(ev))


def test_workers_take_the_batches_and_leave_the_scripts_other_host_work(tmp_path):
    a = analyze_file(str(a_script(tmp_path, iterator=False)))
    ratio, _, assumed, found = workers(a)
    nhw = next(p for p in a.levers.all.levers if p.lever == NO_HOST_WORK)
    # workers leave the dataset's 200 ms where it is; so does no_host_work now (issue 33, heldout-user3 wenlu: the
    # script's start-up before the loop's first GPU work is no host work of the loop), taking the batches and, of the
    # start-up, no more than the loop's longest stretch
    assert found["host_taken_ns"] <= assumed.batch_host_ns <= 8 * 20 * MS
    assert 8 * 20 * MS <= nhw.saving_ns <= 8 * 20 * MS + 25 * MS
    assert nhw.predicted_ratio < ratio
    assert assumed.count == 8 and not assumed.iterators and assumed.stacks


def test_an_iterator_started_in_the_trace_waits_for_its_first_batch_and_pays_the_workers_start(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "i").mkdir()
    steady = analyze_file(str(a_script(tmp_path / "s", iterator=False, dataset_ms=1)))
    started = analyze_file(str(a_script(tmp_path / "i", iterator=True, dataset_ms=1)))
    r_steady, _, _, _ = workers(steady)
    r_started, _, assumed, found = workers(started)
    assert assumed.iterators == 1 and found["start_added_ns"] == dw.WORKERS * dw.WORKER_START_NS
    # the start's figure was read on a CPU machine: every assumption that charges it says so
    said = dw.SPEC.says(assumed)
    assert "(4 × 40.0 ms, a worker's start and stop read on tracetriage's development host" in said
    assert "a CPU machine without a GPU, not on a GPU host" in said
    # the first batch stays (20 ms) and the start is paid (160 ms): a short epoch is made slower, as on the H200
    span = started.levers.all.baseline_ns
    assert r_started - r_steady == pytest.approx((20 * MS + dw.WORKERS * dw.WORKER_START_NS) / span, abs=0.03)
    assert r_started > 1.0


def test_try_runs_a_knob_its_model_predicts_slower_only_when_named(tmp_path):
    a = analyze_file(str(a_script(tmp_path, iterator=True, dataset_ms=1, batches=4)))
    assert "dataloader_workers" not in [p.key for p in propose(a, has_gpu=True)[0]]
    forced = {p.key: p for p in propose(a, has_gpu=True, force=("dataloader_workers",))[0]}
    w = forced["dataloader_workers"]
    assert not w.proposed and w.predicted is not None and w.predicted < 0
    assert w.quantity == "dataloader_workers_ratio"


def test_on_the_h200_dataloader_pair_the_workers_model_lands_nearer_the_measured_ratio_than_no_host_work():
    """traces/realworld/dataloader_cnn: a resnet18 step fed by a DataLoader with augmentation, before (no workers)
    and after (the variant dataloader_workers: 4 persistent workers, pinned, non_blocking; 0.26 [0.23-0.29]). A
    steady-state window: no iterator starts in it, so this pair checks the batches' overlap, not the start."""
    before = REALWORLD / "dataloader_cnn--before.json.gz"
    assert hashlib.sha256(before.name.encode()).digest()[0] % 2 == 1        # the test half
    measured = json.loads((REALWORLD / "measured.json").read_text())["scenarios"]["dataloader_cnn"]["ratio"]
    spread = measured[DATALOADER_WORKERS]
    a = analyze_file(str(before))
    ratio, _, assumed, _ = workers(a)
    nhw = next(p for p in a.levers.all.levers if p.lever == NO_HOST_WORK).predicted_ratio
    assert abs(ratio - spread["median"]) < abs(nhw - spread["median"])
    assert spread["p10"] - KNOB_CHECK_WIDEN <= ratio <= spread["p90"] + KNOB_CHECK_WIDEN
    assert assumed.count == 8 and not assumed.stacks


def test_the_next_on_the_h200_dataloader_trace_is_the_workers_with_their_own_prediction():
    """The advice stays the DataLoader's ("load the batches in worker processes"), as the drills' keys grade it
    (move_host_work); its number is now the workers' lever's (−77%; measured −74%) where it was no_host_work's
    (−82%: −81% before no_host_work shortened the waits of threads woken across a host stretch), said beside it as
    the bigger change."""
    from tracetriage.analyzers.model.verdicts import Experiment
    from tracetriage.analyzers.voice.report import five_lines

    a = analyze_file(str(REALWORLD / "dataloader_cnn--before.json.gz"))
    nx = a.next_experiment
    assert nx.kind is Experiment.MOVE_HOST_WORK and nx.lever.lever == DATALOADER_WORKERS
    assert nx.close_call is not None and nx.close_call.lever == NO_HOST_WORK
    line = five_lines(a)[4]
    assert line.startswith("Next: load the batches in worker processes: DataLoader(..., num_workers=4")
    assert "(predicted −77% of the traced span" in line
    assert "taking host work off the critical path predicts about as much (−82%" in line
    measured = json.loads((REALWORLD / "measured.json").read_text())["scenarios"]["dataloader_cnn"]["ratio"]
    median = measured[DATALOADER_WORKERS]["median"]
    assert abs(nx.lever.predicted_ratio - median) < abs(nx.close_call.predicted_ratio - median)


def test_where_the_loops_own_python_holds_most_host_work_the_workers_are_still_the_dataloaders_advice(tmp_path):
    """The loop's own Python (30 ms a step) outweighs the batches (20 ms each), so the DataLoader holds under half
    the host work; the Next the workers' knob wins (it takes the batches: −38%, within 3x of no_host_work's −96%)
    is still the DataLoader's advice, not the generic host-work one its number would not fit."""
    from tracetriage.analyzers.voice.report import five_lines

    a = analyze_file(str(a_script(tmp_path, iterator=False, dataset_ms=1, loop_ms=30)))
    assert a.next_experiment.lever.lever == DATALOADER_WORKERS
    assert a.next_experiment.construct is not Construct.DATALOADER
    line = five_lines(a)[4]
    assert line.startswith("Next: load the batches in worker processes: DataLoader(..., num_workers=4")


def test_a_trace_whose_loader_has_workers_prices_only_the_batches_the_loop_still_waited_for():
    """The after trace of the H200 pair: 4 workers, and 2 of its 8 batches still kept the loop waiting (57 ms inside
    _MultiProcessingDataLoaderIter.__next__): workers that keep up take that wait, and only that."""
    after = analyze_file(str(REALWORLD / "dataloader_cnn--dataloader_workers.json.gz"))
    p = after.levers.all.lever(DATALOADER_WORKERS)
    a = p.assumption
    assert a.workers_on and a.count == 2 and p.detail["multi_process_batches"] == 8
    assert 0 < p.saving_ns <= a.waited_ns
    said = dw.SPEC.says(a)
    assert said.startswith("workers that keep up") and "num_workers=4" not in dw.SPEC.knob.change_for(a)


def test_a_loader_whose_workers_keep_up_gives_the_lever_nothing_to_act_on(tmp_path):
    a = analyze_file(str(_loader_with_workers(tmp_path, wait_ms=0.05)))
    p = a.levers.all.lever(DATALOADER_WORKERS)
    assert p.assumption.count == 0 and p.predicted_ratio == pytest.approx(1.0)
    assert DATALOADER_WORKERS not in [c.lever for c in a.lever_choices]      # weighed only where it acts
    assert "keep up already" in dw.SPEC.says(p.assumption)


def _loader_with_workers(tmp_path: Path, wait_ms: float | list[float], steps: int = 3) -> Path:
    """A training loop fed by a DataLoader with workers, as t4_fp32_train.json (incredere/gpu-profiling-pytorch-lab,
    a T4) shows it: each step waits `wait_ms` inside _MultiProcessingDataLoaderIter.__next__; near its end the
    pin-memory thread (a thread of its own) pins the batch the worker sent, then the main thread copies it to the
    device (pinned) and runs a 2 ms step of five kernels. No traced call hands the pin thread its batch: the trace
    shows its wait as a delay after the main thread's last call. A list of `wait_ms` gives each step its own."""
    pin = kf.TID + 1
    ev, t, corr = [], 1 * MS, 1
    waits = wait_ms if isinstance(wait_ms, list) else [wait_ms] * steps
    for w in waits:
        wait = int(w * MS)
        ev.append(kf.annotation(dw.MULTI_PROCESS_BATCH, t, t + wait))
        ev.append(kf.call("cudaPointerGetAttributes", t + wait - 60_000, t + wait - 55_000, tid=pin))
        ev.append(kf.call("cudaHostAlloc", t + wait - 50_000, t + wait - 40_000, tid=pin))
        t += wait + 20_000
        ev += [kf.op("aten::to", t, t + 40_000, corr), kf.call("cudaMemcpyAsync", t + 5_000, t + 30_000, corr, corr),
               kf.gpu("Memcpy HtoD (Pinned -> Device)", t + 30_000, t + 160_000, corr, cat="gpu_memcpy",
                      bytes=1_600_000)]
        corr += 1
        t += 50_000
        for _ in range(5):
            ev += [kf.op("aten::mm", t, t + 30_000, corr),
                   kf.call("cudaLaunchKernel", t + 5_000, t + 25_000, corr, corr),
                   kf.gpu("volta_sgemm_128x64_nn", t + 200_000, t + 600_000, corr)]
            corr += 1
            t += 40_000
        t += 2 * MS
    return kf.write(tmp_path / "loader.json.gz", kf.document(ev))


def test_workers_that_keep_up_take_the_wait_the_pin_thread_shares_with_the_loop(tmp_path):
    """The loop waits 40 ms a step for its workers' batches, and the pin-memory thread waits in the same stretch.
    Workers that keep up take both waits (issue 33: t4_fp32_train.json's Next said −12% where 72% of its idle sat
    in the DataLoader, because the pin thread's wait stayed; t4_amp_train.json's no_host_work said −2% for 85%)."""
    from tracetriage.analyzers.voice.report import five_lines

    a = analyze_file(str(_loader_with_workers(tmp_path, wait_ms=40)))
    p = a.levers.all.lever(DATALOADER_WORKERS)
    nhw = a.levers.all.lever(NO_HOST_WORK)
    waited = 3 * 40 * MS
    assert p.assumption.workers_on and p.assumption.count == 3
    # the waits are 120 ms of a ~130 ms span: both levers take most of them
    assert p.saving_ns >= 0.9 * waited and nhw.saving_ns >= 0.9 * waited
    line = five_lines(a)[4]
    assert line.startswith("Next: make the DataLoader's workers keep up: they are on already")
    # the batches' copies are pinned: pin_memory=True is not advised again
    assert "pin_memory=True" not in line and "pinned already" in line


def test_one_long_first_wait_among_short_ones_is_the_iterators_start_up_not_workers_falling_behind(tmp_path):
    """The fresh3 H100 keyword-spotting loop (8 workers, a new iterator each run; issue 33): one __next__ waited
    1.00 s while the workers started, the others ~0.06 ms; num_workers 0 -> 8 had made it 1.40x slower, and the
    Next said to raise num_workers. A start-up asks for persistent_workers=True and prices that one wait only."""
    from tracetriage.analyzers.voice.report import five_lines

    a = analyze_file(str(_loader_with_workers(tmp_path, wait_ms=[300, 0.05, 0.05, 2, 0.05])))
    p = a.levers.all.lever(DATALOADER_WORKERS)
    assert p.assumption.start_up and p.assumption.count == 1
    assert p.assumption.waited_ns == 300 * MS and 0.8 * 300 * MS <= p.saving_ns <= 300 * MS
    assert "persistent_workers=True" in dw.SPEC.knob.change_for(p.assumption)
    line = five_lines(a)[4]
    assert line.startswith("Next: keep the DataLoader's workers across epochs") and "persistent_workers=True" in line
    assert "raise num_workers" not in line


def test_waits_that_recur_are_workers_falling_behind_even_where_one_is_the_longest(tmp_path):
    """Steady shortfall: the long waits recur (numpy_features' after trace: 45.1 and 43.6 ms, every 4th batch);
    the longest holds under STARTUP_SHARE of the waiting, so more workers stay the advice."""
    from tracetriage.analyzers.voice.report import five_lines

    a = analyze_file(str(_loader_with_workers(tmp_path, wait_ms=[40, 0.05, 0.05, 0.05, 35, 0.05])))
    p = a.levers.all.lever(DATALOADER_WORKERS)
    assert not p.assumption.start_up and p.assumption.count == 2
    assert five_lines(a)[4].startswith("Next: make the DataLoader's workers keep up: they are on already")


def test_a_flat_cost_every_batch_is_the_main_process_receiving_it_not_workers_falling_behind(tmp_path):
    """heldout-user18 lstmtrain_4090l: 4 workers, a 6.5 KB batch, 15 of 20 __next__ at 0.28-0.90 ms; the Next said
    "make the DataLoader's workers keep up ... raise num_workers or prefetch_factor", which cannot shrink what the
    main process pays to receive each batch. A cost flat from batch to batch is named as that, with its levers."""
    from tracetriage.analyzers.voice.report import five_lines

    flat = [0.05, 0.05, 0.8, 0.7, 0.85, 0.75, 0.72, 0.82, 0.78, 0.74]
    a = analyze_file(str(_loader_with_workers(tmp_path, wait_ms=flat)))
    p = a.levers.all.lever(DATALOADER_WORKERS)
    assert p.assumption.workers_on and 0.7 * MS <= p.assumption.flat_ns <= 0.85 * MS
    line = five_lines(a)[4]
    assert "raise num_workers" not in line and "num_workers=<more" not in line
    assert "a larger batch_size (fewer batches to receive)" in line


def test_whatif_prices_the_lever_by_name_and_its_json_says_what_it_assumed(capsys):
    from tracetriage import cli

    trace = str(REALWORLD / "dataloader_cnn--before.json.gz")
    assert cli.main(["whatif", trace, "--lever", DATALOADER_WORKERS, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [row] = out["levers"]
    assert row["lever"] == DATALOADER_WORKERS and row["predicted_ratio"] == pytest.approx(0.23, abs=0.005)
    assert row["assumptions"].startswith("4 workers make the 8 batches (732.3 ms of host work)")


def test_diff_names_the_workers_the_change_turned_on_and_how_close_the_prediction_came():
    from tracetriage.analyzers.triage.diff import check_prediction

    before = analyze_file(str(REALWORLD / "dataloader_cnn--before.json.gz"))
    after = analyze_file(str(REALWORLD / "dataloader_cnn--dataloader_workers.json.gz"))
    check = check_prediction(before, after)
    assert check is not None and check.lever == DATALOADER_WORKERS
    assert check.predicted_ratio == pytest.approx(0.23, abs=0.005)


def test_host_work_without_a_dataloader_is_left_to_no_host_work():
    """The hand-made host-work loops of traces/fixes make no batch: the lever acts on nothing, their Next stays."""
    fixes = REALWORLD.parent / "fixes"
    for kind in ("cpu_augment", "host_numpy", "sleep_ahead"):
        a = analyze_file(str(fixes / f"{kind}--before.json.gz"))
        assert a.levers.all.lever(DATALOADER_WORKERS).assumption.count == 0, kind
        assert a.next_experiment.lever.lever == NO_HOST_WORK, kind


LOADER = REALWORLD.parent / "fixes" / "loader"      # the knob alone, on an H100 (traces/CAPTURED.md)
LOADER_KINDS = ("loader_numpy_features", "loader_stft_audio", "loader_tokenize_lm")


@pytest.mark.parametrize("kind", LOADER_KINDS)
def test_a_loader_pairs_report_names_the_dataloader_before_and_never_asks_for_the_workers_it_has_after(kind):
    """Before: the step waits on next() while the main process makes each batch (the idle sits in
    _SingleProcessDataLoaderIter.__next__), so the Idle line names the DataLoader and the Next num_workers=4. After:
    the workers are on, so nothing asks for num_workers=4 again, and diff names the knob the change turned."""
    from tracetriage.analyzers.triage.diff import check_prediction
    from tracetriage.analyzers.voice.report import five_lines

    before = analyze_file(str(LOADER / f"{kind}--before.json.gz"))
    lines = five_lines(before)
    assert "of the idle is inside the DataLoader's __next__" in lines[2]
    assert lines[4].startswith("Next: load the batches in worker processes: DataLoader(..., num_workers=4")
    after = analyze_file(str(LOADER / f"{kind}--dataloader_workers.json.gz"))
    assert after.levers.all.lever(DATALOADER_WORKERS).assumption.workers_on
    # their waits recur (or there are none long): no start-up read into them, persistent_workers not advised
    assert not after.levers.all.lever(DATALOADER_WORKERS).assumption.start_up
    assert not any("num_workers=4" in line or "load the batches in worker processes" in line
                   for line in five_lines(after))
    check = check_prediction(before, after)
    assert check is not None and check.lever == DATALOADER_WORKERS
