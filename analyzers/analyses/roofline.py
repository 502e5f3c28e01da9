"""Roofline: place each op on its device's roofline, and decide a span's regime.

A kernel's cost comes from the cpu_op that launched it (FLOPs and minimum bytes
from its name, input shapes and dtypes: tracetriage.analyzers.analyses.opcost). Its bound is compute
when its arithmetic intensity reaches the device's ridge point for its dtype
(peak FLOP/s / peak B/s), memory below. Kernels launched with no costed op
(CUDA-graph replays, Inductor's Triton kernels) get a bound from their name when
the name says it plainly (an elementwise or reduction kernel; a GEMM whose tile
has an 8- or 16-wide side, which cuBLAS picks for skinny decode shapes), else none.

A point above its device's peak (by more than ABOVE_PEAK) is an attribution error,
never an achievement: the op's shapes do not describe what its kernels did (a launch
charged to the wrong op, an input the kernel only slices). It is kept out of the
points and the vote (its kernels count as uncosted) and listed in `above_peak` for the
caveat. A point far below both roofs (under LATENCY_SHARE of the peak FLOP/s *and*
of the peak bandwidth) is latency-bound: occupancy, a tiny grid, the library's choice
of algorithm, not arithmetic or bytes. An fp32 product whose kernels are TF32 tensor-
core kernels (by name) is placed against the TF32 peak.

Span regime: overhead when the device is idle most of the span; communication when
collectives that no compute kernel overlaps hold most of its busy time (tracetriage.analyzers.analyses.comm);
otherwise the bound that holds most of the span's kernel time.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

import numpy as np

from tracetriage.analyzers.analyses import comm as comm_mod
from tracetriage.analyzers.analyses.comm import Communication
from tracetriage.analyzers.analyses.foreach_cost import FOREACH_KIND
from tracetriage.analyzers.analyses.opcost import launch_op_cost, op_cost
from tracetriage.analyzers.analyses.peaks import DevicePeaks, lookup, lowest_ridge
from tracetriage.analyzers.model.groups import distinct, first_codes, pair_codes, stable_order
from tracetriage.analyzers.model.kernels import is_collective, is_fp32_cuda_core_math, is_tf32, matrix_precision_by_name
from tracetriage.analyzers.model.names import distinct_names, name_codes
from tracetriage.analyzers.model.runtime_calls import is_graph_launch
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, NONE, Trace
from tracetriage.analyzers.model.verdicts import BOUNDS, OVERHEAD_IDLE_SHARE, Bound, Regime

# Kernel bound codes (arrays of int8) index BOUNDS.
UNKNOWN, COMPUTE, MEMORY, COMM, LATENCY = (BOUNDS.index(b) for b in (Bound.UNKNOWN, Bound.COMPUTE, Bound.MEMORY,
                                                                    Bound.COMMUNICATION, Bound.LATENCY))
ABOVE_PEAK = 1.05      # achieved past this multiple of a peak: the cost was charged to the wrong kernels
TINY_KERNEL_NS = 5_000   # without a device's peaks, an op whose kernels average under 5 µs a call is latency-bound
L2_HOLDS_BYTES = 64 << 20   # an op moving at most this a call past the memory's peak fits a recent GPU's L2 (40 MB
                            # on an A100, 50 MB on an H100, 72 MB on an RTX 4090: the cache's, not memory's, rate)
SHORT_KERNEL_NS = 10_000   # ... and so is one under 10 µs a call on a working set a cache holds (CACHED_BYTES):
CACHED_BYTES = 4 << 20     # the 4 MB L2 of the smallest listed GPU (T4); at any listed memory's rate (300 GB/s or
                           # more) its bytes take under half of such a kernel's time, launch and ramp the rest
LATENCY_SHARE = 0.10   # under a tenth of both peaks: bound by latency (occupancy, tiny grids, launch), not by a roof
_TF32_KINDS = ("matmul", "convolution")
_MEMORY_NAME = re.compile(
    r"elementwise|reduce|reduction|triton_(poi|red|per)_|softmax|norm|copy|fill|cat_|index|gather|scatter|"
    r"embedding|rotary|splitkreduce|gemv|memcpy|memset|argmax|topk|sort|where|fused_|"
    # a dequantize: a pass reading packed weights and writing them in full precision (bitsandbytes'
    # kDequantizeBlockwise), no arithmetic to speak of
    r"dequant|"
    # torch's multi-tensor kernels (foreach/fused optimizer steps): an elementwise pass over tensor lists
    r"multi_tensor_apply", re.I)
_GEMM_NAME = re.compile(r"gemm|nvjet|xmma|cutlass|wgmma|sm\d+_.*mma|ampere_.*_tn|volta_.*gemm", re.I)
_TILE = re.compile(r"_(\d+)x(\d+)(?:x\d+)?_")
_PREFILL_ATTN = re.compile(r"flash|fmha|sdpa|attention", re.I)
# Without a peak table there is no ridge: products, attention and convolutions do far more arithmetic
# per byte than any GPU's ridge point at real sizes; everything else is placed by its bytes.
_DENSE_KINDS = ("matmul", "attention", "convolution")
# Ops that record too little to be costed alone, launched from an op that records everything:
# torch 1.x's cudnn_convolution_backward calls _input and _weight, and the weight gradient's
# op records neither the weight nor its size. Their kernels are charged to the calling op.
_COSTED_BY_CALLER = ("convolution_backward_input", "convolution_backward_weight")
# Why a kernel has no bound: it was launched by no recorded CPU op (a CUDA-graph replay, a kernel
# launched outside the profiler's op tracking); its op recorded no shapes (record_shapes off); or
# its op is one the cost model does not know (custom ops, fused library calls).
UNCOSTED_WHY = {1: "no_launching_op", 2: "no_shapes", 3: "no_cost_model", 4: "graph_replay", 5: "above_peak",
                6: "launched_outside_ops"}
ABOVE_PEAK_WHY = 5     # ... or its op's cost would put it above the device's peak (an attribution error)
# The regime is "unknown" when kernels with no bound hold more than this share of the kernel time
# that votes (all but communication): a vote among the minority that is known says nothing.
UNKNOWN_MAJORITY = 0.5
FP32_MATH_MAJORITY = 0.5    # fp32 GEMMs/convolutions on CUDA cores holding this share of kernel time: most of it
NAMED_BOUND_MAJORITY = 0.75   # this share of the voting kernel time memory-bound by names: the guessed bound is said
RATE_FROM_COSTED = 0.1   # an achieved rate is quoted where costed kernels hold a tenth of its bound's time or more
UNKNOWN_NAMED = 0.05   # ... and named beside compute and memory above this share
LATENCY_NAMED = 0.005  # latency-bound kernel time is named when it rounds to 1% of the kernel time or more


def guess_bound(kernel_name: str) -> int:
    """A bound from the kernel name alone, where the name is unambiguous; else UNKNOWN."""
    if is_collective(kernel_name):
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
class AbovePeak:
    """An op whose cost would place it above its device's peak: an attribution error, never shown as achieved."""
    name: str
    shapes: str
    dtype: str
    calls: int
    device_us: float
    achieved: float          # TFLOP/s or GB/s, as `unit` says
    peak: float
    unit: str                # "TFLOP/s" | "GB/s"

    @property
    def times_peak(self) -> float:
        return self.achieved / self.peak if self.peak else 0.0

    @property
    def bytes_per_call(self) -> float:
        """The bytes its shapes say each call moves (on the bandwidth side; 0 on the FLOP side)."""
        return self.achieved * 1e9 * self.device_us * 1e-6 / self.calls if self.unit == "GB/s" and self.calls else 0.0

    @property
    def cache_sized(self) -> bool:
        """Past the memory's peak on a working set an L2 holds: most likely the cache served it, correctly charged
        (heldout-user19 h100_tflayer: a ReLU's 33.5 MB a call at 1.25x the HBM peak, reading the FFN activation the
        GEMM before it had just written to the 50 MB L2, was called 'an attribution error')."""
        return 0 < self.bytes_per_call <= L2_HOLDS_BYTES


