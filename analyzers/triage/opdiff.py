"""The per-op diff: each op's device time, calls, kernels and bytes before and after, largest change first.

    rows = op_diff(analyze_file(BEFORE), analyze_file(AFTER))

An op is keyed by its name, as the hotspots group GPU work (the op that launched it, or the kernel's own
name when no op did: Inductor's Triton launches, CUDA-graph replays), so `aten::mm` before meets
`aten::mm` after whatever its shapes. Bytes are what the roofline charged to the op's kernels (from their
shapes) plus the bytes its copies and fills moved; an op none of whose work has a byte count has none
(None, never 0). When the two traces profiled a different number of steps, every figure is per step, as
the diff's own (tracetriage.analyzers.triage.diff.Diff.divisors).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.hotspots import gpu_rows, op_keys, op_label
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import KERNEL, NONE
from tracetriage.analyzers.triage.report import Analysis


@dataclass(frozen=True)
class OpSide:
    device_us: float
    calls: int          # distinct ops that launched the work (GPU activities when no op did)
    kernels: int        # GPU activities
    bytes: float | None


@dataclass(frozen=True)
class OpDelta:
    name: str
    before: OpSide | None       # None: the op did not run on that side
    after: OpSide | None

    @property
    def change_us(self) -> float:
        """After minus before (negative: time saved)."""
        return (self.after.device_us if self.after else 0.0) - (self.before.device_us if self.before else 0.0)


def op_table(a: Analysis, divisor: int = 1) -> dict[str, OpSide]:
    """Every op of one trace by name (not only the top ten the report names)."""
    tr, ev = a.trace, a.trace.ev
    rows = gpu_rows(tr)
    if not len(rows):
        return {}
    keys, op = op_keys(tr, rows)
    dur = (ev.end[rows] - ev.start[rows]).astype(np.float64)
    kernel = ev.cat[rows] == KERNEL
    # bytes of a kernel from the roofline's shapes; of a copy or fill, what the trace recorded it moved
    moved = np.where(kernel, a.roof.kernel_bytes[rows], np.maximum(ev.nbytes[rows], 0)).astype(np.float64)
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.reshape(-1)
    t = np.bincount(inv, weights=dur)
    n = np.bincount(inv)
    b = np.bincount(inv, weights=moved)
    costed = np.bincount(inv, weights=(moved > 0).astype(np.float64))
    out: dict[str, OpSide] = {}
    for i, key in enumerate(uniq.tolist()):
        ops = op[inv == i]
        calls = len(distinct(ops[ops != NONE])) or int(n[i])
        side = OpSide(device_us=float(t[i]) / 1e3 / divisor, calls=round(calls / divisor),
                      kernels=round(int(n[i]) / divisor), bytes=float(b[i]) / divisor if costed[i] else None)
        name = op_label(tr, key)
        prev = out.get(name)   # a kernel name equal to an op name: one row
        out[name] = side if prev is None else OpSide(prev.device_us + side.device_us, prev.calls + side.calls,
                                                     prev.kernels + side.kernels,
                                                     None if prev.bytes is None and side.bytes is None
                                                     else (prev.bytes or 0.0) + (side.bytes or 0.0))
    return out


def op_diff(before: Analysis, after: Analysis, divisors: tuple[int, int] = (1, 1)) -> tuple[OpDelta, ...]:
    """Each op on either side, the largest change of device time first (ties: the larger op first)."""
    b, f = op_table(before, divisors[0]), op_table(after, divisors[1])
    rows = [OpDelta(n, b.get(n), f.get(n)) for n in dict.fromkeys([*b, *f])]
    return tuple(sorted(rows, key=lambda r: (-abs(r.change_us),
                                             -max(r.before.device_us if r.before else 0.0,
                                                  r.after.device_us if r.after else 0.0), r.name)))
