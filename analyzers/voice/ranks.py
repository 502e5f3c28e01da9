"""The words of `tracetriage report DIR`: a line per rank, the straggler with its evidence (or why
there is none), and the caveats of a directory of ranks.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.kernels import collective_kind
from tracetriage.analyzers.model.units import count, duration_ns, duration_us, integer, share
from tracetriage.analyzers.voice.common import cause_words


def _rank_list(ranks) -> str:
    ranks = list(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def own_idle(r) -> str:
    """A rank's own idle, for the straggler line: 'idle 12% of its span, mostly <cause>: <evidence>'."""
    return f"idle {share(r.idle_share)} of its span, mostly {r.mostly}"


def outlier_phrase(n) -> str:
    s = (f"rank {n.rank}'s collective #{n.call} ran {duration_ns(n.dur_ns)} (median {duration_ns(n.median_ns)})")
    if n.peer is not None:
        s += (f", {duration_ns(n.before_ns)} of it before rank {n.peer}'s trace began, "
              f"{duration_ns(n.peer_late_ns)} after rank {n.rank}'s (profiler start skew)")
    return s


def straggler_reason(s) -> str:
    """Why no rank is the straggler."""
    why = {
        "one_rank": "one rank: nobody to wait for",
        "no_ranks": "no ranks",
        "one_usable": "only one usable rank: nobody to compare it with",
        "no_collectives": "no collective kernels (NCCL, RCCL, NVSHMEM ...) in "
                          + ("any rank" if not s.ranks_with_collectives else "all but one rank"),
    }.get(s.why)
    if why is None:
        why = (f"none: collective time per step is within {duration_ns(s.spread_ns)} across ranks (threshold "
               f"{duration_ns(s.threshold_ns)}, {share(s.threshold_ns / s.step_ns)} of the "
               f"{duration_ns(s.step_ns)} step) and no rank's host is slower than the GPU step")
        if s.outliers:
            why += "; " + "; ".join(outlier_phrase(n) for n in s.outliers)
    return why


def straggler_line(s) -> str:
    if not s.found:
        return f"Straggler: {straggler_reason(s)}."
    me = next(x for x in s.stats if x.row.rank == s.rank)
    per_step = ", ".join(f"rank {x.row.rank} {duration_ns(x.per_step_med)}" for x in s.stats)
    if s.basis == "collective_wait":
        line = (f"Straggler: rank {s.rank}: the others wait for it inside the collectives, which take per step "
                f"(median) {per_step}: {duration_ns(s.wait_per_step_ns)} of waiting per step, "
                f"{share(s.wait_per_step_ns / s.step_ns)} of the {duration_ns(s.step_ns)} step")
        if me.host_step is not None:
            line += f"; its host needs {duration_ns(me.host_step)} to issue a step"
        return line + f". Its own report: {own_idle(me.row.r)}."
    others = ", ".join(f"{duration_ns(x.host_step)} on rank {x.row.rank}" for x in s.stats
                       if x.host_step is not None and x is not me)
    line = (f"Straggler: rank {s.rank}, by its host: it takes {duration_ns(me.host_step)} to issue a step (median "
            f"interval between its collective launches) against {others}, while a step runs "
            f"{duration_ns(s.gpu_step_ns)} on the GPU, so in steady state the others wait about "
            f"{duration_ns(s.wait_per_step_ns)} per step for it in the collective. The GPUs do not show it yet "
            f"(collectives per step, median: {per_step})")
    skew = [n for n in s.outliers if n.rank == s.rank]
    if skew:
        line += (f": {outlier_phrase(skew[0])}, and meanwhile its host queued all "
                 f"{count(len(me.row.r.collectives.per_step_ns), 'step')}")
    return line + f". Its own report: {own_idle(me.row.r)}."


def in_turn_phrase(rr) -> str:
    """'the ranks hold each other up in turn, so no one rank is the straggler: rank 1 arrived last at calls #2, #5
    (its peers waited 9.49 ms for it), rank 0 at #9 (1.93 ms)'; '' unless they do (RanksReport.in_turn)."""
    if not rr.late:
        return ""
    if not rr.in_turn:
        if rr.straggler.found:
            return ""
        x, total = rr.late[0], sum(y.held_ns for y in rr.late)
        calls = ", ".join(f"#{c}" for c in x.calls[:4]) + (" ..." if len(x.calls) > 4 else "")
        # the per-step medians see no steady straggler, yet one rank's late arrivals hold most of the waiting
        return (f"yet rank {x.rank} arrived last at the {'call' if len(x.calls) == 1 else 'calls'} its peers waited "
                f"longest in ({calls}: {duration_ns(x.held_ns)} of the run's {duration_ns(total)} of waiting), "
                f"in {integer(len(x.calls))} of {count(len(rr.peer_transfer_ns), 'call')}, not every step: what "
                f"delays it there (its host between the collectives: first calls, a blocked launch, a sync) is the "
                "lever, not the collectives")
    each = []
    for i, x in enumerate(rr.late[:4]):
        calls = ", ".join(f"#{c}" for c in x.calls[:4]) + (" ..." if len(x.calls) > 4 else "")
        held = (f"its peers waited {duration_ns(x.held_ns)} for it" if i == 0 else duration_ns(x.held_ns))
        each.append(f"rank {x.rank} arrived last at {'call' if len(x.calls) == 1 else 'calls'} {calls} ({held})")
    return ("the ranks hold each other up in turn, so no one rank is the straggler: " + ", ".join(each)
            + "; what delays each late arrival (its host between the collectives: first calls, a blocked launch, a "
            "sync) is the lever, not the collectives")


