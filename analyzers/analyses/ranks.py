"""Multi-rank runs: one report for a directory of per-rank traces.

    code = report_dir(Path("traces/ddp"), as_json=False, quiet=True)   # what `tracetriage report DIR` runs

Each rank's trace gets its own full analysis (tracetriage.analyzers.triage.report), one process per rank,
in parallel; the merge reads only what those analyses return, plus the timing of each
rank's collective kernels (kernel names containing "nccl"), taken in the same worker.

The straggler. In data-parallel training every rank meets every other in each
all-reduce, and an NCCL kernel occupies its GPU from the moment its rank arrives until
the last rank arrives and the transfer is done. So the rank the others wait for is
the one whose collective kernels are *shortest*: it never waits, the others wait out
its lateness. Two rules, in this order:

1. GPU evidence. Per rank, the median collective time per step (median, not total: a
   one-off wait, such as the first step after ranks started profiling at different
   moments, would otherwise decide). When the spread between ranks exceeds 20% of the
   median GPU step, the straggler is the rank with the least.
2. Host evidence. Otherwise, per rank, how long its host takes to issue one step (the
   median interval between the launches of its collectives). A rank whose host needs
   more than the GPU step, and 20% of a step more than the others' hosts, paces every
   rank once the launch queues drain; its GPU timeline can hide that for a while.

The real 2-rank H200 run in traces/ddp shows why both are needed. Rank 1 sleeps 3 ms
per step on the host, but rank 0's profiled window began 420 ms after rank 1's, so
rank 1's first all-reduce spun 417 ms waiting for rank 0 while rank 1's host queued all
five steps, sleeps included; once rank 0 arrived both GPUs ran the five steps back to
back (all-reduce 0.46 ms on both, step 0.85 ms). Collective totals (2.5 ms vs 419 ms)
would name rank 0; the medians show no gap; the hosts name rank 1: it needs 3.76 ms to
issue a step, rank 0 needs 0.33 ms.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.kernels import is_collective
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, NONE, USER_ANNOTATION, Trace
from tracetriage.analyzers.model.verdicts import Cause

SPREAD_OF_STEP = 0.20        # a gap between ranks counts when it exceeds this share of the median step
OUTLIER = 3.0                # a collective call this many times its rank's median is reported apart
ONE_RANK_HOLDS = 0.75        # a rank whose late arrivals hold this share of the run's peer waiting is the one waited
                             # for; below it, the ranks hold each other up in turn


# --- the results -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class LongestCall:
    call: int          # index among the rank's collective calls
    start_ns: int
    end_ns: int
    dur_ns: int


@dataclass(frozen=True)
class Collectives:
    """The collective kernels of one rank, per step, in the trace's own clock."""
    calls: int
    total_ns: int
    steps_from: str                    # "ProfilerStep" | "calls"
    call_ns: tuple[int, ...]
    per_step_ns: tuple[int, ...]
    step_end_ns: tuple[int, ...]
    step_launch_ns: tuple[int, ...]    # NONE where a step's launch is not in the trace
    longest: LongestCall | None
    trace_start_ns: int
    trace_end_ns: int
    kernels: tuple[str, ...]           # the top three collective kernel names by time


@dataclass(frozen=True)
class RankReport:
    """What a worker returns for one rank's file: its full report and its collectives."""
    report: dict              # the rank's `report --json` object
    lines: tuple[str, ...]    # its five lines
    mostly: str               # its dominant idle cause with the evidence, as the Idle line says it
    dominant: Cause | None
    idle_share: float
    span_us: float
    kernel_busy_us: float
    device_name: str | None
    rank: int | None          # distributedInfo.rank
    caveats: tuple[str, ...]
    collectives: Collectives
    world_size: int | None = None   # distributedInfo.world_size: how many ranks the run had
    has_gpu: bool = True            # False: a CPU-only trace (no GPU activity), never compared
    rank_from: str | None = None    # where `rank` came from when not distributedInfo (a merged file's tags)


@dataclass(frozen=True)
class RankError:
    message: str


@dataclass(frozen=True)
class RankRow:
    rank: int
    how: str                  # "distributedInfo" | "file name" | "file order"
    path: Path
    r: RankReport


