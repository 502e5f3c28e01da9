"""What the GPU's execution model adds to the Regime line, where it matters: the top kernel's occupancy when it
decides nothing (low, yet the kernel is at a roof) or everything (low, and the kernel far below both roofs), and a
`.contiguous()` copy made for a coalesced consumer, costed both ways.

Both need what the columnar trace does not keep (launch arguments, Input Strides: tracetriage.analyzers.loading.
launch_args), read in a second pass over the file; that pass is made only when the trace's own figures say the
note may apply (a top kernel at a roof or latency-bound; a copy or a strided elementwise kernel among the top
kernels), and only for a file under LAUNCH_ARGS_MAX_BYTES.

Input: the Trace, its Roofline, the regime verdict and the kernel rows it voted on. Output: ExecutionNotes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses import occupancy as occ_mod
from tracetriage.analyzers.analyses import strided as strided_mod
from tracetriage.analyzers.analyses.roofline import Roofline, shape_str
from tracetriage.analyzers.model.trace import NONE, Trace, TraceError
from tracetriage.analyzers.model.verdicts import Experiment, Regime

LAUNCH_ARGS_MAX_BYTES = 128 << 20   # the second pass costs ~0.7 s per 100 MB of JSON (msgspec, one core): past a
                                    # 128 MB file (gzipped, ~1 GB of JSON) the notes are not worth the wait
STRIDED_KERNEL = "void at::native::elementwise_kernel"   # TensorIterator's path for operands it cannot vectorise
COPY_OPS = ("aten::copy_", "aten::clone", "aten::contiguous")
TOP_KERNELS = 3        # a copy or a strided kernel among the three with the most device time is worth a look
NOTE_EXTRA_SHARE = 0.5  # a strided read is named when its sectors at worst add half its op's bytes or more
# Where the notes matter: a Next that works on the kernels themselves. Beside a Next that removes idle time (syncs,
# launches, host work) the kernels' occupancy decides nothing the reader will do this week.
KERNEL_EXPERIMENTS = (Experiment.CHEAPER_ARITHMETIC, Experiment.FEWER_BYTES, Experiment.BETTER_KERNELS,
                      Experiment.FUSE)


@dataclass(frozen=True)
class OccupancyNote:
    kernel: str
    shape: occ_mod.LaunchShape
    verdict: occ_mod.OccupancyVerdict
    device_share: float       # of the kernel time voted on


@dataclass(frozen=True)
class TransposeNote:
    costing: strided_mod.CopyCosting | None      # a copy that feeds a coalesced consumer, both ways
    strided: strided_mod.OpLayout | None          # else the op with the most device time that reads a strided operand


@dataclass(frozen=True)
class ExecutionNotes:
    occupancy: OccupancyNote | None = None
    transpose: TransposeNote | None = None


def notes(trace: Trace, roof: Roofline, regime: Regime, rows: np.ndarray, nxt: Experiment) -> ExecutionNotes | None:
    """The notes worth saying on this trace beside its Next; None when there are none."""
    if nxt not in KERNEL_EXPERIMENTS:
        return None
    found = _notes(trace, roof, regime, rows)
    return found if found.occupancy is not None or found.transpose is not None else None


def _notes(trace: Trace, roof: Roofline, regime: Regime, rows: np.ndarray) -> ExecutionNotes:
    ev = trace.ev
    if not len(rows) or roof is None or roof.peaks is None:
        return ExecutionNotes()
    names = ev.name[rows]
    dur = (ev.end[rows] - ev.start[rows]).astype(np.float64)
    total = float(dur.sum())
    ids, inv = np.unique(names, return_inverse=True)
    by_time = np.bincount(inv, weights=dur)
    order = np.argsort(-by_time)
    top = int(ids[order[0]])
    mine = rows[names == top]
    top_name = trace.names[top]
    top_rate = _rates(trace, roof, mine)
    # only where the Regime line speaks of the kernels (not an overhead-bound trace, whose kernels wait on the host)
    want_occ = regime is Regime.LATENCY or (regime in (Regime.COMPUTE, Regime.MEMORY) and top_rate is not None
                                            and top_rate[2] >= occ_mod.NEAR_ROOF)
    top_ids = ids[order[:TOP_KERNELS]]
    top_ops = trace.launching_op(rows[np.isin(names, top_ids)])
    want_tr = regime is Regime.MEMORY and (
        any(trace.names[int(i)].startswith(STRIDED_KERNEL) for i in top_ids)
        or any(trace.names[ev.name[op]] in COPY_OPS for op in top_ops.tolist() if op != NONE))
    if not (want_occ or want_tr) or not _readable(trace.path):
        return ExecutionNotes()
    from tracetriage.analyzers.loading.launch_args import read_launch_args

    try:
        args = read_launch_args(trace.path)
    except TraceError:
        return ExecutionNotes()
    return ExecutionNotes(occupancy=_occupancy(args, roof, top_name, top_rate, float(by_time[order[0]]) / total)
                          if want_occ and top_rate is not None else None,
                          transpose=_transpose(trace, args) if want_tr else None)


def _readable(path: str) -> bool:
    try:
        return os.path.getsize(path) <= LAUNCH_ARGS_MAX_BYTES
    except OSError:
        return False


def _rates(trace: Trace, roof: Roofline, kernels: np.ndarray) -> tuple[float, float, float, str] | None:
    """(GB/s, TFLOP/s, share of the nearer roof, its dtype) of a kernel's launches, from the FLOPs and bytes the
    roofline charged them; None when it charged none."""
    ev = trace.ev
    nbytes, flops = float(roof.kernel_bytes[kernels].sum()), float(roof.kernel_flops[kernels].sum())
    t = float((ev.end[kernels] - ev.start[kernels]).sum())
    if not t or not (nbytes or flops):
        return None
    dtype = _dtype(trace, roof, kernels[0])
    gbps, tflops = nbytes / t, flops / t / 1e3
    pk_gbps, pk_tflops = _peaks(roof, dtype)
    share = max(gbps / pk_gbps, tflops / pk_tflops if pk_tflops else 0.0)
    return gbps, tflops, share, dtype or ""


def _peaks(roof: Roofline, dtype: str | None) -> tuple[float, float | None]:
    """The peaks the Regime line names (measured ceilings where the trace has them, else the datasheet's)."""
    pk = roof.peaks
    assert pk is not None      # notes() returns early on a roofline without peaks
    return pk.bytes_per_s / 1e9, (pk.flops(dtype) / 1e12 if dtype else None)


def _dtype(trace: Trace, roof: Roofline, kernel_row: int) -> str | None:
    op = int(trace.launching_op(np.array([kernel_row]))[0])
    if op == NONE:
        return None
    key = (trace.names[trace.ev.name[op]], shape_str(trace.shapes(op)[0]))
    return next((p.dtype for p in roof.points if (p.name, p.shapes) == key), None)


def _occupancy(args, roof: Roofline, kernel: str, rate, share: float) -> OccupancyNote | None:
    shapes = [s for s in occ_mod.launch_shapes(args) if s.kernel == kernel]
    if not shapes:
        return None
    s = shapes[0]
    gbps, tflops, _, dtype = rate
    v = occ_mod.verdict(s, gbps, tflops, *_peaks(roof, dtype or None))
    if s.achieved_pct >= occ_mod.LOW_OCCUPANCY:
        return None            # occupancy is not low: nothing to say about it
    return OccupancyNote(kernel=kernel, shape=s, verdict=v, device_share=share)


def _transpose(trace: Trace, args) -> TransposeNote | None:
    found = strided_mod.layouts(trace, args.ops)
    costed = strided_mod.copy_costings(found)
    if costed:
        return TransposeNote(costing=max(costed, key=lambda c: c.copy_us), strided=None)
    strided = [o for o in found if o.kind == "elementwise" and o.strided_reads
               and o.sector_bytes >= (1 + NOTE_EXTRA_SHARE) * o.bytes]
    if strided:
        return TransposeNote(costing=None, strided=max(strided, key=lambda o: o.kernel_us))
    return None
