"""Eager elementwise chains and their fusion byte ledger (the course's M01.07).

An eager chain is a run of ops on one host thread, one after another, each launching its own kernel
and each elementwise, a reduction, a norm, a softmax or a dtype cast on the device
(tracetriage.analyzers.analyses.opcost's kinds): `sigmoid(x * 1.5 + 0.5) * x` is four ops, four kernels,
and moves 36 bytes per fp32 element eagerly (every op reads its inputs and writes its output), 8 fused
(x read once, the result written once). A matmul, a convolution, attention, a copy across devices, a sync
or an op of no known cost ends a chain.

The fused ledger reads each input from outside the chain once and writes the chain's last output
once, per pass: a reduction whose result the chain uses again (RMSNorm's mean of squares) needs the
inputs read twice, as Inductor's reduction kernel and the pointwise kernel after it do (two kernels).
Without tensor identities in the trace (record_shapes records shapes, not storages), an input is the
chain's own when an earlier op of the chain produced a tensor of its dtype and rank that holds it
(the same shape, or a view such as `h.chunk(2, -1)`'s halves), two outside inputs of one shape and
dtype are the same tensor (the `* x` of the chain above), and an op that reads nothing the chain made,
or repeats the chain's first op on the same shapes, starts a new chain (the next call of the same
function); all three are guesses the measured pairs check (tests/test_whatif.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.opcost import op_cost, tensor_args
from tracetriage.analyzers.model.trace import CPU_OP, DRIVER, KERNEL, NONE, RUNTIME, Trace

FUSIBLE = ("elementwise", "reduction", "norm", "softmax", "copy")
MIN_OPS = 2          # a chain of one op has nothing to fuse
TINY = 1             # 0-dim tensors (Python scalars mixed into arithmetic) move nothing worth counting


@dataclass(frozen=True)
class Chain:
    """One eager chain: its ops, their launch calls and kernels (rows of trace.ev), and its bytes."""
    ops: tuple[int, ...]
    calls: tuple[int, ...]
    kernels: tuple[int, ...]
    eager_bytes: float
    fused_bytes: float
    passes: int = 1                # kernels the fused chain needs: one, and one more per reduction used again

    @property
    def byte_ratio(self) -> float:
        return self.fused_bytes / self.eager_bytes if self.eager_bytes else 1.0


@dataclass(frozen=True)
class _Op:
    """What the ledger needs of one fusible op signature (name and shapes), computed once per signature."""
    sig: int                       # the signature's id: the same op on the same shapes
    eager_bytes: float
    out_bytes: float
    out_key: tuple | None          # (dims, dtype) of its output
    ins: tuple                     # ((dims, dtype), bytes) of its tensor inputs, 0-dim ones left out
    reduces: bool = False          # a reduction (its output is smaller than its input)


def _op(sig: int, name: str, cost, args) -> _Op:
    """An op's ledger entry. An in-place op writes its first argument (aten::copy_(dst, src) reads only src:
    a dtype cast such as x.float() into a new tensor)."""
    if name.endswith("copy_") and len(args) >= 2:
        dst, rest = args[0], args[1:]
        ins = tuple(((d, t), nb) for d, t, nb in rest if math.prod(d) > TINY)
        return _Op(sig, cost.bytes, float(dst[2]), (dst[0], dst[1]), ins)
    reads = sum(nb for _, _, nb in args)
    out_bytes = max(cost.bytes - reads, 0.0)
    out_key = (args[0][0], args[0][1]) if name.endswith("_") and args else _out_key(args, out_bytes)
    ins = tuple(((d, t), nb) for d, t, nb in args if math.prod(d) > TINY)
    return _Op(sig, cost.bytes, out_bytes if not name.endswith("_") else float(args[0][2]), out_key, ins,
               reduces=cost.kind in ("reduction", "norm", "softmax"))


def _holds(p: tuple, key: tuple) -> bool:
    """A produced tensor p = (dims, dtype) holds an input (dims, dtype): the same tensor or a view of it."""
    (pd, pt), (d, t) = p, key
    return pt == t and len(pd) == len(d) and all(x <= y for x, y in zip(d, pd))


class _Ledger:
    """The bytes of a chain, op by op: eager (every op reads and writes) against fused."""

    def __init__(self):
        self.first = -1                       # the chain's first op's signature
        self.reductions = 0                   # reductions whose result a later op of the chain read
        self.pending_reduction: tuple | None = None
        self.largest_input = 0.0
        self.produced: set[tuple] = set()
        self.outside: set[tuple] = set()
        self.eager = self.fused_reads = self.last_out = 0.0

    def _made(self, key: tuple) -> bool:
        return key in self.produced or any(_holds(p, key) for p in self.produced)

    def continues(self, op: _Op) -> bool:
        """The op reads something the chain made and is not the chain's first op again (its next call)."""
        return op.sig != self.first and any(self._made(k) for k, _ in op.ins)

    def add(self, op: _Op) -> None:
        if self.first < 0:
            self.first = op.sig
        self.eager += op.eager_bytes
        if self.pending_reduction is not None and any(k == self.pending_reduction for k, _ in op.ins):
            self.reductions += 1              # the reduced value is used again: a second pass over the inputs
            self.pending_reduction = None
        for key, nb in op.ins:
            if key not in self.outside and not self._made(key):
                self.outside.add(key)
                self.fused_reads += nb
                self.largest_input = max(self.largest_input, nb)
        if op.reduces and op.out_key is not None:
            self.pending_reduction = op.out_key
        if op.out_key is not None:
            self.produced.add(op.out_key)
        self.last_out = op.out_bytes

    @property
    def passes(self) -> int:
        return 1 + self.reductions

    @property
    def fused(self) -> float:
        # each extra pass reads the chain's inputs again: the largest of them bounds what it re-reads
        return self.fused_reads + self.reductions * self.largest_input + self.last_out