@dataclass(frozen=True)
class StepStats:
    """One rank's step figures for the straggler rules."""
    row: RankRow
    per_step_med: float | None
    gpu_step: float | None
    host_step: float | None


@dataclass(frozen=True)
class Outlier:
    """A collective call far longer than its rank's median; with the profiler start skew that explains it."""
    rank: int
    call: int
    dur_ns: int
    median_ns: float
    before_ns: int | None = None      # how much of it ran before `peer`'s trace began
    peer: int | None = None
    peer_late_ns: int | None = None


@dataclass(frozen=True)
class Straggler:
    found = True
    rank: int
    basis: str                       # "collective_wait" | "host_step"
    wait_per_step_ns: float
    stats: tuple[StepStats, ...]     # every rank with collectives
    step_ns: float
    gpu_step_ns: float
    threshold_ns: float
    spread_ns: float
    outliers: tuple[Outlier, ...]


@dataclass(frozen=True)
class NoStraggler:
    found = False                    # (a Straggler is found; a NoStraggler says why not)
    why: str                         # "one_rank" | "no_collectives" | "balanced" | "one_usable"
    ranks_with_collectives: int = 0
    spread_ns: float = 0.0
    threshold_ns: float = 0.0
    step_ns: float = 0.0
    outliers: tuple[Outlier, ...] = ()


@dataclass(frozen=True)
class PeerWait:
    """One rank's collective time against its peers': each call's transfer is what the fastest rank's same
    call took (the last rank to arrive waits for nobody); the rest of the rank's call waited for a peer."""
    rank: int
    wait_ns: int
    transfer_ns: int


@dataclass(frozen=True)
class LateArrival:
    """The waiting one rank's late arrivals cost its peers: in each call it was the last to arrive at (its call the
    shortest: it waited for nobody), the peers' calls ran on for it. Only calls where a peer waited OUTLIER times
    the call's own transfer count: a few µs of arrival order in every call is no one's lateness."""
    rank: int
    calls: tuple[int, ...]    # the calls (1-based, in time order) it arrived last at
    held_ns: int              # the peers' waiting in those calls, summed over the peers


@dataclass(frozen=True)
class RanksReport:
    rows: tuple[RankRow, ...]
    files: int
    workers: int
    errors: dict[str, str]           # file name -> message
    duplicates: dict[int, tuple[str, ...]]
    missing: tuple[int, ...]
    straggler: Straggler | NoStraggler
    world_size: int | None = None    # the run's, when its traces say it
    cpu_only: tuple[int, ...] = ()   # ranks with no GPU activity: listed, never compared
    peer_waits: tuple[PeerWait, ...] = ()   # per rank, where every rank ran the same collective calls
    peer_transfer_ns: tuple[int, ...] = ()  # ... and per call, what the fastest rank's same call took: each rank's
                                            # own report splits its waiting from its transfer by it
    late: tuple[LateArrival, ...] = ()      # who the waiting was for, most held first (late_arrivals)

    @property
    def in_turn(self) -> bool:
        """Two or more ranks arrive last at the calls their peers wait in, and none holds ONE_RANK_HOLDS of the
        waiting: the ranks hold each other up in turn, and no one rank is the straggler."""
        total = sum(x.held_ns for x in self.late)
        return len(self.late) >= 2 and total > 0 and self.late[0].held_ns < ONE_RANK_HOLDS * total


# --- per rank (runs in a worker process) ------------------------------------------------

