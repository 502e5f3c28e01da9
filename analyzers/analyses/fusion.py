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

A trace recorded without shapes (record_shapes off) still shows the construct by name: a run of ops on one thread,
each elementwise, a reduction, a norm or a softmax by its aten name (RMSNorm's pow, mean, add, rsqrt, mul; SiLU * mul;
a residual add), between two ops that are not (a matmul, attention, a copy). Asked for (`shapeless`), such a run is a
chain with no byte ledger (its bytes 0): one kernel a pass, a pass more after each reduction another op follows, and
the next call of the same function starts where the run's first two ops come again in order. What would make it fire
falsely: elementwise ops on unrelated tensors back to back (without shapes nothing tells them apart); Inductor's
kernels (triton_*) are not aten elementwise ops and never join.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.opcost import fusible_kind_by_name, op_cost, tensor_args
from tracetriage.analyzers.model.groups import any_of, distinct, pair_codes, stable_order
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
    reread_bytes: float = 0.0      # what each pass after the first reads again (its largest input)

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
    shapeless: bool = False        # known by its name only: the trace recorded no shapes


def _op(sig: int, name: str, cost, args) -> _Op:
    """An op's ledger entry. An in-place op writes its first argument (aten::copy_(dst, src) reads only src:
    a dtype cast such as x.float() into a new tensor)."""
    if name.endswith("copy_") and len(args) >= 2:
        dst, rest = args[0], args[1:]
        ins = tuple(((d, t), nb) for d, t, nb in rest if math.prod(d) > TINY)
        return _Op(sig, cost.bytes, float(dst[2]), (dst[0], dst[1]), ins)
    if name in ("aten::fill_", "aten::zero_", "fill_", "zero_") and args:
        # it writes its tensor and reads none: it continues no chain (a backward's zeros_like after a bias's sum of a
        # wider gradient read as a view of it, one chain across two steps' backward, 1.6 ms apart)
        return _Op(sig, cost.bytes, float(args[0][2]), (args[0][0], args[0][1]), ())
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
        self.shapeless = False                # a chain of ops known by name only: no byte ledger
        self.produced: set[tuple] = set()
        self.outside: set[tuple] = set()
        self.eager = self.fused_reads = self.last_out = 0.0

    def copy(self) -> "_Ledger":
        twin = _Ledger.__new__(_Ledger)
        twin.__dict__.update(self.__dict__)
        twin.produced, twin.outside = set(self.produced), set(self.outside)
        return twin

    def _made(self, key: tuple) -> bool:
        return key in self.produced or any(_holds(p, key) for p in self.produced)

    def continues(self, op: _Op) -> bool:
        """The op reads something the chain made and is not the chain's first op again (its next call)."""
        return op.sig != self.first and any(self._made(k) for k, _ in op.ins)

    def add(self, op: _Op) -> None:
        if self.first < 0:
            self.first = op.sig
        self.eager += op.eager_bytes
        if op.shapeless:
            self.shapeless = True
            if self.pending_reduction is not None:    # a reduction followed by more work: one pass more
                self.reductions += 1
            self.pending_reduction = () if op.reduces else None
            return
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


@dataclass(frozen=True)
class ChainTable:
    """Every chain at once, as flat arrays: chain i's ops are op_rows[op_at[i]:op_at[i + 1]] (rows of trace.ev),
    its launch calls and its kernels likewise; its bytes and passes by index. In the order its first op ran."""
    op_rows: np.ndarray
    op_at: np.ndarray
    call_rows: np.ndarray
    call_at: np.ndarray
    kernel_rows: np.ndarray
    kernel_at: np.ndarray
    eager_bytes: np.ndarray      # float64
    fused_bytes: np.ndarray      # float64
    passes: np.ndarray           # int64
    reread_bytes: np.ndarray     # float64: each pass after the first reads this again

    def __len__(self) -> int:
        return len(self.eager_bytes)

    def chains(self) -> list[Chain]:
        ops, calls, kernels = self.op_rows.tolist(), self.call_rows.tolist(), self.kernel_rows.tolist()
        oa, ca, ka = self.op_at.tolist(), self.call_at.tolist(), self.kernel_at.tolist()
        return [Chain(tuple(ops[oa[i]:oa[i + 1]]), tuple(calls[ca[i]:ca[i + 1]]), tuple(kernels[ka[i]:ka[i + 1]]),
                      e, f, p, r)
                for i, (e, f, p, r) in enumerate(zip(self.eager_bytes.tolist(), self.fused_bytes.tolist(),
                                                     self.passes.tolist(), self.reread_bytes.tolist()))]


