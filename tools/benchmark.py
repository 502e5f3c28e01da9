"""Speed benchmark: tracetriage against HTA on a large trace, each in a fresh process.

    python -m tools.benchmark                       # the full run (~2-3 minutes on 2 cores)
    python -m tools.benchmark --no-hta --sizes 1 2  # quick look

1. Makes a large trace from the real H200 prefill+decode trace (traces/gpt-eager.json.gz,
   32 eager decode steps x 2) by repeating its events with shifted times and ids
   (tools.grow): >= 250 MB of JSON and >= 600k events, gzipped as torch writes it.
2. Measures, each in a fresh process: HTA 0.5.0's parse (TraceAnalysis construction) and
   `tracetriage report --json` end to end, cold (no cache) and warm (cache hit), plus a
   bare cached `load()`.
3. Repeats ours at smaller sizes and fits time and memory against size (the slope).

Time is the median of three runs (HTA: one), with nothing else sampling the machine.
Memory is the peak of the summed proportional set size (PSS) of the process and its
children, sampled every 20 ms in a separate run: tracetriage forks a decoder child and a
cache writer, and PSS counts the pages they share once.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tracetriage.analyzers.loading.atomic import write_text_atomic

ROOT = Path(__file__).resolve().parents[1]   # the repo (this file is tools/benchmark.py)
SOURCE = ROOT / "traces" / "gpt-eager.json.gz"


def _tree_pss_mb(proc) -> float:
    import psutil

    total = 0
    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0.0
    for p in procs:
        try:
            total += p.memory_full_info().pss
        except psutil.Error:
            pass
    return total / 2**20


def measure(cmd: list[str], env: dict | None = None, *, sample: bool = False) -> dict:
    """Wall time of one command in a fresh process; with sample=True also its peak tree PSS.

    Sampling reads /proc/PID/smaps_rollup every 20 ms, which costs the measured process CPU time
    on a 2-core machine, so times are taken from runs that are not sampled.
    """
    import psutil

    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    peak = 0.0
    if sample:
        ps = psutil.Process(p.pid)
        while p.poll() is None:
            peak = max(peak, _tree_pss_mb(ps))
            time.sleep(0.02)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err.decode()[-400:]}")
    return {"wall_s": round(wall, 3), "peak_pss_mb": round(peak, 1) if sample else None,
            "stdout": out.decode()[-2000:]}


def timed(cmd: list[str], env: dict | None = None, repeats: int = 3) -> dict:
    """Median wall time of `repeats` unsampled runs, then the peak PSS of one sampled run."""
    walls = sorted(measure(cmd, env)["wall_s"] for _ in range(repeats))
    mem = measure(cmd, env, sample=True)
    return {"wall_s": walls[len(walls) // 2], "walls": walls, "peak_pss_mb": mem["peak_pss_mb"],
            "stdout": mem["stdout"]}


def make_trace(workdir: Path, copies: int) -> tuple[Path, dict]:
    from tools.grow import grow_file

    dst = workdir / f"gpt-eager-x{copies}.json.gz"
    info = grow_file(SOURCE, dst, copies=copies)
    return dst, info


def ours(path: Path, cache_dir: Path) -> dict:
    cmd = [sys.executable, "-m", "tracetriage.cli", "report", str(path), "--json", "--quiet"]
    cold = timed(cmd, {"TRACETRIAGE_NO_CACHE": "1"})
    # warm: fill the cache (synchronously, from a fresh process), then time cache hits
    fill = [sys.executable, "-c", "import sys; from pathlib import Path; from tracetriage.analyzers.loading.load import load; "
            "from tracetriage.analyzers.loading import cache; cache.put(Path(sys.argv[1]), load(sys.argv[1], use_cache=False))", str(path)]
    subprocess.run(fill, check=True, env={**os.environ, "TRACETRIAGE_CACHE_DIR": str(cache_dir)})
    warm = timed(cmd, {"TRACETRIAGE_CACHE_DIR": str(cache_dir)})
    load_only = measure([sys.executable, "-c", "import sys, time; t = time.perf_counter(); "
                         "from tracetriage.analyzers.loading.load import load; load(sys.argv[1]); "
                         "print(round(time.perf_counter() - t, 3))", str(path)],
                        {"TRACETRIAGE_CACHE_DIR": str(cache_dir)})
    return {"cold": cold, "warm": warm, "cached_load_in_process_s": float(load_only["stdout"].strip()),
            "cached_load_process_s": load_only["wall_s"]}


FLOOR_CODE = """
import sys, time, gc
t0 = time.perf_counter()
import msgspec
from isal import igzip
class E(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = 0.0
    dur: float = 0.0
class F(msgspec.Struct, gc=False):
    traceEvents: list[E] = []
gc.disable()
data = igzip.decompress(open(sys.argv[1], "rb").read())
t1 = time.perf_counter()
doc = msgspec.json.decode(data, type=F)
t2 = time.perf_counter()
print(round(t1 - t0, 3), round(t2 - t1, 3))
"""


def floor(path: Path) -> dict:
    """The issue's floor on this machine: gunzip (isal) plus a typed msgspec decode of the event
    fields without args, in a fresh process: what any Python tool must at least spend."""
    walls = sorted(measure([sys.executable, "-c", FLOOR_CODE, str(path)])["wall_s"] for _ in range(3))
    r = measure([sys.executable, "-c", FLOOR_CODE, str(path)])
    gunzip_s, decode_s = map(float, r["stdout"].split())
    return {"wall_s": walls[1], "gunzip_s": gunzip_s, "decode_s": decode_s}


def hta(path: Path) -> dict:
    cmd = [sys.executable, "-m", "tracetriage.analyzers.output.hta", str(path), "--parse-only"]
    r = timed(cmd, repeats=1)
    inner = json.loads(r["stdout"])
    return {**r, **{f"hta_{k}": v for k, v in inner.items()}}


def _slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return b, my - b * mx


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.benchmark")
    ap.add_argument("--copies", type=int, default=5, help="size of the main trace, in copies of the source")
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 2, 3], help="extra sizes (copies) for the slope")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--workdir")
    ap.add_argument("--out", help="write the results as JSON here")
    a = ap.parse_args(argv)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="tt-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}, "sizes": []}
    for copies in sorted(set(a.sizes + [a.copies])):
        path, info = make_trace(work, copies)
        print(f"trace x{copies}: {info['events']:,} events, {info['json_mb']} MB JSON, {info['file_mb']} MB gz",
              file=sys.stderr, flush=True)
        row = {"copies": copies, **info, "ours": ours(path, work / f"cache-{copies}")}
        if copies == a.copies:
            row["floor"] = floor(path)
        if copies == a.copies and not a.no_hta:
            row["hta"] = hta(path)
        results["sizes"].append(row)
        path.unlink()
    main_row = next(r for r in results["sizes"] if r["copies"] == a.copies)
    xs = [r["json_mb"] for r in results["sizes"]]
    t_slope, t0 = _slope(xs, [r["ours"]["cold"]["wall_s"] for r in results["sizes"]])
    m_slope, m0 = _slope(xs, [r["ours"]["cold"]["peak_pss_mb"] for r in results["sizes"]])
    results["slope"] = {"s_per_100mb": round(100 * t_slope, 3), "s_intercept": round(t0, 3),
                        "mb_per_100mb": round(100 * m_slope, 1), "mb_intercept": round(m0, 1)}
    lines = ["| trace | events | JSON MB | tool | wall s | peak MB (PSS) | ratio |", "|---|---:|---:|---|---:|---:|---:|"]
    for r in results["sizes"]:
        o = r["ours"]
        lines.append(f"| x{r['copies']} | {r['events']:,} | {r['json_mb']} | tracetriage report, cold | "
                     f"{o['cold']['wall_s']:.2f} | {o['cold']['peak_pss_mb']:.0f} | |")
        lines.append(f"| x{r['copies']} | | | tracetriage report, cached | {o['warm']['wall_s']:.2f} | "
                     f"{o['warm']['peak_pss_mb']:.0f} | |")
        if "floor" in r:
            f = r["floor"]
            lines.append(f"| x{r['copies']} | | | floor: gunzip + typed decode, no args | {f['wall_s']:.2f} | | |")
            results["floor_ratio"] = round(o["cold"]["wall_s"] / f["wall_s"], 2)
        if "hta" in r:
            h = r["hta"]
            lines.append(f"| x{r['copies']} | | | HTA 0.5.0 parse only | {h['wall_s']:.2f} | {h['peak_pss_mb']:.0f} | |")
            tr = h["wall_s"] / o["cold"]["wall_s"]
            mr = o["cold"]["peak_pss_mb"] / h["peak_pss_mb"]
            results["ratios"] = {"hta_time_over_ours": round(tr, 1), "our_memory_over_hta": round(mr, 2),
                                 "cached_load_s": o["cached_load_in_process_s"]}
            lines.append(f"| x{r['copies']} | | | **ratio** | **{tr:.1f}x faster** | **{mr:.2f}x the memory** | |")
    print("\n".join(lines))
    print(f"\nslope: {results['slope']['s_per_100mb']} s and {results['slope']['mb_per_100mb']} MB per 100 MB of JSON "
          f"(intercepts {results['slope']['s_intercept']} s, {results['slope']['mb_intercept']} MB)")
    print(f"cached load() of the x{a.copies} trace: {main_row['ours']['cached_load_in_process_s']:.3f} s in-process")
    if "floor_ratio" in results:
        print(f"tracetriage cold / floor: {results['floor_ratio']}x")
    if a.out:
        for r in results["sizes"]:
            for k in ("cold", "warm"):
                r["ours"][k].pop("stdout", None)
            r.get("hta", {}).pop("stdout", None)
        write_text_atomic(a.out, json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
