"""Holistic Trace Analysis (HTA 0.5.0) as a reference: its numbers in plain Python.

Used by `tracetriage report --hta` (print HTA's idle breakdown and launch stats beside
ours), by tests (our kernel time and per-stream idle agree with HTA within 1%) and by
the parse benchmark (`python -m tracetriage.analyzers.output.hta TRACE --parse-only` in a fresh
process). pandas and HTA are imported inside functions: importing this module is cheap.

What HTA 0.5.0 computes, read from its source (hta/analyzers/breakdown_analysis.py,
hta/analyzers/cuda_kernel_analysis.py, hta/common/trace*.py) and checked on the
synthetic trace in tests/fixtures_gpu_trace.py:

Parsing
- `TraceAnalysis(trace_dir=D)` takes every `*.json` / `*.gz` file in D. A file's rank is
  the first match of the regex `"rank":\\s+(\\d+)` found reading the file line by line
  (so `"rank":0` without a space does not match, and a file without one is read to
  the end); no match -> rank 0 with a warning. Two files with one rank: the last wins.
- Times stay in µs (floats from the JSON) after subtracting the earliest `ts` of all
  ranks. Stock HTA then *rounds* float traces to whole µs: `ts` up (ceil), `ts+dur`
  down (floor), `dur = end - ts` (round_down_time_stamps, against ns-overlap; off with
  HTA_DISABLE_NS_ROUNDING=1). That shrinks every kernel by up to 2 µs and erases
  sub-µs kernels, so `run_hta` turns it off by default (`ns_rounding=False`) to give
  exact numbers; `ns_rounding=True` reproduces stock HTA.
- Only `stream`, `correlation`, `External id`, bytes/bandwidth, sync and input-shape
  args are kept; `device` is not, so HTA has no per-device view: a rank's streams are
  keyed by stream id alone.
- With two or more `ProfilerStep#N` ranges, TraceAnalysis drops every CPU event that
  starts at/after the last step's start and every GPU event whose launch was dropped or
  is missing (`include_last_profiler_step=True` keeps up to the last step's end). With
  zero or one ProfilerStep nothing is dropped. `run_hta` skips that filter by default
  (`profiler_step_filter=False`) so HTA sees the same events we do.

Idle time breakdown, `get_idle_time_breakdown(ranks, consecutive_kernel_delay=30)`
- A "kernel" here is an event with a stream and `cat` in kernel/Kernel, gpu_memcpy/
  Memcpy, gpu_memset/Memset, mtia_ccp_events: memcpy and memset count as kernels,
  cuda_sync and gpu_user_annotation do not.
- Per stream, kernels sorted by `ts`; each kernel after the first owns the gap
  `ts - previous.end` (previous by start, not max end). So a stream's idle is measured
  from the end of its first kernel to the start of its last: interval = first kernel
  start .. last kernel end, idle = interval - sum(kernel dur) when kernels do not
  overlap. Two activities of one stream that overlap (programmatic dependent launch:
  cuBLASLt's splitKreduce_kernel starts ~0.1 µs before its GEMM ends) make a negative
  gap, filed under kernel_wait, that cancels real idle: HTA's idle is then span - sum
  of durations, below span - union (tracetriage.analyzers.analyses.streams: idle_ns - overlap_ns).
  Per-stream idle is per stream; it does not add up to device idle when streams
  overlap.
- Category of a gap: host_wait if the kernel's launch call (linked by `correlation`)
  *started* after the previous kernel ended; else kernel_wait if the gap is
  < consecutive_kernel_delay; else other. The delay is compared with µs values: it
  is documented as "ns" but is effectively µs (30 -> 30 µs; the tests pin this).
  A kernel with no launch event in the trace is never host_wait.
- Returns a DataFrame: rank, stream, idle_category (host_wait/kernel_wait/other),
  idle_time (µs), idle_time_ratio (share of that stream's idle), rounded to 2
  decimals: each category is within 0.005 µs, a stream's idle within 0.015 µs.

Kernel breakdown, `get_gpu_kernel_breakdown()`
- Events with stream != -1 (any cat), typed by name: ^nccl.*Kernel -> COMMUNICATION,
  ^Memcpy|^Memset|^dma -> MEMORY, names containing "Memcpy" or "Sync" (or starting
  with "Memset") otherwise -> OTHER, the rest -> COMPUTATION. "Any cat" takes in rows
  that are no GPU work: Inductor's triton cpu_ops carry args "stream": 0 (their CPU
  time becomes COMPUTATION: +79 % on the gpt-compile sample) and cuda_sync "Stream
  Wait Event" rows carry their stream (no "Sync" in the name). So
  kernel_time_us_total is HTA's number as HTA prints it; gpu_activity_us_total (the
  sum of the idle breakdown's per-stream kernel_us) is the one to hold beside ours. The second frame sums
  `dur` per kernel name (µs) for COMPUTATION, COMMUNICATION and MEMORY (the long tail
  is grouped into "others", sums kept); OTHER is left out. Its first frame (time per
  kernel type, merged intervals across streams) casts each piece to int: truncated
  µs, so we do not use it.

Launch stats, `get_cuda_kernel_launch_stats(ranks)`
- Pairs, by `correlation`, launch calls named cudaLaunchKernel, cudaLaunchKernelExC,
  cudaMemcpyAsync, cudaMemsetAsync with their GPU event. cuLaunchKernelEx (cuda_driver,
  how cuBLAS launches now) and cudaGraphLaunch are not counted.
- launch_delay = kernel.ts - (launch.ts + launch.dur), clipped at 0 (µs).
- HTA's plots define: short kernels = cpu_duration <= runtime_cutoff (50 µs) and
  gpu_duration < cpu_duration; runtime outliers = cpu_duration > runtime_cutoff;
  launch delay outliers = launch_delay > launch_delay_cutoff (100 µs).

pandas 3 notes: the default JSON backend and the analyses used here work (with many
Pandas4Warning deprecations, silenced here). The IJSON_BATCH_AND_COMPRESS backend
leaves `correlation` NaN, critical_path_analysis and
get_frequent_cuda_kernel_sequences raise, and get_temporal_breakdown asserts without
ProfilerStep: none of them is called here.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import shutil
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

HTA_ROUNDING_ENV = "HTA_DISABLE_NS_ROUNDING"
# HTA's categories for the idle breakdown's "kernels" (breakdown_analysis.py).
HTA_KERNEL_CATS = ("kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy",
                   "mtia_ccp_events")
IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")


class HtaUnavailable(RuntimeError):
    """HTA cannot give numbers for this trace; the message is one line, for a user."""


@dataclass
class StreamNumbers:
    kernel_us: float = 0.0  # sum of dur of HTA's idle-breakdown "kernels" on the stream
    idle_us: float = 0.0  # host_wait + kernel_wait + other
    host_wait_us: float = 0.0
    kernel_wait_us: float = 0.0
    other_us: float = 0.0
    kernels: int = 0


@dataclass
class LaunchStats:
    count: int = 0  # launch/GPU-event pairs HTA found
    median_launch_delay_us: float | None = None
    short_kernels: int = 0  # cpu_duration <= runtime_cutoff and gpu_duration < cpu_duration
    runtime_outliers: int = 0  # cpu_duration > runtime_cutoff
    long_launch_delays: int = 0  # launch_delay > launch_delay_cutoff
    runtime_cutoff_us: float = 50
    launch_delay_cutoff_us: float = 100


@dataclass
class RankNumbers:
    kernel_time_us_total: float = 0.0  # get_gpu_kernel_breakdown: COMPUTATION+COMM+MEMORY
    #   (counts stream-tagged CPU and cuda_sync rows too: see gpu_activity_us_total)
    kernel_time_us_by_type: dict[str, float] = field(default_factory=dict)
    streams: dict[int, StreamNumbers] = field(default_factory=dict)
    launch: LaunchStats = field(default_factory=LaunchStats)

    @property
    def idle_us_total(self) -> float:
        """Sum over streams; not device idle when streams overlap."""
        return sum(s.idle_us for s in self.streams.values())

    @property
    def gpu_activity_us_total(self) -> float:
        """Kernels + memcpys + memsets on all streams (the idle breakdown's "kernels"):
        unlike kernel_time_us_total, no CPU or cuda_sync rows that carry a stream."""
        return sum(s.kernel_us for s in self.streams.values())


@dataclass
class HtaResult:
    hta_version: str
    trace: str
    parse_seconds: float  # TraceAnalysis construction: read, parse, link, align
    ranks: dict[int, RankNumbers]
    consecutive_kernel_delay_us: float = 30
    ns_rounding: bool = False
    profiler_step_filter: bool = False

    def to_dict(self) -> dict:
        """JSON-ready: rank and stream keys become strings, NaN becomes None."""
        out = asdict(self)
        out["ranks"] = {
            str(rank): {**asdict(nums),
                        "idle_us_total": nums.idle_us_total,
                        "gpu_activity_us_total": nums.gpu_activity_us_total,
                        "streams": {str(s): asdict(v) for s, v in nums.streams.items()}}
            for rank, nums in self.ranks.items()
        }
        return _clean(out)


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# ---------------------------------------------------------------- running HTA quietly

@contextlib.contextmanager
def _quiet(verbose: bool = False) -> Iterator[None]:
    """HTA logs at WARNING for every parse and can print; none of it reaches stdout.

    verbose: its log and prints go to stderr; otherwise they are dropped.
    """
    logger = logging.getLogger("hta")
    saved = (logger.handlers[:], logger.propagate, logger.level)
    logger.handlers = [logging.StreamHandler(sys.stderr) if verbose else logging.NullHandler()]
    logger.propagate = False
    sink = sys.stderr if verbose else io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), warnings.catch_warnings():
            if not verbose:
                warnings.simplefilter("ignore")
            yield
    finally:
        logger.handlers, logger.propagate, logger.level = saved


@contextlib.contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    old = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if value is not None:
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _stage(trace_path: Path, workdir: Path) -> Path:
    """A directory holding only this trace, under a name HTA reads right: HTA picks
    gzip or plain JSON by the suffix (.gz / .json), so the name follows the bytes."""
    staged = workdir / ("trace.json.gz" if _is_gzip(trace_path) else "trace.json")
    try:
        staged.symlink_to(trace_path.resolve())
    except OSError:
        shutil.copyfile(trace_path, staged)
    return staged


def _import_hta() -> float:
    """Import HTA (plotly, pandas...) and return the seconds it took."""
    t0 = time.perf_counter()
    with _quiet():
        import hta.common.trace  # noqa: F401
        import hta.trace_analysis  # noqa: F401
    return time.perf_counter() - t0


def _open_trace_analysis(trace_dir: Path, *, profiler_step_filter: bool):
    """TraceAnalysis on a directory; without the ProfilerStep filter when asked."""
    from hta.common.trace import Trace
    from hta.trace_analysis import TraceAnalysis

    if profiler_step_filter:
        return TraceAnalysis(trace_dir=str(trace_dir))
    # TraceAnalysis.__init__ minus Trace._filter_irrelevant_gpu_kernels (see load_traces).
    t = Trace(trace_dir=str(trace_dir))
    t.parse_traces(use_multiprocessing=True)
    if not t.traces:
        raise HtaUnavailable(f"HTA found no trace file in {trace_dir}")
    t._align_all_ranks()
    for rank, df in t.traces.items():
        df = df.set_index("index", drop=False)
        df.index.names = [None]
        t.traces[rank] = df
    t.is_parsed = True
    ta = TraceAnalysis.__new__(TraceAnalysis)
    ta.t = t
    return ta


def load_hta(trace_path: str | Path, *, workdir: str | Path | None = None,
             ns_rounding: bool = False, profiler_step_filter: bool = False,
             verbose: bool = False):
    """Construct HTA's TraceAnalysis for one trace file (or a directory of per-rank
    traces). Returns (TraceAnalysis, parse_seconds); parse_seconds excludes importing
    HTA. Raises HtaUnavailable."""
    trace_path = Path(trace_path)
    if not trace_path.exists():
        raise FileNotFoundError(f"trace not found: {trace_path}")
    _import_hta()
    with contextlib.ExitStack() as stack:
        if trace_path.is_dir():
            trace_dir = trace_path
        else:
            if workdir is None:
                workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="hta_"))
            trace_dir = Path(workdir)
            trace_dir.mkdir(parents=True, exist_ok=True)
            _stage(trace_path, trace_dir)
        stack.enter_context(_quiet(verbose))
        # Stock HTA rounds float µs to whole µs unless this variable is "1".
        stack.enter_context(_env(HTA_ROUNDING_ENV, "0" if ns_rounding else "1"))
        t0 = time.perf_counter()
        try:
            ta = _open_trace_analysis(trace_dir, profiler_step_filter=profiler_step_filter)
        except HtaUnavailable:
            raise
        except Exception as exc:  # HTA raises KeyError/ValueError/AssertionError/JSON errors
            raise HtaUnavailable(f"HTA could not load {trace_path.name}: "
                                 f"{type(exc).__name__}: {_one_line(exc)}") from exc
        return ta, time.perf_counter() - t0


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else "(no message)"


# ---------------------------------------------------------------- HTA's numbers

def _kernel_frame(ta, rank: int):
    """The events HTA's idle breakdown treats as kernels, for one rank."""
    df = ta.t.get_trace(rank)
    sym = ta.t.symbol_table.get_sym_id_map()
    cat_ids = [sym[c] for c in HTA_KERNEL_CATS if c in sym]
    return df[df["stream"].ne(-1) & df["cat"].isin(cat_ids)]


