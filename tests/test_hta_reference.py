"""tracetriage.analyzers.output.hta: HTA 0.5.0's numbers on a trace whose answers we know."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures_gpu_trace import EXPECTED, make_trace, write_trace
from tracetriage.analyzers.output.hta import HtaResult, HtaUnavailable, run_hta

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gz_trace(tmp_path_factory) -> Path:
    return write_trace(tmp_path_factory.mktemp("gz") / "rank0.pt.trace.json.gz")


@pytest.fixture(scope="module")
def result(gz_trace) -> HtaResult:
    return run_hta(gz_trace)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tracetriage.analyzers.output.hta", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def test_kernel_time_per_stream_matches_hand_computed_including_memcpy_and_memset(result):
    streams = result.ranks[0].streams
    assert set(streams) == {7, 20}
    for stream, kernel_us in EXPECTED.kernel_us.items():
        assert streams[stream].kernel_us == pytest.approx(kernel_us, abs=1e-3)
    assert streams[20].kernels == 3  # the memcpy and the memset count as kernels


def test_kernel_time_total_is_the_sum_of_all_gpu_activity(result):
    assert result.ranks[0].kernel_time_us_total == pytest.approx(
        sum(EXPECTED.kernel_us.values()), abs=1e-3)
    assert result.ranks[0].kernel_time_us_by_type == pytest.approx(
        {"COMPUTATION": 10.5 + 8 + 10 + 10.25 + 5, "MEMORY": 22.0}, abs=1e-3)


@pytest.mark.parametrize("stream", [7, 20])
def test_idle_per_stream_splits_into_host_wait_kernel_wait_other(result, stream):
    nums = result.ranks[0].streams[stream]
    assert nums.host_wait_us == pytest.approx(EXPECTED.host_wait_us[stream], abs=1e-3)
    assert nums.kernel_wait_us == pytest.approx(EXPECTED.kernel_wait_us[stream], abs=1e-3)
    assert nums.other_us == pytest.approx(EXPECTED.other_us[stream], abs=1e-3)
    assert nums.idle_us == pytest.approx(EXPECTED.idle_us(stream), abs=1e-3)


def test_stream_idle_spans_first_kernel_start_to_last_kernel_end(result):
    # stream 7 runs from 100 to 260.25 µs: 160.25 µs = kernels + idle
    nums = result.ranks[0].streams[7]
    assert nums.kernel_us + nums.idle_us == pytest.approx(160.25, abs=1e-3)


def test_consecutive_kernel_delay_is_in_microseconds(gz_trace):
    # The 40 µs gap on stream 7 (launched early) is "other" under 30 and becomes
    # kernel_wait under 50: so 50 means 50 µs, not 50 ns as HTA's docstring says.
    nums = run_hta(gz_trace, consecutive_kernel_delay=50).ranks[0].streams[7]
    assert nums.other_us == 0
    assert nums.kernel_wait_us == pytest.approx(41.5, abs=1e-3)
    # ...and the 1.5 µs gap drops out of kernel_wait under a 1 µs delay
    nums = run_hta(gz_trace, consecutive_kernel_delay=1).ranks[0].streams[7]
    assert nums.kernel_wait_us == 0 and nums.other_us == pytest.approx(41.5, abs=1e-3)


def test_stock_hta_rounds_times_to_whole_microseconds(gz_trace):
    rounded = run_hta(gz_trace, ns_rounding=True)
    assert rounded.ns_rounding is True
    streams = rounded.ranks[0].streams
    # k1 10.5 -> 10 and k4 10.25 -> 10 (start rounded up, end rounded down)
    assert streams[7].kernel_us == 38.0
    assert streams[7].kernel_wait_us == 2.0  # the 1.5 µs gap widens to 2
    assert rounded.ranks[0].kernel_time_us_total == 65.0


def test_launch_stats_skip_cu_launch_kernel_ex(result):
    launch = result.ranks[0].launch
    # 7 GPU activities, but k4 was launched by cuLaunchKernelEx (cuda_driver),
    # which HTA's launch stats do not know.
    assert launch.count == 6
    # delays: k1 6, k2 13, k3 46, m1 5, k5 29, s1 16 µs
    assert launch.median_launch_delay_us == pytest.approx(14.5, abs=1e-3)
    assert launch.short_kernels == 1  # the 2 µs memset, under its 4 µs launch call
    assert launch.long_launch_delays == 0 and launch.runtime_outliers == 0


def test_plain_json_gives_the_same_numbers_as_gzip(tmp_path, result):
    plain = run_hta(write_trace(tmp_path / "rank0.json"))
    assert plain.to_dict()["ranks"] == result.to_dict()["ranks"]


def test_gzip_bytes_under_a_json_name_are_read_as_gzip(tmp_path, result):
    path = tmp_path / "misnamed.json"
    path.write_bytes(gzip.compress(json.dumps(make_trace(), indent=1).encode()))
    assert run_hta(path).to_dict()["ranks"] == result.to_dict()["ranks"]


def test_rank_comes_from_distributed_info(tmp_path):
    res = run_hta(write_trace(tmp_path / "r3.json", make_trace(rank=3)))
    assert list(res.ranks) == [3]


def test_missing_distributed_info_means_rank_zero(tmp_path):
    res = run_hta(write_trace(tmp_path / "norank.json", make_trace(rank=None)))
    assert list(res.ranks) == [0]


def test_hta_reads_no_rank_from_compact_json(tmp_path):
    # HTA's regex wants a space after "rank": compact JSON falls back to rank 0.
    path = tmp_path / "compact.json"
    path.write_text(json.dumps(make_trace(rank=3), separators=(",", ":")))
    assert list(run_hta(path).ranks) == [0]


def test_profiler_step_filter_drops_kernels_launched_in_the_last_step(tmp_path):
    trace = make_trace()
    origin = trace["traceEvents"][0]["ts"] - 89.0  # the fixture's t = 0
    for step, (start, dur) in enumerate([(85, 100), (185, 200)]):
        trace["traceEvents"].append({"ph": "X", "cat": "user_annotation",
                                     "name": f"ProfilerStep#{step}", "pid": 1234,
                                     "tid": 1234, "ts": origin + start, "dur": dur})
    path = write_trace(tmp_path / "steps.json", trace)
    whole = run_hta(path)
    stock = run_hta(path, profiler_step_filter=True)
    assert whole.ranks[0].kernel_time_us_total == pytest.approx(65.75, abs=1e-3)
    # launches at/after 185 µs (k4 at 190, memset at 280) are dropped with their kernels
    assert stock.ranks[0].kernel_time_us_total == pytest.approx(65.75 - 10.25 - 2, abs=1e-3)


def test_trace_without_gpu_kernels_raises_hta_unavailable(tmp_path):
    path = write_trace(tmp_path / "cpu.json", make_trace(with_kernels=False))
    with pytest.raises(HtaUnavailable, match="no GPU kernels"):
        run_hta(path)


def test_broken_json_raises_hta_unavailable_with_one_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"traceEvents": [')
    with pytest.raises(HtaUnavailable) as err:
        run_hta(path)
    assert "\n" not in str(err.value) and "broken.json" in str(err.value)


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="trace not found"):
        run_hta(tmp_path / "nope.json")


def test_workdir_receives_the_staged_trace(tmp_path, gz_trace):
    run_hta(gz_trace, workdir=tmp_path / "stage")
    assert (tmp_path / "stage" / "trace.json.gz").resolve() == gz_trace.resolve()


def test_result_is_json_serialisable_with_string_keys(result):
    data = json.loads(json.dumps(result.to_dict()))
    assert data["hta_version"] == "0.5.0"
    assert data["parse_seconds"] > 0
    assert set(data["ranks"]["0"]["streams"]) == {"7", "20"}
    assert data["ranks"]["0"]["streams"]["7"]["host_wait_us"] == pytest.approx(80.0)


def test_cli_prints_only_json_on_stdout(gz_trace):
    proc = _cli(str(gz_trace))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # HTA's log lines would break this
    assert data["ranks"]["0"]["kernel_time_us_total"] == pytest.approx(65.75, abs=1e-3)


def test_cli_parse_only_reports_time_and_peak_rss(gz_trace):
    proc = _cli(str(gz_trace), "--parse-only")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"parse_seconds", "peak_rss_mb", "import_seconds"}
    assert data["parse_seconds"] > 0 and data["peak_rss_mb"] > 10


def test_cli_user_error_is_one_line_on_stderr_and_exit_2(tmp_path):
    proc = _cli(str(tmp_path / "nope.json"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"error: trace not found: {tmp_path / 'nope.json'}"]


def test_importing_the_module_does_not_import_pandas_or_hta():
    code = ("import sys, tracetriage.analyzers.output.hta; "
            "print(sorted(m for m in ('pandas', 'hta', 'plotly') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stderr


def test_kernel_whose_launch_is_not_in_the_trace_is_never_host_wait(tmp_path):
    # Drop k3's cudaLaunchKernel: its 80 µs host_wait gap on stream 7 becomes "other".
    trace = make_trace()
    trace["traceEvents"] = [e for e in trace["traceEvents"]
                            if not (e["cat"] == "cuda_runtime"
                                    and e.get("args", {}).get("correlation") == 1002)]
    nums = run_hta(write_trace(tmp_path / "nolaunch.json", trace)).ranks[0].streams[7]
    assert nums.host_wait_us == 0
    assert nums.other_us == pytest.approx(80 + 40, abs=1e-3)