def chains(trace: Trace, breaks: np.ndarray | None = None) -> list[Chain]:
    """Every eager chain of the trace, in the order its first op ran. `breaks` (per event) marks launch
    calls no chain may hold: another lever's ground (the optimizer step's per-parameter kernels)."""
    return chain_table(trace, breaks).chains()


class _Ledgers:
    """The ledger of every chain prefix met, each built once: a chain's ledger depends only on the signatures
    it added, in order, and a loop repeats the same chains hundreds of times, so the ledger's set logic runs
    once per distinct prefix (a state) and a repeat is a dict lookup per launch call."""

    def __init__(self, ops_of: list[_Op | None]):
        self.ops_of = ops_of
        self.books = [_Ledger()]           # state 0: no chain
        self._after: dict[tuple[int, int], int] = {}
        self._goes_on: dict[tuple[int, int], bool] = {}

    def shapeless(self, sig: int) -> bool:
        return self.ops_of[sig].shapeless

    def continues(self, state: int, sig: int) -> bool:
        key = (state, sig)
        r = self._goes_on.get(key)
        if r is None:
            r = self._goes_on[key] = self.books[state].continues(self.ops_of[sig])
        return r

    def add(self, state: int, sig: int) -> int:
        """The state after the chain in `state` adds the op of signature `sig`."""
        key = (state, sig)
        r = self._after.get(key)
        if r is None:
            book = self.books[state].copy()
            book.add(self.ops_of[sig])
            self.books.append(book)
            r = self._after[key] = len(self.books) - 1
        return r


def chain_table(trace: Trace, breaks: np.ndarray | None = None, shapeless: bool = False) -> ChainTable:
    """chains(), as flat arrays (ChainTable); `shapeless`: ops that recorded no shapes join chains by their names
    (their bytes 0: see the module's docstring)."""
    ev = trace.ev
    calls = np.flatnonzero(any_of(ev.cat, (RUNTIME, DRIVER)))
    kern = np.flatnonzero(ev.cat == KERNEL)
    launch = trace.launch_of[kern]
    kern, launch = kern[launch != NONE], launch[launch != NONE]
    launched = np.zeros(len(ev), bool)
    launched[launch] = True
    calls = calls[launched[calls]]
    op = trace.op_of[calls]
    ok = op != NONE
    ok[ok] = ev.cat[op[ok]] == CPU_OP
    # one signature id per (op name, recorded shapes), in (name, shape) order after one id 0 for the calls of no
    # cpu_op, where there are some (np.unique's numbering of name << 31 | shape + 1 with -1 for those, through tables
    # over the two narrow columns where np.unique sorted 300k calls); the ledger of each computed once
    _, _, pair = pair_codes(ev.name[op[ok]], ev.shape[op[ok]])
    no_op = int(not ok.all())
    sig = np.zeros(len(op), np.intp)
    sig[ok] = pair + no_op
    n_sigs = int(pair.max(initial=-1)) + 1 + no_op
    first_row = np.full(n_sigs, -1, np.int64)
    first_row[sig[::-1]] = op[::-1]
    ops_of: list[_Op | None] = []
    for i, r in enumerate(first_row.tolist()):
        is_op = i >= no_op
        costed = _costed(trace, r) if is_op else None
        if costed is not None:
            ops_of.append(_op(i, trace.names[ev.name[r]], *costed))
        elif shapeless and is_op:
            ops_of.append(_by_name(i, trace, r))
        else:
            ops_of.append(None)
    fusible = np.array([o is not None for o in ops_of], bool)[sig]
    if breaks is not None:
        fusible &= ~breaks[calls]
    ledgers = _Ledgers(ops_of)
    # the chains, as runs of positions in `calls` (each thread's calls in time order), with their ledgers
    # (each chain as its first position in its thread's calls and its length: the positions are gathered once, not
    # sliced chain by chain, 16k chains at 942k events)
    found_at: list[np.ndarray] = []
    found_lengths: list[int] = []
    found_states: list[int] = []
    tids = ev.tid[calls]
    walked: dict[tuple, list[tuple[int, int, int]]] = {}
    for tid in distinct(tids).tolist():
        at = np.flatnonzero(tids == tid)
        firsts: list[int] = []
        for lo, hi, runs in _stretches(ledgers, op[at], sig[at], fusible[at], walked):
            for a, b, state in runs:
                firsts.append(lo + a)
                found_lengths.append(b - a)
                found_states.append(state)
        n = np.array(found_lengths[len(found_lengths) - len(firsts):], np.int64)
        found_at.append(at[np.repeat(np.array(firsts, np.int64) - _offsets(n)[:-1], n) + np.arange(int(n.sum()))])
    lengths = np.array(found_lengths, np.int64)
    found_pos = np.concatenate(found_at) if found_at else np.zeros(0, np.int64)
    books = ledgers.books      # (each state's figures read once, then taken by each chain that ends in it)
    states = np.array(found_states, np.int64)
    eager = np.array([b.eager for b in books], np.float64)[states]
    fused = np.array([b.fused for b in books], np.float64)[states]
    passes = np.array([b.passes for b in books], np.int64)[states]
    reread = np.array([b.largest_input for b in books], np.float64)[states]
    by_name = np.array([b.shapeless for b in books], bool)[states]
    return _table(ev, calls, op, kern, launch, found_pos, lengths, eager, fused, passes, reread, by_name)