def _streams(ta, rank: int, consecutive_kernel_delay: float) -> dict[int, StreamNumbers]:
    kernels = _kernel_frame(ta, rank)
    if kernels.empty:
        raise HtaUnavailable("trace has no GPU kernels, copies or memsets "
                             "(HTA's idle breakdown needs GPU activity)")
    streams: dict[int, StreamNumbers] = {}
    for stream, group in kernels.groupby("stream"):
        streams[int(stream)] = StreamNumbers(kernel_us=float(group["dur"].sum()),
                                             kernels=int(len(group)))
    idle, _ = ta.get_idle_time_breakdown(ranks=[rank], visualize=False,
                                         consecutive_kernel_delay=consecutive_kernel_delay)
    for row in idle.itertuples(index=False):
        nums = streams.setdefault(int(row.stream), StreamNumbers())
        value = float(row.idle_time)
        value = 0.0 if math.isnan(value) else value
        if row.idle_category in IDLE_CATEGORIES:
            setattr(nums, f"{row.idle_category}_us",
                    getattr(nums, f"{row.idle_category}_us") + value)
    for nums in streams.values():
        nums.idle_us = nums.host_wait_us + nums.kernel_wait_us + nums.other_us
    return streams


def _kernel_totals(ta) -> dict[int, tuple[float, dict[str, float]]]:
    _, per_kernel = ta.get_gpu_kernel_breakdown(visualize=False, num_kernels=10**9,
                                                include_memory_kernels=True)
    totals: dict[int, tuple[float, dict[str, float]]] = {}
    for rank, frame in per_kernel.groupby("rank"):
        by_type = {str(k): float(v) for k, v in frame.groupby("kernel_type")["sum (us)"].sum().items()}
        totals[int(rank)] = (float(frame["sum (us)"].sum()), by_type)
    return totals


