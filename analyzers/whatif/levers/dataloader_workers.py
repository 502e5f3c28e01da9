"""dataloader_workers: a DataLoader's batches made by worker processes instead of the main one.

The fix: `DataLoader(..., num_workers=4)`, the knob `tracetriage try` turns. no_host_work, the lever for slow host
work, takes every long host stretch away: the dataset's creation, the model's set-up and the loop's own Python
with the batches. Workers take only the batches, and start first. On a whole script (try profiles from its first
line) that difference is most of the trace: on the H200, tools/try_h200/loader.py was predicted -52% by
no_host_work and measured +22%. What the knob changes, and only that:

1. Each batch made in the main process (an `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` range:
   the dataset's __getitem__, the transforms, the collate) is made by one of W workers, in parallel with the
   main process and the other workers: a batch every W-th of a batch's work arrives, and the main process,
   which spent the loop's own time (from the previous batch's end to this one's start: the step, its syncs)
   meanwhile, waits only for what is left: max(0, work / W - loop). The host work taken is never more than
   the long host stretch the trace shows before the next call.
2. Each iterator's first batch is waited for whole (every worker starts on one at once), and each iterator pays
   the workers' start and stop on the host: W x WORKER_START_NS.
3. The iterators are counted from the Python frames of DataLoader.__iter__ (stacks recorded, as try's captures
   are); without stacks none is counted: a steady-state window of a long loop holds no iterator's start.

An iterator that already has workers (`_MultiProcessingDataLoaderIter`) and still makes the loop wait has workers
that do not keep up: the knob then is more of them (or a lighter per-sample transform, or a deeper prefetch), and
what it buys at most is the wait itself. For each of its `__next__` ranges that lasts a long host stretch
(depgraph's host_long_ns: 10 launch calls) or more:
4. the batch is ready when the loop asks: the main thread's time inside the range goes (a call keeping what a
   launch costs), and so does the part of any other thread's wait for its work that lies in the range (the
   pin-memory thread waits there for the worker's batch, which no traced call hands it: host_windows.shorten_wakes);
   an iterator started in the trace still waits for its first batch whole. The batches' copies stay.
A multi-process iterator whose `__next__` never lasts that long keeps up already: nothing to act on.
5. A start-up is not a shortfall. An iterator's first `__next__` waits while its workers start and each makes its
   first batch: once per iterator, i.e. once per epoch where the loop makes a new one. When one `__next__` holds
   at least STARTUP_SHARE of all the time the loop spent inside them, with STARTUP_MIN_CALLS others beside it
   (the steady state is in the trace, and short), that wait is the start-up: the knob is persistent_workers=True
   (the workers kept across epochs) or longer epochs, and what it buys at most is that wait, once per epoch.
   More workers make it longer (each one starts). Workers that fall behind wait again and again, every W-th
   batch or each: numpy_features' after trace (traces/fixes/loader) waits 45.1 and 43.6 ms, the longer 51% of
   all; an H100 keyword-spotting loop (8 workers, a new iterator each run) waited 1.00 s once, 78% of all
   (its next 279 ms is that start's tail, left in place: the bound stays conservative).
6. A lone batch is not a steady state. A trace whose only multi-process `__next__` is one long wait (a notebook
   profiling one iteration of a fresh `for x in loader`, the window opened before the first batch) shows one
   batch: whether it waited for the iterator's start-up (5.) or for workers falling behind, one batch cannot tell,
   and nothing in it recurs. Any trace of that construct shows exactly one `_MultiProcessingDataLoaderIter.__next__`
   range lasting a long host stretch or more. Priced as 5. (at most that wait, once per iterator), said as the
   start-up it most likely holds, with the experiment that tells the two apart: profile a later batch
   (torch.profiler.schedule's wait/warmup), the workers kept across epochs (persistent_workers=True). It would
   fire falsely on a loop that really makes one batch per iterator and waits for slow workers every time: then
   persistent_workers=True still removes the start-up, and the later batch's profile shows the rest. Two
   sustainbench A5000 ViT iterations (one batch of 32 images each) waited 0.78 s and 5.1 s in their only
   `__next__` beside 20-59 ms of GPU work, and were told to lighten the transform of workers that did not keep up.
7. A flat per-batch cost is not workers falling behind. Workers behind make the loop wait unevenly: a long wait each
   W-th batch as the prefetched ones run out, short fetches between (numpy_features' after trace: 1.7, 45.1, 1.8,
   43.6 ms among 50-70 µs fetches; dataloader_cnn's 25 and 31 ms among 50-90 µs). Where FLAT_SHARE or more of the
   calls last a long host stretch and FLAT_WITHIN of those lie within 2x of their median either way, every batch
   costs the main process about the same (under FLAT_MAX_NS): receiving a batch the workers made (the queue's get,
   unpickling its tensors' shared-memory handles, the pin-memory thread's hand-off), which more workers or a deeper
   prefetch do not shrink (heldout-user18 lstmtrain_4090l: 4 workers, a 6.5 KB batch, 15 of 20 `__next__` at
   0.28-0.90 ms, said "make the workers keep up ... raise num_workers"). Priced as 4. (the cost gone: the dataset
   kept on the GPU and sliced there makes no batch to receive), said as that per-batch cost with its levers: fewer,
   bigger batches, or the data on the device. A trace cannot prove which of the two it is (the workers are not
   traced): the words say how to tell (time num_workers doubled: a receive cost stays).
This is
the bound of the knob (workers that keep up), not a count of workers: the trace does not record how many there
are, nor how long a batch takes them (their processes are not traced).

Checked on the H200 pair traces/realworld/dataloader_cnn (4 workers, pinned: 0.23 predicted, 0.26 [0.23-0.29]
measured) and on the three pairs of the knob alone in traces/fixes/loader (capture/realworld_loader.py, GROUP=loader,
an H100; profiled after/before, median [p10-p90] of 5): loader_numpy_features 0.24 predicted, 0.31 [0.21-0.35]
measured and loader_stft_audio 0.25 predicted, 0.20 [0.14-0.29] (dev); loader_tokenize_lm 0.58 predicted,
0.59 [0.46-0.71] (test). Nothing was fitted on them: the two dev pairs miss in opposite directions, each for a
reason no one constant holds.
- numpy_features (0.24 < 0.31): a worker makes a batch slower than the main process did. Its after trace's loop
  (next() plus the loop's own time, 15.5 ms a batch) makes a worker's batch 4 x 15.5 = 62 ms against the 45 ms
  median the before trace's main process took: 1.38x (stft_audio's after trace: 4 x 9.7 = 38.8 ms against 31.7 ms,
  1.22x). A worker runs torch with one intra-op thread (the DataLoader's worker loop sets it) and shares the host's
  cores with the others. Scaling the work by 1.3 puts numpy_features at 0.305, but stft_audio at 0.291 and
  dataloader_cnn (a test pair) at 0.287: the dev error barely moves (0.114 -> 0.088 summed), so it is not applied.
- stft_audio (0.25 > 0.20): one batch of its before trace took 93.6 ms against ~31 ms for the seven others, and
  a worker's share of it (23 ms) less the loop's own 8 ms is charged as a 15 ms wait; the after trace's waits are
  8.5 ms in all.
The iterators of these pairs started before the window (no Python frames recorded): WORKER_START_NS is not
exercised by them and stays the development host's figure.
On the pairs' after traces (workers on) the knob as turned (num_workers=4) is never advised again; 4. still acts
where the after trace shows the loop waiting: numpy_features' (92 ms of its 125 ms inside __next__, the workers
not keeping up: more of them is the right advice there), stft_audio's (8.5 ms, -10%), and tokenize_lm's (the test
pair: every __next__ 0.94-1.33 ms while the loop runs ~21 ms between; the workers are ahead, so this is the fetch
of a ready batch, not a wait for one: -5% said, a known miss of 4., left unfitted because it is the test half).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, PYTHON, USER_ANNOTATION, thread_keys
from tracetriage.analyzers.model.units import count, duration_ns
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif.levers.host_windows import remove_host_windows, shorten_wakes
from tracetriage.analyzers.whatif.levers.spec import (
    SOURCE_WORDS,
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Options,
    Recognise,
    replay_figure,
    went,
)

WORKERS = 4                  # the knob's num_workers (catalogue: dataloader_workers)
# A worker's start and stop, per iterator: the fork of a process that holds torch, its first message, its join
# when the iterator ends. NOT measured on a GPU host: read on this repository's development host, a 2-core CPU
# machine without a GPU (torch 2.13, 4 workers over a TensorDataset: iter() + first batch + the end took 150 ms
# against 1 ms without workers, ~40 ms a worker), because no GPU capture had timed it yet. A GPU host forks a
# process that also holds a CUDA context's libraries, on more and faster cores: the figure may be off either way.
# The after traces of tools/try_h200/run_all.py show it (their `_MultiProcessingDataLoaderIter.__init__` frame);
# until they are read, says() names this figure and its source in every assumption that charges it (WORKER_START).
WORKER_START_NS = 40_000_000
WORKER_START = "devhost"    # where WORKER_START_NS was read (SOURCE_WORDS)
SINGLE_PROCESS_BATCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
MULTI_PROCESS_BATCH = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
# 5.: one wait holding twice all the others together is no steady shortfall (that spreads over the batches, every
# W-th one at least); and at least 3 other __next__ calls, so one worker cycle's single wait is not read as a start
STARTUP_SHARE = 2 / 3
STARTUP_MIN_CALLS = 3
# 7.: a flat per-batch receive cost: this share of the calls last a long host stretch, and this share of those lie
# within 2x of their median
FLAT_SHARE = 2 / 3
FLAT_WITHIN = 0.75
FLAT_MIN_CALLS = 5
# ... and their median under this: receiving a batch costs the main process 0.3-0.9 ms (heldout-user18 lstmtrain_4090l,
# a 6.5 KB batch) to ~1.3 ms (traces/fixes/loader tokenize_lm's after trace) on the dev captures; workers that fall
# behind in a steady state make the loop wait evenly too (each batch: a worker's batch time over W, less the loop's
# own), and a flat wait of several ms is that, not a receive
FLAT_MAX_NS = 2_000_000
ITER_FRAME = re.compile(r"torch/utils/data/dataloader\.py\(\d+\): __iter__$")


@dataclass(frozen=True)
class WorkersMakeBatches(Assumption):
    workers: int = WORKERS
    iterators: int = 0               # iterators started inside the trace (each pays the workers' start)
    stacks: bool = False             # the iterators could be counted (Python frames recorded)
    batch_host_ns: int = 0           # host work inside the batches, before
    start_ns: int = WORKER_START_NS  # a worker's start and stop, and where that figure was read (SOURCE_WORDS)
    start_source: str = WORKER_START
    workers_on: bool = False         # the iterators have workers already (_MultiProcessingDataLoaderIter) that the
                                     # loop waits for: count is the batches waited for, waited_ns the wait taken
    waited_ns: int = 0
    start_up: bool = False           # the wait is one iterator's start-up (5.), not workers falling behind
    lone: bool = False               # ... read from the trace's only batch (6.): a start-up most likely, untold
    flat_ns: int = 0                 # 7.: each batch costs the main process about this (the long calls' median),
                                     # flat from batch to batch: receiving it, not waiting for workers (0: not flat)


def batch_rows(c: Context, name: str = SINGLE_PROCESS_BATCH) -> np.ndarray:
    """The batches' ranges (single-process ones unless `name` says), in order of start."""
    ev = c.trace.ev
    rows = np.flatnonzero((ev.cat == USER_ANNOTATION) | (ev.cat == CPU_OP))   # (torch 1.x: a cpu_op)
    rows = rows[name_flags(c.trace, rows, lambda n: n == name)] if len(rows) else rows
    return rows[np.argsort(ev.start[rows], kind="stable")]