@dataclass(frozen=True)
class Roofline:
    peaks: DevicePeaks | None
    points: list[RooflinePoint]
    kernel_bound: np.ndarray       # per trace row: UNKNOWN / COMPUTE / MEMORY / LATENCY (kernels only)
    kernel_flops: np.ndarray       # per trace row: FLOPs charged to that kernel (0 if unknown)
    kernel_bytes: np.ndarray
    kernel_why: np.ndarray | None = None   # per trace row, for kernels with no costed op: why (UNCOSTED_WHY code)
    above_peak: tuple[AbovePeak, ...] = ()   # ops kept out of the points and the vote, largest time first


def shape_str(dims) -> str:
    """An op's Input Dims as a point's `shapes` ("8192x8192, 8192x8192"): how a caller finds an op's point."""
    return _shape_str(dims)


def _shape_str(dims) -> str:
    if not isinstance(dims, list):
        return ""
    parts = []
    for d in dims:
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            parts.append("x".join(map(str, d)))
    return ", ".join(parts)


def _charge_to_callers(trace: Trace, op: np.ndarray) -> np.ndarray:
    """Replace each op of _COSTED_BY_CALLER by the cpu_op that encloses it on its thread."""
    ev = trace.ev
    has = op != NONE
    if not has.any():
        return op
    names = distinct(ev.name[op[has]])
    by_caller = [i for i in names if trace.names[i].endswith(_COSTED_BY_CALLER)]
    if not by_caller:
        return op
    rows = distinct(op[has & np.isin(ev.name[np.maximum(op, 0)], by_caller)])
    cpu = np.flatnonzero(ev.cat == CPU_OP)
    caller = {}
    for r in rows:
        same = cpu[ev.tid[cpu] == ev.tid[r]]
        k = int(np.searchsorted(same, r)) - 1
        # rows are sorted by (start, -end): an enclosing op comes before; siblings may sit between
        for j in range(k, max(k - 64, -1), -1):
            c = same[j]
            if ev.start[c] <= ev.start[r] and ev.end[c] >= ev.end[r]:
                caller[int(r)] = int(c)
                break
    if not caller:
        return op
    out = op.copy()
    for r, c in caller.items():
        out[op == r] = c
    return out


