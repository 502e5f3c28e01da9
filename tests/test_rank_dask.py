"""`tracetriage report DIR --scheduler ...`: the ranks on a real Dask cluster, the same answer as the local pool.

Two real LocalClusters, started once for the module: one of in-process worker threads on TCP
(fast; it shares this process's fsspec memory filesystem), one of two worker processes, for
killing a worker mid-run.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest

from lazy_import import Lazy, skip_unless_installed
from tools.grow_ranks import write_ranks
from tracetriage.analyzers.analyses.ranks import RankError, RankReport, RanksReport
from tracetriage.analyzers.output import serialize
from tracetriage.analyzers.runs import dask as rank_dask  # imports dask only when a cluster is asked for
from tracetriage.analyzers.runs import pool as rank_run
from tracetriage.analyzers.runs.machine import usable_cpus
from tracetriage.analyzers.runs.sources import RankSource, list_sources
from tracetriage.cli import main

skip_unless_installed("distributed", "fsspec")
# imported by the tests that start a cluster or a memory filesystem (the slow step's), not at collection in every
# worker of the fast run (distributed ~0.8 CPU-s: tests/lazy_import.py)
distributed, fsspec = Lazy("distributed"), Lazy("fsspec")


ROOT = Path(__file__).resolve().parent.parent
DDP = ROOT / "traces" / "ddp"
DDP_SKEWED = ROOT / "traces" / "ddp-skewed"


@pytest.fixture(scope="module")
def threads():
    """As many single-threaded workers as the local pool has processes, so both say the same 'analysed in N'."""
    with distributed.LocalCluster(n_workers=usable_cpus(), threads_per_worker=1, processes=False,
                                  protocol="tcp", host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def processes():
    """Two worker processes; a rank may kill one worker and be retried (allowed-failures 1), not two. A worker
    holds one rank at a time (worker-saturation 1.0: the others wait on the scheduler), so a worker's death counts
    against the rank that killed it alone. A cluster per test: the workers one test killed are restarting by the
    nanny while the next one starts, which under load left a test with no live worker."""
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                          "distributed.scheduler.worker-saturation": 1.0}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                     dashboard_address="127.0.0.1:0", silence_logs=40) as cluster, \
            distributed.Client(cluster, set_as_default=False) as c:
        yield cluster.scheduler_address, c


@pytest.fixture
def cold(monkeypatch):
    # both sides analyse from the JSON: a cache entry written by the first run must not serve the second
    monkeypatch.setenv("TRACETRIAGE_NO_CACHE", "1")
    monkeypatch.delenv("TRACETRIAGE_SCHEDULER", raising=False)


def _stdout(capsys, *argv) -> str:
    assert main(["report", "--quiet", "--json", *map(str, argv)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


# --- the same answer ------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("run", [DDP, DDP_SKEWED], ids=["ddp", "ddp-skewed"])
def test_a_cluster_prints_the_local_pools_json_byte_for_byte(run, threads, cold, capsys):
    pooled = _stdout(capsys, run)
    assert _stdout(capsys, run, "--scheduler", threads) == pooled
    assert json.loads(pooled)["straggler"]["rank"] == 1


@pytest.mark.slow
def test_64_grown_ranks_on_a_cluster_print_the_local_pools_json_and_name_the_planted_straggler(tmp_path, threads,
                                                                                               cold, capsys):
    write_ranks(tmp_path, 64, straggler=37)
    pooled = _stdout(capsys, tmp_path)
    assert _stdout(capsys, tmp_path, "--scheduler", threads) == pooled
    out = json.loads(pooled)
    assert len(out["ranks"]) == 64 and out["errors"] == {}
    assert out["straggler"]["rank"] == 37 and out["straggler"]["basis"] == "collective_wait"


@pytest.mark.slow
def test_scheduler_local_starts_a_cluster_of_processes_and_gives_the_same_json(cold):
    def cli(*extra):
        return subprocess.run([sys.executable, "-m", "tracetriage.cli", "report", "--json", str(DDP), *extra],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)

    pooled, clustered = cli(), cli("--scheduler", "local")
    assert clustered.returncode == 0 and clustered.stderr == "", clustered.stderr
    assert clustered.stdout == pooled.stdout


@pytest.mark.slow
def test_the_scheduler_comes_from_TRACETRIAGE_SCHEDULER_and_only_then_is_dask_imported(threads):
    # which of dask, distributed and fsspec a `report DIR` and a `report FILE` imported
    probe = ("import sys, contextlib, io\nfrom tracetriage.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             f"    assert main(['report', '--quiet', {str(DDP)!r}]) == 0\n"
             f"    assert main(['report', '--quiet', {str(DDP / 'rank0.json.gz')!r}]) == 0\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed', 'fsspec'}))")

    def imported(**env):
        e = {k: v for k, v in os.environ.items() if k != "TRACETRIAGE_SCHEDULER"}
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120,
                           env={**e, **env})
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    assert imported() == "[]"
    assert imported(TRACETRIAGE_SCHEDULER=threads) == "['dask', 'distributed']"


# --- storage through fsspec -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ddp_on_disk():
    return serialize.ranks(rank_run.report_object(DDP))


def _without_paths(out: dict) -> dict:
    return {**out, "ranks": [{**r, "trace": {**r["trace"], "path": None}} for r in out["ranks"]]}


def _differences(a, b, at: str = "") -> list[str]:
    """Where two JSON values differ, as paths with both values: pytest's own diff of two reports of ~600 lines is
    cut before it reaches the field."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(a.keys() | b.keys(), key=str)
                for d in _differences(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{at}[{i}]")]
    return [] if a == b else [f"{at}: {a!r} != {b!r}"]


# a ceiling above every rate the ranks reach (one a kernel passes rises to the rate reached: DevicePeaks.judged_by)
CEILINGS = {"device_name": "NVIDIA H200", "copy_gbps": {"d2d": 100.0}, "matmul_tflops": {"bf16": 901.5}}


@pytest.mark.slow
def test_a_run_on_a_memory_filesystem_is_read_by_the_workers_and_judged_as_on_disk(tmp_path, threads, cold):
    # measured ceilings beside the ranks change every rank's roofline: they must travel with a remote rank
    for p in DDP.iterdir():                       # the ranks and their capture sidecars (no ranks themselves)
        (tmp_path / p.name).write_bytes(p.read_bytes())
    (tmp_path / "ceilings.json").write_text(json.dumps(CEILINGS))
    url = f"memory://run-{uuid.uuid4().hex[:6]}"
    mem = fsspec.filesystem("memory")
    for p in tmp_path.iterdir():
        mem.pipe(f"{url}/{p.name}", p.read_bytes())
    on_disk = serialize.ranks(rank_run.report_object(tmp_path))
    remote = serialize.ranks(rank_run.report_object(url, scheduler=threads))
    assert _differences(_without_paths(remote), _without_paths(on_disk)) == []
    assert [r["trace"]["path"] for r in remote["ranks"]] == [f"{url}/rank0.json.gz", f"{url}/rank1.json.gz"]
    assert on_disk["ranks"][0]["roofline"][0]["peak_tflops"] == 901.5


def test_copying_a_remote_rank_leaves_another_reader_of_its_side_files_where_it_was(tmp_path):
    # fsspec's memory filesystem hands every opener one shared file object: a copy that opened ceilings.json while
    # another rank was reading it moved that reader to the end, and the other rank read an empty file
    from tracetriage.analyzers.runs.sources import local_copy

    url = f"memory://run-{uuid.uuid4().hex[:6]}"
    mem = fsspec.filesystem("memory")
    mem.pipe(f"{url}/rank0.json.gz", (DDP / "rank0.json.gz").read_bytes())
    mem.pipe(f"{url}/ceilings.json", json.dumps(CEILINGS).encode())
    with mem.open(f"{url}/ceilings.json", "rb") as other_rank:
        with local_copy(RankSource(f"{url}/rank0.json.gz", "rank0.json.gz")) as (path, copied):
            assert copied and json.loads(Path(path).with_name("ceilings.json").read_text()) == CEILINGS
        assert json.loads(other_rank.read()) == CEILINGS


@pytest.mark.slow
def test_a_file_url_gives_the_answer_of_its_local_path_in_the_pool_and_on_a_cluster(threads, ddp_on_disk, cold):
    url = DDP.as_uri()
    for scheduler in (None, threads):
        out = serialize.ranks(rank_run.report_object(url, scheduler=scheduler))
        assert _differences(_without_paths(out), _without_paths(ddp_on_disk)) == []
        assert out["ranks"][0]["trace"]["path"] == f"{url}/rank0.json.gz"


def test_a_url_and_a_local_path_list_the_same_rank_files(tmp_path):
    for name in ("rank0.json.gz", "rank1.json", "rank0.meta.json", "manifest.json", "notes.txt"):
        (tmp_path / name).write_bytes(b"{}")
    (tmp_path / "sub.json").mkdir()
    local = [s.name for s in list_sources(str(tmp_path))]
    assert local == ["rank0.json.gz", "rank1.json"]
    assert [s.name for s in list_sources(tmp_path.as_uri())] == local


def test_a_missing_storage_backend_is_one_error_line_naming_the_package_to_install(capsys):
    missing = next((p for p, mod in (("s3", "s3fs"), ("gs", "gcsfs"), ("abfs", "adlfs")) if not _importable(mod)), None)
    if missing is None:
        pytest.skip("s3fs, gcsfs and adlfs are all installed here")
    package = {"s3": "s3fs", "gs": "gcsfs", "abfs": "adlfs"}[missing]
    assert main(["report", f"{missing}://bucket/run-17"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"error: reading {missing}:// needs the {package} package")
    assert f"pip install {package}" in err


def _importable(mod: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(mod) is not None


# --- bad ranks and faults ------------------------------------------------------------------------------

@pytest.mark.slow
def test_bad_files_are_rows_with_their_one_line_errors_on_a_cluster_as_in_the_pool(tmp_path, threads, cold, capsys):
    write_ranks(tmp_path, 4, straggler=3)
    (tmp_path / "rank1.json.gz").write_bytes((tmp_path / "rank1.json.gz").read_bytes()[:300])   # truncated
    (tmp_path / "rank2.json.gz").unlink()
    (tmp_path / "rank2.json").write_text(json.dumps({"schemaVersion": 1}))                      # JSON, not a trace
    pooled = _stdout(capsys, tmp_path)
    assert _stdout(capsys, tmp_path, "--scheduler", threads) == pooled
    out = json.loads(pooled)
    assert [r["rank"] for r in out["ranks"]] == [0, 3]
    assert sorted(out["errors"]) == ["rank1.json.gz", "rank2.json"]
    assert "gzip" in out["errors"]["rank1.json.gz"] and "not a trace" in out["errors"]["rank2.json"]
    assert all("\n" not in m and "Traceback" not in m for m in out["errors"].values())


@pytest.mark.slow
def test_a_merged_file_selector_is_its_own_row_never_the_whole_file(threads):
    whole = RankSource(str(DDP / "rank0.json.gz"), str(DDP / "rank0.json.gz"))
    member = RankSource(str(DDP / "rank1.json.gz"), str(DDP / "rank1.json.gz"), member="rank1")
    with rank_dask.connected(threads) as (client, address):
        results, _ = rank_dask.run_sources(client, address, [whole, member], rank_run.analyze_source)
    assert isinstance(results[whole], RankReport)
    assert isinstance(results[member], RankError) and "merged multi-rank file" in results[member].message
    assert results == rank_run.analyze_sources([whole, member])
    rr = rank_run.merged_report(str(DDP), results, workers=2)
    assert [r.rank for r in rr.rows] == [0]
    assert list(rr.errors) == ["rank1.json.gz#rank1"] and "merged multi-rank file" in rr.errors["rank1.json.gz#rank1"]


def _analysis_that_kills_its_worker(dies: str, once: str | None, source: RankSource):
    """analyze_source, except that the analysis of the file named `dies` SIGKILLs the worker process it runs in,
    as the kernel's OOM killer would: each time that file is given, or with `once` (a marker file's path) only the
    first time. The rank kills its own worker, so no test races the scheduler for which worker holds it."""
    if source.name == dies and (once is None or _first_to_make(once)):
        os.kill(os.getpid(), signal.SIGKILL)
    return rank_run.analyze_source(source)


def _first_to_make(marker: str) -> bool:
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory):
    """Rank 0, and rank 1 grown 300 times (about a second to analyse): a run whose analysis is under way long enough
    to lose its scheduler meanwhile."""
    d = tmp_path_factory.mktemp("slow")
    write_ranks(d, 2, straggler=None)
    slow = tmp_path_factory.mktemp("grown")
    write_ranks(slow, 2, straggler=None, copies=300, compress=False)   # 40 MB of JSON: gzip would cost seconds
    os.replace(slow / "rank1.json", d / "rank1.json")
    (d / "rank1.json.gz").unlink()
    return d


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("two")
    write_ranks(d, 2, straggler=None)
    return d


def _report_on_processes(run: Path, processes, analyze) -> RanksReport:
    """report_object's pass on the cluster (run_sources, then merged_report), with `analyze` for analyze_source."""
    address, client = processes
    with ThreadPoolExecutor(1) as pool:   # a cluster that lost every worker fails the test, not hangs the step
        ran = pool.submit(rank_dask.run_sources, client, address, list_sources(str(run)), analyze)
        try:
            results, workers = ran.result(timeout=CLUSTER_GIVES_UP_S)
        except TimeoutError:
            client.close()                   # run_sources's wait ends (CancelledError) so the pool can shut down
            pytest.fail(f"the two-process cluster gave no answer in {CLUSTER_GIVES_UP_S} s")
    return rank_run.merged_report(str(run), results, workers)


CLUSTER_GIVES_UP_S = 300   # a rank analysed in well under a second; two worker restarts take seconds, loaded ~a minute


@pytest.mark.slow
def test_a_worker_killed_mid_run_has_its_rank_retried_and_reported(two_ranks, processes, tmp_path, cold):
    once = str(tmp_path / "rank1-killed-its-worker")
    rr = _report_on_processes(two_ranks, processes,
                              partial(_analysis_that_kills_its_worker, "rank1.json.gz", once))
    assert os.path.exists(once)          # its first worker died
    assert rr.errors == {} and [r.rank for r in rr.rows] == [0, 1]
    alone = rank_run.analyze_rank(str(two_ranks / "rank1.json.gz"))
    assert rr.rows[1].r.lines == alone.lines


@pytest.mark.slow
def test_a_rank_that_kills_every_worker_it_is_given_is_its_own_row_and_the_others_are_reported(two_ranks, processes,
                                                                                             cold):
    rr = _report_on_processes(two_ranks, processes, partial(_analysis_that_kills_its_worker, "rank1.json.gz", None))
    assert [r.rank for r in rr.rows] == [0]
    assert list(rr.errors) == ["rank1.json.gz"]
    assert rr.errors["rank1.json.gz"].startswith("every Dask worker that analysed it died")
    alone = rank_run.analyze_rank(str(two_ranks / "rank0.json.gz"))
    assert rr.rows[0].r.lines == alone.lines


# --- the cluster cannot be used: one line, exit 2 --------------------------------------------------------

@pytest.mark.parametrize("address, says", [
    ("nonsense", "error: not a Dask scheduler address: 'nonsense'"),
    ("http://127.0.0.1:8786", "error: not a Dask scheduler address: 'http://127.0.0.1:8786' (unknown address scheme"),
    ("tcp://127.0.0.1:1", "error: cannot reach a Dask scheduler at tcp://127.0.0.1:1 (Connection refused)"),
])
def test_a_bad_or_unreachable_scheduler_is_one_error_line(address, says, capsys):
    assert main(["report", str(DDP), "--scheduler", address]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(says) and err.count("\n") == 1


def test_a_port_that_accepts_but_never_answers_is_reported_within_the_timeout(monkeypatch, capsys):
    monkeypatch.setattr(rank_dask, "CONNECT_TIMEOUT_S", 0.5)
    with socket.socket() as silent:       # the kernel accepts connections into the backlog; nobody answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = "tcp://127.0.0.1:%d" % silent.getsockname()[1]
        t0 = time.monotonic()
        assert main(["report", str(DDP), "--scheduler", address]) == 2
    assert time.monotonic() - t0 < 10
    out, err = capsys.readouterr()
    assert err == f"error: cannot reach a Dask scheduler at {address} (no answer within 0.5 s); start one with " \
                  "`dask scheduler`, or check the address\n"


def test_a_scheduler_without_workers_is_one_error_line_saying_how_to_start_one(monkeypatch, capsys):
    monkeypatch.setattr(rank_dask, "WORKERS_TIMEOUT_S", 0.5)
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as empty:
        assert main(["report", str(DDP), "--scheduler", empty.scheduler_address]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"error: the Dask scheduler at {empty.scheduler_address} has no workers")
    assert f"`dask worker {empty.scheduler_address} --nthreads 1`" in err and err.count("\n") == 1


def test_scheduler_with_one_trace_file_is_a_user_error(capsys):
    assert main(["report", str(DDP / "rank0.json.gz"), "--scheduler", "local"]) == 2
    assert capsys.readouterr().err == ("error: --scheduler applies to a directory of rank traces, "
                                       "not to one trace file\n")


@pytest.mark.slow
def test_a_directory_the_workers_cannot_find_is_one_error_line(tmp_path, threads, capsys):
    assert main(["report", str(tmp_path / "gone"), "--scheduler", threads]) == 2
    out, err = capsys.readouterr()
    assert err == f"error: cannot read {tmp_path / 'gone'}: No such file or directory\n"


@pytest.mark.slow
def test_losing_the_scheduler_mid_run_is_one_error_line_without_dasks_tracebacks(slow_run, cold):
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                       host="127.0.0.1", dashboard_address="127.0.0.1:0")
    cli = subprocess.Popen([sys.executable, "-m", "tracetriage.cli", "report", str(slow_run), "--scheduler",
                            cluster.scheduler_address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT)
    with distributed.Client(cluster, set_as_default=False) as watcher:
        # a rank's analysis under way, not the listing before it (losing the scheduler there is said as such); no
        # deadline of our own: the CLI ends, with its own time-outs, should it never get there
        while not any(not str(k).startswith("list_sources") for keys in watcher.processing().values() for k in keys) \
                and cli.poll() is None:
            time.sleep(0.005)
    cluster.close()
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 2 and out == ""
    assert err.startswith(f"error: lost the Dask scheduler at {cluster.scheduler_address} after ")
    assert err.count("\n") == 1 and "Traceback" not in err
