"""Device ceilings: peak FLOP/s per dtype and peak memory bandwidth.

The roofline needs two numbers per device and dtype: how fast the device can do
arithmetic and how fast it can move bytes. They come from a datasheet table keyed by
device family (matched from the CUDA device name as torch reports it), and any field
measured on the machine (`tracetriage capture ceilings`) replaces the datasheet one.

All FLOP/s values are DENSE (no 2:4 structured sparsity): NVIDIA's datasheets print
the sparse figure first, with the dense one in a footnote; the dense figure is half.
Tensor-core values are the ones with FP32 accumulation, because that is what cuBLAS
uses for fp16/bf16 GEMMs under PyTorch (CUBLAS_COMPUTE_32F). On GeForce and A10G
parts this is half the FP16-accumulate rate that marketing leads with.

`fp32` is the non-tensor (CUDA-core) FP32 rate; an fp32 matmul only runs at the
`tf32` rate when the user allowed TF32, which a trace does not record, so the caller
must ask for `tf32` explicitly. `fp64` is the FP64 tensor-core rate where the card
has one (A100/H100/H200: DGEMM uses it by default), else the CUDA-core rate.

Pure Python: no torch import (the report must start in about a second).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field

from tracetriage.analyzers.model.dtypes import normalise_dtype

# --------------------------------------------------------------------------------------
# The datasheet table
# --------------------------------------------------------------------------------------

_T = 1e12  # TFLOP/s
_G = 1e9  # GB/s (decimal, as datasheets print)


@dataclass(frozen=True)
class DevicePeaks:
    name: str
    bytes_per_s: float
    flops_per_s: dict[str, float] = field(hash=False)
    source: str  # 'datasheet' | 'measured' | 'measured+datasheet'
    sheet: str = ""   # the document the datasheet figures come from ("" when every figure was measured)
    datasheet: "DevicePeaks | None" = field(default=None, compare=False, hash=False)  # when measured ceilings
                                                                                       # replaced its figures
    passed: tuple["Passed", ...] = ()   # ceilings this trace's kernels passed, raised (DevicePeaks.judged_by)

    def judged_by(self, best_bytes_per_s: float, best_flops: dict[str, float]) -> "DevicePeaks":
        """The peaks one trace is judged against, given the best rates its kernels reach (per dtype for FLOP/s).

        A ceiling is a ceiling: where a kernel passes one, the ceiling was measured under what the device does
        (a copy loop or one GEMM size measured on the day), and the roof the trace is judged against is the best
        rate the device is known to sustain: the rate that kernel reached. Not the datasheet's: a measured
        ceiling is the practical roof (H200 SGEMM tops out near 51 TFLOP/s against the sheet's 67), and the sheet
        would move the roof 30% for a kernel 1% past it (traces/fixes/knobs/tf32_gemm: allow_tf32 predicted −83%
        against the sheet, −86% against the rate reached, −86% measured). Every line of the trace (report,
        whatif, roofline page, drills) reads these peaks, so one trace states one peak for each quantity, never an
        achieved rate above it; `passed` says which ceilings were raised, from what, to what."""
        passed = []
        bw = self.bytes_per_s
        if best_bytes_per_s > bw > 0:
            bw = best_bytes_per_s
            passed.append(Passed("bandwidth", self.bytes_per_s, best_bytes_per_s))
        flops = dict(self.flops_per_s)
        for dtype, best in sorted(best_flops.items()):
            own = flops.get(dtype, 0.0)
            if best > own > 0:
                flops[dtype] = best
                passed.append(Passed(dtype, own, best))
        if not passed:
            return self
        return DevicePeaks(name=self.name, bytes_per_s=bw, flops_per_s=flops, source=self.source, sheet=self.sheet,
                           datasheet=self.datasheet, passed=tuple(passed))

    def limit_bytes_per_s(self) -> float:
        """The bandwidth no kernel can pass: a measured copy ceiling sits a little under what kernels reach,
        so the datasheet's figure, where it is higher, is the limit."""
        return max(self.bytes_per_s, self.datasheet.bytes_per_s if self.datasheet else 0.0)

    def limit_flops(self, dtype: str | None) -> float:
        """The arithmetic rate no kernel can pass, likewise."""
        return max(self.flops(dtype), self.datasheet.flops(dtype) if self.datasheet else 0.0)

    def flops(self, dtype: str | None) -> float:
        """Peak FLOP/s for a dtype, falling back to the nearest rate the device has.

        fp32 is the CUDA-core rate; pass "tf32" to get the TF32 tensor-core rate.
        Unknown dtypes (and integers other than int8) use the fp32 rate.
        """
        d = normalise_dtype(dtype) or "fp32"
        for candidate in _FALLBACKS.get(d, (d, "fp32")):
            value = self.flops_per_s.get(candidate)
            if value:
                return value
        return self.flops_per_s.get("fp32", 0.0)

    def ridge(self, dtype: str | None) -> float:
        """Ridge point in FLOP/byte: peak FLOP/s for the dtype over peak bytes/s."""
        if self.bytes_per_s <= 0:
            return math.inf
        return self.flops(dtype) / self.bytes_per_s


@dataclass(frozen=True)
class Passed:
    """A ceiling a trace's kernels passed: `what` ("bandwidth" or a dtype), the figure it had (measured, or the
    datasheet's where a kernel passed even that), and the best rate a kernel reached: the figure the trace is
    judged against instead."""
    what: str
    was: float        # bytes/s or FLOP/s
    reached: float


# When a card has no figure for a dtype, use the rate the op would really run at.
# fp8 without fp8 tensor cores is upcast; bf16 on pre-Ampere parts is computed in fp32.
_FALLBACKS: dict[str, tuple[str, ...]] = {
    "fp8": ("fp8", "fp16", "bf16", "fp32"),
    "fp4x2": ("fp4x2", "fp8", "fp16", "fp32"),
    "int8": ("int8", "fp16", "fp32"),
    "bf16": ("bf16", "fp32"),
    "fp16": ("fp16", "fp32"),
    "tf32": ("tf32", "fp32"),
    "fp64": ("fp64", "fp32"),
}


def _row(name, gbps, sheet, **tflops):
    """A table row: the product, its memory bandwidth (GB/s), the document the figures are from, and the
    dense TFLOP/s per dtype."""
    return name, gbps * _G, {k: v * _T for k, v in tflops.items()}, sheet


# Dense values; "/2" notes where the datasheet prints the sparse figure.
_TABLE: dict[str, tuple[str, float, dict[str, float]]] = {
    # NVIDIA H200 datasheet (SXM column): FP64 TC 67, FP32 67, TF32 989/2, BF16 and
    # FP16 1979/2, FP8 and INT8 3958/2; 4.8 TB/s HBM3e.
    "h200": _row("H200 SXM", 4800, "NVIDIA H200 Tensor Core GPU datasheet", fp64=67, fp32=67, tf32=494.5, bf16=989.5,
                 fp16=989.5, fp8=1979, int8=1979),
    # NVIDIA H200 datasheet (NVL column): FP64 TC 60, FP32 60, TF32 835/2,
    # BF16/FP16 1671/2, FP8/INT8 3341/2; 4.8 TB/s.
    "h200-nvl": _row("H200 NVL", 4800, "NVIDIA H200 Tensor Core GPU datasheet",
                     fp64=60, fp32=60, tf32=417.5, bf16=835.5, fp16=835.5, fp8=1670.5, int8=1670.5),
    # NVIDIA H100 datasheet (SXM column): FP64 TC 67, FP32 67, TF32 989/2,
    # BF16/FP16 1979/2, FP8/INT8 3958/2; 3.35 TB/s HBM3.
    "h100-sxm": _row("H100 SXM", 3350, "NVIDIA H100 Tensor Core GPU datasheet",
                     fp64=67, fp32=67, tf32=494.5, bf16=989.5, fp16=989.5, fp8=1979, int8=1979),
    # NVIDIA H100 datasheet (PCIe column): FP64 TC 51, FP32 51, TF32 756/2,
    # BF16/FP16 1513/2, FP8/INT8 3026/2; 2.0 TB/s HBM2e.
    "h100-pcie": _row("H100 PCIe", 2000, "NVIDIA H100 Tensor Core GPU datasheet",
                      fp64=51, fp32=51, tf32=378, bf16=756, fp16=756, fp8=1513, int8=1513),
    # NVIDIA H100 datasheet (NVL column): FP64 TC 60, FP32 60, TF32 835/2,
    # BF16/FP16 1671/2, FP8/INT8 3341/2; 3.9 TB/s.
    "h100-nvl": _row("H100 NVL", 3900, "NVIDIA H100 Tensor Core GPU datasheet",
                     fp64=60, fp32=60, tf32=417.5, bf16=835.5, fp16=835.5, fp8=1670.5, int8=1670.5),
    # NVIDIA GH200 Grace Hopper Superchip datasheet (its Hopper GPU): FP64 34, FP64 TC 67, FP32 67, TF32 TC
    # 989/2, BF16/FP16 1979/2, FP8/INT8 3958/2; 96 GB HBM3 at 4 TB/s ("NVIDIA GH200 480GB": 480 GB is the Grace
    # CPU's LPDDR5X beside it), or 144 GB HBM3e at 4.9 TB/s.
    "gh200": _row("GH200 (96 GB HBM3)", 4000, "NVIDIA GH200 Grace Hopper Superchip datasheet",
                  fp64=67, fp32=67, tf32=494.5, bf16=989.5, fp16=989.5, fp8=1979, int8=1979),
    "gh200-hbm3e": _row("GH200 (144 GB HBM3e)", 4900, "NVIDIA GH200 Grace Hopper Superchip datasheet",
                        fp64=67, fp32=67, tf32=494.5, bf16=989.5, fp16=989.5, fp8=1979, int8=1979),
    # NVIDIA H20 (the Hopper built for export with fewer SMs; no public NVIDIA datasheet): NVIDIA's HGX H20
    # specification as published in the press (e.g. SemiAnalysis, "Nvidia's New China AI Chips", Nov 2023):
    # FP64 1, FP32 44, TF32 74, BF16/FP16 148, FP8/INT8 296 (dense); 96 GB HBM3 at 4.0 TB/s.
    "h20": _row("H20", 4000, "NVIDIA HGX H20 specification, as published in the press (no public datasheet)",
                fp64=1, fp32=44, tf32=74, bf16=148, fp16=148, fp8=296, int8=296),
    # NVIDIA A100 datasheet: FP64 TC 19.5, FP32 19.5, TF32 312/2, BF16/FP16 624/2,
    # INT8 1248/2; no FP8. Bandwidth per SKU: 40GB 1,555 GB/s; 80GB PCIe 1,935 GB/s;
    # 80GB SXM 2,039 GB/s.
    "a100-sxm-40gb": _row("A100 SXM 40GB", 1555, "NVIDIA A100 Tensor Core GPU datasheet",
                          fp64=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624),
    "a100-pcie-40gb": _row("A100 PCIe 40GB", 1555, "NVIDIA A100 Tensor Core GPU datasheet",
                           fp64=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624),
    "a100-sxm-80gb": _row("A100 SXM 80GB", 2039, "NVIDIA A100 Tensor Core GPU datasheet",
                          fp64=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624),
    "a100-pcie-80gb": _row("A100 PCIe 80GB", 1935, "NVIDIA A100 Tensor Core GPU datasheet",
                           fp64=19.5, fp32=19.5, tf32=156, bf16=312, fp16=312, int8=624),
    # NVIDIA L40S datasheet: FP32 91.6, TF32 366/2, BF16/FP16 733/2 (362.05 dense),
    # FP8/INT8 1466/2; 864 GB/s. FP64 is not listed: Ada runs it at 1/64 of FP32.
    "l40s": _row("L40S", 864, "NVIDIA L40S datasheet", fp64=91.6 / 64, fp32=91.6, tf32=183, bf16=362.05,
                 fp16=362.05, fp8=733, int8=733),
    # NVIDIA L40 datasheet: FP32 90.5, TF32 181/2, BF16/FP16 362.1/2, FP8/INT8 724/2; 864 GB/s GDDR6. FP64 not
    # listed: Ada 1/64 of FP32.
    "l40": _row("L40", 864, "NVIDIA L40 datasheet", fp64=90.5 / 64, fp32=90.5, tf32=90.5, bf16=181.05,
                fp16=181.05, fp8=362, int8=362),
    # NVIDIA A40 datasheet: FP32 37.4, TF32 149.6/2, BF16/FP16 299.4/2, INT8 598.6/2; 696 GB/s GDDR6. No FP8;
    # FP64 not listed: GA102 1/64 of FP32.
    "a40": _row("A40", 696, "NVIDIA A40 datasheet", fp64=37.4 / 64, fp32=37.4, tf32=74.8, bf16=149.7, fp16=149.7,
                int8=299.3),
    # NVIDIA A30 datasheet: FP64 5.2, FP64 TC 10.3, FP32 10.3, TF32 165/2, BF16/FP16 330/2, INT8 661/2; 933 GB/s
    # HBM2. No FP8.
    "a30": _row("A30", 933, "NVIDIA A30 Tensor Core GPU datasheet", fp64=10.3, fp32=10.3, tf32=82, bf16=165,
                fp16=165, int8=330),
    # NVIDIA L4 datasheet: FP32 30.3, TF32 120/2, BF16/FP16 242/2, FP8/INT8 485/2;
    # 300 GB/s. FP64 not listed: Ada 1/64 of FP32.
    "l4": _row("L4", 300, "NVIDIA L4 Tensor Core GPU datasheet",
               fp64=30.3 / 64, fp32=30.3, tf32=60, bf16=121, fp16=121, fp8=242.5, int8=242.5),
    # NVIDIA T4 datasheet: FP32 8.1, mixed FP16/FP32 65, INT8 130; 320 GB/s.
    # Turing has no bf16 and no tf32 tensor cores: PyTorch computes bf16 matmuls in
    # fp32, so bf16 and tf32 get the fp32 rate (a bf16 GEMM on T4 cannot beat it).
    # FP64 not listed: Turing runs it at 1/32 of FP32.
    "t4": _row("T4", 320, "NVIDIA T4 Tensor Core GPU datasheet", fp64=8.1 / 32, fp32=8.1, tf32=8.1, bf16=8.1, fp16=65,
               int8=130),
    # NVIDIA A10 datasheet: FP32 31.2, TF32 125/2, BF16/FP16 250/2, INT8 500/2;
    # 600 GB/s. FP64 not listed: GA102 1/32 of FP32.
    "a10": _row("A10", 600, "NVIDIA A10 Tensor Core GPU datasheet",
                fp64=31.2 / 32, fp32=31.2, tf32=62.5, bf16=125, fp16=125, int8=250),
    # A10G (AWS G5 only; no public NVIDIA datasheet). AWS/NVIDIA figures as collected
    # by Baseten ("NVIDIA A10 vs A10G for ML model inference"): 600 GB/s like the A10,
    # FP16/BF16 tensor 70 dense, while its CUDA cores are faster than the A10's:
    # 80 SMs x 128 FP32 lanes x 2 x 1.71 GHz = 35.0 TFLOP/s (31.2 is the A10's
    # figure). The 70 is GeForce-style half-rate FP32-accumulate (80 SMs x 512 x
    # 1.71 GHz); TF32 at half of that, as on the RTX 3090. INT8 is not published.
    "a10g": _row("A10G", 600, "AWS G5 (A10G) figures, collected by Baseten",
                 fp64=35.0 / 32, fp32=35.0, tf32=35.0, bf16=70, fp16=70),
    # NVIDIA V100 datasheet (SXM2): FP64 7.8, FP32 15.7, tensor (FP16) 125; 900 GB/s.
    # Volta has no bf16/tf32: both get the fp32 rate. INT8 (DP4A) not listed.
    "v100-sxm2": _row("V100 SXM2", 900, "NVIDIA Tesla V100 datasheet", fp64=7.8, fp32=15.7, tf32=15.7, bf16=15.7,
                      fp16=125),
    # NVIDIA V100 datasheet (PCIe): FP64 7, FP32 14, tensor 112; 900 GB/s.
    "v100-pcie": _row("V100 PCIe", 900, "NVIDIA Tesla V100 datasheet", fp64=7.0, fp32=14.0, tf32=14.0, bf16=14.0,
                      fp16=112),
    # NVIDIA V100S datasheet (PCIe): FP64 8.2, FP32 16.4, tensor 130; 1,134 GB/s.
    "v100s-pcie": _row("V100S PCIe", 1134, "NVIDIA V100S datasheet", fp64=8.2, fp32=16.4, tf32=16.4, bf16=16.4,
                       fp16=130),
    # NVIDIA Ada Lovelace architecture whitepaper (RTX 4090 column): FP32 82.6;
    # FP16 tensor 330.3 with FP16 accumulate / 165.2 with FP32 accumulate; BF16 165.2
    # (FP32 accumulate); TF32 82.6; FP8 330.3 (FP32 acc.); INT8 660.6; 1,008 GB/s.
    # We use the FP32-accumulate figures: that is what PyTorch GEMMs run.
    # FP64 1/64 of FP32.
    "rtx4090": _row("GeForce RTX 4090", 1008, "NVIDIA Ada Lovelace GPU architecture whitepaper",
                    fp64=82.6 / 64, fp32=82.6, tf32=82.6, bf16=165.2, fp16=165.2, fp8=330.3, int8=660.6),
    # NVIDIA Ampere GA102 whitepaper (RTX 3090 column): FP32 35.6; FP16 tensor 142
    # with FP16 accumulate / 71 with FP32 accumulate; BF16 71; TF32 35.6; INT8 284;
    # 936 GB/s. FP32-accumulate figures used, as above. FP64 1/64 of FP32.
    "rtx3090": _row("GeForce RTX 3090", 936, "NVIDIA Ampere GA102 GPU architecture whitepaper",
                    fp64=35.6 / 64, fp32=35.6, tf32=35.6, bf16=71, fp16=71, int8=284),
    # NVIDIA H800 (the H100 SXM built for export: the same SMs and HBM3, a narrower NVLink): the
    # H100 SXM figures, dense: FP64 67, FP32 67, TF32 494.5, BF16/FP16 989.5, FP8/INT8 1979; 3.35 TB/s.
    "h800": _row("H800 SXM", 3350, "NVIDIA H100 Tensor Core GPU datasheet (SXM; H800 shares its SMs and HBM3)",
                 fp64=67, fp32=67, tf32=494.5, bf16=989.5, fp16=989.5, fp8=1979, int8=1979),
    # NVIDIA HGX B200 datasheet, per GPU: FP64/FP64 TC 37, FP32 75, TF32 2.2 PF/2, FP16/BF16
    # 4.5 PF/2, FP8/INT8 9 PF/2, FP4 18 PF/2 (sparse figures halved); 1.4 TB HBM3e at 62 TB/s
    # over 8 GPUs = 7.7 TB/s each.
    "b200": _row("B200", 7700, "NVIDIA HGX B200 datasheet (per GPU)",
                 fp64=37, fp32=75, tf32=1100, bf16=2250, fp16=2250, fp8=4500, int8=4500, fp4x2=9000),
    # AMD Instinct datasheets (dense matrix figures; FP32 is the matrix (MFMA) rate that
    # PyTorch's fp32 GEMMs run at). MI300X: FP64 matrix 163.4, FP32 matrix 163.4, TF32 653.7,
    # FP16/BF16 1307.4, FP8/INT8 2614.9; 5.3 TB/s HBM3.
    "mi300x": _row("MI300X", 5300, "AMD Instinct MI300X datasheet", fp64=163.4, fp32=163.4, tf32=653.7, bf16=1307.4,
                   fp16=1307.4, fp8=2614.9, int8=2614.9),
    # MI325X: the MI300X's compute with HBM3E at 6 TB/s.
    "mi325x": _row("MI325X", 6000, "AMD Instinct MI325X datasheet", fp64=163.4, fp32=163.4, tf32=653.7, bf16=1307.4,
                   fp16=1307.4, fp8=2614.9, int8=2614.9),
    # MI250X and MI250 are two dies (GCDs) in one package, and torch sees each GCD as its own device
    # (named "AMD Instinct MI250X / MI250" each): a kernel runs on one GCD, so the rows hold one GCD's
    # half of the package figures. MI250X datasheet (package): FP64/FP32 matrix 95.7, FP16/BF16/INT8
    # 383; 3.2768 TB/s HBM2e. No TF32 or FP8: tf32 runs at the fp32 rate, fp8 falls back to fp16.
    "mi250x": _row("MI250X (one GCD)", 1638.4, "AMD Instinct MI250X datasheet (package figures halved per GCD)",
                   fp64=47.85, fp32=47.85, tf32=47.85, bf16=191.5, fp16=191.5, int8=191.5),
    # MI250 datasheet (package): FP64/FP32 matrix 90.5, FP16/BF16/INT8 362.1; 3.2768 TB/s; per GCD half.
    "mi250": _row("MI250 (one GCD)", 1638.4, "AMD Instinct MI250 datasheet (package figures halved per GCD)",
                  fp64=45.25, fp32=45.25, tf32=45.25, bf16=181.05, fp16=181.05, int8=181.05),
    # MI210 datasheet: FP64/FP32 matrix 45.3, FP16/BF16/INT8 181.0; 1.6384 TB/s.
    "mi210": _row("MI210", 1638.4, "AMD Instinct MI210 datasheet", fp64=45.3, fp32=45.3, tf32=45.3, bf16=181.0,
                  fp16=181.0, int8=181.0),
    # MI300A datasheet: 228 CUs; FP64/FP32 matrix 122.6, TF32 490.3, FP16/BF16 980.6, FP8/INT8 1961.2;
    # 5.3 TB/s HBM3 (shared with its CPU cores).
    "mi300a": _row("MI300A", 5300, "AMD Instinct MI300A datasheet", fp64=122.6, fp32=122.6, tf32=490.3,
                   bf16=980.6, fp16=980.6, fp8=1961.2, int8=1961.2),
    # NVIDIA Turing architecture whitepaper (RTX 2080 Ti column, reference clocks): FP32 13.4; FP16
    # tensor 107.6 with FP16 accumulate / 53.8 with FP32 accumulate (GeForce runs FP32 accumulate at half
    # rate: what PyTorch GEMMs use); INT8 215.2; 616 GB/s GDDR6. No bf16 or tf32 tensor cores: both run at
    # the fp32 rate. FP64 1/32 of FP32.
    "rtx2080ti": _row("GeForce RTX 2080 Ti", 616, "NVIDIA Turing GPU architecture whitepaper",
                      fp64=13.4 / 32, fp32=13.4, tf32=13.4, bf16=13.4, fp16=53.8, int8=215.2),
    # NVIDIA RTX A6000 datasheet: FP32 38.7; tensor 309.7 sparse = 154.8 dense FP16/BF16 (professional
    # Ampere runs FP32 accumulate at full rate); TF32 77.4 dense; INT8 309.7 dense; 768 GB/s. FP64 1/32.
    "rtx-a6000": _row("RTX A6000", 768, "NVIDIA RTX A6000 datasheet", fp64=38.7 / 32, fp32=38.7, tf32=77.4,
                      bf16=154.8, fp16=154.8, int8=309.7),
    # NVIDIA RTX A4000 datasheet: FP32 19.2; tensor 153.4 sparse = 76.7 dense FP16/BF16; TF32 38.4 dense;
    # INT8 153.4 dense; 448 GB/s. FP64 1/32 of FP32.
    "rtx-a4000": _row("RTX A4000", 448, "NVIDIA RTX A4000 datasheet", fp64=19.2 / 32, fp32=19.2, tf32=38.4,
                      bf16=76.7, fp16=76.7, int8=153.4),
    # NVIDIA Quadro GP100 datasheet: FP64 5.2, FP32 10.3, FP16 20.7 (packed half, no tensor cores);
    # 717 GB/s HBM2. No bf16/tf32: the fp32 rate.
    "gp100": _row("Quadro GP100", 717, "NVIDIA Quadro GP100 datasheet", fp64=5.2, fp32=10.3, tf32=10.3,
                  bf16=10.3, fp16=20.7),
}

# (regex on the lower-cased device name, table key); first match wins, so the more
# specific patterns come first. Names as torch.cuda.get_device_name() reports them,
# e.g. "NVIDIA H100 80GB HBM3" (SXM), "NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB".
_MATCHERS: list[tuple[re.Pattern, str]] = [
    (re.compile(p), key)
    for p, key in [
        (r"\bh200\b.*\bnvl\b", "h200-nvl"),
        (r"\bh200\b", "h200"),
        (r"\bh100\b.*\bnvl\b", "h100-nvl"),
        (r"\bh100\b.*\bpcie\b", "h100-pcie"),
        (r"\bh100\b", "h100-sxm"),
        (r"\bh800\b", "h800"),
        # "NVIDIA GH200 480GB" (96 GB HBM3), "NVIDIA GH200 144G HBM3e"
        (r"\bgh200\b.*\b(?:hbm3e|144g|144gb)\b", "gh200-hbm3e"),
        (r"\bgh200\b", "gh200"),
        (r"\bh20\b", "h20"),
        (r"\bb200\b", "b200"),
        (r"\bmi325x\b", "mi325x"),
        (r"\bmi300x\b", "mi300x"),
        (r"\bmi300a\b", "mi300a"),
        (r"\bmi250x\b(?! / mi250)", "mi250x"),
        (r"\bmi250x? / mi250\b|\bmi250\b", "mi250"),
        (r"\bmi210\b", "mi210"),
        (r"\ba100\b.*\bpcie\b.*\b40gb\b", "a100-pcie-40gb"),
        (r"\ba100\b.*\b40gb\b.*\bpcie\b", "a100-pcie-40gb"),
        (r"\ba100\b.*\bpcie\b", "a100-pcie-80gb"),
        (r"\ba100\b.*\b80gb\b", "a100-sxm-80gb"),
        (r"\ba100\b", "a100-sxm-40gb"),
        (r"\bl40s\b", "l40s"),
        (r"\bl40\b", "l40"),
        (r"\ba40\b", "a40"),
        (r"\ba30\b", "a30"),
        (r"\bl4\b", "l4"),
        (r"\bt4\b", "t4"),
        (r"\ba10g\b", "a10g"),
        (r"\ba10\b", "a10"),
        (r"\bv100s\b", "v100s-pcie"),
        (r"\bv100\b.*\bpcie\b", "v100-pcie"),
        (r"\bv100\b", "v100-sxm2"),
        (r"\brtx 4090\b(?! d)(?!.*laptop)", "rtx4090"),
        (r"\brtx 3090\b(?! ti)(?!.*laptop)", "rtx3090"),
        (r"\brtx 2080 ti\b(?!.*laptop)", "rtx2080ti"),
        (r"\brtx a6000\b", "rtx-a6000"),
        (r"\brtx a4000\b", "rtx-a4000"),
        (r"\bgp100\b", "gp100"),
        # an AMD device whose name says nothing ("", "AMD Radeon Graphics"): the properties decode appends
        # ("compute 9.4, 304 multiprocessors, 192 GB") name the part (gfx942 is compute 9.4, gfx90a 9.0)
        (r"\bcompute 9\.4, 304 multiprocessors, 2\d\d gb\b", "mi325x"),
        (r"\bcompute 9\.4, 304 multiprocessors\b", "mi300x"),
        (r"\bcompute 9\.4, 228 multiprocessors\b", "mi300a"),
        (r"\bcompute 9\.0, 110 multiprocessors, 64 gb\b", "mi250x"),
        # an MI210, or one GCD of an MI250: the same per-device figures
        (r"\bcompute 9\.0, 104 multiprocessors, 64 gb\b", "mi210"),
    ]
]


# The host<->device link each way, GB/s, by family: what a pinned copy can reach where the trace measures none
# (the async_copies lever). PCIe x16 carries 64 GB/s each way at Gen5, 32 at Gen4, 16 at Gen3 (PCI-SIG); each card's
# generation from its datasheet. A GH200's Hopper reaches the Grace CPU's memory over NVLink-C2C instead: 900 GB/s
# bidirectional, 450 GB/s each way (NVIDIA GH200 Grace Hopper Superchip datasheet). An MI300A shares one HBM with its
# CPU cores: no link to price.
PCIE_X16_GBPS = {5: 64.0, 4: 32.0, 3: 16.0}
NVLINK_C2C_GBPS = 450.0
_PCIE_GEN: dict[str, int] = {
    **dict.fromkeys(("h200", "h200-nvl", "h100-sxm", "h100-pcie", "h100-nvl", "h20", "h800", "b200", "mi300x",
                     "mi325x"), 5),
    **dict.fromkeys(("a100-sxm-40gb", "a100-pcie-40gb", "a100-sxm-80gb", "a100-pcie-80gb", "l40s", "l40", "a40", "a30",
                     "l4", "a10", "a10g", "rtx4090", "rtx3090", "mi250x", "mi250", "mi210", "rtx-a6000", "rtx-a4000"),
                    4),
    **dict.fromkeys(("t4", "v100-sxm2", "v100-pcie", "v100s-pcie", "rtx2080ti", "gp100"), 3),
}


@dataclass(frozen=True)
class HostLink:
    gbps: float       # each way
    kind: str         # "pcie" | "nvlink-c2c"
    generation: int = 0   # PCIe generation (0: not PCIe)


def host_link(device_name: str | None) -> HostLink | None:
    """The datasheet host<->device link of a device, or None (unknown family, or no link: an APU)."""
    key = _family(device_name) if isinstance(device_name, str) and device_name.strip() else None
    if key is None:
        return None
    if key.startswith("gh200"):
        return HostLink(NVLINK_C2C_GBPS, "nvlink-c2c")
    gen = _PCIE_GEN.get(key)
    return HostLink(PCIE_X16_GBPS[gen], "pcie", gen) if gen else None


def _family(device_name: str) -> str | None:
    low = " ".join(device_name.lower().replace("_", " ").split())
    # "A100-SXM4-40GB" -> "a100 sxm4 40gb" so word boundaries work on dashes too.
    low = low.replace("-", " ")
    for pattern, key in _MATCHERS:
        if pattern.search(low):
            return key
    return None


def datasheet(device_name: str | None) -> DevicePeaks | None:
    """Datasheet peaks for a device name, or None when the family is unknown."""
    if not isinstance(device_name, str) or not device_name.strip():
        return None
    key = _family(device_name)
    if key is None:
        return None
    name, bytes_per_s, flops, sheet = _TABLE[key]
    return DevicePeaks(name=name, bytes_per_s=bytes_per_s, flops_per_s=dict(flops),
                       source="datasheet", sheet=sheet)


def table() -> dict[str, DevicePeaks]:
    """Every row of the datasheet table by its key ("h200", "a100-sxm-80gb", "t4", ...), each naming its sheet."""
    return {key: DevicePeaks(name=name, bytes_per_s=bps, flops_per_s=dict(flops), source="datasheet", sheet=sheet)
            for key, (name, bps, flops, sheet) in _TABLE.items()}


@functools.cache
def lowest_ridge(dtype: str | None) -> float:
    """The lowest ridge point (FLOP/byte) of any device in the datasheet table for a dtype: an op below it is
    memory-bound on every GPU the table knows, whichever the trace ran on (a trace of an unnamed device)."""
    return min(p.ridge(dtype) for p in table().values())


def _same_device(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def lookup(device_name: str | None, ceilings: dict | None = None) -> DevicePeaks | None:
    """Peaks for a device: datasheet, with measured ceilings taking precedence per field.

    - No device name: None (the caller reports no roofline).
    - Ceilings whose `device_name` differs from `device_name` are ignored (datasheet
      only; the caller may warn).
    - Measured d2d copy GB/s (bytes read + written) becomes the memory bandwidth;
      each measured matmul TFLOP/s replaces that dtype's rate.
    - An unknown device with matching measured ceilings (bandwidth and at least one
      matmul rate) gets peaks from the measurements alone; without them, None.
    """
    if not isinstance(device_name, str) or not device_name.strip():
        return None
    sheet = datasheet(device_name)
    measured_bw, measured_flops = _measured(device_name, ceilings)
    if not measured_bw and not measured_flops:
        return sheet
    if sheet is None:
        if not measured_bw or not measured_flops:
            return None
        return DevicePeaks(name=device_name.strip(), bytes_per_s=measured_bw,
                           flops_per_s=measured_flops, source="measured")
    flops = dict(sheet.flops_per_s)
    flops.update(measured_flops)
    all_measured = bool(measured_bw) and set(flops) <= set(measured_flops)
    return DevicePeaks(
        name=sheet.name,
        bytes_per_s=measured_bw or sheet.bytes_per_s,
        flops_per_s=flops,
        source="measured" if all_measured else "measured+datasheet",
        sheet="" if all_measured else sheet.sheet,
        datasheet=sheet,
    )


def _measured(device_name: str, ceilings: dict | None) -> tuple[float, dict[str, float]]:
    """(bytes/s, {dtype: FLOP/s}) from a ceilings dict for this device; zeros if none."""
    if not isinstance(ceilings, dict):
        return 0.0, {}
    other = ceilings.get("device_name")
    if not isinstance(other, str) or not _same_device(other, device_name):
        return 0.0, {}
    bandwidth = 0.0
    copies = ceilings.get("copy_gbps")
    if isinstance(copies, dict):
        d2d = copies.get("d2d")
        if _is_positive(d2d):
            bandwidth = float(d2d) * _G
    flops = {}
    matmul = ceilings.get("matmul_tflops")
    if isinstance(matmul, dict):
        for key, value in matmul.items():
            dtype = normalise_dtype(key)
            if dtype and _is_positive(value):
                flops[dtype] = float(value) * _T
    return bandwidth, flops


def _is_positive(x: object) -> bool:
    return (not isinstance(x, bool) and isinstance(x, (int, float))
            and math.isfinite(x) and x > 0)


# --------------------------------------------------------------------------------------
# Accelerators that are not GPUs
# --------------------------------------------------------------------------------------

# Kineto also records accelerators whose device work is not CUDA/ROCm kernels: Meta's MTIA
# (device name ARTEMIS or FREYA; events in the mtia_* categories, its runtime submitting
# "runFunction - job_prep_and_submit_for_execution" jobs), Intel Gaudi (HPU), Google TPU. Their
# timelines have no kernel/memcpy activity that the idle and regime analyses read, and no row in
# the peak table: a trace from one is not "CPU-only", and is said to be what it is.
_NON_GPU = [
    (re.compile(r"\b(?:artemis|freya|mtia)\b", re.I), "MTIA"),
    (re.compile(r"\b(?:gaudi|hpu)\b", re.I), "Intel Gaudi"),
    (re.compile(r"\btpu\b", re.I), "TPU"),
]
_MTIA_RUNTIME_EVENTS = ("runFunction - job_prep_and_submit_for_execution",)


def non_gpu_accelerator(device_names, event_names=()) -> str | None:
    """The family of a non-GPU accelerator the trace was recorded on ("MTIA", ...), else None.

    `device_names` are the trace's deviceProperties names; `event_names` any of its event names
    (an MTIA trace without deviceProperties still names its runtime's job submissions)."""
    for name in device_names or ():
        for pattern, family in _NON_GPU:
            if isinstance(name, str) and pattern.search(name):
                return family
    if any(n in _MTIA_RUNTIME_EVENTS for n in event_names):
        return "MTIA"
    return None