def analyze(trace: Trace, peaks: DevicePeaks | None = None, ceilings: dict | None = None) -> Roofline:
    ev = trace.ev
    if peaks is None:
        name = trace.device_name()
        peaks = lookup(name, ceilings if ceilings is not None else trace.side.ceilings)
    n = len(ev)
    kbound = np.zeros(n, np.int8)
    kflops = np.zeros(n, np.float64)
    kbytes = np.zeros(n, np.float64)
    kern = np.flatnonzero(ev.cat == KERNEL)
    kwhy = np.zeros(n, np.int8)
    if len(kern) == 0:
        return Roofline(peaks, [], kbound, kflops, kbytes, kwhy)
    call = trace.launch_of[kern]
    op = _charge_to_callers(trace, trace.launching_op(kern))   # a graph replay: the op captured
    dur = (ev.end[kern] - ev.start[kern]).astype(np.float64)

    # Cost each distinct (op name, shapes) once: a decode loop repeats a few hundred signatures. An op runs
    # once per row, or once per replay when a CUDA graph captured it: each run is a call of the op.
    has_op = op != NONE
    # (no graph replays: each op row is one run, op_run is op × (events + 1), and the op rows order the runs alike)
    first_k, inv = first_codes(op[has_op] if trace.graph_op_of is None else trace.op_run(kern, op)[has_op])
    inv = inv.ravel()
    op_rows = op[has_op][first_k]
    run_of = np.full(len(kern), -1, np.int64)
    run_of[has_op] = inv
    op_time = np.bincount(inv, weights=dur[has_op]) if len(op_rows) else np.zeros(0)
    # one signature per (op name, shapes), in that order: np.unique of name << 32 | shape, without its sort
    sig_name, sig_shape, sig_inv = pair_codes(ev.name[op_rows], ev.shape[op_rows])
    n_sig = len(sig_name)
    sig_flops = np.zeros(n_sig)
    sig_bytes = np.zeros(n_sig)
    sig_bound = np.zeros(n_sig, np.int8)
    sig_time = np.bincount(sig_inv, weights=op_time, minlength=n_sig) if n_sig else np.zeros(0)
    sig_calls = np.bincount(sig_inv, minlength=n_sig) if n_sig else np.zeros(0, np.int64)
    first_row = np.zeros(n_sig, np.int64)
    first_row[sig_inv[::-1]] = op_rows[::-1]
    k_sig = np.full(len(kern), -1, np.int64)
    if len(op_rows):
        k_sig[has_op] = sig_inv[inv]
    namesake, tf32 = _kernel_facts(trace, kern, op, k_sig, n_sig)
    half = _half_by_name(trace, kern, k_sig, n_sig)
    rejected = np.zeros(n_sig, bool)
    costed = []
    elem: dict[int, int] | None = None   # cat's element size by its kernels' names, found where a cat is met
    for j in range(n_sig):
        r = int(first_row[j])
        dims, types, concrete = trace.shapes(r)
        name = trace.names[ev.name[r]]
        cost = None
        if dims is not None:
            cost = op_cost(name, dims, types, concrete) or (
                launch_op_cost(name, dims, types, concrete) if namesake[j] else None)
        if cost is not None and cost.dtype == "fp32" and cost.kind in _TF32_KINDS and half.get(j):
            # recorded in fp32, computed in half precision by the kernel's name (an op under autocast whose kernels
            # are charged to it with its fp32 inputs): its bytes and its roof are the kernel's precision's
            cost = op_cost(name, dims, [_HALF_TYPE[half[j]] if t == "float" else t for t in types or []],
                           concrete) or cost
        if cost is not None and name in _LIST_COPIES:   # a TensorList records no dtype: its kernel's name may
            elem = _list_element_bytes(trace, kern, k_sig, n_sig) if elem is None else elem
            cost = _list_copy_cost(cost, elem.get(j))
        if cost is None or cost.bytes <= 0:
            continue
        dtype = "tf32" if cost.dtype == "fp32" and cost.kind in _TF32_KINDS and tf32[j] else cost.dtype
        costed.append((j, {"name": name, "shapes": _shape_str(dims), "cost": cost, "dtype": dtype,
                           "calls": int(sig_calls[j]), "time": float(sig_time[j])}))
    if costed:   # each signature's median run: a run may be faster than the signature's average
        by_sig = stable_order(sig_inv)
        bounds = np.searchsorted(sig_inv[by_sig], np.arange(n_sig + 1))
        for j, g in costed:
            g["median_run_ns"] = float(np.median(op_time[by_sig[bounds[j]:bounds[j + 1]]]))
    if peaks is not None:     # a ceiling a kernel passes was under-measured: the trace is judged against what holds
        peaks = peaks.judged_by(*_best_rates([g for _, g in costed], peaks))
    points_src, above = [], []
    for j, g in costed:
        cost = g["cost"]
        g["bound"], g["beyond"] = _place(g, peaks)
        if g["beyond"] is not None:   # above the peak: an attribution error, neither a point nor a vote
            rejected[j] = True
            above.append(g["beyond"])
            continue
        sig_flops[j], sig_bytes[j] = cost.flops, cost.bytes
        sig_bound[j] = BOUNDS.index(g["bound"])
        points_src.append(g)

    # Charge each op's cost to its kernels in proportion to their time; name-based guess otherwise.
    known = k_sig >= 0
    known[known] = sig_bytes[k_sig[known]] > 0
    share = np.zeros(len(kern))
    if known.any():
        op_total = op_time[run_of[known]]
        share[known] = np.where(op_total > 0, dur[known] / np.maximum(op_total, 1), 0.0)
        kflops[kern[known]] = sig_flops[k_sig[known]] * share[known]
        kbytes[kern[known]] = sig_bytes[k_sig[known]] * share[known]
        kbound[kern[known]] = sig_bound[k_sig[known]]
    comm_names = {i for i in distinct(ev.name[kern]) if is_collective(trace.names[i])}
    if comm_names:
        is_comm = np.isin(ev.name[kern], list(comm_names))
        known &= ~is_comm
        kbound[kern[is_comm]] = COMM
        kflops[kern[is_comm]] = 0.0
        kbytes[kern[is_comm]] = 0.0
    unk = kern[~known & (kbound[kern] != COMM)]
    if len(unk):
        names_u, inv_u = name_codes(trace, unk)
        guesses = np.array([guess_bound(trace.names[i]) for i in names_u], np.int8)
        # a name says what limits a kernel long enough for a roof to matter: one of a few µs a call is its launch
        # and ramp whatever its name (heldout-user3 cs521_induction_a10g: six kernels of 1-5 µs read '24%
        # compute-bound, 76% memory-bound' by their names)
        mean_ns = np.bincount(inv_u.ravel(), weights=dur[np.searchsorted(kern, unk)]) / np.bincount(inv_u.ravel())
        # (at TINY_KERNEL_NS itself too: a trace timed in whole µs writes a 4.5-5.5 µs kernel as 5; heldout-user19
        # gp_fusion's fused layer_norm+tanh Triton kernel, 5 µs on a [1024, 128] fp32 tensor, read memory-bound)
        tiny = (mean_ns <= TINY_KERNEL_NS) & np.isin(guesses, (COMPUTE, MEMORY))
        guesses[tiny] = LATENCY
        kbound[unk] = guesses[inv_u]
        still = np.ones(len(unk), bool)   # why each kernel without a cost has none (the diff's bytes need it)
        if still.any():
            rows_u = unk[still]
            op_u = op[np.searchsorted(kern, rows_u)]
            # an op recorded without Input Dims still gets an (empty) shape entry
            recorded = np.array([bool(raw and raw[0]) for raw in trace.shapes_raw] + [False], bool)
            has_shape = np.zeros(len(rows_u), bool)
            has_shape[op_u != NONE] = recorded[ev.shape[op_u[op_u != NONE]]]
            kwhy[rows_u] = np.where(op_u == NONE, 1, np.where(has_shape, 3, 2))
            # a CUDA-graph replay: one launch call for many kernels, no op of their own
            call_u = call[np.searchsorted(kern, rows_u)]
            names_c, inv_c = name_codes(trace, np.maximum(call_u, 0))
            graph = np.array([is_graph_launch(trace.names[i]) for i in names_c], bool)[inv_c] & (call_u != NONE)
            if trace.graph_op_of is not None:     # ... unless its capture named the op (then the op has no cost)
                graph &= trace.graph_op_of[rows_u] == NONE
            # a launch call the trace records, with no op around it: a C++/CUDA extension's kernel or a library
            # called straight from Python (t4_small.json: a hand-written matmul under a pybind11 builtin), not a
            # capture without CPU activity
            kwhy[rows_u[(op_u == NONE) & (call_u != NONE) & ~graph]] = 6
            kwhy[rows_u[graph]] = 4
            # an op whose cost would put it above the peak: its kernels are uncosted, and say why
            in_rejected = np.zeros(len(rows_u), bool)
            ks = k_sig[np.searchsorted(kern, rows_u)]
            in_rejected[ks >= 0] = rejected[ks[ks >= 0]]
            kwhy[rows_u[in_rejected]] = ABOVE_PEAK_WHY
            kbound[rows_u[in_rejected]] = UNKNOWN   # never back into the vote by its name
    groups = {i: g for i, g in enumerate(points_src)}

    points = []
    for g in sorted(groups.values(), key=lambda g: -g["time"]):  # one point per (op, shapes)
        c = g["cost"]
        secs = g["time"] / 1e9
        flops, nbytes = c.flops * g["calls"], c.bytes * g["calls"]
        ach_tf = flops / secs / 1e12 if secs > 0 else 0.0
        ach_gb = nbytes / secs / 1e9 if secs > 0 else 0.0
        if peaks is not None:
            ridge = peaks.ridge(g["dtype"])
            pk_tf, pk_gb = peaks.flops(g["dtype"]) / 1e12, peaks.bytes_per_s / 1e9
            # the roof its intensity puts it under (a latency-bound op is far below it)
            frac = ach_tf / pk_tf if c.intensity >= ridge else ach_gb / pk_gb
        else:
            ridge = pk_tf = pk_gb = frac = None
        points.append(RooflinePoint(name=g["name"], shapes=g["shapes"], dtype=g["dtype"], kind=c.kind,
                                    calls=g["calls"], flops=flops, bytes=nbytes, device_us=g["time"] / 1e3,
                                    intensity=c.intensity, achieved_tflops=ach_tf, achieved_gbps=ach_gb,
                                    bound=g["bound"], ridge=ridge, peak_tflops=pk_tf, peak_gbps=pk_gb,
                                    frac_of_peak=frac))
    above.sort(key=lambda x: -x.device_us)
    return Roofline(peaks, points, kbound, kflops, kbytes, kwhy, tuple(above))


