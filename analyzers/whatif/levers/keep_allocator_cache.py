"""keep_allocator_cache: the caching allocator keeps its blocks from step to step (no torch.cuda.empty_cache() in
the loop; where memory is short, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True rather than a cache emptied to
retry allocations).

PyTorch's caching allocator calls the driver only to grow: once the first steps have run, a step's tensors reuse
the blocks the step before freed, and the trace shows no cudaMalloc or cudaFree. Where the cache is emptied every
step (torch.cuda.empty_cache() in the loop, or the allocator freeing its cached blocks to retry an allocation that
failed), every step hands its blocks back to the driver (cudaFree, which waits for the device to drain) and
allocates them again (cudaMalloc): the calls recur in every step, each costing the host tens of µs. The trace
shows it as
  1. the loop's units (the steps: tracetriage.analyzers.analyses.steps; else a user range that repeats, one
     profiler step around it) and the allocator's driver calls in each;
  2. cudaFree in the steps after the first (one-time growth in the first step, or before the loop, is set-up:
     allocator growth with no free is the warm_up lever's, or a pool that grows, which no cache setting fixes);
  3. the steps whose calls are the loop's: every later step holding calls, and the first when it holds no more
     than CHURN_FIRST times their median (the step before the window emptied the cache too; more than that is
     growth, left as traced).
In the graph those calls go: their host time (the drain cudaFree waits for included) is no longer spent. The op
around a cudaMalloc keeps its own time (the allocator's search and bookkeeping): measured on fresh5
fcn_empty_cache, the allocating ops ran 3.1 ms longer than their twins without a cudaMalloc beyond the 18.0 ms of the
calls, and every op of the after trace ran faster (a floor: see docs/whatif.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.names import name_tests
from tracetriage.analyzers.model.trace import USER_ANNOTATION
from tracetriage.analyzers.model.verdicts import Cause, Construct, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    went,
)

# The caching allocator's driver calls (CUDA and ROCm): a device allocation and its release. Host (pinned)
# allocations are the pin_memory path's, the stream-ordered Async ones another allocator's: neither is this.
MALLOC = frozenset({"cudaMalloc", "hipMalloc", "cuMemAlloc_v2", "cuMemAlloc"})
FREE = frozenset({"cudaFree", "hipFree", "cuMemFree_v2", "cuMemFree"})
CHURN_FIRST = 1.5    # the first step's calls are the loop's where they are at most this many times the later median
MIN_UNITS = 2        # a first step and one after it: what tells a recurring call from a one-time one


@dataclass(frozen=True)
class KeepCache(Assumption):
    mallocs: int = 0                 # cudaMalloc calls taken out, in `steps` steps
    frees: int = 0
    steps: int = 0
    host_ns: int = 0                 # the calls' host time (their drains included)
    drain_ns: int = 0                # of it, cudaFree waiting for the device to drain
    from_python: bool = True         # the frees are called straight from Python (torch.cuda.empty_cache())
    found: str = ""                  # count 0: why ("none", "one_time", "no_free", "no_steps")
    calls: int = 0                   # count 0: the allocator calls after the first launch


def _units(c: Context) -> list[tuple[int, int]]:
    """The loop's units as (start, end) windows, in time order: the steps, else the occurrences of the user range
    that repeats most (an `iteration` range inside one profiler step), else none."""
    from tracetriage.analyzers.analyses import steps as steps_mod

    found = steps_mod.find(c.trace)
    out = [(s.start_ns, s.end_ns) for s in found.steps if not s.setup]
    if len(out) >= MIN_UNITS:
        return out
    ev = c.trace.ev
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    names = [c.trace.name_of(int(r)) for r in ann.tolist()]
    own = [i for i, n in enumerate(names) if not n.startswith(steps_mod.PROFILER_STEP)
           and not n.startswith(steps_mod.TORCH_RANGE_PREFIXES)]
    if not own:
        return []
    ids, counts = np.unique(ev.name[ann[own]], return_counts=True)
    if counts.max() < steps_mod.STEP_MIN_REPEATS:
        return []
    rows = ann[own][ev.name[ann[own]] == ids[int(np.argmax(counts))]]
    rows = rows[np.argsort(ev.start[rows], kind="stable")]
    return [(int(ev.start[r]), int(ev.end[r])) for r in rows.tolist()]


def _nothing(found: str, calls: int) -> tuple[KeepCache, dict]:
    return KeepCache("keep_allocator_cache", 0, found=found, calls=calls), {"steady_calls": 0}


def apply(c: Context, p, o: Options) -> tuple[KeepCache, dict]:
    g, tr = c.g, c.trace
    # each name tested once, not each call's name string compared (np.isin over 300k objects: 11 ms at 942k events)
    is_malloc, is_free = name_tests(tr, g.c_row, MALLOC.__contains__, FREE.__contains__)
    launches = g.c_start[g.c_kind == dg.LAUNCH_CALL]
    # before the first launch the frees create the context and the mallocs size the first pool: set-up
    after_first = g.c_start > launches.min() if len(launches) else np.zeros(g.n_calls, bool)
    alloc = np.flatnonzero((is_malloc | is_free) & after_first)
    if not len(alloc):
        return _nothing("none", 0)
    units = _units(c)
    n_after = len(alloc)
    if len(units) < MIN_UNITS:
        return _nothing("no_steps", n_after)
    starts = np.array([s for s, _ in units], np.int64)
    ends = np.array([e for _, e in units], np.int64)
    unit = np.searchsorted(starts, g.c_start[alloc], side="right") - 1
    inside = (unit >= 0) & (g.c_start[alloc] < ends[np.maximum(unit, 0)])
    alloc, unit = alloc[inside], unit[inside]
    per_unit = np.bincount(unit, minlength=len(units))
    frees_per_unit = np.bincount(unit[is_free[alloc]], minlength=len(units))
    later = per_unit[1:]
    if not (frees_per_unit[1:] > 0).sum() or (later > 0).sum() < max(1, (len(later) + 1) // 2):
        # no free in the later steps: growth (the first step's), or a pool that grows each step
        return _nothing("one_time" if not (later > 0).any() else "no_free", n_after)
    priced = later > 0
    median = float(np.median(later[priced]))
    take_first = 0 < per_unit[0] <= CHURN_FIRST * median
    steady_units = np.flatnonzero(np.concatenate(([take_first], priced)))
    gone = alloc[np.isin(unit, steady_units)]
    host_ns = int(g.c_dur[gone].sum())
    blocked = gone[p.c_blocked[gone] & (p.c_awaited[gone] >= 0)]
    drained = g.g_start[p.c_awaited[blocked]] + g.g_dur[p.c_awaited[blocked]] - g.c_start[blocked]
    drain_ns = int(np.clip(drained, 0, g.c_dur[blocked]).sum())
    p.c_dur[gone] = 0
    p.c_blocked[gone] = False
    frees = gone[is_free[gone]]
    a = KeepCache("keep_allocator_cache", len(gone), mallocs=int(is_malloc[gone].sum()), frees=len(frees),
                  steps=len(steady_units), host_ns=host_ns, drain_ns=drain_ns,
                  from_python=bool(len(frees)) and not bool(g.c_in_op[frees].any()))
    return a, {"steady_calls": len(gone), "steps": len(steady_units)}


def says(a: KeepCache) -> str:
    if a.count == 0:
        return {
            "none": "no cudaMalloc or cudaFree after the first launch: the caching allocator serves the steps from "
                    "its cache",
            "no_steps": f"{units.count(a.calls, 'allocator call')} after the first launch, but no repeated step to "
                        "tell one-time growth from calls that recur every step: nothing priced",
            "one_time": f"{units.count(a.calls, 'allocator call')} after the first launch, none of them in the steps "
                        "after the first (the cache growing once, set-up): nothing recurs to remove",
            "no_free": f"{units.count(a.calls, 'allocator call')} after the first launch recur without a cudaFree: "
                       "the pool grows step after step (tensors kept across steps, or new shapes), which keeping the "
                       "cache does not fix",
        }[a.found]
    per = max(a.steps, 1)
    drain = (f", {units.duration_ns(a.drain_ns // per)} of it waiting in cudaFree for the device to drain"
             if a.drain_ns else "")
    return (f"the caching allocator's {units.integer(round(a.mallocs / per))} cudaMalloc and "
            f"{units.integer(round(a.frees / per))} cudaFree a step ({units.integer(a.steps)} steps, "
            f"{units.duration_ns(a.host_ns // per)} of host time a step{drain}) go: kept cached, each step's blocks "
            "are reused without calling the driver (the ops' own bookkeeping stays)")


def most_saved_ns(a: KeepCache) -> int:
    """The most removing the calls can save: their host time, the drains inside it included."""
    return a.host_ns


CHANGE = ("delete torch.cuda.empty_cache() from the loop: the caching allocator then reuses its blocks every step "
          "(should that run out of memory, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True rather than emptying "
          "the cache)")
CHANGE_RETRY = ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or a smaller batch): the allocator frees its cache "
                "inside the ops to retry allocations every step, a sign memory is short")


def change(a) -> str:
    return CHANGE if getattr(a, "from_python", True) else CHANGE_RETRY


def steady_calls(m: Measured) -> int:
    return m.whatif.lever("keep_allocator_cache").detail.get("steady_calls", 0)


SPEC = LeverSpec(
    name="keep_allocator_cache", effort=1, cause=None, apply=apply, says=says, words="keeping the allocator's cache",
    fix="torch.cuda.empty_cache() taken out of the loop",
    recognise=Recognise(order=2, evidence="steady_allocator_calls", because="its cudaMalloc/cudaFree every step went",
                        amount=steady_calls, acted=lambda m: m.idle_in(Construct.ALLOCATOR), applied=went),
    applied_words="the allocator's cache kept", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    most_saved=most_saved_ns,
    knob=Knob(change=CHANGE, line=change,
              evidence="cudaFree (with cudaMalloc) calls in the steps after the first: the cache emptied every step "
                       "(torch.cuda.empty_cache() straight from Python, or inside ops retrying an allocation)",
              where=Cause.SYNCHRONIZATION,
              applies="every CUDA and ROCm device, every dtype: a loop that empties the caching allocator",
              model="the steady steps' cudaMalloc/cudaFree calls go with their host time, cudaFree's wait for the "
                    "device to drain included; the ops around them keep theirs (a floor)",
              guide="CUDA semantics: memory management (the caching allocator; empty_cache releases cached blocks "
                    "to other applications, it does not make memory available to PyTorch); expandable_segments"))
