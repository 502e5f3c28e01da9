"""Ground truth for the warm_up lever: a script profiled from its very first step, in a fresh process each time.

A child process imports torch, builds a torchvision ResNet-18 (batch 16, 128x128, SGD) on the device (the
CUDA context is made there, before the profiler), and runs `steps` training steps:

    before    profiled from step 1: cuBLAS and cuDNN handles, lazy kernel-module loading, the allocator's
              first cudaMallocs and first-call set-up all land inside the trace
    warm_up   `warmup` steps first, unprofiled; then the same `steps` steps, timed and profiled

Each rep is three fresh processes (before profiled, before unprofiled, warm_up timed then profiled), so a
cold start is really cold; one more cold profiled run has CUDA_MODULE_LOADING=EAGER in its environment
(every module loaded at context creation, before the profiler).

    python -m capture.realworld_cold --out /tmp/cold [--device cpu] [--reps 5]

Output: warm_up_cold--before.json.gz and --warm_up.json.gz (the median-span runs),
warm_up_cold--before-eager-loading.json.gz, and measured.json in capture.fixes' format.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIND = "warm_up_cold"
RESULT = "RESULT "


def child(variant: str, device: str, trace: Path | None, steps: int, warmup: int) -> dict:
    """One fresh process's run; prints nothing but its RESULT line on stdout."""
    t_import = time.perf_counter()
    import torch
    import torch.nn.functional as F
    from torchvision.models import resnet18

    gpu = torch.device(device).type == "cuda"
    batch, side = (16, 128) if gpu else (2, 32)
    torch.manual_seed(0)
    model = resnet18(num_classes=100).to(device).train()     # the CUDA context is created here
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, side, side, device=device)
    y = torch.randint(0, 100, (batch,), device=device)
    setup_s = time.perf_counter() - t_import

    def sync():
        if gpu:
            torch.cuda.synchronize()

    def train(n):
        for _ in range(n):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        sync()

    def timed(n):
        sync()
        t0 = time.perf_counter()
        train(n)
        return (time.perf_counter() - t0) * 1e3

    res = {"variant": variant, "pid": os.getpid(), "setup_s": setup_s, "module_loading": os.environ.get("CUDA_MODULE_LOADING"),
           "steps": steps, "batch": batch, "side": side}
    if variant == "warm_up":
        train(warmup)
        res["wall_ms"] = timed(steps)
    if trace is not None:
        from capture.realworld_common import profile_bare

        run = profile_bare(lambda: train(steps), trace, device=device)
        res["profiled_wall_ms"] = (run["call_end_ns"] - run["call_start_ns"]) / 1e6
    elif variant == "before":
        res["wall_ms"] = timed(steps)
    return res


def _spawn(variant: str, device: str, trace: Path | None, steps: int, warmup: int, env: dict | None = None,
           timeout: float = 180) -> dict:
    cmd = [sys.executable, "-m", "capture.realworld_cold", "--child", variant, "--device", device,
           "--steps", str(steps), "--warmup", str(warmup)] + (["--trace", str(trace)] if trace else [])
    root = str(Path(__file__).resolve().parent.parent)   # the child imports capture from this checkout
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "PYTHONPATH": path, **(env or {})})
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(RESULT)]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"child {variant} exited {p.returncode}: {p.stderr[-2000:]}")
    res = json.loads(lines[-1][len(RESULT):])
    res["process_s"] = time.perf_counter() - t0
    if trace is not None:
        from capture.realworld_common import trace_facts

        res["span_us"] = trace_facts(trace)["span_us"]
    return res