def _best_rates(groups: list[dict], peaks: DevicePeaks) -> tuple[float, dict[str, float]]:
    """The best bytes/s and FLOP/s per dtype that the ops reach which stay under the physical limit (an op past
    ABOVE_PEAK of it is an attribution error, no rate): any op's, whichever roof it sits under, since a modelled
    cost is the least an op can move or compute; each op's at its average run or its median run, whichever is
    faster (the drills quote a kernel's median launch)."""
    best_bw, best_fl = 0.0, {}
    for g in groups:
        cost, secs = g["cost"], min(g["time"] / g["calls"], g.get("median_run_ns", math.inf)) / 1e9
        # (a foreach op's bytes count each list it names: addcmul_(v, g, g) reads g from memory once, so its rate is
        # a bound from above, never a peak the trace reached)
        if secs <= 0 or cost.kind == FOREACH_KIND:
            continue
        bw, fl = cost.bytes / secs, cost.flops / secs
        lim_bw, lim_fl = peaks.limit_bytes_per_s(), peaks.limit_flops(g["dtype"])
        if (lim_bw and bw > ABOVE_PEAK * lim_bw) or (lim_fl and fl > ABOVE_PEAK * lim_fl):
            continue
        best_bw = max(best_bw, bw)
        if fl > 0:
            best_fl[g["dtype"]] = max(best_fl.get(g["dtype"], 0.0), fl)
    return best_bw, best_fl


_HALF_TYPE = {"fp16": "c10::Half", "bf16": "c10::BFloat16"}


def _half_by_name(trace: Trace, kern: np.ndarray, k_sig: np.ndarray, n_sig: int) -> dict[int, str]:
    """Per signature whose kernels all name one half precision (turing_fp16_s1688gemm, ..._bf16_...), that precision."""
    has = k_sig >= 0
    if not has.any():
        return {}
    names, inv = name_codes(trace, kern[has])
    labels: dict = {}      # each kernel name's precision (or None) as a small code, in the order first met
    code = np.array([labels.setdefault(matrix_precision_by_name(trace.names[int(i)]), len(labels)) for i in names],
                    np.int64)[inv.ravel()]
    # a signature whose kernels all name one precision: its lowest and highest code agree (one pass over the
    # kernels, not a Python set per kernel: 110k kernels on the 293 MB trace)
    lo, hi = np.full(n_sig, len(labels), np.int64), np.full(n_sig, -1, np.int64)
    np.minimum.at(lo, k_sig[has], code)
    np.maximum.at(hi, k_sig[has], code)
    precision = list(labels)
    return {int(j): precision[lo[j]] for j in np.flatnonzero((hi >= 0) & (lo == hi)).tolist()
            if precision[lo[j]] in _HALF_TYPE}


_LIST_COPIES = ("aten::cat", "aten::stack", "aten::concat", "aten::concatenate", "aten::hstack", "aten::vstack")
_OPAQUE = re.compile(r"OpaqueType<(\d+)u?>")
_OPAQUE_DTYPE = {1: "fp8", 2: "bf16", 4: "fp32", 8: "fp64"}   # (fp16 and bf16 share every device's peaks)


