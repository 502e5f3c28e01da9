"""What `with_stack=True` costs under the profiler: the same eager training loop profiled with and
without Python stacks, interleaved, on the device given.

    python -m tracetriage.capture.stack_cost --device cuda [--reps 5]

Prints one JSON object: each setting's profiled span per window (ms, every run), the medians, and their
ratio (with stacks / without); the unprofiled wall time of the window for reference.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from tracetriage.capture.fixes import span_us
from tracetriage.capture.smells import narrow_mlp


def _window(net, x, opt, steps: int) -> None:
    for _ in range(steps):
        loss = net(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    if x.is_cuda:
        torch.cuda.synchronize()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args(argv)
    gpu = torch.device(a.device).type == "cuda"
    net = narrow_mlp(16, 256, a.device)
    x = torch.randn(32, 256, device=a.device)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    _window(net, x, opt, 3)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    spans: dict[str, list[float]] = {"without_stack": [], "with_stack": []}
    walls: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.reps):
            for key, stack in (("without_stack", False), ("with_stack", True)):
                with profile(activities=acts, record_shapes=True, with_stack=stack) as prof:
                    _window(net, x, opt, a.steps)
                path = Path(tmp) / f"{key}-{r}.json"
                prof.export_chrome_trace(str(path))
                spans[key].append(span_us(json.loads(path.read_text())) / 1e3)
            t0 = time.perf_counter()
            _window(net, x, opt, a.steps)
            walls.append((time.perf_counter() - t0) * 1e3)
    med = {k: statistics.median(v) for k, v in spans.items()}
    print(json.dumps({"device": torch.cuda.get_device_name() if gpu else "cpu", "steps": a.steps,
                      "span_ms": spans, "median_ms": med, "unprofiled_wall_ms_median": statistics.median(walls),
                      "with_over_without": med["with_stack"] / med["without_stack"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
