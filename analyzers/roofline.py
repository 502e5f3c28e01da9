"""Roofline: place each op on its device's roofline, and decide a span's regime.

A kernel's cost comes from the cpu_op that launched it (FLOPs and minimum bytes
from its name, input shapes and dtypes: analyzers.opcost). Its bound is compute
when its arithmetic intensity reaches the device's ridge point for its dtype
(peak FLOP/s / peak B/s), memory below. Kernels launched with no costed op
(CUDA-graph replays, Inductor's Triton kernels) get a bound from their name when
the name says it plainly (an elementwise or reduction kernel; a GEMM whose tile
has an 8- or 16-wide side, which cuBLAS picks for skinny decode shapes), else none.

Span regime: overhead when the device is idle most of the span; otherwise the
bound that holds most of the span's kernel time.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analyzers.opcost import op_cost
from analyzers.peaks import DevicePeaks, default_ceilings_path, load_ceilings, lookup
from analyzers.trace import KERNEL, NONE, Trace
from analyzers.verdicts import BOUNDS, Bound, Regime

# Kernel bound codes (arrays of int8) index BOUNDS.
UNKNOWN, COMPUTE, MEMORY, COMM = (BOUNDS.index(b) for b in (Bound.UNKNOWN, Bound.COMPUTE, Bound.MEMORY,
                                                           Bound.COMMUNICATION))
# Collectives (NCCL) spin while they wait for peers: their time says nothing about arithmetic
# or bytes on this device, so they are kept out of the compute/memory vote.
_COMM_NAME = re.compile(r"nccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv", re.I)

_MEMORY_NAME = re.compile(
    r"elementwise|reduce|reduction|triton_(poi|red|per)_|softmax|norm|copy|fill|cat_|index|gather|scatter|"
    r"embedding|rotary|splitkreduce|gemv|memcpy|memset|argmax|topk|sort|where|fused_", re.I)
_GEMM_NAME = re.compile(r"gemm|nvjet|xmma|cutlass|wgmma|sm\d+_.*mma|ampere_.*_tn|volta_.*gemm", re.I)
_TILE = re.compile(r"_(\d+)x(\d+)(?:x\d+)?_")
_PREFILL_ATTN = re.compile(r"flash|fmha|sdpa|attention", re.I)


def guess_bound(kernel_name: str) -> int:
    """A bound from the kernel name alone, where the name is unambiguous; else UNKNOWN."""
    if _COMM_NAME.search(kernel_name):
        return COMM
    if _GEMM_NAME.search(kernel_name):
        tile = _TILE.search(kernel_name)
        if "splitk" in kernel_name.lower() or "gemv" in kernel_name.lower():
            return MEMORY
        if tile and min(int(tile.group(1)), int(tile.group(2))) <= 16:
            return MEMORY        # a skinny tile: cuBLAS's choice for M <= 16 (decode), weight-streaming
        return COMPUTE if tile else UNKNOWN
    if _MEMORY_NAME.search(kernel_name):
        return MEMORY
    return UNKNOWN


@dataclass(frozen=True)
class RooflinePoint:
    name: str
    shapes: str
    dtype: str
    kind: str
    calls: int
    flops: float
    bytes: float
    device_us: float
    intensity: float
    achieved_tflops: float
    achieved_gbps: float
    bound: Bound
    ridge: float | None
    peak_tflops: float | None
    peak_gbps: float | None
    frac_of_peak: float | None   # achieved / the peak of its bound


@dataclass(frozen=True)
class Roofline:
    peaks: DevicePeaks | None
    points: list[RooflinePoint]
    kernel_bound: np.ndarray       # per trace row: UNKNOWN / COMPUTE / MEMORY (kernels only)
    kernel_flops: np.ndarray       # per trace row: FLOPs charged to that kernel (0 if unknown)
    kernel_bytes: np.ndarray


def find_ceilings(trace_path: str, device_name: str | None) -> dict | None:
    """Measured ceilings for this device: beside the trace, else in the user's cache."""
    for p in (Path(trace_path).parent / "ceilings.json", default_ceilings_path()):
        try:
            c = load_ceilings(p)
        except (OSError, ValueError):
            continue
        if device_name and c.get("device_name") and c["device_name"].strip().lower() == device_name.strip().lower():
            return c
    return None


