"""The bytes a transposed read really moves: each op's operands read against the kernel's iteration order.

A GPU serves a warp's load in 32-byte sectors. A kernel walks its output in memory order, 32 neighbouring
elements per warp; an input laid out the same way gives the warp neighbouring addresses (4 sectors for 32 fp32),
one read through a transposed view gives addresses a whole row apart: one sector per element, of which the
element uses 4 bytes (fp32) or 2 (bf16). So a strided operand asks for up to 32 / element-size times its bytes in
sectors (8x for fp32); the L2 cache may keep a sector until the neighbouring columns' reads arrive, so what DRAM
moves lies between the two: the sector count is the worst case, the trace's kernel time says where it landed.

Which operand is strided is read from Input Strides (record_shapes=True records them):
- elementwise ops (TensorIterator): the output takes the layout of the first full-size input, so in
  `x.t() + y` it is `y`, not the transposed `x`, that is read against its layout;
- copy_(dst, src): the walk follows dst, so a transposed src is read strided (`.contiguous()` of a `.t()`);
- matmuls: a transposed operand is a flag to the BLAS library (op(B) = B^T), read in tiles: free.

Input: tracetriage.analyzers.model.launch_args.OpStrides (and the Trace, for each op's device time).
Output: OpLayout per op that reads a tensor; `copy_costing` for a copy made to feed a coalesced consumer.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.opargs import bytes_of
from tracetriage.analyzers.analyses.opcost import op_cost
from tracetriage.analyzers.model.dtypes import normalise_dtype
from tracetriage.analyzers.model.launch_args import OpStrides
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, NONE, Trace

SECTOR = 32     # bytes: the unit a warp's global load is served in (L2 and DRAM)
LAYOUT_KINDS = ("elementwise", "copy")   # TensorIterator kernels: they walk the output in memory order
FREE_KINDS = ("matmul",)                 # a transposed operand is a flag to cuBLAS


@dataclass(frozen=True)
class OperandRead:
    arg: int                   # the argument's position in the op
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    inner_stride: int          # elements between the neighbours a warp reads (0: broadcast, 1: coalesced)
    useful_bytes: int          # the operand's bytes
    sector_bytes: int          # the sectors its reads ask for, at worst (no sector kept in L2 between reads)

    @property
    def strided(self) -> bool:
        return self.inner_stride > 1

    @property
    def amplification(self) -> float:
        return self.sector_bytes / self.useful_bytes if self.useful_bytes else 1.0


@dataclass(frozen=True)
class OpLayout:
    op: str
    row: int                   # the op's row in the Trace (NONE: not found)
    kind: str                  # elementwise | copy | matmul
    reads: tuple[OperandRead, ...]
    transposed_free: bool      # a matmul given a transposed operand: the library reads it as a flag
    kernel_us: float           # device time of the kernels it launched
    bytes: float               # the op's minimum bytes (opcost): every input read once, the output written once

    @property
    def strided_reads(self) -> tuple[OperandRead, ...]:
        return tuple(r for r in self.reads if r.strided)

    @property
    def sector_bytes(self) -> float:
        """The op's bytes with its strided operands counted in sectors: its traffic at worst."""
        return self.bytes + sum(r.sector_bytes - r.useful_bytes for r in self.strided_reads)


def fastest_dim(dims: tuple[int, ...], strides: tuple[int, ...]) -> int | None:
    """The dimension whose neighbours lie next to each other (the smallest non-zero stride of a dim longer than
    1); None for a scalar or a tensor of one element."""
    cand = [(s, -i) for i, (d, s) in enumerate(zip(dims, strides)) if d > 1 and s > 0]
    return -min(cand)[1] if cand else None


def operand_reads(dims_list: list, strides_list: list, types: list, kind: str) -> tuple[OperandRead, ...]:
    """The tensor inputs of one op, each with the stride the kernel's walk gives it. The walk follows the output,
    whose layout is the first full-size input's (elementwise) or the destination's (copy_'s first argument)."""
    tensors = []
    for i, (d, s, t) in enumerate(zip(dims_list, strides_list, types)):
        dt = normalise_dtype(t) if isinstance(t, str) else None
        if dt is None or not isinstance(d, list) or not isinstance(s, list) or len(d) != len(s) or not d:
            continue
        if not all(isinstance(x, int) for x in d + s):
            continue
        tensors.append((i, tuple(d), tuple(s), dt))
    if not tensors:
        return ()
    numel = [int(np.prod(d)) for _, d, _, _ in tensors]
    full = max(numel)
    lead = next(t for t, n in zip(tensors, numel) if n == full)   # the first full-size tensor sets the walk
    walk = fastest_dim(lead[1], lead[2])
    out = []
    for (i, d, s, dt), n in zip(tensors, numel):
        elem = bytes_of(dt)
        if walk is None or len(d) != len(lead[1]) or kind not in LAYOUT_KINDS:
            inner = 1
        else:
            inner = s[walk] if d[walk] > 1 else 1
        per_elem = elem if inner <= 1 else min(SECTOR, inner * elem)
        out.append(OperandRead(arg=i, dims=d, strides=s, dtype=dt, inner_stride=int(inner), useful_bytes=n * elem,
                               sector_bytes=(n * per_elem) if inner > 0 else elem))
    return tuple(out)


