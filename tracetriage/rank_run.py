"""`tracetriage report DIR`: analyse each rank's trace in its own process, then merge.

    rr = report_object(Path("traces/ddp"))
    print("\n".join(rank_words.ranks_lines(rr)))

The rules (collectives, the straggler) are analyzers.analyses.ranks; this module runs the
per-rank analyses, one process per rank, in parallel, and gives each back as a
RankReport (its report, its five lines, its collectives).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from analyzers.analyses.ranks import (
    RankError,
    RankReport,
    RanksReport,
    collective_timing,
    merge,
    mixed_runs,
    rank_from_name,
)
from analyzers.loading import merged
from analyzers.loading.load import find_traces, load
from analyzers.model.trace import Trace, TraceError
from analyzers.output import serialize
from analyzers.triage.report import Analysis, analyze_file, analyze_trace
from analyzers.voice import ranks as rank_words
from analyzers.voice import report as report_words
from analyzers.voice.common import mostly


def analyze_rank(path: str) -> RankReport | RankError:
    """One rank: its report and its collective timing. Runs in a worker process, so it never raises."""
    try:
        return _rank_report(analyze_file(path))
    except TraceError as e:
        return RankError(str(e))
    except MemoryError:
        return RankError(f"{path}: out of memory while analysing it")
    except Exception as e:  # a bug on an odd file must not sink the other ranks
        return RankError(f"{path}: internal failure ({type(e).__name__}: {e})")


def analyze_merged_rank(path: str, rank: int, trace: Trace | None = None) -> RankReport | RankError:
    """One rank of a merged multi-rank file (analyzers.loading.merged), like analyze_rank; `trace`: the
    file already loaded. Never raises."""
    label = merged.member_label(path, rank)
    try:
        return _rank_report(analyze_trace(merged.rank_trace(trace if trace is not None else load(path), rank)),
                            rank_from="merged file (args.rank)")
    except TraceError as e:
        return RankError(str(e))
    except MemoryError:
        return RankError(f"{label}: out of memory while analysing it")
    except Exception as e:  # a bug on an odd file must not sink the other ranks
        return RankError(f"{label}: internal failure ({type(e).__name__}: {e})")


def _rank_report(a: Analysis, rank_from: str | None = None) -> RankReport:
    return RankReport(report=serialize.report(a), lines=tuple(report_words.five_lines(a)), mostly=mostly(a),
                      dominant=a.dominant, idle_share=a.idle_share, span_us=a.span_ns / 1e3,
                      kernel_busy_us=a.kernel_busy_ns / 1e3, device_name=a.trace.device_name(),
                      rank=a.trace.rank, caveats=tuple(report_words.analysis_caveats(a)),
                      collectives=collective_timing(a.trace), world_size=a.trace.world_size,
                      has_gpu=bool(a.devices), rank_from=rank_from)


# --- running the workers ----------------------------------------------------------------------

def _pool_context():
    # fork is the cheapest start (no re-import), but only safe while this process has one thread.
    if "fork" in mp.get_all_start_methods() and threading.active_count() == 1:
        return mp.get_context("fork")
    return mp.get_context("spawn")


def analyze_paths(paths: list[Path], progress=None) -> dict[Path, RankReport | RankError]:
    """Each path's analyze_rank result, in the order of `paths`; in parallel when there are several."""
    if len(paths) == 1:
        res = {paths[0]: analyze_rank(str(paths[0]))}
        if progress:
            progress(1, 1)
        return res
    out: dict[Path, RankReport | RankError] = {}
    workers = min(len(paths), os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
        futs = {pool.submit(analyze_rank, str(p)): p for p in paths}
        for done, f in enumerate(as_completed(futs), 1):
            p = futs[f]
            try:
                out[p] = f.result()
            except BrokenProcessPool:
                out[p] = RankError(f"{p}: the worker analysing it died (out of memory?)")
            if progress:
                progress(done, len(paths))
    return {p: out[p] for p in paths}


# --- the command ---------------------------------------------------------------------------------

def report_object(path: Path, progress=None, trace: Trace | None = None) -> RanksReport:
    """The merged report of a directory of rank traces, or of the ranks of one merged multi-rank file
    (`trace`: that file, already loaded); TraceError when there is nothing usable."""
    if trace is not None or path.is_file():
        trace = trace if trace is not None else load(path)
        ranks = merged.ranks_of(trace)
        if not ranks:
            raise TraceError(f"{path} is the trace of one rank, not a merged multi-rank file: report it alone")
        results = {Path(merged.member_label(path.name, r)): analyze_merged_rank(str(path), r, trace) for r in ranks}
        return merge(results)
    try:
        paths = find_traces(path)
    except OSError as e:
        raise TraceError(f"cannot read {path}: {e.strerror or e}") from None
    if not paths:
        raise TraceError(f"no traces in {path} (expected rank*.json or rank*.json.gz files)")
    results = analyze_paths(paths, progress)
    if all(isinstance(r, RankError) for r in results.values()):
        raise TraceError(f"no usable trace in {path}: " + "; ".join(r.message for r in results.values()))
    good = [(p, r) for p, r in results.items() if isinstance(r, RankReport)]
    if len(good) > 1 and not any(isinstance(r.rank, int) or rank_from_name(p.name) is not None for p, r in good):
        # a folder of unrelated traces (a sample library, before/after captures): merging them as ranks
        # of one run would name a "straggler" among workloads that never ran together
        raise TraceError(f"{path} holds {len(good)} traces, but none says which rank of a run it is (no "
                         "distributedInfo, no rankN in its name): report them one at a time, or compare two "
                         "with `tracetriage diff BEFORE AFTER`")
    mixed = mixed_runs(good)
    if mixed:
        raise TraceError(rank_words.mixed_runs(path, *mixed))
    return merge(results, workers=1 if len(paths) == 1 else min(len(paths), os.cpu_count() or 1))
