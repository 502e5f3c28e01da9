"""Print the measured tables of docs/validation.md from the sample library's sidecars (markdown).

    python -m tracetriage.capture.tables traces/

Fusion sweep (drill M01.08), matmul TFLOP/s per shape (M01.04), and measured
ceilings against the datasheet. Every figure comes from a file the GPU run wrote.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def fusion_table(m: dict) -> str:
    rows = ["| elements | eager µs | Triton µs | compile µs | Triton speedup | compile speedup | eager GB/s "
            "| Triton GB/s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in m.get("fusion_sweep", []):
        rows.append(f"| 2^{r['n'].bit_length() - 1} | {r['eager_us']:.1f} | {r['triton_us']:.1f} | "
                    f"{r.get('compile_us', float('nan')):.1f} | {r['speedup_triton']:.2f}× | "
                    f"{r.get('speedup_compile', float('nan')):.2f}× | {r['eager_gbps']:.0f} | {r['triton_gbps']:.0f} |")
    return "\n".join(rows)


def matmul_table(meta: dict) -> str:
    rows = ["| M×N×K (bf16) | median µs | TFLOP/s | GB/s | FLOP/byte |", "|---|---:|---:|---:|---:|"]
    for r in meta["measurements"]["per_shape"]:
        rows.append(f"| {r['m']}×{r['n']}×{r['k']} | {r['median_ms'] * 1e3:.1f} | {r['tflops']:.1f} | "
                    f"{r['gbps']:.0f} | {r['intensity']:.0f} |")
    return "\n".join(rows)


def ceilings_table(c: dict) -> str:
    from tracetriage.analyzers.analyses.peaks import datasheet

    ds = datasheet(c["device_name"])
    rows = ["| ceiling | measured | datasheet | measured/datasheet |", "|---|---:|---:|---:|"]
    d2d = c["copy_gbps"].get("d2d")
    if d2d and ds:
        rows.append(f"| HBM copy (read+write) | {d2d:.0f} GB/s | {ds.bytes_per_s / 1e9:.0f} GB/s | "
                    f"{d2d / (ds.bytes_per_s / 1e9):.0%} |")
    for k in ("h2d_pinned", "d2h_pinned"):
        if k in c["copy_gbps"]:
            rows.append(f"| {k.replace('_', ' ')} | {c['copy_gbps'][k]:.1f} GB/s | – | – |")
    for dt, tf in c.get("matmul_tflops", {}).items():
        peak = ds.flops(dt) / 1e12 if ds else None
        rows.append(f"| matmul {dt} ({c.get('matmul_n', 8192)}³) | {tf:.0f} TFLOP/s | "
                    + (f"{peak:.0f} TFLOP/s | {tf / peak:.0%} |" if peak else "– | – |"))
    return "\n".join(rows)


def main(argv=None) -> int:
    d = Path((argv or sys.argv[1:] or ["traces"])[0])
    m = json.loads((d / "measurements.json").read_text())
    print("### Fusion sweep\n\n" + fusion_table(m) + "\n")
    mm = d / "matmul-sweep-bf16.meta.json"
    if mm.exists():
        print("### Matmul sweep\n\n" + matmul_table(json.loads(mm.read_text())) + "\n")
    c = m.get("ceilings")
    if isinstance(c, dict) and "copy_gbps" in c:
        print("### Ceilings\n\n" + ceilings_table(c) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