def layouts(trace: Trace, ops: OpStrides) -> tuple[OpLayout, ...]:
    """Each op the cost models know as elementwise, a copy or a matmul that launched a kernel itself, with its
    operands' reads and its device time, in the order they ran."""
    ev = trace.ev
    cpu = np.flatnonzero(ev.cat == CPU_OP)
    row_of = {(int(ev.tid[r]), int(ev.start[r])): int(r) for r in cpu}
    kern = np.flatnonzero(ev.cat == KERNEL)
    owner = trace.launching_op(kern)
    busy: dict[int, float] = {}
    for r, o in zip(kern.tolist(), owner.tolist()):
        if o != NONE:
            busy[o] = busy.get(o, 0.0) + float(ev.end[r] - ev.start[r]) / 1e3
    out = []
    for i in range(len(ops)):
        row = row_of.get((int(ops.tid[i]), int(ops.start[i])), NONE)
        if row == NONE or row not in busy:
            continue                 # only the op that launched the kernel: its caller would count it twice
        dims, strides, types = ops.args(i)
        cost = op_cost(ops.name[i], dims, types)
        if cost is None or cost.kind not in LAYOUT_KINDS + FREE_KINDS:
            continue
        reads = operand_reads(dims, strides, types, cost.kind)
        free = cost.kind in FREE_KINDS and any(_transposed(r) for r in reads)
        out.append(OpLayout(op=ops.name[i], row=row, kind=cost.kind, reads=reads, transposed_free=free,
                            kernel_us=busy[row], bytes=float(cost.bytes)))
    return tuple(out)


def _transposed(r: OperandRead) -> bool:
    """A 2-D (or batched) operand whose last dimension is not its contiguous one."""
    return len(r.dims) >= 2 and r.dims[-1] > 1 and r.strides[-1] != 1


# --- a copy that buys a coalesced consumer, costed both ways ----------------------------------------------------

@dataclass(frozen=True)
class CopyCosting:
    copy: OpLayout             # the copy_ that reads a strided source into a contiguous tensor
    consumer: OpLayout         # the next op on its thread that reads a tensor of the copy's shape, coalesced
    copy_us: float
    consumer_us: float
    copy_bytes: float          # what the copy moves: its source read (in sectors, at worst) and its output written
    consumer_bytes: float
    strided_consumer_bytes: float   # the consumer's bytes had it read the source through the view (sectors, at worst)
    consumers: int = 1         # the ops that read the copy coalesced before the next copy (one copy serves them all)

    @property
    def with_copy_us(self) -> float:
        return self.copy_us + self.consumer_us

    @property
    def through_view_us(self) -> float:
        """The consumer's time had it read the view: its measured time scaled by its sectors at worst (an upper
        bound: the L2 keeps part of the sectors, and the copy itself read them strided in the same way)."""
        return self.consumer_us * self.strided_consumer_bytes / self.consumer_bytes if self.consumer_bytes else 0.0

    @property
    def break_even_consumers(self) -> int | None:
        """How many consumers one copy must serve to pay for itself, with each strided read at its worst: the
        copy's time over what one coalesced read saves (None when the view's read would cost nothing more)."""
        import math

        saved = self.through_view_us - self.consumer_us
        return max(1, math.ceil(self.copy_us / saved)) if saved > 0 else None


def _readers(after: tuple[OpLayout, ...], src: OperandRead) -> int:
    """The elementwise ops that read a tensor of the copy's shape coalesced, up to the next copy."""
    n = 0
    for o in after:
        if o.kind == "copy":
            break
        n += o.kind == "elementwise" and any(r.dims == src.dims and not r.strided for r in o.reads)
    return max(n, 1)


LOOKAHEAD = 4   # ops after a copy in which its consumer is looked for (`xt = x.t().contiguous(); out = xt + y`)


def copy_costings(found: tuple[OpLayout, ...]) -> tuple[CopyCosting, ...]:
    """Each copy_ of a strided source into a contiguous tensor followed, within LOOKAHEAD ops, by an elementwise op
    that reads a tensor of that shape coalesced: the copy and what it bought, and the consumer's bytes had it read
    the source through the view. One per copy."""
    out = []
    for i, c in enumerate(found):
        if c.kind != "copy" or not c.strided_reads or len(c.reads) < 2:
            continue
        src = c.strided_reads[0]
        for u in found[i + 1:i + 1 + LOOKAHEAD]:
            if u.kind != "elementwise":
                continue
            same = [r for r in u.reads if r.dims == src.dims and not r.strided]
            if not same:
                continue
            r = same[0]
            extra = src.sector_bytes - r.useful_bytes
            out.append(CopyCosting(copy=c, consumer=u, copy_us=c.kernel_us, consumer_us=u.kernel_us,
                                   copy_bytes=c.sector_bytes, consumer_bytes=u.bytes,
                                   strided_consumer_bytes=u.bytes + extra, consumers=_readers(found[i + 1:], src)))
            break
    return tuple(out)
