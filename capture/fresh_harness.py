"""The harness that capture/fresh3.py and capture/fresh4.py share: each script keeps only its workloads.

A script makes one Suite (its name, and the global time budget its GPU run is sized for), registers its
before/after pairs with @suite.workload(...), and ends with suite.main(). For every variant the harness warms
up, times RUNS unprofiled runs of N steady-state steps (synchronize + perf_counter), profiles one run with
torch.profiler (CPU+CUDA, record_shapes, schedule wait=1 warmup=2 active=A), writes NAME-before.json.gz /
NAME-after.json.gz, and keeps truth.json (medians, spreads, speedups) up to date after every workload.

The scripts run standalone on the device (nothing pip-installed there), so they import this module by its bare
name: Python puts the running script's folder, capture/, first on sys.path.

Knobs (environment): DEVICE (default cuda), SMALL=1 (the CPU plumbing dry run's sizes); per suite NAME_BUDGET_S
(the global budget, seconds) and NAME_CAP_SCALE (a rerun of one slow workload with --only may raise its cap),
NAME upper-cased (FRESH3_BUDGET_S, FRESH4_CAP_SCALE).
"""

import argparse
import gc
import gzip
import json
import os
import platform
import shutil
import statistics
import sys
import time
import traceback

import torch

DEVICE = torch.device(os.environ.get("DEVICE", "cuda"))
SMALL = os.environ.get("SMALL", "0") == "1"
IS_CUDA = DEVICE.type == "cuda"
RUNS = 2 if SMALL else 5
T_START = time.perf_counter()
TRACE_WARN_BYTES = 4 * 1024 * 1024
OUT_MAX_BYTES = 14 * 1024 * 1024
LOW_PRECISION = torch.bfloat16 if IS_CUDA else torch.float32
if SMALL and not IS_CUDA:
    torch.set_num_threads(1)  # a shared, small CPU box: oversubscribed intra-op threads crawl


def compile_model(model, **kw):
    """torch.compile as written; the CPU dry run swaps Inductor (C++ builds: minutes) for aot_eager."""
    if SMALL and not IS_CUDA:
        kw.pop("mode", None)
        kw["backend"] = "aot_eager"
    return torch.compile(model, **kw)


def sync():
    if IS_CUDA:
        torch.cuda.synchronize()


def now():
    return time.perf_counter()


class Skipped(Exception):
    pass


class Clock:
    def __init__(self, seconds):
        self.seconds = seconds
        self.end = now() + seconds

    def check(self, what):
        if now() > self.end:
            raise Skipped(f"time cap {self.seconds:.0f}s passed during {what}")


class Runner:
    """step() is one steady-state step; prepare() resets per-run state outside the timing."""

    def __init__(self, step, prepare=None, extra=None, close=None):
        self.step = step
        self.prepare = prepare or (lambda: None)
        self.extra = extra or (lambda: {})
        self.close = close or (lambda: None)


def amp():
    return torch.autocast(DEVICE.type, dtype=torch.bfloat16)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def profile_run(runner, active, trace_gz, clock):
    acts = [torch.profiler.ProfilerActivity.CPU]
    if IS_CUDA:
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    raw = trace_gz[: -len(".gz")]
    exported = []

    def on_ready(prof):
        prof.export_chrome_trace(raw)
        exported.append(raw)

    runner.prepare()
    sync()
    total = 3 + active
    t_a = t_b = None
    with torch.profiler.profile(activities=acts, record_shapes=True, on_trace_ready=on_ready,
                                schedule=torch.profiler.schedule(wait=1, warmup=2, active=active, repeat=1)) as prof:
        for i in range(total):
            if i == 3:
                sync()
                t_a = now()
            runner.step()
            if i == total - 1:
                sync()
                t_b = now()
            prof.step()
            clock.check("profiled run")
    if not exported:
        raise RuntimeError("profiler produced no trace")
    with open(raw) as f:
        events = json.load(f).get("traceEvents", [])
    counts = {"events": len(events), "kernels": 0, "cudaGraphLaunch": 0, "sync_calls": 0, "memcpy": 0}
    for e in events:
        name, cat = str(e.get("name", "")), str(e.get("cat", ""))
        counts["kernels"] += cat == "kernel"
        counts["cudaGraphLaunch"] += name == "cudaGraphLaunch"
        counts["sync_calls"] += cat == "cuda_runtime" and "Synchronize" in name
        counts["memcpy"] += cat == "gpu_memcpy"
    with open(raw, "rb") as fi, gzip.open(trace_gz, "wb", compresslevel=9) as fo:
        shutil.copyfileobj(fi, fo)
    os.remove(raw)
    return (t_b - t_a) / active * 1e3, counts