def collective_timing(trace: Trace) -> Collectives:
    """Timing of the collective kernels of one rank, per step, in the trace's own clock.

    Steps come from ProfilerStep#N ranges when the trace has them (a collective belongs
    to the step whose window holds its launch call); otherwise each collective call is a step.
    """
    ev = trace.ev
    is_coll = np.fromiter((is_collective(n) for n in trace.names), bool, len(trace.names))
    kern = np.flatnonzero(ev.cat == KERNEL)
    rows = kern[is_coll[ev.name[kern]]] if len(kern) else kern
    rows = rows[np.argsort(ev.start[rows], kind="stable")]
    start, end = ev.start[rows], ev.end[rows]
    dur = end - start
    launch = trace.launch_of[rows]
    launch_ns = np.where(launch != NONE, ev.start[np.maximum(launch, 0)], NONE) if len(rows) else launch

    step_of = np.arange(len(rows))
    steps_from = "calls"
    # torch 2.x records ProfilerStep#N as an annotation, torch 1.x as a cpu_op
    step_ids = [i for i, n in enumerate(trace.names) if n.startswith("ProfilerStep#")]
    steps = (np.flatnonzero(np.isin(ev.name, step_ids) & any_of(ev.cat, (USER_ANNOTATION, CPU_OP)))
             if step_ids else np.zeros(0, np.int64))
    if len(steps) >= 2 and len(rows):
        s_start = ev.start[steps]
        order = np.argsort(s_start)
        s_start, s_end = s_start[order], ev.end[steps][order]
        host_t = np.where(launch_ns != NONE, launch_ns, start)
        idx = np.searchsorted(s_start, host_t, side="right") - 1
        inside = (idx >= 0) & (host_t < s_end[np.maximum(idx, 0)])
        if inside.all():
            step_of = idx
            steps_from = "ProfilerStep"

    per_step, step_end, step_launch = [], [], []
    for s in dict.fromkeys(step_of.tolist()):
        m = step_of == s
        per_step.append(int(dur[m].sum()))
        step_end.append(int(end[m].max()))
        ln = launch_ns[m]
        ln = ln[ln != NONE]
        step_launch.append(int(ln.min()) if len(ln) else NONE)
    names: dict[str, int] = {}
    for r, d in zip(rows.tolist(), dur.tolist()):
        names[trace.name_of(r)] = names.get(trace.name_of(r), 0) + d
    longest = int(np.argmax(dur)) if len(dur) else None
    return Collectives(
        calls=int(len(rows)), total_ns=int(dur.sum()), steps_from=steps_from, call_ns=tuple(dur.tolist()),
        per_step_ns=tuple(per_step), step_end_ns=tuple(step_end), step_launch_ns=tuple(step_launch),
        longest=None if longest is None else LongestCall(longest, int(start[longest]), int(end[longest]),
                                                         int(dur[longest])),
        trace_start_ns=int(ev.start.min()) if len(ev) else 0, trace_end_ns=int(ev.end.max()) if len(ev) else 0,
        kernels=tuple(n for n, _ in sorted(names.items(), key=lambda x: -x[1])[:3]))


# --- finding and numbering the ranks ------------------------------------------------------

_RANK_IN_NAME = re.compile(r"rank[^0-9a-z]*(\d+)", re.IGNORECASE)


def rank_from_name(name: str) -> int | None:
    """'rank3.json.gz', 'trace_rank_3.json', 'RANK-3.pt.trace.json' -> 3. Bare numbers are pids, not ranks."""
    m = _RANK_IN_NAME.findall(name)
    return int(m[-1]) if m else None


def number_ranks(results: dict[Path, RankReport]) -> list[RankRow]:
    """distributedInfo.rank, else the file name, else the next free number."""
    taken = []
    for p, r in results.items():
        rk = r.rank
        if isinstance(rk, int):
            taken.append((rk, r.rank_from or "distributedInfo", p, r))
        elif (rk := rank_from_name(p.name)) is not None:
            taken.append((rk, "file name", p, r))
        else:
            taken.append((None, "file order", p, r))
    used = {t[0] for t in taken if t[0] is not None}
    nxt, out = 0, []
    for rk, how, p, r in taken:  # results are in file order
        if rk is None:
            while nxt in used:
                nxt += 1
            rk = nxt
            used.add(rk)
        out.append(RankRow(rk, how, p, r))
    return sorted(out, key=lambda t: (t.rank, t.path.name))


# --- the straggler ---------------------------------------------------------------------------------