def _shape_str(dims) -> str:
    if not isinstance(dims, list):
        return ""
    parts = []
    for d in dims:
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            parts.append("x".join(map(str, d)))
    return ", ".join(parts)


def analyze(trace: Trace, peaks: DevicePeaks | None = None, ceilings: dict | None = None) -> Roofline:
    ev = trace.ev
    if peaks is None:
        name = trace.device_name()
        peaks = lookup(name, ceilings if ceilings is not None else find_ceilings(trace.path, name))
    n = len(ev)
    kbound = np.zeros(n, np.int8)
    kflops = np.zeros(n, np.float64)
    kbytes = np.zeros(n, np.float64)
    kern = np.flatnonzero(ev.cat == KERNEL)
    if len(kern) == 0:
        return Roofline(peaks, [], kbound, kflops, kbytes)
    call = trace.launch_of[kern]
    op = np.where(call != NONE, trace.op_of[np.maximum(call, 0)], NONE)
    dur = (ev.end[kern] - ev.start[kern]).astype(np.float64)

    # Cost each distinct (op name, shapes) once: a decode loop repeats a few hundred signatures.
    has_op = op != NONE
    op_rows, inv = np.unique(op[has_op], return_inverse=True)
    op_time = np.bincount(inv, weights=dur[has_op]) if len(op_rows) else np.zeros(0)
    sig = ev.name[op_rows].astype(np.int64) * (1 << 32) + ev.shape[op_rows].astype(np.int64)
    sigs, sig_inv = np.unique(sig, return_inverse=True)
    n_sig = len(sigs)
    sig_flops = np.zeros(n_sig)
    sig_bytes = np.zeros(n_sig)
    sig_bound = np.zeros(n_sig, np.int8)
    sig_time = np.bincount(sig_inv, weights=op_time, minlength=n_sig) if n_sig else np.zeros(0)
    sig_calls = np.bincount(sig_inv, minlength=n_sig) if n_sig else np.zeros(0, np.int64)
    first_row = np.zeros(n_sig, np.int64)
    first_row[sig_inv[::-1]] = op_rows[::-1]
    points_src = []
    for j in range(n_sig):
        r = int(first_row[j])
        dims, types, concrete = trace.shapes(r)
        cost = op_cost(trace.names[ev.name[r]], dims, types, concrete) if dims is not None else None
        if cost is None or cost.bytes <= 0:
            continue
        sig_flops[j], sig_bytes[j] = cost.flops, cost.bytes
        if peaks is not None:
            sig_bound[j] = COMPUTE if cost.intensity >= peaks.ridge(cost.dtype) else MEMORY
        else:
            sig_bound[j] = COMPUTE if cost.kind == "matmul" else MEMORY
        points_src.append({"name": trace.names[ev.name[r]], "shapes": _shape_str(dims), "cost": cost,
                           "calls": int(sig_calls[j]), "time": float(sig_time[j])})

    # Charge each op's cost to its kernels in proportion to their time; name-based guess otherwise.
    k_sig = np.full(len(kern), -1, np.int64)
    if len(op_rows):
        pos = np.searchsorted(op_rows, op[has_op])
        k_sig[has_op] = sig_inv[pos]
    known = k_sig >= 0
    known[known] = sig_bytes[k_sig[known]] > 0
    share = np.zeros(len(kern))
    if known.any():
        op_total = op_time[np.searchsorted(op_rows, op[known])]
        share[known] = np.where(op_total > 0, dur[known] / np.maximum(op_total, 1), 0.0)
        kflops[kern[known]] = sig_flops[k_sig[known]] * share[known]
        kbytes[kern[known]] = sig_bytes[k_sig[known]] * share[known]
        kbound[kern[known]] = sig_bound[k_sig[known]]
    comm_names = {i for i in np.unique(ev.name[kern]) if _COMM_NAME.search(trace.names[i])}
    if comm_names:
        is_comm = np.isin(ev.name[kern], list(comm_names))
        known &= ~is_comm
        kbound[kern[is_comm]] = COMM
        kflops[kern[is_comm]] = 0.0
        kbytes[kern[is_comm]] = 0.0
    unk = kern[~known & (kbound[kern] != COMM)]
    if len(unk):
        names_u, inv_u = np.unique(ev.name[unk], return_inverse=True)
        guesses = np.array([guess_bound(trace.names[i]) for i in names_u], np.int8)
        kbound[unk] = guesses[inv_u]
    groups = {i: g for i, g in enumerate(points_src)}

    points = []
    for g in sorted(groups.values(), key=lambda g: -g["time"]):  # one point per (op, shapes)
        c = g["cost"]
        secs = g["time"] / 1e9
        flops, nbytes = c.flops * g["calls"], c.bytes * g["calls"]
        ach_tf = flops / secs / 1e12 if secs > 0 else 0.0
        ach_gb = nbytes / secs / 1e9 if secs > 0 else 0.0
        if peaks is not None:
            ridge = peaks.ridge(c.dtype)
            bound = Bound.COMPUTE if c.intensity >= ridge else Bound.MEMORY
            pk_tf, pk_gb = peaks.flops(c.dtype) / 1e12, peaks.bytes_per_s / 1e9
            frac = ach_tf / pk_tf if bound is Bound.COMPUTE else ach_gb / pk_gb
        else:
            ridge = pk_tf = pk_gb = frac = None
            bound = Bound.MEMORY if c.kind != "matmul" else Bound.COMPUTE
        points.append(RooflinePoint(name=g["name"], shapes=g["shapes"], dtype=c.dtype, kind=c.kind,
                                    calls=g["calls"], flops=flops, bytes=nbytes, device_us=g["time"] / 1e3,
                                    intensity=c.intensity, achieved_tflops=ach_tf, achieved_gbps=ach_gb,
                                    bound=bound, ridge=ridge, peak_tflops=pk_tf, peak_gbps=pk_gb, frac_of_peak=frac))
    return Roofline(peaks, points, kbound, kflops, kbytes)


