"""`tracetriage report DIR`: a directory of per-rank traces, merged, with the straggler named."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cli_in_process
from tracetriage.analyzers.analyses import ranks
from tracetriage.analyzers.analyses.ranks import (
    Collectives,
    LongestCall,
    RankReport,
    RankRow,
    Straggler,
    rank_from_name,
    straggler,
)
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.runs import pool as rank_run
from tracetriage.analyzers.runs.pool import analyze_paths
from tracetriage.analyzers.voice import ranks as voice


def report_object(path):
    """The `report DIR --json` object."""
    return serialize.ranks(rank_run.report_object(path))

ROOT = Path(__file__).resolve().parent.parent
DDP = ROOT / "traces" / "ddp"                 # ranks aligned by a barrier inside the profiler
DDP_SKEWED = ROOT / "traces" / "ddp-skewed"   # the first capture: rank 0's profiler started 420 ms late


def _cli(*args):
    return cli_in_process.run("report", *args)


def _child(*args):
    """A real `tracetriage report` process: the exit status, the error line and the stdout a shell sees."""
    return subprocess.run([sys.executable, "-m", "tracetriage.cli", "report", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def ddp():
    return report_object(DDP_SKEWED)


@pytest.fixture(scope="module")
def ddp_aligned():
    return report_object(DDP)


def test_aligned_ddp_run_shows_the_straggler_as_waiting_inside_the_other_ranks_collectives(ddp_aligned):
    s = ddp_aligned["straggler"]
    assert s["rank"] == 1 and s["basis"] == "collective_wait"
    per = {r["rank"]: r for r in s["per_rank"]}
    # rank 1 sleeps 3 ms a step on its host; rank 0 waits for it inside the all-reduce
    assert per[0]["collective_per_step_us"] - per[1]["collective_per_step_us"] == pytest.approx(3000, rel=0.15)
    assert s["host_idle_dominant"] == "host_work"


# --- the real 2-rank H200 run ---------------------------------------------------------------

def test_ddp_run_names_rank_1_the_straggler_as_its_capture_label_says(ddp):
    label = json.loads((DDP_SKEWED / "rank0.meta.json").read_text())["label"]["straggler_rank"]
    assert ddp["straggler"]["rank"] == label == 1


def test_ddp_straggler_evidence_is_the_host_step_not_the_collective_totals(ddp):
    s = ddp["straggler"]
    assert s["basis"] == "host_step"
    r0, r1 = s["per_rank"]
    assert (r0["rank"], r1["rank"]) == (0, 1)
    # rank 1 sleeps 3 ms per step: its host needs ~3.8 ms to issue one, rank 0's ~0.3 ms
    assert r1["host_step_us"] == pytest.approx(3760, rel=0.05)
    assert r0["host_step_us"] < 500
    assert s["wait_per_step_us"] == pytest.approx(3000, rel=0.1)
    # per step the all-reduces take the same ~0.46 ms on both GPUs ...
    assert r0["collective_per_step_us"] == pytest.approx(r1["collective_per_step_us"], abs=5)
    assert s["collective_spread_us"] < s["threshold_us"]
    # ... while the totals point the wrong way: rank 1's first all-reduce waited 417 ms for rank 0
    assert r1["collective_total_us"] > 100 * r0["collective_total_us"]
    skew = next(o for o in s["outliers"] if o["rank"] == 1)
    assert skew["call"] == 1 and skew["peer"] == 0 and skew["dur_us"] == pytest.approx(417_423, rel=0.01)
    assert skew["before_us"] > 0.9 * skew["dur_us"]
    assert s["host_idle_dominant"] == "host_work"


def test_ddp_text_report_has_a_line_per_rank_the_straggler_and_the_worst_ranks_five_lines():
    r = _cli(DDP_SKEWED)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Ranks: 2 ranks on NVIDIA H200, 5 AllReduce kernels each")
    assert lines[1].startswith("  rank 0: idle 7% (launch overhead), kernels busy 4.35 ms, collectives 2.49 ms")
    assert lines[2].startswith("  rank 1: idle 1% (host work)")
    assert lines[3].startswith("Straggler: rank 1, by its host: it takes 3.76 ms to issue a step")
    assert "against 332.7 µs on rank 0" in lines[3] and "profiler start skew" in lines[3]
    assert "mostly host work" in lines[3]
    assert lines[4] == "Rank 0 (largest idle share, 7% of its span idle):"
    assert [s.split(":")[0].strip() for s in lines[5:10]] == ["Measured", "Time", "Idle", "Regime", "Next"]
    assert r.stderr == ""


def test_json_prints_one_object_and_nothing_else():
    r = _child(DDP_SKEWED, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)  # the whole stdout is one object
    assert set(out) >= {"ranks", "straggler", "lines", "errors"}
    assert [x["rank"] for x in out["ranks"]] == [0, 1]
    assert all(len(x["lines"]) == 5 and "idle_share" in x for x in out["ranks"])
    assert out["ranks"][1]["collectives"]["per_step_us"][0] > 400_000
    assert out["straggler"]["rank"] == 1 and out["errors"] == {}
    assert r.stderr == ""


# --- bad and missing files -----------------------------------------------------------------------

def test_a_truncated_rank_is_listed_as_a_caveat_and_the_good_rank_is_reported(tmp_path):
    shutil.copy(DDP_SKEWED / "rank0.json.gz", tmp_path / "rank0.json.gz")
    (tmp_path / "rank1.json.gz").write_bytes((DDP_SKEWED / "rank1.json.gz").read_bytes()[:500])
    r = _cli(tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert "  rank 0: idle 7%" in r.stdout
    assert "(1 of 2 files unusable)" in r.stdout.splitlines()[0]
    caveat = [s for s in r.stdout.splitlines() if s.startswith("Caveat: rank1.json.gz:")]
    assert len(caveat) == 1 and "not a readable gzip file" in caveat[0] and "(skipped)" in caveat[0]
    assert "Straggler: only one usable rank" in r.stdout

    j = json.loads(_cli(tmp_path, "--json").stdout)
    assert [x["rank"] for x in j["ranks"]] == [0]
    assert list(j["errors"]) == ["rank1.json.gz"] and "gzip" in j["errors"]["rank1.json.gz"]
    assert j["straggler"] is None


def test_an_empty_directory_exits_2_with_one_error_line(tmp_path):
    r = _child(tmp_path)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.startswith("error: no traces in ") and r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr


def test_a_directory_of_only_bad_ranks_exits_2_naming_each_file(tmp_path):
    (tmp_path / "rank0.json").write_text("{not json")
    (tmp_path / "rank1.json.gz").write_bytes((DDP / "rank1.json.gz").read_bytes()[:500])
    r = _cli(tmp_path, "--json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("error: no usable trace in ") and r.stderr.count("\n") == 1
    assert "rank0.json" in r.stderr and "rank1.json.gz" in r.stderr
    assert "Traceback" not in r.stderr


def test_report_dir_is_a_user_error_without_a_traceback(tmp_path, capsys):
    from tracetriage.cli import main

    assert main(["report", "--quiet", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: no traces in ")


# --- the parts --------------------------------------------------------------------------------------

def test_one_rank_is_analysed_without_a_process_pool(monkeypatch):
    def no_pool(*a, **k):
        raise AssertionError("a pool was started for one rank")

    monkeypatch.setattr(rank_run, "ProcessPoolExecutor", no_pool)
    res = analyze_paths([DDP / "rank0.json.gz"])
    assert res[DDP / "rank0.json.gz"].rank == 0


def test_ranks_analysed_in_parallel_match_the_single_process_analysis():
    paths = [DDP / "rank0.json.gz", DDP / "rank1.json.gz"]
    pooled = analyze_paths(paths)
    assert list(pooled) == paths
    for p in paths:
        alone = rank_run.analyze_rank(str(p))
        assert pooled[p].lines == alone.lines
        assert pooled[p].collectives.call_ns == alone.collectives.call_ns


@pytest.mark.parametrize("name, rank", [("rank3.json.gz", 3), ("trace_rank_12.pt.trace.json", 12),
                                        ("RANK-2.json", 2), ("host_12345.1700000000.pt.trace.json", None)])
def test_rank_from_the_file_name_reads_rank_n_but_not_a_pid(name, rank):
    assert rank_from_name(name) == rank


def test_ranks_come_from_distributed_info_then_file_name_then_file_order():
    res = {Path("b.json"): _report(None), Path("x_rank0.json"): _report(None),
           Path("a.json"): _report(2), Path("c.json"): _report(None)}
    got = [(r.rank, r.how, r.path.name) for r in ranks.number_ranks(res)]
    assert got == [(0, "file name", "x_rank0.json"), (1, "file order", "b.json"),
                   (2, "distributedInfo", "a.json"), (3, "file order", "c.json")]


def _report(rank, collectives=None, idle_share=0.1, span_us=0.0, dominant=Cause.LAUNCH_OVERHEAD) -> RankReport:
    c = collectives or Collectives(0, 0, "calls", (), (), (), (), None, 0, 0, ())
    return RankReport(report={}, lines=("M", "T", "I", "R", "N"), mostly=f"{dominant.value}: evidence",
                      dominant=dominant, idle_share=idle_share, span_us=span_us, kernel_busy_us=0.0,
                      device_name="NVIDIA H200", rank=rank, caveats=(), collectives=c)


def _row(rank, coll_us, launch_every_us, step_us=850.0, steps=6, dominant=Cause.LAUNCH_OVERHEAD, step_end_ns=None):
    """A synthetic rank: one collective per step, ending together on every rank."""
    ends = step_end_ns or [int((i + 1) * step_us * 1e3) for i in range(steps)]
    ns = int(coll_us * 1e3)
    c = Collectives(calls=steps, total_ns=ns * steps, steps_from="calls", call_ns=(ns,) * steps,
                    per_step_ns=(ns,) * steps, step_end_ns=tuple(ends),
                    step_launch_ns=tuple(int(i * launch_every_us * 1e3) for i in range(steps)),
                    longest=LongestCall(0, ends[0] - ns, ends[0], ns), trace_start_ns=0, trace_end_ns=ends[-1],
                    kernels=("ncclDevKernel_AllReduce_Sum_bf16",))
    return RankRow(rank, "distributedInfo", Path(f"rank{rank}.json"),
                   _report(rank, c, span_us=steps * step_us, dominant=dominant))


def test_the_rank_whose_collectives_are_shortest_is_the_straggler_when_others_wait_in_theirs():
    # textbook steady state: rank 2 arrives 3 ms late every step, ranks 0, 1, 3 wait for it
    ends = [int((i + 1) * 3850e3) for i in range(6)]
    rows = [_row(0, 3460, 3850, step_end_ns=ends), _row(1, 3455, 3850, step_end_ns=ends),
            _row(2, 460, 3850, dominant=Cause.HOST_WORK, step_end_ns=ends), _row(3, 3470, 3850, step_end_ns=ends)]
    s = straggler(rows)
    assert isinstance(s, Straggler) and s.rank == 2 and s.basis == "collective_wait"
    assert s.wait_per_step_ns / 1e3 == pytest.approx(3000, abs=10)
    assert "mostly host_work: evidence" in voice.straggler_line(s)


def test_balanced_ranks_have_no_straggler_and_say_why():
    s = straggler([_row(0, 460, 850), _row(1, 470, 850)])
    assert not isinstance(s, Straggler)
    assert voice.straggler_reason(s).startswith("none: collective time per step is within 10.0 µs across ranks")


# --- a textbook straggler, written as Kineto traces ---------------------------------------------------

def _kineto_rank(rank: int, *, steps: int = 6, late_rank: int = 1, late_us: float = 3000.0, buckets: int = 3,
                 step_us: float = 4500.0, step_cat: str = "user_annotation") -> dict:
    """One rank of a data-parallel run: a 400 µs matmul, then `buckets` all-reduces per step;
    `late_rank` sleeps `late_us` on the host before its all-reduces, the others wait in theirs."""
    ev, ids = [], iter(range(1, 10**6))
    base = 1_000_000.0

    def launch(op: str, kernel: str, host_t: float, k_start: float, k_dur: float, stream: int):
        ext, corr = next(ids), next(ids)
        ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 100 + rank, "tid": 1, "ts": host_t, "dur": 8,
                   "args": {"External id": ext}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100 + rank, "tid": 1,
                   "ts": host_t + 2, "dur": 4, "args": {"External id": ext, "correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": rank, "tid": stream, "ts": round(k_start, 3),
                   "dur": round(k_dur, 3), "args": {"device": rank, "stream": stream, "correlation": corr}})

    for i in range(steps):
        t = base + i * step_us
        ev.append({"ph": "X", "cat": step_cat, "name": f"ProfilerStep#{i}", "pid": 100 + rank, "tid": 1,
                   "ts": t, "dur": step_us - 1})
        launch("aten::mm", "gemm_bf16", t + 10, t + 25, 400, 7)
        host = t + 430 + (late_us if rank == late_rank else 0)
        last = t + 430 + late_us
        k_end = None
        for b in range(buckets):
            h = host + 10 * b
            k_start = h + 5 if b == 0 else k_end
            k_end = (last + 5 + 200) if b == 0 else k_start + 200
            launch("record_param_comms", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", h, k_start, k_end - k_start, 20)
    return {"traceEvents": ev, "deviceProperties": [{"id": rank, "name": "NVIDIA H200"}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}


def test_a_rank_that_arrives_late_every_step_is_named_from_the_others_wait_summed_per_profiler_step(tmp_path):
    # three all-reduces per step: only the first waits, so the median call shows nothing; the step sum does
    for r in (0, 1):
        (tmp_path / f"worker{r}.json").write_text(json.dumps(_kineto_rank(r)))
    out = report_object(tmp_path)
    s = out["straggler"]
    assert s["rank"] == 1 and s["basis"] == "collective_wait" and s["steps_from"] == ["ProfilerStep"]
    per = {p["rank"]: p for p in s["per_rank"]}
    assert per[0]["collective_per_step_us"] == pytest.approx(3600, abs=1)
    assert per[1]["collective_per_step_us"] == pytest.approx(600, abs=1)
    assert s["wait_per_step_us"] == pytest.approx(3000, abs=1)
    assert s["host_idle_dominant"] == "host_work"
    assert [r["rank_from"] for r in out["ranks"]] == ["distributedInfo"] * 2
    assert out["lines"][3].startswith("Straggler: rank 1: the others wait for it inside the collectives")


def test_torch_1x_profiler_steps_recorded_as_ops_still_sum_the_wait_per_step(tmp_path):
    # torch 1.x (kineto's and HTA's older sample traces) records ProfilerStep#N as a cpu_op, not an annotation
    for r in (0, 1):
        (tmp_path / f"worker{r}.json").write_text(json.dumps(_kineto_rank(r, step_cat="cpu_op")))
    s = report_object(tmp_path)["straggler"]
    assert s["rank"] == 1 and s["steps_from"] == ["ProfilerStep"]
    assert s["wait_per_step_us"] == pytest.approx(3000, abs=1)


def test_a_folder_of_unrelated_traces_is_not_merged_as_ranks(tmp_path):
    for name in ("smell-host-sleep.json.gz", "smell-sync-item.json.gz"):
        shutil.copy(ROOT / "traces" / name, tmp_path / name)
    r = _cli(tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("error: ") and "none says which rank of a run it is" in r.stderr