def ranks_caveats(rr) -> list[str]:
    out = [f"{name}: {msg} (skipped)" for name, msg in rr.errors.items()]
    out += [f"rank {k} appears in {len(v)} files ({', '.join(v)}): two runs in one directory?"
            for k, v in rr.duplicates.items()]
    if rr.missing:
        of = f" of the run's {rr.world_size}" if rr.world_size else ""
        out.append(f"no usable trace for {_rank_list(rr.missing)}{of}")
    if rr.cpu_only and len(rr.cpu_only) < len(rr.rows):
        out.append(f"{_rank_list(rr.cpu_only)} {'has' if len(rr.cpu_only) == 1 else 'have'} no GPU activity "
                   "(CPU-only): not compared with the others")
    by_msg: dict[str, list[int]] = {}
    for r in rr.rows:
        for msg in r.r.caveats:
            by_msg.setdefault(msg, []).append(r.rank)
    return out + [f"{_rank_list(ks)}: {msg}" for msg, ks in by_msg.items()]


def mixed_runs(path, what: str, groups: dict) -> str:
    """The error for a folder whose traces cannot be ranks of one run."""
    listing = " and ".join(f"{v} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
                           for v, names in sorted(groups.items(), key=lambda kv: str(kv[0])))
    return f"{path} mixes traces of different runs: {what} {listing}; put each run's ranks in a folder of its own"


def ranks_lines(rr) -> list[str]:
    rows = rr.rows
    devs: dict[str, int] = {}
    for r in rows:
        d = r.r.device_name or "an unnamed device"
        devs[d] = devs.get(d, 0) + 1
    on = " and ".join((f"{integer(n)}× {d}" if len(devs) > 1 else d) for d, n in devs.items())
    calls = sorted({r.r.collectives.calls for r in rows})
    kinds = sorted({collective_kind(k) for r in rows for k in r.r.collectives.kernels[:1]})
    what = "/".join(kinds) or "collective"
    coll = (f"{integer(calls[0])} {what} kernels each" if len(calls) == 1 else
            f"{integer(calls[0])}-{integer(calls[-1])} {what} kernels per rank")
    if calls == [0]:
        coll = "no collective kernels"
    steps = sorted({r.r.collectives.steps_from for r in rows if r.r.collectives.calls})
    step_src = ("steps from ProfilerStep ranges" if steps == ["ProfilerStep"] else
                "one step per collective call (no ProfilerStep ranges)" if steps else "")
    how = sorted({r.how for r in rows})
    n = len(rows)
    bad = f" ({integer(rr.files - n)} of {count(rr.files, 'file')} unusable)" if rr.files > n else ""
    lines = [f"Ranks: {count(n, 'rank')} on {on}{bad}, {coll}" + (f", {step_src}" if step_src else "")
             + f"; ranks from {', '.join(how)}; analysed in {rr.workers} process{'es' if rr.workers != 1 else ''}."]
    waits = {w.rank: w for w in rr.peer_waits}
    for r in rows:
        c = r.r.collectives
        med = float(np.median(c.per_step_ns)) if c.per_step_ns else 0.0
        coll = f"collectives {duration_ns(c.total_ns)} ({duration_ns(med)} per step, median)" if c.calls else \
            "no collectives"
        exposed = ((r.r.report.get("regime_detail") or {}).get("communication") or {}).get("exposed_ns")
        if c.calls and exposed is not None:   # the rank's own report: collective time with no compute beside it
            coll += f", {duration_ns(exposed)} exposed (no compute beside it)"
        if r.rank in waits:
            coll += (f", {duration_ns(waits[r.rank].wait_ns)} of the collectives waiting for a peer (against the "
                     "fastest rank's same call)")
        lines.append(f"  rank {r.rank}: idle {share(r.r.idle_share)} ({cause_words(r.r.dominant)}), kernels busy "
                     f"{duration_us(r.r.kernel_busy_us)}, {coll}.")
    turn = in_turn_phrase(rr)
    strag = straggler_line(rr.straggler)
    if turn:   # the per-step medians can miss waits that change hands (heldout-user21 moeep: 2 ranks, 12 all_to_alls)
        strag = strag[:-1] + ("; yet the long waits change hands: " if rr.straggler.found else "; ") + turn + "."
    lines.append(strag)
    compared = [r for r in rows if r.r.has_gpu] or rows   # a CPU-only rank is never the one shown
    worst = max(compared, key=lambda r: (r.r.idle_share, -r.rank))
    lines.append(f"Rank {worst.rank} ({'largest idle share, ' if n > 1 else ''}{share(worst.r.idle_share)} of its "
                 "span idle):")
    lines += ["  " + s for s in worst.r.lines]
    return lines + [f"Caveat: {c}." for c in ranks_caveats(rr)]
