"""`tracetriage report DIR`: analyse each rank's trace in its own process, then merge.

    rr = report_object(Path("traces/ddp"))
    rr = report_object("s3://bucket/run-17", scheduler="tcp://10.0.0.5:8786")   # on a Dask cluster
    print("\n".join(rank_words.ranks_lines(rr)))

The rules (collectives, the straggler) are tracetriage.analyzers.analyses.ranks; this module runs the
per-rank analyses, one process per rank, in parallel, and gives each back as a
RankReport (its report, its five lines, its collectives). Where the ranks ran the same collective calls, the
ranks with collectives are analysed once more with what the fastest rank's same call took (the second pass
reads each trace from the cache): a rank's own report then splits its collectives into waiting and moving bytes
as the run does, so the rank that arrived last at a call is never said to wait for a peer in it. The unit of work
is a rank source (tracetriage.analyzers.runs.sources); with a scheduler the same analyze_source runs on Dask workers
(tracetriage.analyzers.runs.dask) and only the merge runs here.
"""
from __future__ import annotations

import multiprocessing as mp
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from functools import partial
from pathlib import Path

from tracetriage.analyzers.analyses.ranks import (
    RankError,
    RankReport,
    RanksReport,
    collective_timing,
    merge,
    mixed_runs,
    rank_from_name,
)
from tracetriage.analyzers.loading import merged
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import Trace, TraceError
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.runs.machine import usable_cpus
from tracetriage.analyzers.runs.sources import RankSource, list_sources, local_copy
from tracetriage.analyzers.triage.report import Analysis, analyze_file, analyze_trace
from tracetriage.analyzers.voice import ranks as rank_words
from tracetriage.analyzers.voice import report as report_words
from tracetriage.analyzers.voice.common import mostly


def analyze_rank(path: str, *, use_cache: bool = True,
                 peers: tuple[int, ...] | None = None) -> RankReport | RankError:
    """One rank: its report and its collective timing (`peers`: its calls' transfers against every rank). Runs in a
    worker process, so it never raises."""
    try:
        return _rank_report(analyze_file(path, peer_transfer_ns=peers) if use_cache
                            else analyze_trace(load(path, use_cache=False), peer_transfer_ns=peers))
    except TraceError as e:
        return RankError(str(e))
    except MemoryError:
        return RankError(f"{path}: out of memory while analysing it")
    except Exception as e:  # a bug on an odd file must not sink the other ranks
        return RankError(f"{path}: internal failure ({type(e).__name__}: {e})")