def _list_element_bytes(trace: Trace, kern: np.ndarray, k_sig: np.ndarray, n_sig: int) -> dict[int, int]:
    """Per signature whose kernels all name one ATen `OpaqueType<N>` (CatArrayBatchedCopy copies N-byte elements
    whatever their type), N. opcost assumes fp32 for a TensorList, which records shapes only: a bf16 cat then
    reads twice its bytes, passes the memory's peak and is left out of the roofline as an attribution error
    (fresh12 two_tower's index concatenation, 76% of device time, sat in "unknown")."""
    has = k_sig >= 0
    if not has.any():
        return {}
    names, inv = name_codes(trace, kern[has])
    size = np.array([int(m.group(1)) if (m := _OPAQUE.search(trace.names[int(i)])) else 0 for i in names],
                    np.int64)[inv.ravel()]
    lo, hi = np.full(n_sig, 1 << 30, np.int64), np.full(n_sig, -1, np.int64)
    np.minimum.at(lo, k_sig[has], size)
    np.maximum.at(hi, k_sig[has], size)
    return {int(j): int(lo[j]) for j in np.flatnonzero((lo == hi) & (lo > 0)).tolist()}


def _list_copy_cost(cost, element_bytes: int | None):
    """A TensorList copy's cost at the element size its kernels name (None: the fp32 opcost assumed)."""
    if element_bytes is None or element_bytes not in _OPAQUE_DTYPE or element_bytes == 4:
        return cost
    return dataclasses.replace(cost, bytes=cost.bytes * element_bytes / 4, dtype=_OPAQUE_DTYPE[element_bytes])


def _kernel_facts(trace: Trace, kern: np.ndarray, op: np.ndarray, k_sig: np.ndarray,
                  n_sig: int) -> tuple[np.ndarray, np.ndarray]:
    """Per signature: whether its op launched a kernel of its own name (a wrapped user Triton kernel),
    and whether its kernels are TF32 tensor-core kernels (by name)."""
    ev = trace.ev
    has = k_sig >= 0
    if not has.any():
        return np.zeros(n_sig, bool), np.zeros(n_sig, bool)
    same = has.copy()
    same[has] = ev.name[kern[has]] == ev.name[op[has]]
    names, inv = name_codes(trace, kern[has])
    tf = np.array([is_tf32(trace.names[i]) for i in names], bool)[inv.ravel()]
    namesake = np.bincount(k_sig[same], minlength=n_sig) > 0
    tf32 = np.bincount(k_sig[has][tf], minlength=n_sig) > 0
    return namesake, tf32