def _stretches(ledgers: _Ledgers, op: np.ndarray, sig: np.ndarray, fusible: np.ndarray, walked: dict):
    """One thread's chains, stretch by stretch: (lo, hi, [(start, end, ledger state) of each chain in it, as
    positions from lo]) for each stretch of calls lo..hi-1 that a chain may hold.

    A chain grows call by call: another launch of the op it holds joins it; a fusible call joins it if its
    ledger says the op continues the chain (reads what it made), else ends it and starts the next; any other
    call ends it. So a stretch between two calls that end every chain is walked from an empty chain, and its
    chains depend only on its calls' signatures and which repeat the op before them: a loop repeats the same
    stretches thousands of times, walked once each (`walked`), the repeats a dict lookup."""
    n = len(op)
    same = np.zeros(n, bool)
    same[1:] = op[1:] == op[:-1]
    joins = fusible.copy()
    # a call no chain may hold joins the chain anyway when it launches the op the chain already holds
    for k in np.flatnonzero(same & ~fusible).tolist():
        joins[k] = joins[k - 1]
    edge = np.diff(np.r_[0, joins.view(np.int8), 0])
    sigs, repeats = sig.tolist(), same.tolist()
    for lo, hi in zip(np.flatnonzero(edge == 1).tolist(), np.flatnonzero(edge == -1).tolist()):
        key = (tuple(sigs[lo:hi]), tuple(repeats[lo:hi]))
        runs = walked.get(key)
        if runs is None:
            runs = walked[key] = _walk(ledgers, *key)
        yield lo, hi, runs


def _walk(ledgers: _Ledgers, sigs: tuple, repeats: tuple) -> list[tuple[int, int, int]]:
    """The chains of one stretch (see _stretches): (start, end, ledger state) of each of MIN_OPS calls or more."""
    out = []
    start, state = 0, 0
    for k, (s, again) in enumerate(zip(sigs, repeats)):
        if k > start and again:           # another launch of the op the chain already holds
            continue
        if k > start and not _goes_on(ledgers, state, sigs, start, k):     # the next call of the chain's function
            if k - start >= MIN_OPS:
                out.append((start, k, state))
            start, state = k, 0
        state = ledgers.add(state, s)
    if len(sigs) - start >= MIN_OPS:
        out.append((start, len(sigs), state))
    return out