def iterator_starts(c: Context) -> tuple[np.ndarray, bool]:
    """Where DataLoader.__iter__ ran (its Python frames), and whether Python frames were recorded at all."""
    ev = c.trace.ev
    py = np.flatnonzero(ev.cat == PYTHON)
    if not len(py):
        return np.empty(0, np.int64), False
    return np.sort(ev.start[py[name_flags(c.trace, py, lambda n: bool(ITER_FRAME.search(n)))]]), True


def apply(c: Context, p, o: Options) -> tuple[WorkersMakeBatches, dict]:
    g, ev = c.g, c.trace.ev
    rows = batch_rows(c)
    if not len(rows) and g.n_calls:
        return _keep_up(c, p)
    if not len(rows) or not g.n_calls:
        return WorkersMakeBatches("dataloader_workers", 0), {"batches": 0}
    starts, stacks = iterator_starts(c)
    # each iterator's first batch: the first range at or after its __iter__
    first = set(np.searchsorted(ev.start[rows], starts, side="left").tolist())
    c_key = c.call_keys
    r_key = thread_keys(ev, rows)
    host_left = g.c_host.copy()
    taken = batch_host = 0
    calls_of = {k: np.flatnonzero(c_key == k) for k in distinct(r_key).tolist()}   # each thread's, by start
    prev_end: dict[int, int] = {}
    for i, r in enumerate(rows.tolist()):
        m = calls_of[int(r_key[i])]
        loop = int(ev.start[r]) - prev_end.get(int(r_key[i]), int(ev.start[r]))   # the loop's time since the last
        prev_end[int(r_key[i])] = int(ev.end[r])
        if not len(m):
            continue
        lo = np.searchsorted(g.c_start[m], ev.start[r], side="left")
        hi = np.searchsorted(g.c_start[m], ev.end[r], side="left")
        if hi >= len(m):
            continue                                       # no call after it: nothing waited for this batch
        work = max(int(ev.end[r] - ev.start[r]) - int(g.c_dur[m[lo:hi]].sum()), 0)   # less calls made inside
        batch_host += work
        call = m[hi]                                       # the call whose stretch holds the batch's host work
        if i in first:
            p.c_gap[call] += WORKERS * WORKER_START_NS
            continue
        wait = max(work // WORKERS - loop, 0)             # what the workers have not made by the time it asks
        cut = min(work - wait, int(host_left[call]))
        host_left[call] -= cut
        p.c_gap[call] -= cut
        taken += cut
    a = WorkersMakeBatches("dataloader_workers", len(rows), iterators=len(first), stacks=stacks,
                           batch_host_ns=batch_host)
    return a, {"batches": len(rows), "single_process_batches": len(rows), "iterators": len(first),
               "host_taken_ns": taken, "start_added_ns": len(first) * WORKERS * WORKER_START_NS}


def _keep_up(c: Context, p) -> tuple[WorkersMakeBatches, dict]:
    """Workers on already, the loop waiting for them: each batch ready when asked (4. of the module's model)."""
    g, ev = c.g, c.trace.ev
    rows = batch_rows(c, MULTI_PROCESS_BATCH)
    long_ = rows[(ev.end[rows] - ev.start[rows]) >= g.host_long_ns] if len(rows) else rows
    starts, stacks = iterator_starts(c)
    first = set(np.searchsorted(ev.start[rows], starts, side="left").tolist()) if len(rows) else set()
    waited = [r for r in long_.tolist() if int(np.searchsorted(ev.start[rows], ev.start[r])) not in first]
    start_up = _start_up(c, rows) if not first else None
    lone = start_up is None and len(rows) == 1 and len(long_) == 1     # 6.: the trace's only batch, a long wait
    if lone:
        start_up = int(rows[0])
    if start_up is not None:
        waited = [start_up]
    if not waited:
        return (WorkersMakeBatches("dataloader_workers", 0, workers_on=bool(len(rows)), stacks=stacks),
                {"batches": 0, "multi_process_batches": len(rows)})
    w = np.array(waited, np.int64)
    keys = thread_keys(ev, w)
    _, host = remove_host_windows(c, p, ev.start[w], ev.end[w], keys)
    handed = shorten_wakes(c, p, ev.start[w], ev.end[w])
    a = WorkersMakeBatches("dataloader_workers", len(w), iterators=0, stacks=stacks, workers_on=True,
                           waited_ns=int((ev.end[w] - ev.start[w]).sum()), start_up=start_up is not None,
                           lone=lone, flat_ns=0 if start_up is not None else flat_cost(c, rows))
    return a, {"batches": len(w), "multi_process_batches": len(rows), "host_taken_ns": host,
               "handed_taken_ns": handed, "start_added_ns": 0}


def flat_cost(c: Context, rows: np.ndarray) -> int:
    """7. of the module's model: the median of the multi-process `__next__` calls lasting a long host stretch, where
    they are FLAT_SHARE of the calls or more, FLAT_WITHIN of them lie within 2x of that median and it is under
    FLAT_MAX_NS; else 0."""
    ev = c.trace.ev
    dur = (ev.end[rows] - ev.start[rows]).astype(np.int64)
    long_ = dur[dur >= c.g.host_long_ns]
    if len(long_) < FLAT_MIN_CALLS or len(long_) < FLAT_SHARE * len(dur):
        return 0
    mid = int(np.median(long_))
    within = (long_ >= mid // 2) & (long_ <= 2 * mid)
    return mid if within.mean() >= FLAT_WITHIN and mid < FLAT_MAX_NS else 0


def _start_up(c: Context, rows: np.ndarray) -> int | None:
    """The row of a multi-process `__next__` that is an iterator's start-up (5. of the module's model), or None."""
    ev = c.trace.ev
    if len(rows) < STARTUP_MIN_CALLS + 1:
        return None
    dur = (ev.end[rows] - ev.start[rows]).astype(np.int64)
    i = int(np.argmax(dur))
    if dur[i] < c.g.host_long_ns or dur[i] < STARTUP_SHARE * int(dur.sum()):
        return None
    return int(rows[i])


def says(a: WorkersMakeBatches) -> str:
    if a.count == 0 and a.workers_on:
        return "the DataLoader's workers keep up already: the loop never waits long inside their __next__"
    if a.count == 0:
        return "no batch made in the main process (no single-process DataLoader iterator in this trace)"
    if a.workers_on and a.lone:
        return (f"the trace's only batch waited {duration_ns(a.waited_ns)} in one _MultiProcessingDataLoaderIter."
                "__next__, most likely the iterator's start-up (its workers starting, each making its first batch), "
                "which workers kept across epochs (persistent_workers=True) do not pay again; one batch cannot tell "
                "it from workers falling behind: at most that wait, once per iterator")
    if a.workers_on and a.start_up:
        return (f"the workers kept across epochs (persistent_workers=True): the iterator's start-up, "
                f"{duration_ns(a.waited_ns)} in one _MultiProcessingDataLoaderIter.__next__ while the workers start "
                "and each makes its first batch, is not paid again; once per epoch, the other batches as they ran")
    if a.workers_on and a.flat_ns:
        return (f"no batch to receive (the data kept on the GPU): each of the {count(a.count, 'batch', 'batches')} "
                f"costs the main process about {duration_ns(a.flat_ns)} inside _MultiProcessingDataLoaderIter.__next__ "
                f"({duration_ns(a.waited_ns)} in all), flat from batch to batch, and that time goes; the batches' "
                "copies stay")
    if a.workers_on:
        return (f"workers that keep up (more of them, a lighter per-sample transform, a deeper prefetch): each of "
                f"the {count(a.count, 'batch', 'batches')} the loop waited for ({duration_ns(a.waited_ns)} inside "
                "_MultiProcessingDataLoaderIter.__next__) is ready when it asks, and the pin-memory thread's wait for "
                "it goes with it; the batches' copies stay")
    start = (f"; {count(a.iterators, 'iterator')} start{'s' if a.iterators == 1 else ''} its workers "
             f"({a.workers} × {duration_ns(a.start_ns)}, a worker's start and stop {SOURCE_WORDS[a.start_source]}) "
             "and waits for its first batch whole"
             if a.iterators else ("; no iterator starts in this trace" if a.stacks else
                                  "; without Python frames the iterators' starts are not counted"))
    return (f"{a.workers} workers make the {count(a.count, 'batch', 'batches')} ({duration_ns(a.batch_host_ns)} of "
            f"host work) while the main process runs its loop: it waits only for what they have not made by then"
            + start)


def _change(a: WorkersMakeBatches) -> str:
    if a.workers_on and a.lone:
        return ("DataLoader(..., persistent_workers=True), and profile a later batch (torch.profiler.schedule(wait=1, "
                "warmup=1, active=3)) to see whether the workers keep up")
    if a.workers_on and a.start_up:
        return "DataLoader(..., persistent_workers=True), or longer epochs (not more workers)"
    if a.workers_on and a.flat_ns:
        return "a larger batch_size (fewer batches to receive), or the dataset kept on the GPU and sliced there"
    if a.workers_on:
        return "DataLoader(..., num_workers=<more than now>, prefetch_factor=4), or a lighter per-sample transform"
    return f"DataLoader(..., num_workers={a.workers})" + (
        ", and persistent_workers=True where the loop makes a new iterator each epoch" if a.iterators > 1 else "")


SPEC = LeverSpec(
    name="dataloader_workers", effort=1, cause=Cause.HOST_WORK, apply=apply, says=says,
    words="making the batches in DataLoader workers", fix=f"the DataLoader's batches made by {WORKERS} worker "
    f"processes (num_workers={WORKERS})",
    recognise=Recognise(order=4, evidence="single_process_batches",
                        because="its batches are no longer made in the main process",
                        # the batches made in the main process, not those the replay acted on: a trace with workers
                        # on counts the batches waited for, all 8 of tokenize_lm's after trace (traces/fixes/loader)
                        amount=replay_figure("dataloader_workers", "single_process_batches"),
                        acted=lambda m: m.by_cause_ns.get(Cause.HOST_WORK, 0), applied=went),
    # a knob on an idle cause: its Next is that cause's experiment, moving the host work, said as the DataLoader's
    # advice (voice/common.advice), not "turn one knob" (the knobs without a cause: TF32, bf16, ...)
    experiment=Experiment.MOVE_HOST_WORK,
    applied_words=f"DataLoader workers (num_workers={WORKERS})", weighed_only_if_found=True,
    knob=Knob(change=f"DataLoader(..., num_workers={WORKERS})",
              evidence="batches made in the main process: enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ "
                       "ranges (the dataset's __getitem__, the transforms, the collate, on the loop's critical path); "
                       "DataLoader.__iter__ frames for the iterators started (stacks on)",
              applies="every device (a DataLoader iterated without workers)",
              model=f"each batch made by one of {WORKERS} workers while the loop runs: the main process waits only "
                    f"for max(0, work/{WORKERS} - the loop's own time since the previous batch); an iterator started "
                    f"in the trace waits for its first batch whole and pays {WORKERS} x 40 ms of workers' start (read "
                    "on the development host, a CPU machine without a GPU)",
              guide="Performance Tuning Guide: enable async data loading and augmentation (num_workers > 0); "
                    "torch.utils.data: single- and multi-process data loading",
              line=_change, where=Cause.HOST_WORK))

