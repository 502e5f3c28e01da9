"""Work the step re-does, read from the op table's shapes: the removable work a busy GPU spends its time on.

Two constructs a trace recorded with shapes proves, each a recurring op class whose kernels do work a one-line
change would not do:

- A growing concatenation (GROWING_CAT): `aten::cat` calls each of which takes, as one input, a tensor of the shape
  the call before it returned, and appends a piece: `acc = torch.cat([acc, piece])` in a loop. Every call copies
  everything gathered so far, so n calls copy ~n²/2 pieces where collecting them in a list and concatenating once
  copies n. What the shapes prove: the chain of shapes (each call's input is the previous call's output shape) and
  the bytes each call copies; that the input is the very tensor returned before is the reading, not the proof.
  The saving's bound: the chain's kernel time less the share one final concatenation would copy (its output's
  elements over the elements every call of the chain wrote).
- A low-rank pair beside a full product (LOW_RANK): `mm (M,K)x(K,r)` then `mm (M,r)x(r,N)` with r at most RANK_AT_MOST
  and far below K and N, where the trace also holds the full `mm (M,K)x(K,N)`: an unmerged low-rank adapter (LoRA)
  whose output is scaled (`mul` by a scalar) and added (`add`) onto the full product's. What the shapes prove: the
  pair of products and the full one of the same M, K, N; the scale and the add over the output's elements that
  follow the pair. That merging the adapter into the weight (W + s·BA, once) is allowed is a hypothesis: it holds
  where the adapter is not being trained (scoring, serving); a trace with a backward pass gets no merge advice.

Two sources of launches the step re-runs for nothing, named first on a launch-bound step (their kernels are small,
their launches are the cost): weight norm recomputed from g and v before every convolution of a model that does not
train (WEIGHT_NORM: `aten::_weight_norm` each forward; torch.nn.utils.remove_weight_norm, or
parametrize.remove_parametrizations, computes the weight once), and a square taken of many tensors of distinct
shapes each step, with PowBackward0 for each in the backward (POWER_PER_TENSOR: a sum of squares over the
parameters, which reads as an L2 penalty written into the loss; the optimizer's weight_decay applies it inside its
own pass). What the trace proves: the ops, their counts and shapes, the kernels launched inside them; that the
powers are over the parameters is a reading (their shapes are many and distinct, where a norm's square runs on one
activation shape).

What would make it fire falsely: a concatenation that grows on purpose once per step (a KV cache appended each
decode step: its chain spans steps, and the one-cat rewrite does not apply to it; such a chain's links are one per
step, and the chain is kept only where it grows GROWS_AT_LEAST times within the span's kernels); a rank-r product
that is a real low-rank layer (a bottleneck without a full twin of the same M, K, N is never counted).
"""
from __future__ import annotations

import dataclasses
import math
from contextvars import ContextVar

import numpy as np

from tracetriage.analyzers.analyses.opargs import Malformed, parse_args
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.rework import GROWING_CAT, LOW_RANK, POWER_PER_TENSOR, WEIGHT_NORM, Rework
from tracetriage.analyzers.model.trace import CPU_OP, NONE, Trace, thread_keys

GROWS_AT_LEAST = 8     # a chain of this many concatenations, each growing the last one's output, is a loop's
RANK_AT_MOST = 64      # an adapter's rank: LoRA's ranks are 4-64
RANK_BELOW = 8         # ... and the rank is this many times below both the input and the output width
NAMED_AT_LEAST = 0.10  # re-done work holding this share of kernel time is the Next's experiment
LAUNCHES_NAMED = 0.15  # a launch source named first: it launches this share of the kernels
POWERS_AT_LEAST = 32   # a power over this many tensors ...
SHAPES_AT_LEAST = 8    # ... of this many distinct shapes is over a model's parameters, not a layer's activations
_CATS = frozenset({"aten::cat", "aten::concat", "aten::concatenate"})
_PRODUCTS_SCALES_ADDS = frozenset({"aten::mm", "aten::addmm", "aten::mul", "aten::add"})
_WEIGHT_NORM_OPS = frozenset({"aten::_weight_norm", "aten::_weight_norm_interface"})
FOLLOW = 8             # the scale and the add are among this many products, scales and adds after the pair

def find(trace: Trace, kernel_rows: np.ndarray, trains: bool) -> Rework | None:
    """The re-done work holding the most kernel time, where it holds NAMED_AT_LEAST of it (module docstring)."""
    token = _CACHE.set({})
    try:
        return _find(trace, kernel_rows, trains)
    finally:
        _CACHE.reset(token)


