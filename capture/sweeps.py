"""Measurements for the README, timed with the honest timer (no profiler running).

fusion_sweep: eager vs Triton-fused vs compiled chain across sizes (drill M01.08):
time per call, bytes moved per element, achieved GB/s, and the speedup that
collapses toward 1x once each kernel is shorter than its launch.
"""
from __future__ import annotations

import torch

from tracetriage.capture.timer import honest_time
from tracetriage.kernels.fused_chain import EAGER_PASSES, FUSED_PASSES, chain_eager, fused_chain


def _raise_recompile_limit(limit: int = 64) -> None:
    import torch._dynamo.config as cfg

    for knob in ("recompile_limit", "cache_size_limit"):  # renamed across torch versions
        if hasattr(cfg, knob):
            setattr(cfg, knob, max(getattr(cfg, knob), limit))


def fusion_sweep(device: str = "cuda", exponents=range(12, 29, 2), with_compile: bool = True) -> list[dict]:
    _raise_recompile_limit()
    compiled = torch.compile(chain_eager, dynamic=False) if with_compile else None
    rows = []
    for e in exponents:
        n = 1 << e
        x = torch.randn(n, device=device)
        row = {"n": n, "eager_bytes_per_elem": EAGER_PASSES * 4, "fused_bytes_per_elem": FUSED_PASSES * 4}
        impls = {"eager": chain_eager, "triton": fused_chain}
        if compiled is not None:
            impls["compile"] = compiled
        for name, fn in impls.items():
            t = honest_time(lambda: fn(x), device=device, tensors=[x], warmup=5, repeats=30)
            passes = EAGER_PASSES if name == "eager" else FUSED_PASSES
            row[f"{name}_us"] = t.median_ms * 1e3
            row[f"{name}_spread_pct"] = t.spread_pct
            row[f"{name}_gbps"] = passes * 4 * n / (t.median_ms * 1e-3) / 1e9
        row["speedup_triton"] = row["eager_us"] / row["triton_us"]
        if compiled is not None:
            row["speedup_compile"] = row["eager_us"] / row["compile_us"]
        rows.append(row)
        x = None   # frees it before the next size (a del would unbind the name the timed lambda closes over)
    return rows