def _out_key(args, out_bytes: float) -> tuple | None:
    """The output's (dims, dtype): an input's of its size (elementwise ops and casts keep the shape), else
    the largest input's (a reduction's output sits inside it)."""
    for dims, dtype, nb in args:
        if nb and abs(nb - out_bytes) < 1:
            return dims, dtype
    big = max(args, key=lambda a: a[2], default=None)
    return (big[0], big[1]) if big is not None and out_bytes else None


def chains(trace: Trace, breaks: np.ndarray | None = None) -> list[Chain]:
    """Every eager chain of the trace, in the order its first op ran. `breaks` (per event) marks launch
    calls no chain may hold: another lever's ground (the optimizer step's per-parameter kernels)."""
    ev = trace.ev
    calls = np.flatnonzero(np.isin(ev.cat, (RUNTIME, DRIVER)))
    kern = np.flatnonzero(ev.cat == KERNEL)
    launch = trace.launch_of[kern]
    kern, launch = kern[launch != NONE], launch[launch != NONE]
    launched = np.zeros(len(ev), bool)
    launched[launch] = True
    calls = calls[launched[calls]]
    op = trace.op_of[calls]
    ok = op != NONE
    ok[ok] = ev.cat[op[ok]] == CPU_OP
    # one signature id per (op name, recorded shapes); the ledger of each computed once
    key = np.where(ok, ev.name[np.maximum(op, 0)].astype(np.int64) * (1 << 31) + ev.shape[np.maximum(op, 0)] + 1, -1)
    uniq, sig = np.unique(key, return_inverse=True)
    first_row = np.full(len(uniq), -1, np.int64)
    first_row[sig[::-1]] = op[::-1]
    ops_of: list[_Op | None] = []
    for i, (k, r) in enumerate(zip(uniq.tolist(), first_row.tolist())):
        costed = _costed(trace, r) if k >= 0 else None
        ops_of.append(_op(i, trace.names[ev.name[r]], *costed) if costed is not None else None)
    order = np.argsort(launch, kind="stable")
    k_of_call = {c: [] for c in np.unique(launch).tolist()}
    for c, k in zip(launch[order].tolist(), kern[order].tolist()):
        k_of_call[c].append(k)
    out: list[Chain] = []
    tids = ev.tid[calls]
    for tid in np.unique(tids).tolist():
        m = tids == tid
        run: list[tuple[int, int]] = []         # (op, call) of the chain being built
        book = _Ledger()
        for c, o, s in zip(calls[m].tolist(), op[m].tolist(), sig[m].tolist()):
            if run and run[-1][0] == o:        # another launch of the op the chain already holds
                run.append((o, c))
                continue
            this = None if breaks is not None and breaks[c] else ops_of[s]
            if this is None or (run and not book.continues(this)):
                _close(run, book, k_of_call, out)   # not fusible, or the next call of the chain's function
                run, book = [], _Ledger()
                if this is None:
                    continue
            run.append((o, c))
            book.add(this)
        _close(run, book, k_of_call, out)
    out.sort(key=lambda ch: ev.start[ch.ops[0]])
    return out


def _costed(trace: Trace, op: int):
    """(cost, tensor args) of a fusible op, else None."""
    dims, types, concrete = trace.shapes(op)
    cost = op_cost(trace.names[trace.ev.name[op]], dims, types, concrete)
    if cost is None or cost.kind not in FUSIBLE or cost.bytes <= 0:
        return None
    return cost, tensor_args(dims, types, concrete)


def _close(run: list[tuple[int, int]], book: _Ledger, k_of_call: dict, out: list[Chain]) -> None:
    if len(run) < MIN_OPS:
        return
    ops = list(dict.fromkeys(o for o, _ in run))
    if len(ops) < MIN_OPS or book.eager <= 0 or book.fused >= book.eager:
        return
    calls = tuple(c for _, c in run)
    kernels = tuple(k for c in calls for k in k_of_call.get(c, ()))
    out.append(Chain(tuple(ops), calls, kernels, book.eager, book.fused, book.passes))