def _find(trace: Trace, kernel_rows: np.ndarray, trains: bool) -> Rework | None:
    if len(kernel_rows) == 0:
        return None
    ev = trace.ev
    dur = (ev.end[kernel_rows] - ev.start[kernel_rows]).astype(np.int64)
    total = int(dur.sum())
    op = trace.launching_op(kernel_rows)
    has = op != NONE
    if total <= 0 or not has.any():
        return None
    ops, inv = np.unique(op[has], return_inverse=True)
    op_ns = np.bincount(inv.ravel(), weights=dur[has]).astype(np.int64)
    order = np.argsort(ev.start[ops], kind="stable")
    ops, op_ns = ops[order], op_ns[order]
    # a trained adapter is not merged while it learns: no low-rank finding in a trace with a backward pass
    low_rank = None if trains else _low_rank(trace, ops, op_ns, total, trains)
    if low_rank is not None:   # the kernels its ops launch: a merge removes their launches and Python too
        low_rank = dataclasses.replace(low_rank, launches=int(np.isin(op, low_rank.ops).sum()))
    found = [_with_twins(trace, kernel_rows, op, dur, f, total)
             for f in (_growing_cat(trace, ops, op_ns, total), low_rank) if f is not None]
    best = max((f for f in found if f.kernel_share >= NAMED_AT_LEAST), key=lambda f: f.bound_share, default=None)
    return best or _launch_source(trace, kernel_rows, dur, total, trains)


def _launch_source(trace: Trace, kernel_rows: np.ndarray, dur: np.ndarray, total: int, trains: bool) -> Rework | None:
    """A source of launches the step re-runs for nothing (module docstring's launch kinds), where it launches
    LAUNCHES_NAMED of the kernels: weight norm recomputed each forward of a model that does not train; a power of
    many tensors of distinct shapes each step with its backward (a penalty over the parameters written in the loss)."""
    ev, names = trace.ev, trace.names
    ops = trace.idx(CPU_OP)
    kind, found = None, np.zeros(0, np.int64)
    if not trains:
        kind, found = WEIGHT_NORM, ops[name_flags(trace, ops, lambda n: n in _WEIGHT_NORM_OPS)]
        # the outermost of the pair (_weight_norm calls _weight_norm_interface): one window per recomputation
        outer = found[np.asarray([names[ev.name[r]] == "aten::_weight_norm" for r in found.tolist()], bool)]
        found = outer if len(outer) else found
    shapes = 0
    if trains:
        pw = ops[name_flags(trace, ops, lambda n: n == "aten::pow")]
        squared = [r for r in pw.tolist() if _squares(trace, r)]
        shapes = len({tuple(trace.shapes(r)[0][0]) for r in squared})
        if len(squared) < POWERS_AT_LEAST or shapes < SHAPES_AT_LEAST:
            return None
        back = ops[name_flags(trace, ops, lambda n: n == "autograd::engine::evaluate_function: PowBackward0")]
        kind, found = POWER_PER_TENSOR, np.concatenate([np.asarray(squared, np.int64), back])
    if len(found) < POWERS_AT_LEAST // 4:
        return None
    inside = _launched_inside(trace, kernel_rows, np.sort(found))
    share = float(inside.sum()) / len(kernel_rows)
    if share < LAUNCHES_NAMED:
        return None
    ns = int(dur[inside].sum())
    calls = len(found) if kind == WEIGHT_NORM else len(squared)
    return Rework(kind, names[ev.name[int(found[0])]], calls, 0, ns, ns / total, ns / total, (), (), trains=trains,
                  launches=int(inside.sum()), launch_share=share, shapes=shapes)


def _squares(trace: Trace, row: int) -> bool:
    """aten::pow(x, 2): a tensor raised to a concrete 2 (a norm's or a penalty's square)."""
    args = _args(trace, row)
    return bool(args) and len(args) > 1 and args[0].kind == "tensor" and args[1].concrete.strip() in ("2", "2.")


def _launched_inside(trace: Trace, kernel_rows: np.ndarray, windows: np.ndarray) -> np.ndarray:
    """Per kernel: its launch call ran inside one of the op rows `windows` (sorted by start), on the same thread."""
    ev = trace.ev
    call = trace.launch_of[kernel_rows]
    out = np.zeros(len(kernel_rows), bool)
    has = np.flatnonzero(call != NONE)
    if not len(has) or not len(windows):
        return out
    w_key, c_key, start = thread_keys(ev, windows), thread_keys(ev, call[has]), ev.start[call[has]]
    for key in distinct(w_key).tolist():
        mine = windows[w_key == key]
        ends = np.maximum.accumulate(ev.end[mine])   # (a window nested in an earlier one ends inside it)
        at = np.flatnonzero(c_key == key)
        j = np.searchsorted(ev.start[mine], start[at], side="right") - 1
        out[has[at]] = (j >= 0) & (start[at] < ends[np.maximum(j, 0)])
    return out


