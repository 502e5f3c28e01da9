"""Rank benchmark: `report DIR` on a Dask LocalCluster of 2 workers against the local pool, 8 to 128 ranks.

    python -m tools.rank_benchmark                        # ~4 minutes on 2 cores
    python -m tools.rank_benchmark --ranks 8 --no-big     # quick look

1. Writes N-rank runs (tools.grow_ranks: copies of traces/ddp's ranks, each grown
   `--copies` times and given its own distributedInfo; gzipped as torch writes them).
2. Starts a LocalCluster here (2 worker processes, one thread each, loopback), then times, each
   in a fresh process, `tracetriage report DIR --json --quiet --scheduler ADDRESS` (the client)
   and `tracetriage report DIR --json --quiet` (the local pool, 2 processes on this machine).
   Cold: TRACETRIAGE_NO_CACHE=1 for the clients and the workers.
3. Records the client's peak RSS (VmHWM of that process alone; for the pool, its parent process) and
   CPU time, the workers' peak RSS and CPU time (CPU time does not grow when the machine is shared, wall
   time does), and how big one rank's result is against its file: what crosses the wire.
4. With --big (the default), 8 ranks of 293 MB of JSON each (traces/gpt-eager.json.gz grown 5
   times, hard-linked as rank0..7) for the per-rank time at the size of a real training rank.

Times are single runs; medians of --repeats runs when asked. Nothing here is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]   # the repo (this file is tools/rank_benchmark.py)


def _hwm_mb(pid: int | str = "self") -> float | None:
    """VmHWM: the peak resident set of the process's current image (reset at exec, unlike ru_maxrss, which a
    child inherits from the process that forked it)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def timed(cmd: list[str]) -> dict:
    """Wall time, stdout, peak RSS (MB) and CPU seconds of one fresh process (CPU: its own and its reaped
    children's, from wait4; RSS: its VmHWM, read every 10 ms until it exits)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT)
        peak = 0.0
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _hwm_mb(p.pid) or 0.0)
            time.sleep(0.01)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read().decode()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {stderr[-400:]}")
    return {"wall_s": round(wall, 3), "peak_rss_mb": round(peak, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "stdout": stdout}


def median_of(cmd: list[str], repeats: int) -> dict:
    runs = [timed(cmd) for _ in range(repeats)]
    runs.sort(key=lambda r: r["wall_s"])
    best = runs[len(runs) // 2]
    return {**best, "walls": [r["wall_s"] for r in runs]}


def _workers_peak_mb(client) -> list[float]:
    return sorted(round(v, 1) for v in client.run(_hwm_mb).values())


def _cpu_s() -> float:
    """This process's CPU seconds, with its reaped children's (the decoder child of a big trace)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _workers_cpu_s(client) -> float:
    return sum(client.run(_cpu_s).values())


def _one_rank_on_the_wire(path: Path) -> dict:
    """How big one rank's result is, pickled as Dask sends it, against its file and its JSON."""
    from tracetriage.analyzers.loading.read import read_bytes
    from tracetriage.analyzers.runs.pool import analyze_source
    from tracetriage.analyzers.runs.sources import RankSource

    r = analyze_source(RankSource(str(path), str(path)))
    return {"result_kb": round(len(pickle.dumps(r, protocol=5)) / 1024, 1),
            "file_mb": round(path.stat().st_size / 1e6, 2), "json_mb": round(len(read_bytes(path)) / 1e6, 1)}


def _big_run(work: Path, n: int) -> Path:
    """n hard links to one 293 MB (JSON) trace, named as ranks: the analysis does not care that they are alike."""
    from tools.grow import grow_file

    src = work / "big.json.gz"
    grow_file(ROOT / "traces" / "gpt-eager.json.gz", src, copies=5)
    d = work / f"big-{n}"
    d.mkdir()
    for r in range(n):
        os.link(src, d / f"rank{r}.json.gz")
    return d


