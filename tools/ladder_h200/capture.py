"""Capture the traces of the six new ladder rungs (issue 37) on one GPU, in one call, into a tarball.

    python3 tools/ladder_h200/capture.py --out "$OUT"            # on the H200, from the repo root
    TRITON_INTERPRET=1 python tools/ladder_h200/capture.py --device cpu --reps 1 --out /tmp/ladder   # plumbing

Per rung (tools/ladder_h200/workloads.py), every variant is profiled `reps` times and timed `reps` times without
the profiler (host clock between device syncs, and CUDA events), the variants interleaved so drift hits them
alike; the trace kept is the run with the median span. Profiled with CPU + CUDA activity, shapes, CUDA sync
events, and the allocator's [memory] events on the byte-ledger and view rungs; no stacks, no ProfilerStep and
no range of ours but the neutral `line_N` / `op_NN`. Each raw trace is exported as `trace.json` in a temporary
folder, so its traceName names no variant.

Writes into --out: ladder.tar.gz (ladder/RUNG/VARIANT.json.gz, ladder/RUNG/measured.json, ladder/ceilings.json,
ladder/capture.log) and ladder.log (everything printed). A variant that fails is logged and recorded under
"errors"; the others go on. No rung starts once --budget seconds have passed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:       # run as a script: the repo root is not on sys.path
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import tracetriage  # noqa: E402

if str(ROOT) not in tracetriage.__path__:
    # without an install (the device machine) tracetriage.capture and .analyzers live at the repo root, as
    # pyproject's package-dir maps them
    tracetriage.__path__.append(str(ROOT))

from tools.ladder_h200.workloads import RUNGS, Case, Run  # noqa: E402
from tracetriage.capture.fixes import ratio_spread, span_us  # noqa: E402
from tracetriage.capture.realworld_common import runs_summary, trace_facts  # noqa: E402

KERNEL_ARGS = ("grid", "block", "registers per thread", "shared memory", "blocks per SM", "warps per SM",
               "est. achieved occupancy %")


def gpu(device: str) -> bool:
    return torch.device(device).type == "cuda"


def sync(device: str) -> None:
    if gpu(device):
        torch.cuda.synchronize()


def profile_run(run: Run, out_path: Path, *, device: str, memory: bool) -> float:
    """One profiled window, gzipped to out_path; its span in µs (the replay's definition)."""
    from tracetriage.capture.harness import experimental_config

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu(device) else [])
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        sync(device)
        with profile(activities=acts, record_shapes=True, profile_memory=memory,
                     experimental_config=experimental_config() if gpu(device) else None) as prof:
            run.window()
            sync(device)
        prof.export_chrome_trace(str(raw))
        data = raw.read_bytes()
    out_path.write_bytes(gzip.compress(data, compresslevel=9))
    return span_us(json.loads(data))


def timed_run(run: Run, device: str) -> tuple[float, float | None]:
    """The window unprofiled: host ms between two syncs, and CUDA-event ms on the current stream."""
    sync(device)
    if gpu(device):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        run.window()
        end.record()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3, start.elapsed_time(end)
    t0 = time.perf_counter()
    run.window()
    return (time.perf_counter() - t0) * 1e3, None


def kernel_shapes(path: Path) -> list[dict]:
    """Each distinct kernel's launch arguments as Kineto recorded them (first launch), with its launches and
    median duration: what the lead checks the occupancy numbers against."""
    events = json.loads(gzip.decompress(path.read_bytes())).get("traceEvents", [])
    by_name: dict[str, dict] = {}
    for e in events:
        if str(e.get("cat", "")).lower() != "kernel":
            continue
        k = by_name.setdefault(e["name"], {"name": e["name"][:120], "launches": 0, "durs": [],
                                           **{a: e.get("args", {}).get(a) for a in KERNEL_ARGS}})
        k["launches"] += 1
        k["durs"].append(float(e.get("dur", 0.0)))
    return [{**{k: v for k, v in d.items() if k != "durs"}, "median_us": statistics.median(d["durs"])}
            for d in by_name.values()]


