"""What torch.profiler adds to each op's host time: the same op loops timed with and without it.

Each loop dispatches `ops` calls of one kind, then syncs; it is timed unprofiled (perf_counter) and inside a
profile() with what tracetriage's capture records (CPU + CUDA activity, shapes, CUDA sync events), and once
more with stacks; the runs interleave, `reps` of each. The per-op cost is (profiled - unprofiled) / ops, and
the trace of one profiled run says how many CPU ops and runtime calls each loop iteration records, so the
cost can be put per recorded event too.

    python -m tracetriage.capture.profiler_cost --device cuda [--reps 5] [--ops 2000] [--out FILE]

The loops:
    add_tiny       x.add_(1.0) on a 1-element tensor: one aten op and one launch per call (launch-bound loops)
    linear_small   F.linear on 8x256 by 256x256: aten::linear -> aten::t, aten::addmm; one launch
    view_only      x.view(-1): a CPU op with no kernel (the dispatch of a cheap op, recorded)
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile


def loops(device: str) -> dict:
    x1 = torch.zeros(1, device=device)
    a = torch.randn(8, 256, device=device)
    w = torch.randn(256, 256, device=device)
    v = torch.randn(64, 64, device=device)
    return {
        "add_tiny": lambda: x1.add_(1.0),
        "linear_small": lambda: F.linear(a, w),
        "view_only": lambda: v.view(-1),
    }


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def run_loop(fn, ops: int, device: str) -> float:
    """Seconds for `ops` calls and the sync after them."""
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(ops):
        fn()
    _sync(device)
    return time.perf_counter() - t0


def profiled(fn, ops: int, device: str, *, with_stack: bool, trace: Path | None = None) -> float:
    from tracetriage.capture.harness import experimental_config

    gpu = torch.device(device).type == "cuda"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with profile(activities=acts, record_shapes=True, with_stack=with_stack,
                 experimental_config=experimental_config() if gpu else None) as prof:
        seconds = run_loop(fn, ops, device)     # the profiler's start-up (CUPTI's set-up) stays outside
    if trace is not None:
        prof.export_chrome_trace(str(trace))
    return seconds


def events_per_call(trace: Path, ops: int) -> dict:
    doc = json.loads(trace.read_text())
    cats = Counter(str(e.get("cat", "")).lower() for e in doc.get("traceEvents", []) if e.get("ph") == "X")
    return {c: cats[c] / ops for c in ("cpu_op", "cuda_runtime", "cuda_driver", "kernel") if cats[c]}


def measure(device: str, reps: int, ops: int) -> dict:
    out = {}
    for name, fn in loops(device).items():
        run_loop(fn, ops, device)                                      # warm: first calls, allocator
        profiled(fn, min(ops, 200), device, with_stack=False)          # warm: the profiler's own first use
        runs: dict[str, list[float]] = {"unprofiled": [], "profiled": [], "profiled_with_stack": []}
        for _ in range(reps):
            runs["unprofiled"].append(run_loop(fn, ops, device))
            runs["profiled"].append(profiled(fn, ops, device, with_stack=False))
            runs["profiled_with_stack"].append(profiled(fn, ops, device, with_stack=True))
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "t.json"
            profiled(fn, ops, device, with_stack=False, trace=trace)
            per_call = events_per_call(trace, ops)
        med = {k: statistics.median(v) for k, v in runs.items()}
        ns = {k: v / ops * 1e9 for k, v in med.items()}
        out[name] = {
            "ops": ops, "runs_s": runs, "per_call_ns": ns,
            "added_ns_per_call": ns["profiled"] - ns["unprofiled"],
            "added_ns_per_call_with_stack": ns["profiled_with_stack"] - ns["unprofiled"],
            "slowdown": ns["profiled"] / ns["unprofiled"],
            "recorded_per_call": per_call,
        }
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    from tracetriage.capture.harness import device_info, versions

    doc = {"device": device_info(a.device), "versions": versions(), "reps": a.reps,
           "loops": measure(a.device, a.reps, a.ops)}
    text = json.dumps(doc, indent=1)
    if a.out:
        a.out.write_bytes(gzip.compress(text.encode()) if a.out.name.endswith(".gz") else text.encode())
    for name, r in doc["loops"].items():
        ns = r["per_call_ns"]
        print(f"[ok] {name}: {ns['unprofiled']:.0f} ns/call unprofiled, {ns['profiled']:.0f} profiled "
              f"(+{r['added_ns_per_call']:.0f}, x{r['slowdown']:.2f}), {ns['profiled_with_stack']:.0f} with stacks; "
              f"recorded per call {r['recorded_per_call']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