def _place(g: dict, peaks: DevicePeaks | None) -> tuple[Bound, AbovePeak | None]:
    """An op's bound from its place against its device's roofs, or the reason it has no place: above a peak."""
    cost, dtype, calls, time_ns = g["cost"], g["dtype"], g["calls"], g["time"]
    if peaks is None:
        # no roofs to measure against: a kernel of a few µs is latency-bound whatever its intensity (its launch and
        # ramp are most of it; heldout-user3 wenlu_train_opt_4090m, an unlisted laptop GPU: a 32x100 MLP's 1-3 µs
        # kernels read '17% compute-bound and 44% memory-bound'); else dense kinds do far more arithmetic per byte
        # than any GPU's ridge
        if calls and time_ns / calls < TINY_KERNEL_NS:
            return Bound.LATENCY, None
        # ... nor is one of under 10 µs on a working set the L2 holds (heldout-user19 gp_fusion, an unnamed GPU:
        # [1024, 128] fp32 layer_norm and tanh kernels of 4-8 µs on 1 MB, 0.1-0.25 TB/s, read '80% memory-bound')
        if calls and time_ns / calls < SHORT_KERNEL_NS and cost.bytes <= CACHED_BYTES:
            return Bound.LATENCY, None
        # ... except a dense op whose shapes give fewer FLOPs per byte than the lowest ridge of any device in the
        # table: memory-bound wherever it runs (a tall-skinny fp16 GEMM, [131072, 32] @ [32, 32]: 16 FLOP/byte)
        dense = cost.kind in _DENSE_KINDS and not cost.intensity < lowest_ridge(dtype)
        return (Bound.COMPUTE if dense else Bound.MEMORY), None
    secs = time_ns / 1e9
    ach_tf = cost.flops * calls / secs / 1e12 if secs > 0 else 0.0
    ach_gb = cost.bytes * calls / secs / 1e9 if secs > 0 else 0.0
    # above the physical limit (the datasheet's, where measured ceilings sit under it): an attribution error
    lim_tf, lim_gb = peaks.limit_flops(dtype) / 1e12, peaks.limit_bytes_per_s() / 1e9
    over_tf = ach_tf / lim_tf if lim_tf > 0 else 0.0
    over_gb = ach_gb / lim_gb if lim_gb > 0 else 0.0
    if max(over_tf, over_gb) > ABOVE_PEAK:
        flops_side = over_tf >= over_gb
        return Bound.UNKNOWN, AbovePeak(name=g["name"], shapes=g["shapes"], dtype=dtype, calls=calls,
                                        device_us=time_ns / 1e3, achieved=ach_tf if flops_side else ach_gb,
                                        peak=lim_tf if flops_side else lim_gb, unit="TFLOP/s" if flops_side else "GB/s")
    pk_tf, pk_gb = peaks.flops(dtype) / 1e12, peaks.bytes_per_s / 1e9
    f_tf = ach_tf / pk_tf if pk_tf > 0 else 0.0
    f_gb = ach_gb / pk_gb if pk_gb > 0 else 0.0
    if f_tf < LATENCY_SHARE and f_gb < LATENCY_SHARE:
        return Bound.LATENCY, None
    return (Bound.COMPUTE if cost.intensity >= peaks.ridge(dtype) else Bound.MEMORY), None


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
    intensity: float | None     # FLOPs / bytes over the costed ops of the verdict's bound (compute, memory),
                                # over all costed kernels for the other verdicts
    ridge: float | None
    dtype: str | None
    uncosted_share: float = 0.0     # unknown_us / the kernel time that votes (all but communication)
    uncosted_why_us: dict = field(default_factory=dict)   # UNCOSTED_WHY value -> µs of kernels with no bound,
                                                          # largest first
    latency_us: float = 0.0         # kernel time far below both roofs (latency-bound)
    latency_peak_share: float | None = None   # latency-bound kernels' achieved share of the nearer peak
    communication: Communication | None = None   # the span's collectives, exposed and why (None: it has none)
    fp32_cuda_core_us: float = 0.0  # kernel time in fp32 GEMMs/convolutions on CUDA cores, by the kernels' names
    fp32_cuda_core_kernels: tuple[str, ...] = ()   # the longest of them (at most two), longest first
    # compute/memory: the verdict's bound's kernel time placed by kernel names alone, by why no op costs it
    # (UNCOSTED_WHY value -> µs), largest first: why its rate is not said (the words only, not the JSON)
    named_why_us: dict = field(default_factory=dict, metadata={"json": False})
    # the kernel time (µs) placed compute-, memory- or latency-bound by the kernels' names alone (no op's shapes cost
    # them), per bound: kept where a trace without shapes withholds the split (triage.regime_withheld), so the words
    # can say a split is a guess from names (heldout-user18: splits stated for runtime-only captures as if measured)
    guessed_us: tuple = field(default=(0.0, 0.0, 0.0), metadata={"json": False})
    # the costed ops of another precision that hold OTHER_PRECISION_NAMED of the costed time, each (dtype, FLOP/byte,
    # its ridge), most time first: an average across precisions sits against no one ridge (heldout-user15 fmnist_amp:
    # fp16 tensor-core GEMMs and an fp32 Adam step read 'its ops average 26.1 FLOP/byte against a fp32 ridge of 25.3')
    other_precisions: tuple = ()

    @property
    def guessed_share(self) -> float:
        """The share of the compute-, memory- and latency-bound kernel time placed by the kernels' names alone."""
        placed = self.compute_us + self.memory_us + self.latency_us
        return min(1.0, sum(self.guessed_us) / placed) if placed > 0 else 0.0

    @property
    def memory_by_names(self) -> bool:
        """Most of the kernel time that votes reads memory-bound by the kernels' names (elementwise kernels,
        reductions, copies): the bound a span without shapes is guessed to have."""
        voting = self.kernel_us - self.comm_us
        return voting > 0 and self.guessed_us[1] >= NAMED_BOUND_MAJORITY * voting

    @property
    def compute_by_names(self) -> bool:
        """Most of the kernel time that votes reads compute-bound by the kernels' names (GEMMs and convolutions with
        their tensor-core tiles): the bound a span without shapes is guessed to have (transformer_nuggets' qlora bench
        with its own NF4 dequantize, record_shapes off: 76% of its kernel time in ampere_bf16_s16816gemm_..._256x128
        kernels, read "unknown ... which roof holds them is what the shapes would tell")."""
        voting = self.kernel_us - self.comm_us
        return voting > 0 and self.guessed_us[0] >= NAMED_BOUND_MAJORITY * voting

    @property
    def split_by_names(self) -> bool:
        """The kernels' names place most of the kernel time that votes (compute- and memory-bound together, at
        NAMED_BOUND_MAJORITY or more) though neither bound alone holds that majority: a split a span without shapes
        can say as a guess (the qlora bench with bitsandbytes: 45% of its kernel time bf16 GEMMs, 54% the weights'
        dequantize, casts and elementwise ops, read "unknown ... which roof holds them is what the shapes would
        tell")."""
        voting = self.kernel_us - self.comm_us
        return (voting > 0 and not self.compute_by_names and not self.memory_by_names
                and self.guessed_us[0] > 0 and self.guessed_us[1] > 0
                and self.guessed_us[0] + self.guessed_us[1] >= NAMED_BOUND_MAJORITY * voting)

    @property
    def kernel_us(self) -> float:
        return self.compute_us + self.memory_us + self.unknown_us + self.comm_us + self.latency_us

    @property
    def unknown_worth_naming(self) -> bool:
        """Kernel time with no bound is a share the Regime line names beside the two bounds."""
        return self.unknown_us > UNKNOWN_NAMED * self.kernel_us

    @property
    def mostly_fp32_cuda_core(self) -> bool:
        """Most of the kernel time that votes is fp32 GEMMs/convolutions on CUDA cores, by the kernels' names."""
        voting = self.kernel_us - self.comm_us
        return voting > 0 and self.fp32_cuda_core_us >= FP32_MATH_MAJORITY * voting

    @property
    def compute_on_cuda_cores(self) -> bool:
        """Most of the compute-bound kernel time is fp32 GEMMs/convolutions on CUDA cores (sgemm, scudnn), by the
        kernels' names: their peak is the SIMT fp32 one, with the tensor cores unused."""
        return self.compute_us > 0 and self.dtype == "fp32" and self.fp32_cuda_core_us >= 0.5 * self.compute_us

    @property
    def latency_worth_naming(self) -> bool:
        """Latency-bound kernel time is a share the Regime line names beside the two roofs (whenever it shows as
        a whole percent: the named shares then add up to 100%)."""
        return self.latency_us >= LATENCY_NAMED * self.kernel_us


