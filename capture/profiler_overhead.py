"""Measure what torch.profiler adds per event, with and without the profiler, at several event counts.

    python -m tracetriage.capture.profiler_overhead --out DIR [--device cuda|cpu] [--runs 5]

Four loops, each at 100, 1,000 and 10,000 iterations, timed unprofiled (host clock between device syncs) and
profiled with the capture's settings (CPU + CUDA activity, shapes, CUDA sync events), `runs` times each:
    gpu_op        x.add_(1) on a 1-element CUDA tensor: an op and a launch per iteration (launch-bound)
    cpu_op        the same on a CPU tensor: an op, no launch (RecordFunction alone)
    launch_only   a CUDA graph of one tiny kernel replayed per iteration: a launch call, no op
    graph_nodes   one replay of a graph of N tiny kernels: a graph launch's cost per node
Writes DIR/profiler_overhead.json (the H200's: traces/overhead/profiler_overhead.json): per loop and count,
the runs' walls, their medians, and (profiled - unprofiled) / count in ns, which
tracetriage.analyzers.whatif.unprofiled's per-event constants (fitted on the fix pairs) are checked against.
On the CPU the CUDA loops are skipped (a shake-out, not data).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from tracetriage.capture.realworld_common import profile_bare, warm_gpu, warm_profiler

COUNTS = (100, 1_000, 10_000)


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _wall_ms(fn, device: str) -> float:
    _sync(device)
    t0 = time.perf_counter()
    fn()
    _sync(device)
    return (time.perf_counter() - t0) * 1e3


def loops(device: str) -> dict:
    """name -> (make(n) -> a callable that runs the loop n times)."""
    out = {}
    x_cpu = torch.zeros(1)

    def cpu_op(n):
        def run():
            for _ in range(n):
                x_cpu.add_(1)
        return run
    out["cpu_op"] = cpu_op
    if torch.device(device).type != "cuda":
        return out
    x = torch.zeros(1, device=device)

    def gpu_op(n):
        def run():
            for _ in range(n):
                x.add_(1)
        return run

    def one_kernel_graph():
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            x.add_(1)                                   # warm the kernel outside the capture
            with torch.cuda.graph(g, stream=s):
                x.add_(1)
        torch.cuda.current_stream().wait_stream(s)
        return g

    def launch_only(n):
        g = one_kernel_graph()

        def run():
            for _ in range(n):
                g.replay()
        return run

    def graph_nodes(n):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n):
                x.add_(1)
        return g.replay
    out.update(gpu_op=gpu_op, launch_only=launch_only, graph_nodes=graph_nodes)
    return out


def measure(out: Path, device: str, runs: int) -> dict:
    warm_gpu(device)
    warm_profiler(device)
    result = {"device": torch.cuda.get_device_name() if torch.device(device).type == "cuda" else "cpu",
              "torch": torch.__version__, "runs": runs, "loops": {}}
    for name, make in loops(device).items():
        per = {}
        for n in COUNTS:
            fn = make(n)
            fn()                                        # warm (first calls, graph upload)
            walls = [_wall_ms(fn, device) for _ in range(runs)]
            profiled = []
            for r in range(runs):
                run = profile_bare(fn, out / f"{name}-{n}-{r}.json.gz", device=device)
                profiled.append((run["call_end_ns"] - run["call_start_ns"]) / 1e6)
                (out / f"{name}-{n}-{r}.json.gz").unlink()     # the walls are the data; the traces are big
            w, p = statistics.median(walls), statistics.median(profiled)
            per[str(n)] = {"unprofiled_ms": walls, "profiled_ms": profiled, "unprofiled_median_ms": w,
                           "profiled_median_ms": p, "added_ns_per_iteration": (p - w) * 1e6 / n}
        result["loops"][name] = per
    (out / "profiler_overhead.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    r = measure(args.out, args.device, args.runs)
    for name, per in r["loops"].items():
        print(name, {n: round(v["added_ns_per_iteration"]) for n, v in per.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
