"""Multi-rank runs: one report for a directory of per-rank traces.

    code = report_dir(Path("traces/ddp"), as_json=False, quiet=True)   # what `tracetriage report DIR` runs

Each rank's trace gets its own full analysis (analyzers.report), one process per rank,
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

import json
import multiprocessing as mp
import os
import re
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np

from analyzers.load import find_traces
from analyzers.trace import KERNEL, NONE, USER_ANNOTATION, Trace, TraceError

COLLECTIVE_MARK = "nccl"     # case-insensitive substring of a collective kernel's name
SPREAD_OF_STEP = 0.20        # a gap between ranks counts when it exceeds this share of the median step
OUTLIER = 3.0                # a collective call this many times its rank's median is reported apart

CAUSE_WORDS = {"launch_overhead": "launch overhead", "host_work": "host work", "synchronization": "synchronization",
               "data_transfer": "data transfer", "other": "other", None: "none"}


# --- per rank (runs in a worker process) ------------------------------------------------

def collective_timing(trace: Trace) -> dict:
    """Timing of the collective kernels of one rank, per step, in the trace's own clock.

    Steps come from ProfilerStep#N ranges when the trace has them (a collective belongs
    to the step whose window holds its launch call); otherwise each collective call is a step.
    """
    ev = trace.ev
    is_coll = np.fromiter((COLLECTIVE_MARK in n.lower() for n in trace.names), bool, len(trace.names))
    kern = np.flatnonzero(ev.cat == KERNEL)
    rows = kern[is_coll[ev.name[kern]]] if len(kern) else kern
    rows = rows[np.argsort(ev.start[rows], kind="stable")]
    start, end = ev.start[rows], ev.end[rows]
    dur = end - start
    launch = trace.launch_of[rows]
    launch_ns = np.where(launch != NONE, ev.start[np.maximum(launch, 0)], NONE) if len(rows) else launch

    step_of = np.arange(len(rows))
    steps_from = "calls"
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    is_step = np.array([trace.names[i].startswith("ProfilerStep#") for i in ev.name[ann]], bool) if len(ann) else ann
    steps = ann[is_step] if len(ann) else ann
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
    return {
        "calls": int(len(rows)),
        "total_ns": int(dur.sum()),
        "steps_from": steps_from,
        "call_ns": dur.tolist(),
        "per_step_ns": per_step,
        "step_end_ns": step_end,
        "step_launch_ns": step_launch,
        "longest": None if longest is None else {"call": longest, "start_ns": int(start[longest]),
                                                  "end_ns": int(end[longest]), "dur_ns": int(dur[longest])},
        "trace_start_ns": int(ev.start.min()) if len(ev) else 0,
        "trace_end_ns": int(ev.end.max()) if len(ev) else 0,
        "kernels": [n for n, _ in sorted(names.items(), key=lambda x: -x[1])[:3]],
    }


def analyze_rank(path: str) -> dict:
    """One rank: the report's JSON object plus its collective timing; {"error": msg} for a bad file.

    Runs in a worker process, so it returns plain data and never raises.
    """
    from analyzers.report import analyze_file, to_json

    try:
        a = analyze_file(path)
        out = to_json(a)
        out["collectives"] = collective_timing(a.trace)
        return out
    except TraceError as e:
        return {"error": str(e)}
    except MemoryError:
        return {"error": f"{path}: out of memory while analysing it"}
    except Exception as e:  # a bug on an odd file must not sink the other ranks
        return {"error": f"{path}: internal failure ({type(e).__name__}: {e})"}


# --- finding and numbering the ranks ------------------------------------------------------

_RANK_IN_NAME = re.compile(r"rank[^0-9a-z]*(\d+)", re.IGNORECASE)


def rank_from_name(name: str) -> int | None:
    """'rank3.json.gz', 'trace_rank_3.json', 'RANK-3.pt.trace.json' -> 3. Bare numbers are pids, not ranks."""
    m = _RANK_IN_NAME.findall(name)
    return int(m[-1]) if m else None


def _number_ranks(results: dict[Path, dict]) -> list[tuple[int, str, Path, dict]]:
    """(rank, how, path, result): distributedInfo.rank, else the file name, else the next free number."""
    taken = []
    for p, r in results.items():
        rk = r.get("trace", {}).get("rank")
        if isinstance(rk, int):
            taken.append((rk, "distributedInfo", p, r))
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
        out.append((rk, how, p, r))
    return sorted(out, key=lambda t: (t[0], t[2].name))


# --- running the workers ----------------------------------------------------------------------

def _pool_context():
    # fork is the cheapest start (no re-import), but only safe while this process has one thread.
    if "fork" in mp.get_all_start_methods() and threading.active_count() == 1:
        return mp.get_context("fork")
    return mp.get_context("spawn")


def analyze_paths(paths: list[Path], progress=None) -> dict[Path, dict]:
    """Each path's analyze_rank result, in the order of `paths`; in parallel when there are several."""
    if len(paths) == 1:
        res = {paths[0]: analyze_rank(str(paths[0]))}
        if progress:
            progress(1, 1)
        return res
    out: dict[Path, dict] = {}
    workers = min(len(paths), os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
        futs = {pool.submit(analyze_rank, str(p)): p for p in paths}
        for done, f in enumerate(as_completed(futs), 1):
            p = futs[f]
            try:
                out[p] = f.result()
            except BrokenProcessPool:
                out[p] = {"error": f"{p}: the worker analysing it died (out of memory?)"}
            if progress:
                progress(done, len(paths))
    return {p: out[p] for p in paths}


# --- the merge -----------------------------------------------------------------------------

def _median(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def _diffs(xs: list[int]) -> list[int]:
    xs = [x for x in xs if x != NONE]
    return [b - a for a, b in zip(xs, xs[1:])]


def _ms(ns: float) -> str:
    ms = ns / 1e6
    return f"{ms:.2f} ms" if ms < 100 else f"{ms:.0f} ms"


def _rank_list(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def _skew(rows: list[dict]) -> list[dict]:
    """Collective calls far longer than their rank's median: a wait that is no straggler's steady lateness.

    When the ranks' traces share a clock (their windows overlap), say how much of the call
    ran before another rank's trace had begun: profiler start skew.
    """
    out = []
    overlap = max(r["c"]["trace_start_ns"] for r in rows) < min(r["c"]["trace_end_ns"] for r in rows)
    for r in rows:
        c, lg = r["c"], r["c"]["longest"]
        med = _median(c["call_ns"])
        if lg is None or not med or lg["dur_ns"] < OUTLIER * med:
            continue
        note = {"rank": r["rank"], "call": lg["call"] + 1, "dur_ns": lg["dur_ns"], "median_ns": med}
        if overlap:
            late = max((o for o in rows if o is not r), key=lambda o: o["c"]["trace_start_ns"], default=None)
            if late is not None:
                before = min(lg["end_ns"], late["c"]["trace_start_ns"]) - lg["start_ns"]
                if before > 0.5 * lg["dur_ns"]:
                    note.update(before_ns=before, peer=late["rank"],
                                peer_late_ns=late["c"]["trace_start_ns"] - c["trace_start_ns"])
        out.append(note)
    return out


def _skew_phrase(n: dict) -> str:
    s = f"rank {n['rank']}'s collective #{n['call']} ran {_ms(n['dur_ns'])} (median {_ms(n['median_ns'])})"
    if "peer" in n:
        s += (f", {_ms(n['before_ns'])} of it before rank {n['peer']}'s trace began, "
              f"{_ms(n['peer_late_ns'])} after rank {n['rank']}'s (profiler start skew)")
    return s


def straggler(rows: list[dict]) -> tuple[dict | None, str]:
    """The rank the others wait for, with its evidence; (None, why not) when there is none.

    rows: per rank {"rank", "c": collective_timing(...), "report": to_json dict}.
    """
    with_c = [r for r in rows if r["c"]["calls"] > 0]
    if len(rows) < 2:
        return None, "one rank: nobody to wait for"
    if len(with_c) < 2:
        return None, f"no collective kernels ({COLLECTIVE_MARK}*) in {'any rank' if not with_c else 'all but one rank'}"
    for r in with_c:
        c = r["c"]
        r["per_step_med"] = _median(c["per_step_ns"])
        r["gpu_step"] = _median(_diffs(c["step_end_ns"]))
        r["host_step"] = _median(_diffs(c["step_launch_ns"]))
    step = _median([r["gpu_step"] for r in with_c])
    if step is None:  # one step each: the whole span is the step
        step = _median([r["report"]["span_us"] * 1e3 / max(1, len(r["c"]["per_step_ns"])) for r in with_c])
    threshold = SPREAD_OF_STEP * step
    skews = _skew(with_c)
    per_rank = [{"rank": r["rank"], "collective_per_step_us": round(r["per_step_med"] / 1e3, 1),
                 "collective_total_us": round(r["c"]["total_ns"] / 1e3, 1),
                 "host_step_us": None if r["host_step"] is None else round(r["host_step"] / 1e3, 1),
                 "gpu_step_us": None if r["gpu_step"] is None else round(r["gpu_step"] / 1e3, 1)}
                for r in with_c]
    base = {"per_rank": per_rank, "step_us": round(step / 1e3, 1),
            "steps_from": sorted({r["c"]["steps_from"] for r in with_c}),
            "threshold_us": round(threshold / 1e3, 1),
            "outliers": [{(k[:-3] + "_us" if k.endswith("_ns") else k): (round(v / 1e3, 1) if k.endswith("_ns") else v)
                          for k, v in n.items()} for n in skews]}
    lo = min(with_c, key=lambda r: r["per_step_med"])
    hi = max(with_c, key=lambda r: r["per_step_med"])
    spread = hi["per_step_med"] - lo["per_step_med"]
    base["collective_spread_us"] = round(spread / 1e3, 1)

    def own_idle(r):
        rep = r["report"]
        dom = rep["idle"]["dominant"]
        l3 = rep["lines"][2] if len(rep.get("lines", [])) > 2 else ""
        ev = l3.split("; mostly ", 1)[1].rstrip(".") if "; mostly " in l3 else CAUSE_WORDS.get(dom, str(dom))
        return dom, f"idle {100 * rep['idle_share']:.0f}% of its span, mostly {ev}"

    def per_step_list(rs):
        return ", ".join(f"rank {r['rank']} {_ms(r['per_step_med'])}" for r in rs)

    if spread > threshold:
        others = [r for r in with_c if r is not lo]
        wait = _median([r["per_step_med"] for r in others]) - lo["per_step_med"]
        dom, idle_text = own_idle(lo)
        line = (f"Straggler: rank {lo['rank']}: the others wait for it inside the collectives, which take per step "
                f"(median) {per_step_list(with_c)}: {_ms(wait)} of waiting per step, "
                f"{100 * wait / step:.0f}% of the {_ms(step)} step")
        if lo["host_step"] is not None:
            line += f"; its host needs {_ms(lo['host_step'])} to issue a step"
        line += f". Its own report: {idle_text}."
        return {**base, "rank": lo["rank"], "basis": "collective_wait", "wait_per_step_us": round(wait / 1e3, 1),
                "host_idle_dominant": dom, "host_idle": idle_text, "line": line}, line

    hosts = [r for r in with_c if r["host_step"] is not None]
    if len(hosts) >= 2:
        slow = max(hosts, key=lambda r: r["host_step"])
        rest = _median([r["host_step"] for r in hosts if r is not slow])
        gpu_step = _median([r["gpu_step"] for r in with_c]) or step
        pace = max(gpu_step, rest)
        if slow["host_step"] - pace > threshold:
            lag = slow["host_step"] - pace
            dom, idle_text = own_idle(slow)
            line = (f"Straggler: rank {slow['rank']}, by its host: it takes {_ms(slow['host_step'])} to issue a step "
                    f"(median interval between its collective launches) against "
                    + ", ".join(f"{_ms(r['host_step'])} on rank {r['rank']}" for r in hosts if r is not slow)
                    + f", while a step runs {_ms(gpu_step)} on the GPU, so in steady state the others wait about "
                      f"{_ms(lag)} per step for it in the collective. The GPUs do not show it yet (collectives per "
                      f"step, median: {per_step_list(with_c)})")
            skew = [n for n in skews if n["rank"] == slow["rank"]]
            if skew:
                line += (f": {_skew_phrase(skew[0])}, and meanwhile its host queued all "
                         f"{len(slow['c']['per_step_ns'])} steps")
            line += f". Its own report: {idle_text}."
            return {**base, "rank": slow["rank"], "basis": "host_step", "wait_per_step_us": round(lag / 1e3, 1),
                    "host_idle_dominant": dom, "host_idle": idle_text, "line": line}, line

    why = (f"none: collective time per step is within {_ms(spread)} across ranks (threshold {_ms(threshold)}, "
           f"20% of the {_ms(step)} step) and no rank's host is slower than the GPU step")
    if skews:
        why += "; " + "; ".join(_skew_phrase(n) for n in skews)
    return None, why


_COLL_KIND = re.compile(r"nccl(?:DevKernel|Kernel)?_([A-Za-z]+?)(?:_|\(|$)", re.IGNORECASE)


def collective_kind(kernel: str) -> str:
    """'ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)' -> 'AllReduce'."""
    m = _COLL_KIND.search(kernel)
    return m.group(1) if m else "collective"


def _ranks_line(rows: list[dict], workers: int, n_files: int) -> str:
    devs: dict[str, int] = {}
    for r in rows:
        d = r["report"]["trace"].get("device_name") or "an unnamed device"
        devs[d] = devs.get(d, 0) + 1
    on = " and ".join((f"{n}× {d}" if len(devs) > 1 else d) for d, n in devs.items())
    n = len(rows)
    calls = sorted({r["c"]["calls"] for r in rows})
    kinds = sorted({collective_kind(k) for r in rows for k in r["c"]["kernels"][:1]})
    what = "/".join(kinds) or "collective"
    coll = (f"{calls[0]} {what} kernels each" if len(calls) == 1 else
            f"{calls[0]}-{calls[-1]} {what} kernels per rank")
    if calls == [0]:
        coll = "no collective kernels"
    steps = sorted({r["c"]["steps_from"] for r in rows if r["c"]["calls"]})
    step_src = ("steps from ProfilerStep ranges" if steps == ["ProfilerStep"] else
                "one step per collective call (no ProfilerStep ranges)" if steps else "")
    how = sorted({r["how"] for r in rows})
    bad = f" ({n_files - n} of {n_files} files unusable)" if n_files > n else ""
    return (f"Ranks: {n} rank{'s' if n != 1 else ''} on {on}{bad}, {coll}" + (f", {step_src}" if step_src else "")
            + f"; ranks from {', '.join(how)}; analysed in {workers} process{'es' if workers != 1 else ''}.")


def _rank_line(r: dict) -> str:
    rep, c = r["report"], r["c"]
    dom = rep["idle"]["dominant"]
    med = _median(c["per_step_ns"])
    coll = (f"collectives {_ms(c['total_ns'])} ({_ms(med)} per step, median)") if c["calls"] else "no collectives"
    return (f"  rank {r['rank']}: idle {100 * rep['idle_share']:.0f}% ({CAUSE_WORDS.get(dom, dom)}), "
            f"kernels busy {_ms(rep['kernel_busy_us'] * 1e3)}, {coll}.")


def _strip_path(msg: str, p: Path) -> str:
    for pre in (f"{p}: ", f"{p} "):
        if msg.startswith(pre):
            return msg[len(pre):]
    return msg


def merge(results: dict[Path, dict], workers: int = 1) -> dict:
    """The directory's report object from each file's analyze_rank result."""
    errors = {p.name: _strip_path(r["error"], p) for p, r in results.items() if "error" in r}
    good = {p: r for p, r in results.items() if "error" not in r}
    rows = []
    for rank, how, p, rep in _number_ranks(good):
        c = rep.pop("collectives")
        rows.append({"rank": rank, "how": how, "path": p, "report": rep, "c": c})
    caveats = [f"{name}: {msg} (skipped)" for name, msg in errors.items()]
    seen: dict[int, list[str]] = {}
    for r in rows:
        seen.setdefault(r["rank"], []).append(r["path"].name)
    caveats += [f"rank {k} appears in {len(v)} files ({', '.join(v)}): two runs in one directory?"
                for k, v in seen.items() if len(v) > 1]
    if rows and all(r["how"] == "distributedInfo" for r in rows):
        missing = sorted(set(range(max(seen) + 1)) - set(seen))
        if missing:
            caveats.append(f"no usable trace for {_rank_list(missing)}")
    trace_caveats: dict[str, list[int]] = {}
    for r in rows:
        for msg in r["report"]["trace"].get("caveats", []):
            trace_caveats.setdefault(msg, []).append(r["rank"])
    caveats += [f"{_rank_list(ks)}: {msg}" for msg, ks in trace_caveats.items()]

    strag, why = straggler(rows) if rows else (None, "no ranks")
    if len(rows) == 1 and errors:
        why = "only one usable rank: nobody to compare it with"
    lines = [_ranks_line(rows, workers, len(results))] + [_rank_line(r) for r in rows]
    lines.append(strag["line"] if strag else f"Straggler: {why}.")
    worst = max(rows, key=lambda r: (r["report"]["idle_share"], -r["rank"]))
    lines.append(f"Rank {worst['rank']} ({'largest idle share, ' if len(rows) > 1 else ''}"
                 f"{100 * worst['report']['idle_share']:.0f}% of its span idle):")
    lines += ["  " + s for s in worst["report"]["lines"]]
    lines += [f"Caveat: {c}." for c in caveats]

    ranks_out = []
    for r in rows:
        c = r["c"]
        ranks_out.append({"rank": r["rank"], "rank_from": r["how"], "file": r["path"].name, **r["report"],
                          "collectives": {"calls": c["calls"], "total_us": round(c["total_ns"] / 1e3, 3),
                                          "steps_from": c["steps_from"], "kernels": c["kernels"],
                                          "per_step_us": [round(x / 1e3, 3) for x in c["per_step_ns"]]}})
    if strag is not None:
        strag = {k: v for k, v in strag.items() if k != "line"}
    return {"ranks": ranks_out, "straggler": strag, "straggler_reason": None if strag else why,
            "lines": lines, "caveats": caveats, "errors": errors}


# --- the command ---------------------------------------------------------------------------------

def _progress_printer(quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        sys.stderr.write(f"\ranalysing ranks: {done}/{total}" + ("\n" if done == total else ""))
        sys.stderr.flush()
    return show


def report_dir(path: Path, as_json: bool = False, quiet: bool = False) -> int:
    """`tracetriage report DIR`: print the multi-rank report; the exit code (2 on a user error)."""
    try:
        out = report_object(Path(path), progress=_progress_printer(quiet))
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if as_json:
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False, default=_json_default) + "\n")
    else:
        print("\n".join(out["lines"]))
    return 0


def report_object(path: Path, progress=None) -> dict:
    """The merged report of a directory of rank traces; TraceError when there is nothing usable."""
    try:
        paths = find_traces(path)
    except OSError as e:
        raise TraceError(f"cannot read {path}: {e.strerror or e}") from None
    if not paths:
        raise TraceError(f"no traces in {path} (expected rank*.json or rank*.json.gz files)")
    results = analyze_paths(paths, progress)
    if all("error" in r for r in results.values()):
        raise TraceError(f"no usable trace in {path}: " + "; ".join(r["error"] for r in results.values()))
    good = [(p, r) for p, r in results.items() if "error" not in r]
    if len(good) > 1 and not any(isinstance(r.get("trace", {}).get("rank"), int) or rank_from_name(p.name) is not None
                                 for p, r in good):
        # a folder of unrelated traces (a sample library, before/after captures): merging them as ranks
        # of one run would name a "straggler" among workloads that never ran together
        raise TraceError(f"{path} holds {len(good)} traces, but none says which rank of a run it is (no "
                         "distributedInfo, no rankN in its name): report them one at a time, or compare two "
                         "with `tracetriage diff BEFORE AFTER`")
    return merge(results, workers=1 if len(paths) == 1 else min(len(paths), os.cpu_count() or 1))


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