def bench_run(run: Path, n: int, address: str, client, repeats: int) -> dict:
    base = [sys.executable, "-m", "tracetriage.cli", "report", str(run), "--json", "--quiet"]
    before = _workers_cpu_s(client)
    dask = median_of(base + ["--scheduler", address], repeats)
    workers_cpu = (_workers_cpu_s(client) - before) / repeats
    workers_mb = _workers_peak_mb(client)
    pool = median_of(base, repeats)
    same = dask["stdout"] == pool["stdout"]
    verdict = json.loads(dask["stdout"])
    return {"ranks": n, "files_mb": round(sum(p.stat().st_size for p in run.iterdir()) / 1e6, 1),
            "dask_wall_s": dask["wall_s"], "dask_walls": dask["walls"], "dask_per_rank_s": round(dask["wall_s"] / n, 4),
            "client_peak_mb": dask["peak_rss_mb"], "workers_peak_mb": workers_mb, "client_cpu_s": dask["cpu_s"],
            "workers_cpu_per_rank_s": round(workers_cpu / n, 4), "pool_cpu_per_rank_s": round(pool["cpu_s"] / n, 4),
            "pool_wall_s": pool["wall_s"], "pool_per_rank_s": round(pool["wall_s"] / n, 4),
            "pool_peak_mb": pool["peak_rss_mb"], "same_json": same,
            "straggler": (verdict.get("straggler") or {}).get("rank"), "errors": len(verdict["errors"]),
            "load_avg_1min": round(os.getloadavg()[0], 2)}   # the machine may be shared: say how busy it was


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.rank_benchmark")
    ap.add_argument("--ranks", type=int, nargs="*", default=[8, 32, 128])
    ap.add_argument("--copies", type=int, default=100, help="grow each ddp rank this many times (100: 13 MB JSON)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-big", action="store_true", help="skip the 8 ranks of 293 MB each")
    ap.add_argument("--workdir")
    ap.add_argument("--out", help="write the results as JSON here")
    a = ap.parse_args(argv)
    os.environ["TRACETRIAGE_NO_CACHE"] = "1"     # cold everywhere: the workers inherit it, so do the clients
    import distributed

    from tools.grow_ranks import write_ranks

    work = Path(a.workdir or tempfile.mkdtemp(prefix="tt-rank-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                                 "load_avg": os.getloadavg()[0]}, "workers": a.workers, "runs": []}
    runs = []
    for n in a.ranks:
        d = work / f"ranks-{n}"
        write_ranks(d, n, straggler=n // 2 + 1, copies=a.copies)
        runs.append((d, n))
    if not a.no_big:
        runs.append((_big_run(work, 8), 8))
    # the smallest ranks and the largest: what one result weighs against its file
    results["wire"] = [_one_rank_on_the_wire(d / "rank0.json.gz") for d in dict.fromkeys([runs[0][0], runs[-1][0]])]
    with distributed.LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", silence_logs=40) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        for d, n in runs:
            client.restart()   # fresh worker processes: each run's worker peak is its own
            client.wait_for_workers(a.workers, timeout=600)   # a shared machine can take its time to restart them
            row = bench_run(d, n, cluster.scheduler_address, client, a.repeats)
            row["run"] = d.name
            print(json.dumps(row), file=sys.stderr, flush=True)
            results["runs"].append(row)
    lines = ["| run | ranks | files MB | Dask: wall s | wall per rank s | workers' CPU per rank s | client CPU s | "
             "client peak MB | workers' peak MB | pool: wall s | pool CPU per rank s | same --json | load |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in results["runs"]:
        lines.append(f"| {r['run']} | {r['ranks']} | {r['files_mb']} | {r['dask_wall_s']:.2f} | {r['dask_per_rank_s']:.3f} | "
                     f"{r['workers_cpu_per_rank_s']:.3f} | {r['client_cpu_s']:.2f} | {r['client_peak_mb']:.0f} | "
                     f"{', '.join(f'{m:.0f}' for m in r['workers_peak_mb'])} | {r['pool_wall_s']:.2f} | "
                     f"{r['pool_cpu_per_rank_s']:.3f} | {'yes' if r['same_json'] else 'NO'} | {r['load_avg_1min']} |")
    for w in results["wire"]:
        lines.append(f"\nOne rank's result on the wire: {w['result_kb']} KB pickled, for a {w['file_mb']} MB file "
                     f"({w['json_mb']} MB of JSON).")
    results["table"] = "\n".join(lines)
    print(results["table"])
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