def missing_modules(names):
    miss = []
    for m in names:
        try:
            __import__(m)
        except Exception as e:  # an installed-but-broken package counts as missing too
            miss.append(f"{m} ({type(e).__name__}: {str(e)[:120]})")
    return miss


def enforce_size(outdir, truth):
    """Keep the output under OUT_MAX_BYTES: drop the largest traces first and say so in truth."""
    files = [(os.path.getsize(os.path.join(outdir, f)), f) for f in os.listdir(outdir) if f.endswith(".json.gz")]
    total = sum(s for s, _ in files)
    for w in truth["workloads"]:
        for v in ("before", "after"):
            if isinstance(w.get(v), dict) and w[v].get("trace_bytes", 0) > TRACE_WARN_BYTES:
                w[v]["trace_over_4MiB"] = True
    for size, f in sorted(files, reverse=True):
        if total <= OUT_MAX_BYTES:
            break
        os.remove(os.path.join(outdir, f))
        total -= size
        for w in truth["workloads"]:
            for v in ("before", "after"):
                if isinstance(w.get(v), dict) and w[v].get("trace") == f:
                    w[v]["trace_dropped"] = f"{size} bytes: over the size limit"
                    w[v]["trace"] = None


class Suite:
    """One script's workloads and its budget; main() measures and profiles them and writes truth.json."""

    def __init__(self, name, budget_s):
        self.name = name
        knob = name.upper()
        self.budget_s = float(os.environ.get(f"{knob}_BUDGET_S", 900 if SMALL else budget_s))
        self.cap_scale = float(os.environ.get(f"{knob}_CAP_SCALE", "1"))  # a rerun of one slow workload (--only)
        self.workloads = []

    def workload(self, name, **meta):
        def deco(fn):
            self.workloads.append(dict(name=name, build=fn, **meta))
            return fn

        return deco

    def measure(self, meta, variant, outdir):
        left = self.budget_s - (now() - T_START)
        clock = Clock(max(5.0, min(150 if SMALL else meta["cap_s"] * self.cap_scale, left)))
        torch.manual_seed(0)
        t_build = now()
        runner = meta["build"](variant)
        res = {"build_s": round(now() - t_build, 2)}
        try:
            t0 = now()
            runner.prepare()
            for _ in range(min(meta["warmup"], 2) if SMALL else meta["warmup"]):
                runner.step()
            sync()
            res["warmup_s"] = round(now() - t0, 2)
            clock.check("warm-up")
            n = min(meta["steps"], 3) if SMALL else meta["steps"]
            runs = []
            for _ in range(RUNS):
                runner.prepare()
                sync()
                t0 = now()
                for _ in range(n):
                    runner.step()
                sync()
                runs.append((now() - t0) / n * 1e3)
                clock.check(f"timed run {len(runs)}")
            med = statistics.median(runs)
            res.update(steps_per_run=n, runs_ms=[round(r, 4) for r in runs], median_ms=round(med, 4),
                       min_ms=round(min(runs), 4), max_ms=round(max(runs), 4),
                       spread_pct=round(100 * (max(runs) - min(runs)) / med, 2))
            trace = f"{meta['name']}-{variant}.json.gz"
            active = 3 if SMALL else meta["active"]
            pms, counts = profile_run(runner, active, os.path.join(outdir, trace), clock)
            res.update(trace=trace, trace_bytes=os.path.getsize(os.path.join(outdir, trace)),
                       profiled_active_steps=active, profiled_ms_per_step=round(pms, 4),
                       profiler_slowdown=round(pms / med, 3), trace_counts=counts)
            res["extra"] = runner.extra()
        finally:
            runner.close()
            del runner
            gc.collect()
            if IS_CUDA:
                torch.cuda.empty_cache()
        return res


    def main(self):
        ap = argparse.ArgumentParser()
        ap.add_argument("--out", required=True)
        ap.add_argument("--only", default="", help="comma-separated workload names")
        args = ap.parse_args()
        os.makedirs(args.out, exist_ok=True)
        t_start = T_START
        dev_name = (torch.cuda.get_device_name(DEVICE) if IS_CUDA
                    else f"cpu ({platform.processor() or platform.machine()})")
        truth = {
            "suite": self.name,
            "device": dev_name,
            "torch": torch.__version__,
            "python": sys.version.split()[0],
            "small": SMALL,
            "dry_run_compile_backend": "aot_eager" if (SMALL and not IS_CUDA) else None,
            "runs_per_variant": RUNS,
            "timing": "synchronize + perf_counter around N steady-state steps, unprofiled; median of runs",
            "profile_schedule": "wait=1 warmup=2 active=A, repeat=1; CPU+CUDA, record_shapes=True",
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "workloads": [],
        }
        truth_path = os.path.join(args.out, "truth.json")
        only = {s for s in args.only.split(",") if s}
        for meta in self.workloads:
            if only and meta["name"] not in only:
                continue
            entry = {k: meta[k] for k in ("name", "domain", "mode", "compiled", "description", "expect")}
            entry["fix"] = {"before_line": meta["fix_before"], "after_line": meta["fix_after"]}
            entry["device"] = dev_name
            truth["workloads"].append(entry)
            elapsed = now() - t_start
            miss = missing_modules(meta["needs"])
            if miss:
                entry.update(status="skipped", reason="missing: " + "; ".join(miss))
            elif elapsed + (0 if SMALL else 0.3 * meta["cap_s"]) > self.budget_s:
                entry.update(status="skipped", reason=f"global budget: {elapsed:.0f}s already spent")
            else:
                t_w = now()
                try:
                    for variant in ("before", "after"):
                        print(f"[{self.name}] {meta['name']} {variant} ...", flush=True)
                        entry[variant] = self.measure(meta, variant, args.out)
                        r = entry[variant]
                        print(f"[{self.name}] {meta['name']} {variant}: {r['median_ms']:.3f} ms/step "
                              f"(spread {r['spread_pct']:.1f}%, profiled x{r['profiler_slowdown']:.2f})", flush=True)
                    b, a = entry["before"], entry["after"]
                    entry["speedup"] = round(b["median_ms"] / a["median_ms"], 3)
                    entry["speedup_profiled"] = round(b["profiled_ms_per_step"] / a["profiled_ms_per_step"], 3)
                    entry["speedup_range"] = [round(b["min_ms"] / a["max_ms"], 3), round(b["max_ms"] / a["min_ms"], 3)]
                    entry["within_noise"] = bool(a["median_ms"] >= b["min_ms"] or entry["speedup"] < 1.05)
                    entry["status"] = "ok"
                    print(f"[{self.name}] {meta['name']}: speedup {entry['speedup']:.3f}x "
                          f"(t={now() - t_start:.0f}s)", flush=True)
                except Skipped as e:
                    entry.update(status="skipped", reason=str(e))
                    print(f"[{self.name}] {meta['name']} skipped: {e}", flush=True)
                except Exception as e:
                    entry.update(status="error", reason=f"{type(e).__name__}: {e}",
                                 traceback=traceback.format_exc()[-3000:])
                    print(f"[{self.name}] {meta['name']} ERROR: {e}", flush=True)
                    traceback.print_exc()
                entry["wall_s"] = round(now() - t_w, 1)
            truth["elapsed_s"] = round(now() - t_start, 1)
            write_json(truth_path, truth)
        enforce_size(args.out, truth)
        truth["elapsed_s"] = round(now() - t_start, 1)
        write_json(truth_path, truth)
        print(f"[{self.name}] done in {truth['elapsed_s']}s; "
              + ", ".join(f"{w['name']}={w.get('speedup', w.get('status'))}" for w in truth["workloads"]), flush=True)