def regime(trace: Trace, roof: Roofline, kernel_rows: np.ndarray, idle_share: float,
           peer_transfer_ns: tuple[int, ...] | None = None, recurring_idle: float | None = None) -> RegimeVerdict:
    """The span's regime and the figures it rests on; `peer_transfer_ns`: its collectives' transfers measured
    against every rank (tracetriage.analyzers.analyses.comm); `recurring_idle`: the idle share with the one-time
    set-up's gaps out of the idle and the span (triage.recurring), which decides an idle-bound span where given (the
    verdict keeps `idle_share`, the span's own)."""
    ev = trace.ev
    dur = (ev.end[kernel_rows] - ev.start[kernel_rows]).astype(np.float64)
    b = roof.kernel_bound[kernel_rows]
    comp, mem, unk, comm, lat = (float(dur[b == x].sum()) for x in (COMPUTE, MEMORY, UNKNOWN, COMM, LATENCY))
    voting = comp + mem + unk + lat
    uncosted = unk / voting if voting > 0 else (1.0 if comm > 0 else 0.0)
    why_us = []
    if roof.kernel_why is not None and unk > 0:
        w = roof.kernel_why[kernel_rows]
        for code, name in UNCOSTED_WHY.items():
            t = float(dur[(b == UNKNOWN) & (w == code)].sum())
            if t > 0:
                why_us.append((name, round(t / 1e3, 3)))
    why_us.sort(key=lambda x: -x[1])
    communication = comm_mod.analyze(trace, kernel_rows, peer_transfer_ns)
    if (idle_share if recurring_idle is None else recurring_idle) > OVERHEAD_IDLE_SHARE:
        verdict = Regime.OVERHEAD
    elif communication is not None and communication.bound:
        verdict = Regime.COMMUNICATION
    elif uncosted > UNKNOWN_MAJORITY:
        verdict = Regime.UNKNOWN
    elif lat > comp and lat > mem:   # most of the kernel time is under neither roof
        verdict = Regime.LATENCY
    else:
        verdict = Regime.COMPUTE if comp > mem else Regime.MEMORY
    fl, by = roof.kernel_flops[kernel_rows], roof.kernel_bytes[kernel_rows]
    known = by > 0
    intensity = float(fl[known].sum() / by[known].sum()) if known.any() and by[known].sum() > 0 else None
    # the achieved rates are those of the winning bound's kernels; an overhead-bound span's, of the bound that holds
    # most of its kernel time (all of a tiny chain's kernels may sit under neither roof)
    held = {COMPUTE: comp, MEMORY: mem, LATENCY: lat}
    win_bound = {Regime.COMPUTE: COMPUTE, Regime.LATENCY: LATENCY, Regime.MEMORY: MEMORY}.get(
        verdict, max(held, key=held.get) if lat > mem and lat > comp else MEMORY)
    win = known & (b == win_bound)
    if verdict in (Regime.UNKNOWN, Regime.COMMUNICATION):
        win = np.zeros(len(kernel_rows), bool)   # no bound won: no achieved rate to quote
    elif float(dur[win].sum()) < RATE_FROM_COSTED * held.get(win_bound, 0.0):
        # the bound's kernels are nearly all placed by their names (a multi_tensor_apply optimizer step that recorded
        # no list shapes): the few costed ones' rate is not the bound's (heldout-user13 compiled-graphs read "0.013
        # GB/s" from 0.02% of its memory-bound time; gpt-graphs' 13%, its costed ops outside the graphs, still says it)
        win = np.zeros(len(kernel_rows), bool)
    secs = float(dur[win].sum()) / 1e9
    ach_tf = float(fl[win].sum()) / secs / 1e12 if secs > 0 else None
    ach_gb = float(by[win].sum()) / secs / 1e9 if secs > 0 else None
    dtype = _dominant_dtype(roof, _uncosted_matrix_precision(trace, kernel_rows, dur, fl))
    ridge = roof.peaks.ridge(dtype) if roof.peaks is not None and dtype else None
    bound = BOUND_OF_REGIME.get(verdict)
    if verdict in (Regime.COMPUTE, Regime.MEMORY):
        intensity = _bound_intensity(roof, bound, dtype)
    elif dtype is not None and len({p.dtype for p in roof.points}) > 1:   # one precision's ops against its ridge
        intensity = _bound_intensity(roof, None, dtype)
    others = _other_precisions(roof, bound, dtype)
    lat_share = None
    if verdict is Regime.LATENCY and roof.peaks is not None and ach_gb is not None:
        lat_share = max(ach_gb * 1e9 / roof.peaks.bytes_per_s, (ach_tf or 0.0) * 1e12 / roof.peaks.flops(dtype))
    fp32_us, fp32_names = _fp32_cuda_core_math(trace, kernel_rows, dur)
    by_name = roof.kernel_why[kernel_rows] != 0 if roof.kernel_why is not None else np.zeros(len(kernel_rows), bool)
    guessed = tuple(round(float(dur[by_name & (b == x)].sum()) / 1e3, 3) for x in (COMPUTE, MEMORY, LATENCY))
    return RegimeVerdict(verdict, idle_share, comp / 1e3, mem / 1e3, unk / 1e3, comm / 1e3, ach_tf, ach_gb, intensity,
                         ridge, dtype, uncosted, dict(why_us), latency_us=lat / 1e3, latency_peak_share=lat_share,
                         communication=communication, fp32_cuda_core_us=fp32_us, fp32_cuda_core_kernels=fp32_names,
                         named_why_us=_named_why_us(roof, kernel_rows, dur, b, BOUND_CODE.get(verdict)),
                         other_precisions=others, guessed_us=guessed)


BOUND_CODE = {Regime.COMPUTE: COMPUTE, Regime.MEMORY: MEMORY}


def _named_why_us(roof: Roofline, kernel_rows: np.ndarray, dur: np.ndarray, b: np.ndarray,
                  bound: int | None) -> dict[str, float]:
    """The kernel time (µs) of one bound placed by its kernels' names alone, by why no op costs it, largest first:
    what the Regime line says where that bound's rate is not in the trace (leimao's CUDA-graph replays, recorded with
    shapes, read '(their FLOPs are not in the trace: no shapes recorded)')."""
    if bound is None or roof.kernel_why is None or not len(kernel_rows):
        return {}
    w = roof.kernel_why[kernel_rows]
    mine = (b == bound) & (w != 0)
    out = {name: round(float(dur[mine & (w == code)].sum()) / 1e3, 3) for code, name in UNCOSTED_WHY.items()}
    return dict(sorted(((k, t) for k, t in out.items() if t > 0), key=lambda x: -x[1]))