def _launch_stats(ta, rank: int, runtime_cutoff: float, launch_delay_cutoff: float) -> LaunchStats:
    frames = ta.get_cuda_kernel_launch_stats(ranks=[rank], runtime_cutoff=runtime_cutoff,
                                             launch_delay_cutoff=launch_delay_cutoff,
                                             include_memory_events=True, visualize=False)
    df = frames[rank]
    stats = LaunchStats(count=int(len(df)), runtime_cutoff_us=runtime_cutoff,
                        launch_delay_cutoff_us=launch_delay_cutoff)
    if len(df):
        stats.median_launch_delay_us = float(df["launch_delay"].median())
        stats.short_kernels = int(((df["cpu_duration"] <= runtime_cutoff)
                                   & (df["gpu_duration"] < df["cpu_duration"])).sum())
        stats.runtime_outliers = int((df["cpu_duration"] > runtime_cutoff).sum())
        stats.long_launch_delays = int((df["launch_delay"] > launch_delay_cutoff).sum())
    return stats


def run_hta(trace_path: str | Path, *, workdir: str | Path | None = None,
            consecutive_kernel_delay: float = 30, runtime_cutoff: float = 50,
            launch_delay_cutoff: float = 100, ns_rounding: bool = False,
            profiler_step_filter: bool = False, verbose: bool = False) -> HtaResult:
    """Run HTA on one trace (.json or .json.gz; or a directory of per-rank traces).

    workdir: where to stage the file for HTA (default: a temporary directory).
    consecutive_kernel_delay: HTA's kernel_wait threshold, in µs (HTA says ns; it is µs).
    ns_rounding: reproduce stock HTA's rounding to whole µs (default: exact times).
    profiler_step_filter: let HTA drop events from the last ProfilerStep on (stock).
    Raises HtaUnavailable with a one-line reason; FileNotFoundError for a missing file.
    """
    from hta import __version__ as hta_version

    ta, parse_seconds = load_hta(trace_path, workdir=workdir, ns_rounding=ns_rounding,
                                 profiler_step_filter=profiler_step_filter, verbose=verbose)
    ranks: dict[int, RankNumbers] = {}
    with _quiet(verbose):
        try:
            rank_ids = ta.t.get_ranks()
            streams = {r: _streams(ta, r, consecutive_kernel_delay) for r in rank_ids}
            totals = _kernel_totals(ta)
            for r in rank_ids:
                total, by_type = totals.get(r, (0.0, {}))
                ranks[r] = RankNumbers(
                    kernel_time_us_total=total, kernel_time_us_by_type=by_type,
                    streams=streams[r],
                    launch=_launch_stats(ta, r, runtime_cutoff, launch_delay_cutoff))
        except HtaUnavailable:
            raise
        except Exception as exc:
            raise HtaUnavailable(f"HTA failed on {Path(trace_path).name}: "
                                 f"{type(exc).__name__}: {_one_line(exc)}") from exc
    return HtaResult(hta_version=hta_version, trace=str(trace_path),
                     parse_seconds=parse_seconds, ranks=ranks,
                     consecutive_kernel_delay_us=consecutive_kernel_delay,
                     ns_rounding=ns_rounding, profiler_step_filter=profiler_step_filter)