def capture_rung(rung: str, cases: list[Case], out: Path, *, device: str, reps: int, small: bool, log) -> dict:
    runs: dict[str, Run] = {}
    result: dict = {"variants": {}, "errors": {}}
    for case in cases:
        try:
            runs[case.name] = run = case.build(device, small)
            for _ in range(2):          # compile, autotune, allocator, cuBLAS heuristics: outside the records
                run.window()
            sync(device)
        except Exception as e:  # one failing variant must not cost the others
            result["errors"][case.name] = f"{type(e).__name__}: {e}"
            log(f"[FAIL] {rung} {case.name} build: {e}\n{traceback.format_exc()}")
    spans: dict[str, list[float]] = {v: [] for v in runs}
    walls: dict[str, list[float]] = {v: [] for v in runs}
    events: dict[str, list[float]] = {v: [] for v in runs}
    memory = {c.name: c.profile_memory for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(reps):
            for name, run in list(runs.items()):
                try:
                    spans[name].append(profile_run(run, Path(tmp) / f"{name}-{r}.json.gz", device=device,
                                                   memory=memory[name]))
                    wall, ev = timed_run(run, device)
                    walls[name].append(wall)
                    if ev is not None:
                        events[name].append(ev)
                except Exception as e:
                    result["errors"][name] = f"{type(e).__name__}: {e}"
                    log(f"[FAIL] {rung} {name} rep {r}: {e}\n{traceback.format_exc()}")
                    del runs[name]
        for name in runs:
            kept = sorted(range(reps), key=lambda i: spans[name][i])[reps // 2]
            dest = out / f"{name}.json.gz"
            shutil.copy(Path(tmp) / f"{name}-{kept}.json.gz", dest)
            case = next(c for c in cases if c.name == name)
            result["variants"][name] = {
                "about": case.about, "trace": dest.name, "kept_rep": kept, "profile_memory": case.profile_memory,
                "span_us": runs_summary(spans[name]), "wall_ms": runs_summary(walls[name]),
                "cuda_event_ms": runs_summary(events[name]) if events[name] else None,
                "profiler_ratio": statistics.median(spans[name]) / 1e3 / statistics.median(walls[name]),
                "facts": runs[name].facts, "trace_facts": trace_facts(dest), "kernels": kernel_shapes(dest)}
            v = result["variants"][name]
            log(f"[ok] {rung} {name}: span {v['span_us']['median']:.0f} us [{v['span_us']['min']:.0f}-"
                f"{v['span_us']['max']:.0f}], wall {v['wall_ms']['median']:.3f} ms, "
                f"{v['trace_facts']['kernels']} kernels, {dest.stat().st_size / 1e6:.2f} MB gz")
    names = list(result["variants"])
    if names:   # every variant against the rung's first: the spread of the ratio, as measured.json elsewhere
        base = names[0]
        result["wall_ratio_vs_" + base] = {n: ratio_spread(walls[n], walls[base]) for n in names[1:]}
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", nargs="*", choices=sorted(RUNGS))
    ap.add_argument("--budget", type=float, default=480.0, help="seconds after which no rung starts")
    ap.add_argument("--small", action="store_true", help="CPU sizes on any device (always on a CPU)")
    args = ap.parse_args(argv)
    small = args.small or not gpu(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ladder-"))
    root = work / "ladder"
    root.mkdir()
    log_lines: list[str] = []

    def log(msg: str) -> None:
        print(msg, flush=True)
        log_lines.append(msg)

    t_start = time.perf_counter()
    from tracetriage.capture.harness import device_info, versions

    log(f"== ladder capture on {args.device} ({device_info(args.device).get('name')}), reps {args.reps}, "
        f"small {small}, {versions()}")
    if gpu(args.device):
        from tracetriage.capture import ceilings
        from tracetriage.capture.realworld_common import warm_gpu, warm_profiler

        warm_gpu(args.device)
        warm_profiler(args.device)
        measured = ceilings.measure(args.device)
        (root / "ceilings.json").write_text(json.dumps(measured, indent=1))
        log(f"ceilings: {measured['copy_gbps']} GB/s, {measured['matmul_tflops']} TFLOP/s")
    failed = []
    for rung in args.only or RUNGS:
        elapsed = time.perf_counter() - t_start
        if elapsed > args.budget:
            log(f"[SKIP] {rung}: out of time at {elapsed:.0f}s of {args.budget:.0f}")
            failed.append(rung)
            continue
        out = root / rung
        out.mkdir()
        t0 = time.perf_counter()
        res = capture_rung(rung, RUNGS[rung], out, device=args.device, reps=args.reps, small=small, log=log)
        res.update(device=device_info(args.device), versions=versions(), reps=args.reps, small=small,
                   seconds=time.perf_counter() - t0)
        (out / "measured.json").write_text(json.dumps(res, indent=1, default=str))
        failed += list(res["errors"])
        log(f"== {rung} done in {res['seconds']:.0f}s ({len(res['variants'])} variants, "
            f"{len(res['errors'])} errors); at {time.perf_counter() - t_start:.0f}s")
        if gpu(args.device):
            torch.cuda.empty_cache()
    log(f"== done in {time.perf_counter() - t_start:.0f}s: " + (f"FAILED or skipped: {failed}" if failed else "all ok"))
    (root / "capture.log").write_text("\n".join(log_lines) + "\n")
    (args.out / "ladder.log").write_text("\n".join(log_lines) + "\n")
    with tarfile.open(args.out / "ladder.tar.gz", "w:gz") as tar:
        tar.add(root, arcname="ladder")
    print(f"wrote {args.out / 'ladder.tar.gz'} ({(args.out / 'ladder.tar.gz').stat().st_size / 1e6:.1f} MB)")
    shutil.rmtree(work)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
