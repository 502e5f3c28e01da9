"""Measure this machine's ceilings: copy bandwidth and matmul rate per dtype.

The roofline uses these instead of datasheet values when the device name matches
(a datasheet peak is a promise; a measured one is what your kernels can reach).
Copy GB/s counts bytes read plus bytes written, as a kernel's traffic is counted.
"""
from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

import torch

from tracetriage.analyzers.loading.atomic import write_json_atomic
from tracetriage.capture.harness import device_info
from tracetriage.capture.timer import honest_time

MATMUL_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}


def default_path() -> Path:
    base = os.environ.get("TRACETRIAGE_CACHE_DIR") or Path.home() / ".cache" / "tracetriage"
    return Path(base) / "ceilings.json"


def _gbps(nbytes: float, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def measure(device: str = "cuda", *, copy_mib: int = 1024, matmul_n: int = 8192) -> dict:
    gpu = torch.device(device).type == "cuda"
    if not gpu:
        copy_mib, matmul_n = min(copy_mib, 64), min(matmul_n, 1024)
    n = copy_mib * (1 << 20) // 4
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)
    t = honest_time(lambda: dst.copy_(src), device=device, tensors=[src], warmup=3, repeats=20)
    copy = {"d2d": _gbps(2 * src.numel() * 4, t.median_ms)}  # read + write
    if gpu:
        host = torch.empty(n, dtype=torch.float32).pin_memory()
        t = honest_time(lambda: src.copy_(host, non_blocking=True), device=device, tensors=[src], warmup=2, repeats=10)
        copy["h2d_pinned"] = _gbps(host.numel() * 4, t.median_ms)
        t = honest_time(lambda: host.copy_(src, non_blocking=True), device=device, tensors=[src], warmup=2,
                        repeats=10, check_output=False)  # the result lives on the host by design
        copy["d2h_pinned"] = _gbps(host.numel() * 4, t.median_ms)
    src = dst = None   # frees them (a del would unbind the names the timed lambdas above close over)
    tflops = {}
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for name, dt in MATMUL_DTYPES.items():
            if not gpu and name in ("bf16", "fp16", "tf32"):
                continue
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
            m = matmul_n
            a = torch.randn(m, m, device=device, dtype=dt)   # random, never zeros: zeros run faster
            b = torch.randn(m, m, device=device, dtype=dt)
            t = honest_time(lambda: a @ b, device=device, tensors=[a, b], warmup=3, repeats=10)
            tflops[name] = 2.0 * m ** 3 / (t.median_ms * 1e-3) / 1e12
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
    info = device_info(device)
    return {
        "device_name": info["name"],
        "copy_gbps": copy,
        "matmul_tflops": tflops,
        "matmul_n": matmul_n,
        "measured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
    }


def measure_and_save(device: str = "cuda", out: str | os.PathLike | None = None) -> tuple[dict, Path]:
    result = measure(device)
    path = Path(out) if out else default_path()
    write_json_atomic(path, result)
    return result, path
