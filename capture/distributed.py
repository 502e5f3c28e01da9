"""A multi-rank capture: data-parallel steps with an all-reduce, one trace per rank.

    python -m tracetriage.capture.distributed --out traces/ddp-straggler --nproc 2 --straggler-ms 3

Every rank runs the same bf16 MLP step and all-reduces a gradient-sized buffer
through NCCL; rank `--straggler` also does `--straggler-ms` of host work per step,
so the other ranks sit in the all-reduce waiting for it. Each rank writes
rank<N>.json.gz (torch adds `distributedInfo` with the rank) plus a sidecar.
CPU runs use the gloo backend.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tracetriage.analyzers.loading.atomic import write_json_atomic
from tracetriage.capture.harness import device_info, record, sidecar_path, versions
from tracetriage.capture.ranges import named_range


def _rank_main(rank: int, world: int, out: str, straggler: int, straggler_ms: float, steps: int, device: str):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    gpu = device == "cuda"
    if gpu:
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if gpu else "gloo", rank=rank, world_size=world)
    dev = f"cuda:{rank}" if gpu else "cpu"
    d = 4096 if gpu else 128
    dt = torch.bfloat16 if gpu else torch.float32
    ws = [torch.randn(d, d, device=dev, dtype=dt) / d ** 0.5 for _ in range(4)]
    x = torch.randn(2048 if gpu else 64, d, device=dev, dtype=dt)
    grad = torch.randn(64 * (1 << 20) if gpu else 1 << 16, device=dev, dtype=dt)  # 128 MB of "gradients"

    def step():
        with named_range("forward"):
            y = x
            for w in ws:
                y = torch.relu(y @ w)
        if rank == straggler:
            with named_range("slow_host_work"):
                time.sleep(straggler_ms / 1e3)
        with named_range("allreduce"):
            dist.all_reduce(grad)
        return y

    for _ in range(3):
        step()
    if gpu:
        torch.cuda.synchronize()
    dist.barrier()
    path = Path(out) / f"rank{rank}.json.gz"
    def align():  # inside the profiler: every rank's trace starts at the same moment
        dist.barrier()
        if gpu:
            torch.cuda.synchronize()

    record(step, device=device, steps=steps, out_path=path, prologue=align)
    info = device_info(device)
    write_json_atomic(sidecar_path(path), {
        "name": f"ddp-rank{rank}", "trace": path.name, "workload": "ddp_allreduce",
        "params": {"world": world, "straggler": straggler, "straggler_ms": straggler_ms, "steps": steps},
        "label": {"straggler_rank": straggler}, "device": info, "versions": versions(),
    })
    dist.barrier()
    dist.destroy_process_group()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tracetriage.capture.distributed")
    ap.add_argument("--out", required=True)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--straggler", type=int, default=1)
    ap.add_argument("--straggler-ms", type=float, default=3.0)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args(argv)
    if a.device == "cuda" and torch.cuda.device_count() < a.nproc:
        raise SystemExit(f"error: --nproc {a.nproc} needs {a.nproc} GPUs, found {torch.cuda.device_count()}")
    Path(a.out).mkdir(parents=True, exist_ok=True)
    mp.spawn(_rank_main, args=(a.nproc, a.out, a.straggler, a.straggler_ms, a.steps, a.device), nprocs=a.nproc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