def capture_cold(out: Path, *, device: str, reps: int, steps: int = 6, warmup: int = 5) -> dict:
    """`reps` x (before profiled, warm_up timed then profiled, before unprofiled), each a fresh process."""
    from capture.fixes import ratio_spread  # the same summaries as every other measured.json
    from capture.realworld_common import runs_summary

    runs: dict[str, list[dict]] = {"before": [], "warm_up": []}
    unprofiled: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(reps):
            for v in runs:
                runs[v].append(_spawn(v, device, Path(tmp) / f"{v}-{r}.json.gz", steps, warmup))
            unprofiled.append(_spawn("before", device, None, steps, warmup))
        for v, rs in runs.items():  # keep the run whose span is the median one
            med = sorted(range(reps), key=lambda i: rs[i]["span_us"])[reps // 2]
            shutil.copy(Path(tmp) / f"{v}-{med}.json.gz", out / f"{KIND}--{v}.json.gz")
    spans = {v: [r["span_us"] for r in rs] for v, rs in runs.items()}
    walls = {"before": [r["wall_ms"] for r in unprofiled], "warm_up": [r["wall_ms"] for r in runs["warm_up"]]}
    return {
        "about": (f"torchvision resnet18 train step (batch 16, 128^2, SGD), {steps} steps profiled from the first "
                  f"step of a fresh process vs after {warmup} unprofiled warm-up steps; each run its own process"),
        "iters": steps,
        "span_us": {v: runs_summary(s) for v, s in spans.items()},
        "wall_ms": {v: runs_summary(s) for v, s in walls.items()},
        "ratio": {"warm_up": ratio_spread(spans["warm_up"], spans["before"])},
        "wall_ratio": {"warm_up": ratio_spread(walls["warm_up"], walls["before"])},
        "wall_ratio_median": {"warm_up": ratio_spread(walls["warm_up"], walls["before"])["median"]},
        "runs": {"profiled": runs, "unprofiled_before": unprofiled},
    }


def capture_eager_loading(out: Path, *, device: str, steps: int, warmup: int) -> dict:
    """One cold profiled run with CUDA_MODULE_LOADING=EAGER: every kernel module loaded with the context."""
    run = _spawn("before", device, out / f"{KIND}--before-eager-loading.json.gz", steps, warmup,
                 env={"CUDA_MODULE_LOADING": "EAGER"}, timeout=150)
    return {k: run[k] for k in ("span_us", "profiled_wall_ms", "setup_s", "process_s", "module_loading")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="1 rep, 3 steps, no eager-loading run: a shake-out")
    ap.add_argument("--child", choices=["before", "warm_up"], help=argparse.SUPPRESS)
    ap.add_argument("--trace", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        res = child(args.child, args.device, args.trace, args.steps, args.warmup)
        print(RESULT + json.dumps(res), flush=True)
        return 0
    if args.out is None:
        ap.error("--out is required")
    args.out.mkdir(parents=True, exist_ok=True)
    from capture.harness import device_info, versions
    from capture.realworld_common import warm_gpu

    if args.smoke:
        args.reps, args.steps, args.warmup = 1, 3, 2
    warm_gpu(args.device)       # clocks up; the children make their own contexts
    t0 = time.perf_counter()
    measured = {"device": device_info(args.device), "versions": versions(), "reps": args.reps, "scenarios": {},
                "errors": {}}
    path = args.out / "measured.json"
    try:
        measured["scenarios"][KIND] = res = capture_cold(args.out, device=args.device, reps=args.reps,
                                                         steps=args.steps, warmup=args.warmup)
        path.write_text(json.dumps(measured, indent=1))     # kept even if the eager-loading run is cut short
        r, w = res["ratio"]["warm_up"], res["wall_ratio"]["warm_up"]
        print(f"[ok {time.perf_counter() - t0:5.1f}s] {KIND}: before {res['span_us']['before']['median'] / 1e3:.1f} "
              f"ms; warm_up profiled {r['median']:.2f} [{r['p10']:.2f}-{r['p90']:.2f}] unprofiled {w['median']:.2f} "
              f"[{w['p10']:.2f}-{w['p90']:.2f}]", flush=True)
        if not args.smoke:
            res["eager_module_loading"] = eager = capture_eager_loading(args.out, device=args.device, steps=args.steps,
                                                                        warmup=args.warmup)
            path.write_text(json.dumps(measured, indent=1))
            print(f"[ok {time.perf_counter() - t0:5.1f}s] {KIND} with CUDA_MODULE_LOADING=EAGER: cold span "
                  f"{eager['span_us'] / 1e3:.1f} ms, process {eager['process_s']:.1f} s", flush=True)
    except Exception as e:
        print(f"[FAIL {time.perf_counter() - t0:5.1f}s] {KIND}: {type(e).__name__}: {e}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