def parse_only(trace_path: str | Path) -> dict:
    """Construct TraceAnalysis as shipped (rounding and ProfilerStep filter on) and
    report its time (import excluded, reported apart) and this process's peak RSS
    (ru_maxrss: imports included). Meant for a fresh process."""
    import resource

    import_seconds = _import_hta()
    _, seconds = load_hta(trace_path, ns_rounding=True, profiler_step_filter=True)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"parse_seconds": seconds, "peak_rss_mb": peak_kb / 1024,
            "import_seconds": import_seconds}


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tracetriage.analyzers.output.hta",
                                     description="HTA 0.5.0's numbers for a trace, as JSON.")
    parser.add_argument("trace", help="Kineto trace (.json or .json.gz) or a directory of ranks")
    parser.add_argument("--parse-only", action="store_true",
                        help="only construct TraceAnalysis as shipped (stock rounding and "
                             "ProfilerStep filter); print parse_seconds and peak_rss_mb")
    parser.add_argument("--ns-rounding", action="store_true",
                        help="keep stock HTA's rounding of times to whole µs")
    parser.add_argument("--consecutive-kernel-delay", type=float, default=30,
                        help="kernel_wait threshold in µs (default 30)")
    parser.add_argument("--verbose", action="store_true", help="HTA's log on stderr")
    args = parser.parse_args(argv)
    try:
        if args.parse_only:
            out = parse_only(args.trace)
        else:
            out = run_hta(args.trace, ns_rounding=args.ns_rounding, verbose=args.verbose,
                          consecutive_kernel_delay=args.consecutive_kernel_delay).to_dict()
    except (HtaUnavailable, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