def _median(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def _diffs(xs) -> list[int]:
    xs = [x for x in xs if x != NONE]
    return [b - a for a, b in zip(xs, xs[1:])]


def _outliers(stats: list[StepStats]) -> tuple[Outlier, ...]:
    """Collective calls far longer than their rank's median: a wait that is no straggler's steady lateness.

    When the ranks' traces share a clock (their windows overlap), say how much of the call
    ran before another rank's trace had begun: profiler start skew.
    """
    out = []
    cs = [s.row.r.collectives for s in stats]
    overlap = max(c.trace_start_ns for c in cs) < min(c.trace_end_ns for c in cs)
    for s in stats:
        c, lg = s.row.r.collectives, s.row.r.collectives.longest
        med = _median(c.call_ns)
        if lg is None or not med or lg.dur_ns < OUTLIER * med:
            continue
        note = Outlier(s.row.rank, lg.call + 1, lg.dur_ns, med)
        if overlap:
            late = max((o for o in stats if o is not s), key=lambda o: o.row.r.collectives.trace_start_ns, default=None)
            if late is not None:
                late_start = late.row.r.collectives.trace_start_ns
                before = min(lg.end_ns, late_start) - lg.start_ns
                if before > 0.5 * lg.dur_ns:
                    note = Outlier(note.rank, note.call, note.dur_ns, note.median_ns, before, late.row.rank,
                                   late_start - c.trace_start_ns)
        out.append(note)
    return tuple(out)


def straggler(rows: list[RankRow]) -> Straggler | NoStraggler:
    """The rank the others wait for, with its evidence; NoStraggler with the reason when there is none."""
    with_c = [r for r in rows if r.r.collectives.calls > 0]
    if len(rows) < 2:
        return NoStraggler("one_rank")
    if len(with_c) < 2:
        return NoStraggler("no_collectives", ranks_with_collectives=len(with_c))
    stats = [StepStats(r, _median(r.r.collectives.per_step_ns), _median(_diffs(r.r.collectives.step_end_ns)),
                       _median(_diffs(r.r.collectives.step_launch_ns))) for r in with_c]
    step = _median([s.gpu_step for s in stats])
    if step is None:  # one step each: the whole span is the step
        step = _median([s.row.r.span_us * 1e3 / max(1, len(s.row.r.collectives.per_step_ns)) for s in stats])
    threshold = SPREAD_OF_STEP * step
    outliers = _outliers(stats)
    lo = min(stats, key=lambda s: s.per_step_med)
    hi = max(stats, key=lambda s: s.per_step_med)
    spread = hi.per_step_med - lo.per_step_med
    gpu_step = _median([s.gpu_step for s in stats]) or step
    common = dict(stats=tuple(stats), step_ns=step, gpu_step_ns=gpu_step, threshold_ns=threshold, spread_ns=spread,
                  outliers=outliers)
    if spread > threshold:
        wait = _median([s.per_step_med for s in stats if s is not lo]) - lo.per_step_med
        return Straggler(lo.row.rank, "collective_wait", wait, **common)
    hosts = [s for s in stats if s.host_step is not None]
    if len(hosts) >= 2:
        slow = max(hosts, key=lambda s: s.host_step)
        rest = _median([s.host_step for s in hosts if s is not slow])
        pace = max(gpu_step, rest)
        if slow.host_step - pace > threshold:
            return Straggler(slow.row.rank, "host_step", slow.host_step - pace, **common)
    return NoStraggler("balanced", len(with_c), spread, threshold, step, outliers)




def peer_transfers(rows: list[RankRow]) -> tuple[int, ...]:
    """Per collective call, what the fastest rank's same call took: the transfer, the rest of each rank's call waiting
    for a peer (the rank that arrived last waits for nobody); () unless at least two ranks ran collectives and all of
    them the same number of calls (NCCL makes every rank of a group call the same collectives in the same order)."""
    with_c = [r for r in rows if r.r.collectives.calls > 0]
    if len(with_c) < 2 or len({r.r.collectives.calls for r in with_c}) != 1:
        return ()
    return tuple(np.array([r.r.collectives.call_ns for r in with_c], np.int64).min(axis=0).tolist())


def peer_waits(rows: list[RankRow]) -> tuple[PeerWait, ...]:
    """Each rank's collective time split into waiting for a peer and moving bytes, call by call against the
    fastest rank (peer_transfers); () where the ranks' calls cannot be matched."""
    transfer = np.array(peer_transfers(rows), np.int64)
    if not len(transfer):
        return ()
    with_c = [r for r in rows if r.r.collectives.calls > 0]
    calls = np.array([r.r.collectives.call_ns for r in with_c], np.int64)   # ranks x calls
    return tuple(PeerWait(r.rank, int((calls[i] - transfer).sum()), int(transfer.sum())) for i, r in enumerate(with_c))


def late_arrivals(rows: list[RankRow]) -> tuple[LateArrival, ...]:
    """Per rank, the calls it arrived last at while a peer waited for it (peer_waits' matching of the calls), and
    that waiting; the rank that held its peers longest first. () where the calls cannot be matched."""
    transfer = np.array(peer_transfers(rows), np.int64)
    if not len(transfer):
        return ()
    with_c = [r for r in rows if r.r.collectives.calls > 0]
    calls = np.array([r.r.collectives.call_ns for r in with_c], np.int64)   # ranks x calls
    wait = calls - transfer
    held = wait.max(axis=0) > OUTLIER * np.maximum(transfer, 1)           # a peer waited long in this call
    last = calls.argmin(axis=0)                                            # the rank that waited for nobody
    out = []
    for i, r in enumerate(with_c):
        mine = held & (last == i)
        if mine.any():
            out.append(LateArrival(r.rank, tuple((np.flatnonzero(mine) + 1).tolist()), int(wait[:, mine].sum())))
    return tuple(sorted(out, key=lambda x: (-x.held_ns, x.rank)))


# --- the merge -----------------------------------------------------------------------------

def _strip_path(msg: str, p: Path) -> str:
    for pre in (f"{p}: ", f"{p} "):
        if msg.startswith(pre):
            return msg[len(pre):]
    return msg


def merge(results: dict[Path, RankReport | RankError], workers: int = 1) -> RanksReport:
    """The directory's report from each file's result (tracetriage.analyzers.runs.pool analyses them)."""
    errors = {p.name: _strip_path(r.message, p) for p, r in results.items() if isinstance(r, RankError)}
    good = {p: r for p, r in results.items() if isinstance(r, RankReport)}
    rows = number_ranks(good)
    seen: dict[int, list[str]] = {}
    for r in rows:
        seen.setdefault(r.rank, []).append(r.path.name)
    missing = ()
    worlds = sorted({r.r.world_size for r in rows} - {None})
    world = worlds[0] if len(worlds) == 1 else None
    if world is not None:      # the run says how many ranks it had
        missing = tuple(sorted(set(range(world)) - set(seen)))
    elif rows and all(r.how == "distributedInfo" for r in rows):
        missing = tuple(sorted(set(range(max(seen) + 1)) - set(seen)))
    # A rank with no GPU activity (a data-loading rank, a trace captured without CUDA activity) has no
    # collectives or idle gaps to compare: it is listed, never the straggler.
    cpu_only = tuple(r.rank for r in rows if not r.r.has_gpu)
    gpu_rows = [r for r in rows if r.r.has_gpu] if len(cpu_only) < len(rows) else rows
    strag = straggler(gpu_rows) if rows else NoStraggler("no_ranks")
    if len(rows) == 1 and errors:
        strag = NoStraggler("one_usable")
    return RanksReport(rows=tuple(rows), files=len(results), workers=workers, errors=errors,
                       duplicates={k: tuple(v) for k, v in seen.items() if len(v) > 1}, missing=missing,
                       straggler=strag, world_size=world, cpu_only=cpu_only, peer_waits=peer_waits(gpu_rows),
                       peer_transfer_ns=peer_transfers(gpu_rows), late=late_arrivals(gpu_rows))


def mixed_runs(good: list[tuple[Path, RankReport]]) -> tuple[str, dict] | None:
    """("world size" | "device", {value: file names}) when the traces cannot be ranks of one run."""
    def groups(key):
        out: dict = {}
        for p, r in good:
            v = key(r)
            if v is not None:
                out.setdefault(v, []).append(p.name)
        return out

    for what, key in (("world size", lambda r: r.world_size),
                      ("device", lambda r: r.device_name if r.has_gpu else None)):
        g = groups(key)
        if len(g) > 1:
            return what, {v: tuple(sorted(names)) for v, names in g.items()}
    return None