def _with_twins(trace: Trace, kernel_rows: np.ndarray, op: np.ndarray, dur: np.ndarray, f: Rework,
                total: int) -> Rework:
    """The re-done work with the kernels the trace holds without their launch call (drained from before the window)
    that run a kernel only its ops launch: the same loop's earlier calls, as hotspots.op_keys charges them too."""
    kname = trace.ev.name[kernel_rows]
    mine = np.isin(op, np.asarray(f.ops, np.int64))
    owned = np.setdiff1d(kname[mine], kname[~mine & (op != NONE)])
    twin = (op == NONE) & (trace.launch_of[kernel_rows] == NONE) & np.isin(kname, owned)
    extra = int(dur[twin].sum())
    if not extra or not f.kernel_ns:
        return f
    ns = f.kernel_ns + extra
    return dataclasses.replace(f, kernel_ns=ns, kernel_share=ns / total,
                               bound_share=f.bound_share * ns / f.kernel_ns)


def _args(trace: Trace, row: int):
    """The op's parsed arguments, once per (name, shapes) signature: a loop repeats a few hundred of them (the
    cache lives as long as the trace's kernel rows are read here: one find())."""
    cache = _CACHE.get()
    key = (int(trace.ev.name[row]), int(trace.ev.shape[row]))
    if cache is None:
        return _parse(trace, row)
    if key not in cache:
        cache[key] = _parse(trace, row)
    return cache[key]


_CACHE: ContextVar[dict | None] = ContextVar("rework_args", default=None)


def _parse(trace: Trace, row: int):
    dims, types, concrete = trace.shapes(int(row))
    if dims is None:
        return None
    try:
        return parse_args(dims, types, concrete)
    except Malformed:
        return None


def _named(trace: Trace, ops: np.ndarray, op_ns: np.ndarray, wanted) -> tuple[np.ndarray, np.ndarray]:
    keep = name_flags(trace, ops, lambda n: n in wanted)
    return ops[keep], op_ns[keep]


def _growing_cat(trace: Trace, ops: np.ndarray, op_ns: np.ndarray, total: int) -> Rework | None:
    open_chains: dict[tuple, int] = {}    # the output shape a chain's last call returned -> the chain
    chains: list[list[tuple[int, tuple, int, int]]] = []   # per chain: (kernel ns, output shape, elements, op row)
    signatures: dict[tuple[int, int], tuple | None] = {}    # (name, shapes) -> _cat_signature's: a loop repeats a few
    rows, rows_ns = _named(trace, ops, op_ns, _CATS)
    keys = zip(trace.ev.name[rows].tolist(), trace.ev.shape[rows].tolist())
    for row, ns, key in zip(rows.tolist(), rows_ns.tolist(), keys):
        sig = signatures[key] if key in signatures else signatures.setdefault(key, _cat_signature(trace, row))
        if sig is None:
            continue
        live, out, elements = sig
        k = next((open_chains.pop(s) for s in live if s in open_chains), None)
        if k is None:
            k = len(chains)
            chains.append([])
        chains[k].append((ns, out, elements, row))
        open_chains[out] = k
    grown = [c for c in chains if len(c) >= GROWS_AT_LEAST]
    if not grown:
        return None
    ns = sum(x[0] for c in grown for x in c)
    # one concatenation per chain copies its final output once, where the chain copied every output it grew
    kept = sum(sum(x[0] for x in c) * c[-1][2] / max(sum(x[2] for x in c), 1) for c in grown)
    longest = max(grown, key=len)
    return Rework(GROWING_CAT, "aten::cat", sum(len(c) for c in grown), len(grown), ns, ns / total,
                  (ns - kept) / total, longest[0][1], longest[-1][1], ops=tuple(x[3] for c in grown for x in c))


def _cat_signature(trace: Trace, row: int) -> tuple[tuple[tuple, ...], tuple, int] | None:
    """A concatenation's inputs' shapes that hold elements (the shapes a chain's earlier output may be), its output
    shape and the output's elements, read once per (name, shapes) signature; None: no concatenation of tensors."""
    args = _args(trace, row)
    if not args or args[0].kind != "tensorlist" or len(args[0].dims) < 2:
        return None
    shapes = [tuple(s) for s in args[0].dims]
    out = _cat_shape(shapes, args[1].concrete if len(args) > 1 else "0")
    if out is None:
        return None
    return tuple(s for s in shapes if math.prod(s) > 0), out, math.prod(out)