def _goes_on(ledgers: _Ledgers, state: int, sigs: tuple, start: int, k: int) -> bool:
    """Whether the op at k joins the chain that began at start: by its ledger (it reads what the chain made); a chain
    of ops known by name only goes on until its first two ops come again in order (the next call of its function)."""
    by_name = ledgers.shapeless(sigs[k])
    if by_name != ledgers.books[state].shapeless:
        return False
    if not by_name:
        return ledgers.continues(state, sigs[k])
    return not (k - start >= 2 and sigs[k] == sigs[start] and k + 1 < len(sigs) and sigs[k + 1] == sigs[start + 1])


def _table(ev, calls: np.ndarray, op: np.ndarray, kern: np.ndarray, launch: np.ndarray,
           pos: np.ndarray, lengths: np.ndarray, eager: np.ndarray, fused: np.ndarray, passes: np.ndarray,
           reread: np.ndarray, by_name: np.ndarray) -> ChainTable:
    """The runs that are chains worth fusing (two ops or more, fewer bytes fused), with their ops (each once,
    in the order first launched) and kernels (each call's, in its calls' order), sorted by their first op."""
    n_runs = len(lengths)      # (pos: each run's positions into calls, run after run)
    run_of = np.repeat(np.arange(n_runs), lengths)
    # each run's distinct ops, in the order first launched: the first call of each (run, op)
    _, first_at = np.unique(run_of * (int(op.max(initial=0)) + 1) + op[pos], return_index=True)
    new_op = np.zeros(len(pos), bool)
    new_op[first_at] = True
    n_ops = np.bincount(run_of[new_op], minlength=n_runs)
    keep = (n_ops >= MIN_OPS) & (((eager > 0) & (fused < eager)) | by_name)
    # in the order each chain's first op ran (stable: chains built thread by thread)
    first_start = ev.start[op[pos[_offsets(lengths)[:-1]]]]
    order = np.flatnonzero(keep)[np.argsort(first_start[keep], kind="stable")]
    rank = np.full(n_runs, -1, np.int64)
    rank[order] = np.arange(len(order))
    # calls and ops of the kept chains, chain by chain in the new order, each in its own order
    sel = rank[run_of] >= 0
    by_chain = stable_order(rank[run_of[sel]])
    call_pos = pos[sel][by_chain]
    call_chain = rank[run_of[sel]][by_chain]
    op_sel = (new_op & sel)[sel][by_chain]
    op_rows = op[call_pos[op_sel]]
    op_at = _offsets(np.bincount(call_chain[op_sel], minlength=len(order)))
    call_rows = calls[call_pos]
    call_at = _offsets(np.bincount(call_chain, minlength=len(order)))
    # each call's kernels, in the order of the kernels' rows
    k_order = np.argsort(launch, kind="stable")
    k_launch, k_rows = launch[k_order], kern[k_order]
    lo = np.searchsorted(k_launch, call_rows, side="left")
    hi = np.searchsorted(k_launch, call_rows, side="right")
    counts = hi - lo
    kernel_rows = k_rows[np.repeat(lo, counts) + np.arange(counts.sum()) - np.repeat(_offsets(counts)[:-1], counts)]
    kernel_at = _offsets(np.bincount(np.repeat(call_chain, counts), minlength=len(order)))
    return ChainTable(op_rows, op_at, call_rows, call_at, kernel_rows, kernel_at, eager[order], fused[order],
                      passes[order], reread[order])


def _offsets(counts: np.ndarray) -> np.ndarray:
    """Where each of consecutive slices of these lengths starts, and the end: [0, c0, c0 + c1, ...]."""
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _by_name(sig: int, trace: Trace, op: int) -> _Op | None:
    """A fusible op known by its name alone, where the trace recorded no shapes for it; else None."""
    if trace.shapes(op)[0] is not None:
        return None
    kind = fusible_kind_by_name(trace.names[trace.ev.name[op]])
    return None if kind is None else _Op(sig, 0.0, 0.0, None, (), reduces=kind != "elementwise", shapeless=True)


def _costed(trace: Trace, op: int):
    """(cost, tensor args) of a fusible op, else None."""
    dims, types, concrete = trace.shapes(op)
    cost = op_cost(trace.names[trace.ev.name[op]], dims, types, concrete)
    if cost is None or cost.kind not in FUSIBLE or cost.bytes <= 0:
        return None
    return cost, tensor_args(dims, types, concrete)
