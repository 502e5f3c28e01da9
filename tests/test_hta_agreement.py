"""HTA 0.5.0 as the reference: our kernel time and per-stream idle agree with its numbers.

We run HTA (tracetriage.analyzers.output.hta.run_hta: exact ns times, no ProfilerStep filter)
on real H200 sample traces and compare with tracetriage.analyzers.analyses.streams. Agreement is within
1 % as the issue asks, and, where the definitions are made to coincide, to HTA's own
rounding. What we found reading HTA's code and comparing, trace by trace:

1. Kernel time. HTA's idle breakdown calls kernels, memcpys and memsets alike
   "kernels"; our kernel time counts kernels only. Like with like, our
   `kernel_time_ns(include_copies=True)` equals the sum of HTA's per-stream "kernel"
   durations to the ns on every sample.
2. HTA's get_gpu_kernel_breakdown total (RankNumbers.kernel_time_us_total) is another
   number (the bridge's gpu_activity_us_total is the one above): it takes every event
   with an args.stream, whatever its cat, so it adds Inductor's triton cpu_ops (CPU
   launch time; they carry "stream": 0) and cuda_sync "Stream Wait Event" rows
   (names with "Sync" are typed OTHER and dropped; "Stream Wait Event" has none). +79 % on
   gpt-compile, +19 % on chain-compile-large, +0.18 % on healthy-overlap. We pin that
   difference event by event instead of calling it agreement.
3. Per-stream idle. Both measure from the first activity's start to the last one's
   end. HTA sums gaps ts[i] - end[i-1] in start order; we take span minus the union.
   They differ only where two activities of one stream overlap: cuBLASLt's
   splitKreduce_kernel is launched with programmatic dependent launch
   (cudaLaunchKernelExC) and starts ~0.1 µs before its split-K GEMM ends, also inside
   CUDA graphs. HTA counts the overlap as a negative gap, so its idle is ours minus
   StreamStats.overlap_ns (gpt-eager 38.5 µs, gpt-compile 59.6 µs, gpt-graphs 0.6 µs:
   under 0.02 % of their idle). Ours is the time nothing of the stream ran; we keep it
   and compare HTA's definition (StreamStats.hta_idle_ns) exactly.
4. HTA rounds each idle category to 0.01 µs (`.round(2)` in get_idle_time_breakdown):
   up to 3 x 0.005 µs per stream. Its times are float µs near 5e12, ~1 ns apart; the
   per-gap errors telescope to the first and last start. Hence IDLE_EXACT_US.
5. Launch calls do not enter these numbers: cudaGraphLaunch (all graph kernels share
   its correlation), cuLaunchKernel / cuLaunchKernelEx (cuda_driver, which HTA's launch
   stats skip) and cudaLaunchKernelExC only decide HTA's host_wait/kernel_wait/other
   split, not the stream's idle total or kernel time.
6. cuda_sync events are not activities on either side (HTA's idle breakdown filters
   them by cat). No sample has a duplicated GPU event; a synthetic duplicate below
   shows how HTA and we part on one. HTA keys streams by stream id alone (no device):
   every sample here has one device.

HTA's parse time on this 2-core machine (TraceAnalysis construction, import excluded):
gpt-eager 6.2 s (188k events, the largest, under the 20 s bar, so it is included),
gpt-compile 1.3 s, smell-launch-per-param 0.6 s, gpt-graphs 0.5 s, the rest < 0.3 s.
HTA results are cached per trace for the module (a module-scoped parametrized fixture).
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from fixtures_gpu_trace import EXPECTED, make_trace, write_trace
from sweep import sweep
from tracetriage.analyzers.analyses.streams import StreamStats, kernel_time_ns, per_stream
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.trace import GPU_CATS, NONE, Trace

pytest.importorskip("hta")
from tracetriage.analyzers.output.hta import HtaResult, run_hta  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / "traces"

# trace -> what it stands for in the sample set
SAMPLES = {
    "smell-launch-tiny-ops": "launch-bound: 2000 tiny kernels",
    "smell-launch-per-param": "launch-bound: 4500 kernels, the most launches",
    "smell-host-sleep": "host-bound: kernels and memsets between sleeps",
    "smell-sync-item": "sync: .item() with Stream Sync events, D2H memcpys",
    "smell-sync-explicit": "sync: torch.cuda.synchronize, Context Sync events",
    "smell-transfer-pageable-h2d": "transfer: pageable H2D memcpys dominate",
    "smell-transfer-pinned-serial": "transfer: pinned copies serialised with kernels",
    "healthy-overlap": "two streams: copies on a side stream overlap compute",
    "gpt-graphs": "CUDA graphs: kernels launched by cudaGraphLaunch",
    "gpt-compile": "Inductor: cuLaunchKernel(Ex), stream-tagged cpu_ops, PDL overlap",
    "chain-triton-small": "Triton kernels launched through cuLaunchKernelEx",
    "gpt-eager": "the largest trace: 188k events, 22k GPU activities",
}

# A stream's idle agrees within 1 % of HTA's, or within IDLE_SLACK_US where idle is
# near zero (1 % of under 100 µs). 1 µs: the only legitimate raw differences are
# HTA's rounding (<= 0.015 µs, note 4) and same-stream PDL overlaps (~0.1 µs each,
# note 3), so 1 µs holds a handful of overlaps with 60x margin over the rounding, yet
# stays under any host-bound gap: on the 27 H200 samples the shortest launch call
# lasts 3.0 µs and the shortest gap whose launch began after the previous activity
# ended is 6.7 µs, so a gap counted on one side only cannot hide in the slack.
IDLE_REL = 0.01
IDLE_SLACK_US = 1.0
# Like with like (HTA's definition from our columns): HTA's rounding of 3 categories
# to 0.01 µs (0.015 µs) plus ~1 ns of float64 µs at the first and last start.
IDLE_EXACT_US = 0.02
KERNEL_REL = 0.01


@dataclass
class Pair:
    name: str
    hta: HtaResult
    trace: Trace
    ours: dict[int, StreamStats]  # by stream id (one device per sample)


# HTA's parse of the GPT samples and of the 4,500 launches takes seconds to tens of seconds: the slow step's; the
# others stand for them here
@pytest.fixture(scope="module", params=sweep(sorted(SAMPLES), [s for s in sorted(SAMPLES) if not s.startswith("gpt-")
                                                               and s != "smell-launch-per-param"]))
def pair(request) -> Pair:
    path = TRACES / f"{request.param}.json.gz"
    if not path.exists():
        pytest.skip(f"sample trace {path.name} not present")
    hta = run_hta(path)  # ns rounding off, ProfilerStep filter off (the defaults)
    trace = load(path)
    stats = per_stream(trace)
    assert len({s.device for s in stats}) == 1, "HTA keys streams by id alone"
    return Pair(request.param, hta, trace, {s.stream: s for s in stats})


def _us(ns: int | float) -> float:
    return ns / 1e3


def _only_rank(res: HtaResult):
    assert list(res.ranks) == [0]
    return res.ranks[0]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


# ---------------------------------------------------------------- preconditions

def test_hta_sees_the_same_streams_and_activities_as_we_do(pair):
    rank = _only_rank(pair.hta)
    assert set(rank.streams) == set(pair.ours)
    for stream, nums in rank.streams.items():
        assert nums.kernels == pair.ours[stream].activities, stream


def test_samples_have_no_duplicated_gpu_events(pair):
    ev, rows = pair.trace.ev, pair.trace.idx(*GPU_CATS)
    keys = np.stack([ev.device[rows], ev.stream[rows], ev.start[rows], ev.end[rows],
                     ev.name[rows]], axis=1)
    assert len(np.unique(keys, axis=0)) == len(rows)


# ---------------------------------------------------------------- kernel time

def test_gpu_activity_time_agrees_with_hta_total_and_per_stream(pair):
    rank = _only_rank(pair.hta)
    hta_total = rank.gpu_activity_us_total  # sum of the streams' kernel_us
    ours_total = _us(sum(kernel_time_ns(pair.trace, include_copies=True).values()))
    assert _rel(ours_total, hta_total) < KERNEL_REL
    assert ours_total == pytest.approx(hta_total, rel=1e-9, abs=1e-3)  # in fact to the ns
    for stream, nums in rank.streams.items():
        assert _us(pair.ours[stream].activity_ns) == pytest.approx(nums.kernel_us, rel=1e-9,
                                                                   abs=1e-3)


def test_our_kernel_only_time_is_htas_computation_type_for_plain_kernel_names(pair):
    # HTA's MEMORY type is exactly the memcpys and memsets: what remains after them is
    # our kernel-only time (+ the non-GPU rows of note 2, counted as COMPUTATION).
    rank = _only_rank(pair.hta)
    memory = rank.kernel_time_us_by_type.get("MEMORY", 0.0)
    copies = _us(sum(st.memcpy_ns + st.memset_ns for st in pair.ours.values()))
    assert memory == pytest.approx(copies, rel=1e-9, abs=1e-3)
    kernels = _us(sum(kernel_time_ns(pair.trace).values()))
    extra = _htas_extra_rows_us(pair.trace)
    assert rank.kernel_time_us_by_type.get("COMPUTATION", 0.0) == pytest.approx(
        kernels + extra, rel=1e-9, abs=1e-3)


def _htas_extra_rows_us(trace: Trace) -> float:
    """What HTA's get_gpu_kernel_breakdown adds beyond GPU activities (note 2): rows with
    an args.stream that are not kernels/memcpys/memsets, typed by HTA's own rule; minus
    GPU activities HTA types OTHER (none in the samples)."""
    from hta.utils.utils import get_kernel_type

    ev = trace.ev
    tagged = np.flatnonzero(ev.stream != NONE)
    extra = 0
    for row in tagged:
        counted = get_kernel_type(trace.name_of(row)) != "OTHER"
        is_gpu = ev.cat[row] in GPU_CATS
        if counted and not is_gpu:
            extra += int(ev.end[row] - ev.start[row])
        elif is_gpu and not counted:
            extra -= int(ev.end[row] - ev.start[row])
    return _us(extra)


def test_htas_kernel_breakdown_total_is_ours_plus_stream_tagged_cpu_and_sync_rows(pair):
    rank = _only_rank(pair.hta)
    ours = _us(sum(kernel_time_ns(pair.trace, include_copies=True).values()))
    assert rank.kernel_time_us_total == pytest.approx(
        ours + _htas_extra_rows_us(pair.trace), rel=1e-9, abs=1e-3)


@pytest.mark.parametrize("name, extra_share", [("gpt-compile", 0.79), ("healthy-overlap", 0.00176)])
def test_htas_kernel_breakdown_total_overstates_gpu_time_where_cpu_rows_carry_a_stream(
        name, extra_share):
    # The definitional difference of note 2, pinned: not agreement within 1 %.
    path = TRACES / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"{path.name} not present")
    trace = load(path)
    ours = _us(sum(kernel_time_ns(trace, include_copies=True).values()))
    assert _htas_extra_rows_us(trace) / ours == pytest.approx(extra_share, rel=0.02)


# ---------------------------------------------------------------- per-stream idle

def test_per_stream_idle_agrees_with_hta_within_1_percent(pair):
    for stream, nums in _only_rank(pair.hta).streams.items():
        ours = _us(pair.ours[stream].idle_ns)
        assert abs(ours - nums.idle_us) <= max(IDLE_REL * nums.idle_us, IDLE_SLACK_US), (
            f"{pair.name} stream {stream}: ours {ours:.3f} µs, HTA {nums.idle_us:.3f} µs")


def test_per_stream_idle_under_htas_definition_matches_to_its_rounding(pair):
    for stream, nums in _only_rank(pair.hta).streams.items():
        st = pair.ours[stream]
        assert _us(st.hta_idle_ns) == pytest.approx(nums.idle_us, abs=IDLE_EXACT_US), stream
        # ...and HTA's idle is ours less the same-stream overlap (note 3)
        assert _us(st.idle_ns - st.overlap_ns) == pytest.approx(nums.idle_us, abs=IDLE_EXACT_US)


def test_stream_span_is_first_activity_start_to_last_activity_end(pair):
    for stream, st in pair.ours.items():
        nums = _only_rank(pair.hta).streams[stream]
        assert _us(st.span_ns) == pytest.approx(nums.kernel_us + nums.idle_us, abs=IDLE_EXACT_US)


@pytest.mark.parametrize("name, pairs_at_least", [("gpt-eager", 300), ("gpt-compile", 300),
                                                  ("gpt-graphs", 1)])
def test_same_stream_overlap_is_pdl_and_tiny(name, pairs_at_least):
    path = TRACES / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"{path.name} not present")
    trace = load(path)
    (st,) = per_stream(trace)
    assert 0 < st.overlap_ns < 1e-3 * st.idle_ns
    ev, rows = trace.ev, trace.idx(*GPU_CATS)
    rows = rows[np.argsort(ev.start[rows], kind="stable")]
    later = rows[1:][ev.start[rows[1:]] < np.maximum.accumulate(ev.end[rows])[:-1]]
    assert len(later) >= pairs_at_least
    launches = {trace.name_of(trace.launch_of[r]) for r in later if trace.launch_of[r] != NONE}
    # split-K reduce kernels launched with PDL by cuBLASLt, or kernels inside a graph
    assert launches <= {"cudaLaunchKernelExC", "cudaGraphLaunch"}, launches


def test_per_stream_idle_does_not_add_up_to_device_idle_with_two_streams():
    path = TRACES / "healthy-overlap.json.gz"
    if not path.exists():
        pytest.skip(f"{path.name} not present")
    trace = load(path)
    stats = per_stream(trace)
    assert len(stats) == 2
    ev, rows = trace.ev, trace.idx(*GPU_CATS)
    us, ue = iv.union(ev.start[rows], ev.end[rows])
    device_idle = int(ue[-1] - us[0]) - iv.total(us, ue)
    summed = sum(s.idle_ns for s in stats)
    # the copy stream idles while compute runs and vice versa: the sum far exceeds the
    # time the device had nothing to run
    assert summed > 2 * device_idle


# ---------------------------------------------------------------- synthetic, hand-computed

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    return write_trace(tmp_path_factory.mktemp("synthetic") / "rank0.json.gz")


def test_per_stream_on_the_hand_computed_trace(synthetic):
    stats = {s.stream: s for s in per_stream(load(synthetic))}
    assert set(stats) == {7, 20}
    for stream, kernel_us in EXPECTED.kernel_us.items():
        assert _us(stats[stream].activity_ns) == pytest.approx(kernel_us, abs=1e-9)
        assert _us(stats[stream].idle_ns) == pytest.approx(EXPECTED.idle_us(stream), abs=1e-9)
        assert stats[stream].overlap_ns == 0
    assert stats[7].kernels == 4 and stats[7].kernel_ns == stats[7].activity_ns
    # stream 20: a memcpy, a kernel, a memset; kernel-only time is the 5 µs kernel
    assert (stats[20].kernels, stats[20].activities) == (1, 3)
    assert (stats[20].kernel_ns, stats[20].memcpy_ns, stats[20].memset_ns) == (5_000, 20_000, 2_000)
    assert stats[7].span_ns == 160_250  # 100 .. 260.25 µs
    assert kernel_time_ns(load(synthetic)) == {0: 38_750 + 5_000}
    assert kernel_time_ns(load(synthetic), include_copies=True) == {0: 38_750 + 27_000}


def test_a_duplicated_event_shrinks_htas_idle_but_not_ours(tmp_path, synthetic):
    trace = make_trace()
    k3 = next(e for e in trace["traceEvents"] if e.get("name") == "k3_mul")
    trace["traceEvents"].append(dict(k3))  # the 10 µs kernel, twice
    path = write_trace(tmp_path / "dup.json.gz", trace)
    (st,) = [s for s in per_stream(load(path)) if s.stream == 7]
    assert _us(st.idle_ns) == pytest.approx(EXPECTED.idle_us(7))  # unchanged
    # the loader drops an exact duplicate (with a caveat), so our stream sees the kernel once
    assert st.overlap_ns == 0 and _us(st.activity_ns) == pytest.approx(38.75)
    hta = run_hta(path).ranks[0].streams[7]
    assert hta.kernel_us == pytest.approx(48.75)  # HTA counts it twice too...
    assert hta.idle_us == pytest.approx(EXPECTED.idle_us(7) - 10)  # ...and its idle drops


def test_no_gpu_activity_gives_no_streams(tmp_path):
    path = write_trace(tmp_path / "cpu.json", make_trace(with_kernels=False))
    trace = load(path)
    assert per_stream(trace) == [] and kernel_time_ns(trace) == {}


def test_streams_module_imports_neither_pandas_nor_torch():
    code = ("import sys, tracetriage.analyzers.analyses.streams; "
            "print(sorted(m for m in ('pandas', 'torch', 'hta') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stderr
