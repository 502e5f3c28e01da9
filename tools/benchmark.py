"""Speed benchmark: tracetriage against HTA on a large trace, each in a fresh process, side by side.

    python -m tools.benchmark                       # the full run (about 5 minutes on 2 cores, HTA's parse most of it)
    python -m tools.benchmark --no-hta --sizes 1 2  # quick look

1. Grows the real H200 prefill+decode trace (traces/gpt-eager.json.gz, 32 eager decode steps x 2) by
   repeating its events with shifted times and ids (tools.grow), at each size: x5 is 293 MB of JSON and
   942k events, gzipped.
2. Compiles the package's bytecode and keeps its dataclasses' methods (an installed package has both after its
   first run: tracetriage.dataclass_code), then measures, each in a fresh
   process: `tracetriage report --json` end to end, cold (no cache) at every size (the slope) and from
   the cache at the main size, and at the main size cold with the native scan off too (TRACETRIAGE_NO_NATIVE=1:
   msgspec decodes), its runs interleaved with the scan's; the floor (gunzip and a typed msgspec decode of the
   event fields without args: what a Python tool decoding with msgspec must at least spend; gunzip by isal, as the
   report's, and by the standard library's gzip, as a tool without isal's), and beside it the
   native scan's own time (gunzip, then the scan into the loader's columns) and the two overlapped as shipped (the
   scan reading each piece of the text as the gunzip appends it: tracetriage.analyzers.loading.streamed); HTA
   0.5.0's parse (TraceAnalysis construction); and where the report's time goes, stage by stage
   (tools.stage_times), and the report as shipped with its steps marked, the read-ahead thread's gunzip and the
   levers' forked child included (tools.timeline): what the overlaps save and what waits on what. The guard on
   the analyses' and the levers' cost: each one whose own CPU is more than tools.stage_times.OVER_SHARE (3%) of
   the whole report's is flagged below its stage table, at the main size and on the biggest bundled trace
   (traces/gpt-eager.json.gz itself); printed, not failed (a timed test fails by chance on a loaded machine).
3. Fits time and memory against size: the cost of 100 MB more JSON, and each size's time per MB.

Times: median of `--repeats` unsampled runs at the main size (one at the others); HTA runs once. Memory:
the peak of the summed proportional set size (PSS) of the process and its children (tracetriage forks a
decoder child, and PSS counts the pages they share once), sampled every 20 ms in a separate run of ours
(sampling a 3 s run that often costs it CPU) and every 200 ms in HTA's one run (a 40 s process whose
DataFrames plateau; that rate costs it well under 1%). Each result is printed when it is measured, so a
run cut short still shows what it got; every command has a time-out (--timeout).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tracetriage.analyzers.loading.atomic import write_text_atomic

ROOT = Path(__file__).resolve().parents[1]   # the repository (this file is tools/benchmark.py)
SOURCE = ROOT / "traces" / "gpt-eager.json.gz"
PACKAGE_DIRS = ("tracetriage", "analyzers", "tools")   # what a report imports (pyproject's package-dir)


def say(text: str) -> None:
    print(text, flush=True)


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


def measure(cmd: list[str], env: dict | None = None, *, sample_every: float | None = None,
            timeout: float = 600) -> dict:
    """Wall time of one command in a fresh process; with sample_every (s) also its peak tree PSS.

    The command writes to files, not pipes: a sampler that waits on the process while it fills a pipe
    nobody reads (a report's JSON is over the pipe's 64 KB at 300 MB) would wait forever. Sampling reads
    /proc/PID/smaps_rollup of every process of the tree, which costs the measured process CPU time on a
    2-core machine: times that matter come from runs that are not sampled (or sampled rarely, HTA's).
    """
    import psutil

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env={**os.environ, **(env or {})})
        peak = 0.0
        if sample_every:
            ps = psutil.Process(p.pid)
            while p.poll() is None and time.perf_counter() - t0 < timeout:
                peak = max(peak, _tree_pss_mb(ps))
                time.sleep(sample_every)
        try:
            p.wait(timeout=max(timeout - (time.perf_counter() - t0), 1))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise RuntimeError(f"{' '.join(cmd[:6])} ... ran past its {timeout:.0f} s time-out") from None
        wall = time.perf_counter() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {stderr[-400:]}")
    # CPU of the command and every process it waited for (the report's decoder child): one command runs at a
    # time, so the growth of this process's children's usage is that command's. On a machine other work loads,
    # CPU seconds stay what the work costs where wall seconds grow with the load
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "peak_pss_mb": round(peak, 1) if sample_every else None,
            "stdout": stdout}


def timed(cmd: list[str], env: dict | None, repeats: int, timeout: float) -> dict:
    """Median wall time of `repeats` unsampled runs, then the peak PSS of one run sampled every 20 ms."""
    return timed_side_by_side(cmd, {"": env}, repeats, timeout)[""]


def timed_side_by_side(cmd: list[str], envs: dict[str, dict | None], repeats: int, timeout: float) -> dict:
    """timed() of one command under each of several environments, their runs interleaved (A B A B ...): on a
    shared machine a load that comes and goes falls on each alike."""
    runs: dict[str, list[dict]] = {k: [] for k in envs}
    for _ in range(repeats):
        for k, env in envs.items():
            runs[k].append(measure(cmd, env, timeout=timeout))
    out = {}
    for k, env in envs.items():
        rs = sorted(runs[k], key=lambda r: r["wall_s"])
        mem = measure(cmd, env, sample_every=0.02, timeout=timeout)
        out[k] = {"wall_s": rs[len(rs) // 2]["wall_s"], "walls": [r["wall_s"] for r in rs],
                  "cpu_s": sorted(r["cpu_s"] for r in rs)[len(rs) // 2], "peak_pss_mb": mem["peak_pss_mb"]}
    return out


REPORT = [sys.executable, "-m", "tracetriage.cli", "report"]


def ours_cold(path: Path, repeats: int, timeout: float) -> dict:
    return timed(REPORT + [str(path), "--json", "--quiet"], {"TRACETRIAGE_NO_CACHE": "1"}, repeats, timeout)


def ours_cold_with_and_without_the_scan(path: Path, repeats: int, timeout: float) -> tuple[dict, dict]:
    """The cold report as installed (the native scan decodes) and with the scan off (msgspec decodes, half the
    file in a forked child), interleaved."""
    r = timed_side_by_side(REPORT + [str(path), "--json", "--quiet"],
                           {"scan": {"TRACETRIAGE_NO_CACHE": "1"},
                            "msgspec": {"TRACETRIAGE_NO_CACHE": "1", "TRACETRIAGE_NO_NATIVE": "1"}}, repeats, timeout)
    return r["scan"], r["msgspec"]


def ours_cached(path: Path, cache_dir: Path, repeats: int, timeout: float) -> dict:
    """The report from the cache (filled first, synchronously, from a fresh process), and a bare cached load()."""
    env = {"TRACETRIAGE_CACHE_DIR": str(cache_dir)}
    fill = [sys.executable, "-c",
            "import sys; from pathlib import Path; from tracetriage.analyzers.loading.load import load; "
            "from tracetriage.analyzers.loading import cache; "
            "cache.put(Path(sys.argv[1]), load(sys.argv[1], use_cache=False))", str(path)]
    measure(fill, env, timeout=timeout)
    warm = timed(REPORT + [str(path), "--json", "--quiet"], env, repeats, timeout)
    load_only = measure([sys.executable, "-c", "import sys, time; t = time.perf_counter(); "
                         "from tracetriage.analyzers.loading.load import load; load(sys.argv[1]); "
                         "print(round(time.perf_counter() - t, 3))", str(path)], env, timeout=timeout)
    return {**warm, "cached_load_in_process_s": float(load_only["stdout"].strip())}


FLOOR_CODE = """
import sys, time, gc
t0 = time.perf_counter()
import msgspec
if sys.argv[2] == "zlib":
    import gzip as gunzip
else:
    from isal import igzip as gunzip
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
data = gunzip.decompress(open(sys.argv[1], "rb").read())
t1 = time.perf_counter()
doc = msgspec.json.decode(data, type=F)
t2 = time.perf_counter()
print(round(t1 - t0, 3), round(t2 - t1, 3))
"""


def floor(path: Path, repeats: int, timeout: float, gunzip: str = "isal") -> dict:
    """The physical floor on this machine: gunzip plus a typed msgspec decode of the event fields without args, in a
    fresh process: what any Python tool must at least spend on reading the trace. gunzip: "isal", the one the report
    uses (python-isal's igzip), or "zlib", the standard library's gzip module (what a tool without isal pays)."""
    runs = [measure([sys.executable, "-c", FLOOR_CODE, str(path), gunzip], timeout=timeout) for _ in range(repeats)]
    mid = sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]
    gunzip_s, decode_s = map(float, mid["stdout"].split())
    return {"wall_s": mid["wall_s"], "walls": sorted(r["wall_s"] for r in runs),
            "cpu_s": sorted(r["cpu_s"] for r in runs)[len(runs) // 2], "gunzip_s": gunzip_s,
            "decode_s": decode_s}


SCAN_CODE = """
import sys, time, gc
t0 = time.perf_counter()
from pathlib import Path
from isal import igzip
from tracetriage.analyzers.loading import native
gc.disable()
data = bytearray(igzip.decompress(open(sys.argv[1], "rb").read()))
t1 = time.perf_counter()
parts = native.scan_parts(data, Path(sys.argv[1]))
t2 = time.perf_counter()
assert parts is not None, "the native scan is not built, or it does not handle this trace"
print(round(t1 - t0, 3), round(t2 - t1, 3))
"""


def scan(path: Path, repeats: int, timeout: float) -> dict:
    """The native scan's own time, measured as the floor is (a fresh process, gunzip then decode): the decode
    stage as shipped, its columns and tables the loader's, two threads on a file this size."""
    runs = [measure([sys.executable, "-c", SCAN_CODE, str(path)], timeout=timeout) for _ in range(repeats)]
    mid = sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]
    gunzip_s, decode_s = map(float, mid["stdout"].split())
    return {"wall_s": mid["wall_s"], "walls": sorted(r["wall_s"] for r in runs),
            "cpu_s": sorted(r["cpu_s"] for r in runs)[len(runs) // 2], "gunzip_s": gunzip_s, "decode_s": decode_s}


STREAMED_CODE = """
import sys, time, gc
from pathlib import Path
from tracetriage.analyzers.loading import native, read, streamed
gc.disable()
t0 = time.perf_counter()
data = read.read_bytes(Path(sys.argv[1]), scan=True)
t1 = time.perf_counter()
assert streamed.scanned(data), "the streamed scan did not read this trace"
parts = native.decode(data, Path(sys.argv[1]))     # (one part, or two where the read's thread scanned the tail)
t2 = time.perf_counter()
print(round(t1 - t0, 3), round(t2 - t1, 3))
"""


def scanned_as_read(path: Path, repeats: int, timeout: float) -> dict:
    """The read and the scan as shipped: the scan reads each piece of the text as the gunzip appends it
    (tracetriage.analyzers.loading.streamed), and the decode that follows takes its columns. `rest_s`: the decode
    after the read (the last piece's scan, the columns made Parts)."""
    runs = [measure([sys.executable, "-c", STREAMED_CODE, str(path)], timeout=timeout) for _ in range(repeats)]
    mid = sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]
    read_s, rest_s = map(float, mid["stdout"].split())
    return {"wall_s": mid["wall_s"], "walls": sorted(r["wall_s"] for r in runs),
            "cpu_s": sorted(r["cpu_s"] for r in runs)[len(runs) // 2], "read_s": read_s, "rest_s": rest_s}


def stages(path: Path, timeout: float) -> dict:
    r = measure([sys.executable, "-m", "tools.stage_times", str(path), "--json"], timeout=timeout)
    return json.loads(r["stdout"])


def timeline(path: Path, timeout: float) -> dict:
    r = measure([sys.executable, "-m", "tools.timeline", str(path), "--json"], timeout=timeout)
    return json.loads(r["stdout"])


def hta(path: Path, timeout: float) -> dict:
    """HTA's parse in one fresh process, its tree's PSS sampled every 200 ms."""
    cmd = [sys.executable, "-m", "tracetriage.analyzers.output.hta", str(path), "--parse-only"]
    r = measure(cmd, sample_every=0.2, timeout=timeout)
    inner = json.loads(r["stdout"])
    return {"wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "peak_pss_mb": r["peak_pss_mb"],
            **{f"hta_{k}": v for k, v in inner.items()}}


def _slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return b, my - b * mx


def _load_average() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _say_over_share(st: dict, where: str) -> None:
    """The guard: each analysis or lever over tools.stage_times.OVER_SHARE of the report's CPU, on `where`."""
    from tools.stage_times import OVER_SHARE, over_share

    flagged = over_share(st)
    say(f"  analyses and levers over {OVER_SHARE:.0%} of the report's CPU on {where}: "
        + ("none" if not flagged else ""))
    for line in flagged:
        say("    ! " + line)


def _stage_table(st: dict) -> list[str]:
    lines = ["| stage | wall s | CPU s (this process) |", "|---|---:|---:|"]
    for k, (w, c) in st.items():
        lines.append(f"| {k} | {w:.3f} | {c:.3f} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.benchmark")
    ap.add_argument("--copies", type=int, default=5, help="size of the main trace, in copies of the source")
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 2, 3], help="extra sizes (copies) for the slope")
    ap.add_argument("--repeats", type=int, default=3, help="unsampled runs at the main size (the median is kept)")
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--timeout", type=float, default=600, help="seconds any one command may run")
    ap.add_argument("--workdir")
    ap.add_argument("--out", help="write the results as JSON here")
    a = ap.parse_args(argv)

    t_start = time.perf_counter()
    work = Path(a.workdir or tempfile.mkdtemp(prefix="tt-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _run(a, work, t_start)
    finally:
        if not a.workdir:     # (the grown traces and the cache entry: ~100 MB left in the temp dir otherwise)
            shutil.rmtree(work, ignore_errors=True)


def _run(a: argparse.Namespace, work: Path, t_start: float) -> int:
    from tools.grow import read_source, write_grown

    results: dict = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                                 "load_average_at_start": _load_average()}, "sizes": []}
    say(f"machine: {os.cpu_count()} CPUs, Python {results['machine']['python']}, load average "
        f"{results['machine']['load_average_at_start']} (1, 5, 15 min)")
    # An installed package has its bytecode; a working tree under PYTHONDONTWRITEBYTECODE (set on this
    # project's machines) has none, and every run would compile ~200 modules from source (0.3 s)
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(ROOT / d) for d in PACKAGE_DIRS)],
                   check=True, stdout=subprocess.DEVNULL)
    # and the dataclasses' methods as the command line keeps them (tracetriage.dataclass_code): a report's first run
    # where Python writes bytecode writes them, as it writes a module's
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "tracetriage.cli", "report", str(SOURCE), "--json", "--quiet"],
                   check=True, stdout=subprocess.DEVNULL, env={**env, "TRACETRIAGE_NO_CACHE": "1"})
    results["bundled_stages"] = stages(SOURCE, a.timeout)
    _say_over_share(results["bundled_stages"], f"the biggest bundled trace ({SOURCE.relative_to(ROOT)})")
    doc = read_source(SOURCE)
    sizes = sorted(set(a.sizes) - {a.copies}) + [a.copies]    # the main size last: its HTA run is the longest
    for copies in sizes:
        main_size = copies == a.copies
        path = work / f"gpt-eager-x{copies}.json.gz"
        info = write_grown(doc, SOURCE, path, copies)
        say(f"\ntrace x{copies}: {info['events']:,} events, {info['json_mb']} MB of JSON, {info['file_mb']} MB gz")
        if main_size:
            ours, off = ours_cold_with_and_without_the_scan(path, a.repeats, a.timeout)
            row = {**info, "ours": ours, "ours_without_the_scan": off}
        else:
            row = {**info, "ours": ours_cold(path, 1, a.timeout)}
        o = row["ours"]
        say(f"  tracetriage report --json, cold: {o['wall_s']:.2f} s (runs {o['walls']}), CPU {o['cpu_s']:.2f} s, "
            f"peak {o['peak_pss_mb']:.0f} MB PSS")
        if main_size:
            n = row["ours_without_the_scan"]
            say(f"  ... with the native scan off (TRACETRIAGE_NO_NATIVE=1, runs interleaved with the above): "
                f"{n['wall_s']:.2f} s (runs {n['walls']}), CPU {n['cpu_s']:.2f} s, peak {n['peak_pss_mb']:.0f} MB PSS")
            row["cached"] = ours_cached(path, work / f"cache-{copies}", a.repeats, a.timeout)
            c = row["cached"]
            say(f"  ... from the cache: {c['wall_s']:.2f} s, CPU {c['cpu_s']:.2f} s, "
                f"peak {c['peak_pss_mb']:.0f} MB PSS; a cached load() "
                f"in-process {c['cached_load_in_process_s']:.3f} s")
            row["floor"] = floor(path, a.repeats, a.timeout)
            f = row["floor"]
            say(f"  floor (isal gunzip + typed msgspec decode without args): {f['wall_s']:.2f} s, "
                f"CPU {f['cpu_s']:.2f} s (gunzip "
                f"{f['gunzip_s']:.2f} s, decode {f['decode_s']:.2f} s)")
            row["floor_zlib"] = floor(path, a.repeats, a.timeout, gunzip="zlib")
            fz = row["floor_zlib"]
            say(f"  ... the same with the standard library's gzip (zlib) for the gunzip: {fz['wall_s']:.2f} s, "
                f"CPU {fz['cpu_s']:.2f} s (gunzip {fz['gunzip_s']:.2f} s, decode {fz['decode_s']:.2f} s)")
            row["scan"] = scan(path, a.repeats, a.timeout)
            sc = row["scan"]
            say(f"  beside it, the native scan (isal gunzip + the scan into the loader's columns): "
                f"{sc['wall_s']:.2f} s, CPU {sc['cpu_s']:.2f} s (gunzip {sc['gunzip_s']:.2f} s, "
                f"scan {sc['decode_s']:.2f} s)")
            row["scanned_as_read"] = scanned_as_read(path, a.repeats, a.timeout)
            sr = row["scanned_as_read"]
            say(f"  ... scanned as the text arrives (as shipped): {sr['wall_s']:.2f} s, CPU {sr['cpu_s']:.2f} s "
                f"(the read and the scan beside it {sr['read_s']:.2f} s, the rest of the decode {sr['rest_s']:.2f} s)")
            row["stages"] = stages(path, a.timeout)
            say("  where the report's time goes (one run, in-process, `python -m tools.stage_times`):")
            for line in _stage_table(row["stages"]):
                say("    " + line)
            _say_over_share(row["stages"], f"x{copies}")
            # the stages run one after another; the report overlaps the gunzip with the imports and the levers'
            # child with the other analyses: the same report as shipped, its steps marked (one run)
            row["timeline"] = timeline(path, a.timeout)
            say("  the report as shipped, step by step (one run, `python -m tools.timeline`):")
            from tools.timeline import lines
            for line in lines(row["timeline"]):
                say("    " + line)
            if not a.no_hta:
                row["hta"] = hta(path, a.timeout)
                h = row["hta"]
                say(f"  HTA 0.5.0, parse only: {h['wall_s']:.2f} s, CPU {h['cpu_s']:.2f} s (TraceAnalysis itself "
                    f"{h['hta_parse_seconds']:.2f} s), peak {h['peak_pss_mb']:.0f} MB PSS")
        results["sizes"].append(row)
        path.unlink()
    main_row = results["sizes"][-1]
    xs = [r["json_mb"] for r in results["sizes"]]
    t_slope, t0 = _slope(xs, [r["ours"]["wall_s"] for r in results["sizes"]])
    c_slope, c0 = _slope(xs, [r["ours"]["cpu_s"] for r in results["sizes"]])
    m_slope, m0 = _slope(xs, [r["ours"]["peak_pss_mb"] for r in results["sizes"]])
    results["slope"] = {"s_per_100mb": round(100 * t_slope, 3), "s_intercept": round(t0, 3),
                        "cpu_s_per_100mb": round(100 * c_slope, 3), "cpu_s_intercept": round(c0, 3),
                        "mb_per_100mb": round(100 * m_slope, 1), "mb_intercept": round(m0, 1),
                        "s_per_100mb_at_each_size": [round(100 * r["ours"]["wall_s"] / r["json_mb"], 3)
                                                     for r in results["sizes"]]}
    o, f = main_row["ours"], main_row["floor"]
    results["floor_ratio"] = round(o["wall_s"] / f["wall_s"], 2)
    results["floor_zlib_ratio"] = round(o["wall_s"] / main_row["floor_zlib"]["wall_s"], 2)
    n, sc = main_row["ours_without_the_scan"], main_row["scan"]
    results["floor_ratio_without_the_scan"] = round(n["wall_s"] / f["wall_s"], 2)
    results["over_the_scan_ratio"] = round(o["wall_s"] / sc["wall_s"], 2)
    lines = ["| trace | events | JSON MB | tool | wall s | CPU s | peak MB (PSS) |",
             "|---|---:|---:|---|---:|---:|---:|"]
    for r in results["sizes"]:
        lines.append(f"| x{r['copies']} | {r['events']:,} | {r['json_mb']} | tracetriage report, cold | "
                     f"{r['ours']['wall_s']:.2f} | {r['ours']['cpu_s']:.2f} | {r['ours']['peak_pss_mb']:.0f} |")
    x = f"x{main_row['copies']}"
    lines.append(f"| {x} | | | tracetriage report, cold, native scan off | {n['wall_s']:.2f} | {n['cpu_s']:.2f} | "
                 f"{n['peak_pss_mb']:.0f} |")
    c = main_row["cached"]
    lines.append(f"| {x} | | | tracetriage report, from the cache | {c['wall_s']:.2f} | {c['cpu_s']:.2f} | "
                 f"{c['peak_pss_mb']:.0f} |")
    lines.append(f"| {x} | | | floor: gunzip (isal) + typed decode, no args | {f['wall_s']:.2f} | {f['cpu_s']:.2f} | |")
    fz = main_row["floor_zlib"]
    lines.append(f"| {x} | | | floor, the standard library's gunzip | {fz['wall_s']:.2f} | {fz['cpu_s']:.2f} | |")
    lines.append(f"| {x} | | | gunzip + the native scan | {sc['wall_s']:.2f} | {sc['cpu_s']:.2f} | |")
    if "hta" in main_row:
        h = main_row["hta"]
        lines.append(f"| {x} | | | HTA 0.5.0, parse only | {h['wall_s']:.2f} | {h['cpu_s']:.2f} | "
                     f"{h['peak_pss_mb']:.0f} |")
        results["ratios"] = {"hta_time_over_ours": round(h["wall_s"] / o["wall_s"], 1),
                             "hta_cpu_over_ours": round(h["cpu_s"] / o["cpu_s"], 1),
                             "our_memory_over_hta": round(o["peak_pss_mb"] / h["peak_pss_mb"], 2),
                             "hta_time_over_ours_without_the_scan": round(h["wall_s"] / n["wall_s"], 1)}
    say("\n" + "\n".join(lines))
    if "ratios" in results:
        r = results["ratios"]
        say(f"\ntracetriage cold vs HTA's parse: {r['hta_time_over_ours']}x faster (in CPU seconds "
            f"{r['hta_cpu_over_ours']}x), at {r['our_memory_over_hta']}x its memory; with the native scan off "
            f"{r['hta_time_over_ours_without_the_scan']}x")
    say(f"tracetriage cold / floor: {results['floor_ratio']}x (/ the floor with the standard library's gunzip: "
        f"{results['floor_zlib_ratio']}x; with the native scan off "
        f"{results['floor_ratio_without_the_scan']}x); / gunzip + the native scan: {results['over_the_scan_ratio']}x")
    s = results["slope"]
    say(f"slope: {s['s_per_100mb']} s ({s['cpu_s_per_100mb']} s of CPU)"
        f" and {s['mb_per_100mb']} MB per 100 MB of JSON (intercepts {s['s_intercept']} s, "
        f"{s['mb_intercept']} MB); s per 100 MB at each size: {s['s_per_100mb_at_each_size']}")
    results["machine"]["load_average_at_end"] = _load_average()
    results["benchmark_s"] = round(time.perf_counter() - t_start, 1)
    say(f"load average at the end {results['machine']['load_average_at_end']}; the benchmark took "
        f"{results['benchmark_s']:.0f} s")
    if a.out:
        write_text_atomic(a.out, json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