BOUND_OF_REGIME = {Regime.COMPUTE: Bound.COMPUTE, Regime.MEMORY: Bound.MEMORY}


def _bound_intensity(roof: Roofline, bound: Bound | None, dtype: str | None) -> float | None:
    """FLOPs / bytes over the ops the verdict names (those of its bound, None: any, in the precision whose ridge the
    line states): each sits on its side of that ridge, so their average does too. Over every costed op, a memory-bound
    span's few large GEMMs outweigh its elementwise kernels in FLOPs: fresh8's ctr read "memory-bound ... its ops
    average 80 FLOP/byte against a fp32 ridge of 19.9"."""
    pts = [p for p in roof.points if (bound is None or p.bound is bound) and p.dtype == dtype]
    flops, moved = sum(p.flops for p in pts), sum(p.bytes for p in pts)
    return flops / moved if moved > 0 else None


OTHER_PRECISION_NAMED = 0.20   # a second precision's costed ops holding this share of the costed time get their ridge


def _other_precisions(roof: Roofline, bound: Bound | None, dtype: str | None) -> tuple:
    """(dtype, FLOP/byte, ridge) of each precision other than `dtype` whose costed ops (of `bound`, None: any) hold
    OTHER_PRECISION_NAMED of the costed device time, most time first."""
    if roof.peaks is None or dtype is None:
        return ()
    pts = [p for p in roof.points if bound is None or p.bound is bound]
    total = sum(p.device_us for p in pts)
    by: dict[str, float] = {}
    for p in pts:
        by[p.dtype] = by.get(p.dtype, 0.0) + p.device_us
    out = []
    for d, us in sorted(by.items(), key=lambda x: -x[1]):
        x = _bound_intensity(roof, bound, d)
        if d != dtype and total > 0 and us >= OTHER_PRECISION_NAMED * total and x is not None:
            out.append((d, x, roof.peaks.ridge(d)))
    return tuple(out)


def _fp32_cuda_core_math(trace: Trace, kernel_rows: np.ndarray, dur: np.ndarray) -> tuple[float, tuple[str, ...]]:
    """The kernel time (µs) of fp32 GEMMs and convolutions on CUDA cores, read from the kernels' names, and the
    longest two of them: what a trace recorded without shapes still says about its arithmetic (heldout-user3
    hpdl_vgg16_t4: volta_sgemm_* and cudnn_volta_scudnn_* at 99% busy read 'nothing else to decide by')."""
    if not len(kernel_rows):
        return 0.0, ()
    # the names first (one scatter): most traces run no such kernel, and then no per-row codes are needed (the
    # report asks this of each regime it judges: x5's 5 of ~300k kernels each)
    if not any(is_fp32_cuda_core_math(trace.names[n]) for n in distinct_names(trace, kernel_rows).tolist()):
        return 0.0, ()
    names, inv = name_codes(trace, kernel_rows)
    per_name = np.bincount(inv.ravel(), weights=dur, minlength=len(names))
    fp32 = np.array([is_fp32_cuda_core_math(trace.names[int(n)]) for n in names], bool)
    order = [i for i in np.argsort(-per_name, kind="stable") if fp32[i]]
    return float(per_name[fp32].sum()) / 1e3, tuple(trace.names[int(names[i])] for i in order[:2])


def _uncosted_matrix_precision(trace: Trace, kernel_rows: np.ndarray, dur: np.ndarray,
                                flops: np.ndarray) -> dict[str, float]:
    """Kernel time (µs) by precision of the GEMMs and convolutions no op costed, read from their names: a graph
    replay's or a compiled region's GEMMs carry no shapes, but their names say bf16 (fresh4 mlp_gemm_roof-after:
    nvjet_sm90_tst_* bf16 GEMMs at 84% of kernel time judged against an fp32 ridge from the few ops with shapes)."""
    out: dict[str, float] = {}
    rows = flops <= 0
    if not rows.any():
        return out
    uncosted = kernel_rows[rows]
    # (the names first: where none of them says a precision, no per-row codes are needed)
    if all(matrix_precision_by_name(trace.names[n]) is None for n in distinct_names(trace, uncosted).tolist()):
        return out
    names, inv = name_codes(trace, uncosted)
    per_name = np.bincount(inv.ravel(), weights=dur[rows], minlength=len(names))
    for n, us in zip(names.tolist(), (per_name / 1e3).tolist()):
        p = matrix_precision_by_name(trace.names[int(n)])
        if p is not None:
            out[p] = out.get(p, 0.0) + us
    return out


def _dominant_dtype(roof: Roofline, uncosted: dict[str, float] | None = None) -> str | None:
    """The precision holding most of the costed ops' device time, with the uncosted GEMMs' and convolutions' time
    (by their names) counted beside it."""
    by: dict[str, float] = dict(uncosted or {})
    for p in roof.points:
        by[p.dtype] = by.get(p.dtype, 0.0) + p.device_us
    return max(by, key=by.get) if by else None


def guessed_why_us(trace: Trace, roof: Roofline, kernel_rows: np.ndarray) -> dict[str, float]:
    """The kernel time (µs) bounded by its kernel's name alone (no op's cost), by why no op costs it: the split
    the Regime line says once a trace without shapes withholds the name-guessed bounds. Kernels costed by their
    op's shapes carry no why and are left out. (A graph replay's kernels are name-guessed as often as eager ones:
    lumping every guessed kernel into 'no shapes' swapped the split on a vLLM decode, 57% replays read as 43%.)"""
    if roof.kernel_why is None or not len(kernel_rows):
        return {}
    ev = trace.ev
    dur = (ev.end[kernel_rows] - ev.start[kernel_rows]).astype(np.float64)
    b, w = roof.kernel_bound[kernel_rows], roof.kernel_why[kernel_rows]
    guessed = np.isin(b, (COMPUTE, MEMORY, LATENCY)) & (w != 0)
    out = {name: round(float(dur[guessed & (w == code)].sum()) / 1e3, 3) for code, name in UNCOSTED_WHY.items()}
    return {k: t for k, t in out.items() if t > 0}