def _cat_shape(shapes: list[tuple], dim_text: str) -> tuple | None:
    live = [s for s in shapes if s and math.prod(s) > 0]
    if not live or any(len(s) != len(live[0]) for s in live):
        return None
    try:
        dim = int(dim_text or 0)
    except ValueError:
        return None
    dim = dim % len(live[0])
    if any(s[:dim] + s[dim + 1:] != live[0][:dim] + live[0][dim + 1:] for s in live):
        return None
    return live[0][:dim] + (sum(s[dim] for s in live),) + live[0][dim + 1:]


def _low_rank(trace: Trace, ops: np.ndarray, op_ns: np.ndarray, total: int, trains: bool) -> Rework | None:
    ops, op_ns = _named(trace, ops, op_ns, _PRODUCTS_SCALES_ADDS)   # (the scale and add follow among these)
    if len(ops) < 2:
        return None
    m_, k_, n_ = _mkn_per_row(trace, ops)             # (M, K, N) of each 2-D product, -1 for anything else
    # a rank-r pair: the down product (M, K) x (K, r) right before the up product (M, r) x (r, N)
    m, k, r, m2, r2, n = m_[:-1], k_[:-1], n_[:-1], m_[1:], k_[1:], n_[1:]
    pair = ((m >= 0) & (m2 >= 0) & (m == m2) & (r == r2) & (r <= RANK_AT_MOST)
            & (k >= RANK_BELOW * r) & (n >= RANK_BELOW * r))
    full = set(zip(m_[m_ >= 0].tolist(), k_[m_ >= 0].tolist(), n_[m_ >= 0].tolist()))
    pairs, ns, rank, mine = 0, 0, 0, []
    weight = adapter = ()
    for i in (np.flatnonzero(pair) + 1).tolist():
        mi, ki, ri, ni = int(m_[i - 1]), int(k_[i - 1]), int(n_[i - 1]), int(n_[i])
        if (mi, ki, ni) not in full:
            continue
        pairs += 1
        scale_add_ns, scale_add = _scale_and_add(trace, ops, op_ns, i, mi * ni)
        ns += int(op_ns[i - 1]) + int(op_ns[i]) + scale_add_ns
        mine += [int(ops[i - 1]), int(ops[i]), *scale_add]
        rank, weight, adapter = ri, (ki, ni), (ki, ri)
    if not pairs:
        return None
    return Rework(LOW_RANK, "aten::mm", 2 * pairs, pairs, ns, ns / total, ns / total, weight, adapter, rank, trains,
                  ops=tuple(mine))


def _mkn_per_row(trace: Trace, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each op's (M, K, N) as three int64 columns (-1 where _mkn answers None), parsed once per (name, shapes)
    signature: the 293 MB benchmark trace's ~50k products, scales and adds hold a few hundred signatures."""
    names = trace.names
    name_id = trace.ev.name[ops].astype(np.int64)
    shape_id = trace.ev.shape[ops].astype(np.int64) + 1          # (NONE, -1, becomes 0)
    sig = name_id * (int(shape_id.max()) + 1) + shape_id
    _, first, inv = np.unique(sig, return_index=True, return_inverse=True)
    per_sig = np.asarray([_mkn(trace, int(ops[f]), names[int(name_id[f])]) or (-1, -1, -1) for f in first.tolist()],
                         np.int64).reshape(-1, 3)
    mkn = per_sig[inv.ravel()]
    return mkn[:, 0], mkn[:, 1], mkn[:, 2]


def _mkn(trace: Trace, row: int, name: str) -> tuple[int, int, int] | None:
    """(M, K, N) of a 2-D product (mm, or addmm's two matrices), None for anything else."""
    if name not in ("aten::mm", "aten::addmm"):
        return None
    args = _args(trace, row)
    if not args:
        return None
    mats = [a.dims for a in args if a.kind == "tensor" and len(a.dims) == 2]
    if len(mats) < 2:
        return None
    a, b = mats[-2], mats[-1]
    return (a[0], a[1], b[1]) if a[1] == b[0] else None


def _scale_and_add(trace: Trace, ops: np.ndarray, op_ns: np.ndarray, i: int, elements: int) -> tuple[int, list[int]]:
    """The kernel time and rows of the scalar `mul` and the `add` over the pair's output elements that follow it
    (a scalar is recorded as a 0-d argument: "double" or "Scalar")."""
    ns, found, want = 0, [], {"aten::mul": True, "aten::add": True}
    for j in range(i + 1, min(i + 1 + FOLLOW, len(ops))):
        r, name, t = int(ops[j]), trace.names[trace.ev.name[ops[j]]], int(op_ns[j])
        if not want.get(name):
            continue
        args = _args(trace, r)
        tensors = [a for a in (args or []) if a.kind == "tensor" and a.dims]
        if tensors and all(a.numel == elements for a in tensors) and len(tensors) == (1 if name == "aten::mul" else 2):
            ns += t
            found.append(r)
            want[name] = False
    return ns, found