def analyze_merged_rank(path: str, rank: int, trace: Trace | None = None,
                        peers: tuple[int, ...] | None = None) -> RankReport | RankError:
    """One rank of a merged multi-rank file (tracetriage.analyzers.loading.merged), like analyze_rank; `trace`: the
    file already loaded. Never raises."""
    label = merged.member_label(path, rank)
    try:
        trace = trace if trace is not None else load(path)
        if not merged.ranks_of(trace):
            raise TraceError(f"{label}: {path} is the trace of one rank, not a merged multi-rank file")
        return _rank_report(analyze_trace(merged.rank_trace(trace, rank), peer_transfer_ns=peers),
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


def analyze_source(source: RankSource, peers: tuple[int, ...] | None = None) -> RankReport | RankError:
    """One rank source, read where this process runs (a pool worker, a Dask worker); never raises.

    What comes back names the source as the user did: a remote trace was analysed from a
    temporary copy, a cluster was sent absolute paths."""
    try:
        with local_copy(source) as (path, copied):
            # a temporary copy's cache entry could never be hit again: its mtime is new each time
            result = analyze_rank(path, use_cache=not copied, peers=peers) if source.member is None else \
                analyze_merged_rank(path, _member_rank(source), peers=peers)
    except TraceError as e:
        return RankError(str(e))
    except Exception as e:  # a storage backend's own failure must not sink the other ranks
        return RankError(f"{source.label}: internal failure while reading it ({type(e).__name__}: {e})")
    if isinstance(result, RankError):
        return RankError(result.message.replace(path, source.label))
    if result.report.get("trace", {}).get("path") not in (None, source.label):
        result = replace(result, report={**result.report, "trace": {**result.report["trace"], "path": source.label}})
    return result


def _member_rank(source: RankSource) -> int:
    """The rank a merged-file selector names ("rank3" or "3")."""
    try:
        return int(str(source.member).removeprefix("rank"))
    except ValueError:
        raise TraceError(f"{source.label}: {source.member!r} names no rank (rankN or N)") from None


# --- running the workers ----------------------------------------------------------------------

def _pool_context():
    # fork is the cheapest start (no re-import), but only safe while this process has one thread.
    if "fork" in mp.get_all_start_methods() and threading.active_count() == 1:
        return mp.get_context("fork")
    return mp.get_context("spawn")


def pool_workers(n: int) -> int:
    return min(n, usable_cpus())


def analyze_sources(sources: list[RankSource], progress=None,
                    peers: tuple[int, ...] | None = None) -> dict[RankSource, RankReport | RankError]:
    """Each source's analyze_source result, in the order of `sources`; in parallel processes when there are several."""
    if len(sources) == 1:
        res = {sources[0]: analyze_source(sources[0], peers)}
        if progress:
            progress(1, 1)
        return res
    out: dict[RankSource, RankReport | RankError] = {}
    with ProcessPoolExecutor(max_workers=pool_workers(len(sources)), mp_context=_pool_context()) as pool:
        futs = {pool.submit(analyze_source, s, peers): s for s in sources}
        for done, f in enumerate(as_completed(futs), 1):
            s = futs[f]
            try:
                out[s] = f.result()
            except BrokenProcessPool:
                out[s] = RankError(f"{s.label}: the worker analysing it died (out of memory?)")
            if progress:
                progress(done, len(sources))
    return {s: out[s] for s in sources}


def analyze_paths(paths: list[Path], progress=None) -> dict[Path, RankReport | RankError]:
    """Each local path's result, in the order of `paths` (analyze_sources for plain files)."""
    res = analyze_sources([RankSource(str(p), str(p)) for p in paths], progress)
    return {Path(s.path): r for s, r in res.items()}


# --- the command ---------------------------------------------------------------------------------

def report_object(path: Path | str, progress=None, scheduler: str | None = None,
                  trace: Trace | None = None) -> RanksReport:
    """The merged report of a directory of rank traces (a local path or an fsspec URL), or of the ranks
    of one merged multi-rank file (`trace`: that file, already loaded); TraceError when there is nothing
    usable. With `scheduler` ("local" or a Dask scheduler's address) the ranks are listed and analysed
    on a Dask cluster, and only the merge runs here."""
    target = str(path)
    if trace is not None or (not scheduler and Path(target).is_file()):
        trace = trace if trace is not None else load(target)
        ranks = merged.ranks_of(trace)
        if not ranks:
            raise TraceError(f"{target} is the trace of one rank, not a merged multi-rank file: report it alone")
        name = Path(target).name
        found = {r: analyze_merged_rank(target, r, trace) for r in ranks}
        rr = merge({Path(merged.member_label(name, r)): x for r, x in found.items()})
        if rr.peer_transfer_ns:   # again, each rank against every rank's same calls
            found = {r: analyze_merged_rank(target, r, trace, rr.peer_transfer_ns) if _has_collectives(x) else x
                     for r, x in found.items()}
            rr = merge({Path(merged.member_label(name, r)): x for r, x in found.items()})
        return rr
    if scheduler:
        from tracetriage.analyzers.runs.dask import analyze_on_cluster  # dask is imported only when asked for

        results, workers = analyze_on_cluster(target, scheduler, analyze_source, progress)
        rr = merged_report(target, results, workers)
        if rr.peer_transfer_ns:
            again, _ = analyze_on_cluster(target, scheduler, partial(analyze_source, peers=rr.peer_transfer_ns))
            results = {s: again.get(s, r) if _has_collectives(r) else r for s, r in results.items()}
            rr = merged_report(target, results, workers)
        return rr
    sources = list_sources(target)
    results = analyze_sources(sources, progress)
    workers = 1 if len(sources) == 1 else pool_workers(len(sources))
    rr = merged_report(target, results, workers)
    if rr.peer_transfer_ns:
        again = [s for s, r in results.items() if _has_collectives(r)]
        results = {**results, **analyze_sources(again, None, rr.peer_transfer_ns)}
        rr = merged_report(target, results, workers)
    return rr


def _has_collectives(r: RankReport | RankError) -> bool:
    return isinstance(r, RankReport) and r.collectives.calls > 0


def merged_report(target: str, results: dict[RankSource, RankReport | RankError], workers: int) -> RanksReport:
    """The run's report from each source's result, after the checks that the files are ranks of one run."""
    if all(isinstance(r, RankError) for r in results.values()):
        raise TraceError(f"no usable trace in {target}: " + "; ".join(r.message for r in results.values()))
    good = [(s, r) for s, r in results.items() if isinstance(r, RankReport)]
    if len(good) > 1 and not any(isinstance(r.rank, int) or rank_from_name(s.name) is not None for s, r in good):
        # a folder of unrelated traces (a sample library, before/after captures): merging them as ranks
        # of one run would name a "straggler" among workloads that never ran together
        raise TraceError(f"{target} holds {len(good)} traces, but none says which rank of a run it is (no "
                         "distributedInfo, no rankN in its name): report them one at a time, or compare two "
                         "with `tracetriage diff BEFORE AFTER`")
    mixed = mixed_runs([(s.key, r) for s, r in good])
    if mixed:
        raise TraceError(rank_words.mixed_runs(target, *mixed))
    return merge({s.key: _keyed_error(s, r) for s, r in results.items()}, workers=workers)


def _keyed_error(s: RankSource, r: RankReport | RankError) -> RankReport | RankError:
    """A URL's key prints differently from the URL ('memory:/run/x' for 'memory://run/x'): the merge
    strips the key from the start of an error to show it beside the file name, so start it with the key."""
    if isinstance(r, RankError) and str(s.key) != s.label and r.message.startswith(s.label):
        return RankError(str(s.key) + r.message[len(s.label):])
    return r