@dataclass(frozen=True)
class RegimeVerdict:
    regime: Regime
    idle_share: float
    compute_us: float           # kernel time judged compute-bound
    memory_us: float
    unknown_us: float
    comm_us: float              # collectives (NCCL): waiting on peers, not on this device
    achieved_tflops: float | None   # over the kernels of the winning bound with known cost
    achieved_gbps: float | None
    intensity: float | None     # FLOPs / bytes over all costed kernels
    ridge: float | None
    dtype: str | None

    @property
    def kernel_us(self) -> float:
        return self.compute_us + self.memory_us + self.unknown_us + self.comm_us


def regime(trace: Trace, roof: Roofline, kernel_rows: np.ndarray, idle_share: float) -> RegimeVerdict:
    ev = trace.ev
    dur = (ev.end[kernel_rows] - ev.start[kernel_rows]).astype(np.float64)
    b = roof.kernel_bound[kernel_rows]
    comp, mem, unk, comm = (float(dur[b == x].sum()) for x in (COMPUTE, MEMORY, UNKNOWN, COMM))
    if idle_share > 0.5:
        verdict = Regime.OVERHEAD
    else:
        verdict = Regime.COMPUTE if comp > mem else Regime.MEMORY
    fl, by = roof.kernel_flops[kernel_rows], roof.kernel_bytes[kernel_rows]
    known = by > 0
    intensity = float(fl[known].sum() / by[known].sum()) if known.any() and by[known].sum() > 0 else None
    win = known & (b == (COMPUTE if verdict is Regime.COMPUTE else MEMORY))
    secs = float(dur[win].sum()) / 1e9
    ach_tf = float(fl[win].sum()) / secs / 1e12 if secs > 0 else None
    ach_gb = float(by[win].sum()) / secs / 1e9 if secs > 0 else None
    dtype = _dominant_dtype(roof)
    ridge = roof.peaks.ridge(dtype) if roof.peaks is not None and dtype else None
    return RegimeVerdict(verdict, idle_share, comp / 1e3, mem / 1e3, unk / 1e3, comm / 1e3, ach_tf, ach_gb, intensity,
                         ridge, dtype)


def _dominant_dtype(roof: Roofline) -> str | None:
    by: dict[str, float] = {}
    for p in roof.points:
        by[p.dtype] = by.get(p.dtype, 0.0) + p.device_us
    return max(by, key=by.get) if by else None
