"""kv_cache: generation that keeps a KV cache (each forward takes only the new token and reads the keys and values of
the earlier ones from past_key_values; Hugging Face's model.generate(..., use_cache=True)), not generation that re-runs
the whole prefix for every new token.

Generation without a cache (HF generate with use_cache=False, nanoGPT's generate loop) runs the model on the whole
sequence again for each token: the same layer stack, forward after forward, on a sequence one token longer each
time. The trace shows it in the ops' Input Dims (found by `find`):
  1. the layer stack's linears (aten::linear, or aten::matmul by a 2-D weight; outermost on their thread) in runs of
     MIN_LINEARS or more that share one activation shape [B, T, H]: a run is one forward's layers (the LM head's
     single [B, 1, H] linear between two forwards is no run);
  2. successive runs with the same weights' shapes in the same order and the same B whose T grows by exactly one
     token from run to run: MIN_FORWARDS or more of them are a generation without a cache (a decode with a cache
     feeds [B, 1, H]; a training loop's batches do not grow by one).
In the graph each forward after the first takes its one new token: every kernel launched by an op that carries that
forward's tokens (an input [B, T, ...] or [B, H, T, d], a GEMM's B x T rows), from the end of the previous forward's
layers to the end of its own, is priced again:
  - a GEMM (its kernel a cuBLAS/CUTLASS one) takes its time / T, but at least its weight's bytes (its second
    operand: [H, N]) at this trace's memory rate (Context.memory_rate, else the datasheet's) and no less than the
    trace's shortest GEMM kernel;
  - the fused attention reads the cache: the K and V of T tokens at the memory rate, or 2/T of its causal time;
  - every other kernel of such an op scales to one token (its time / T), at least the trace's small-kernel time
    (SMALL_KERNEL_PCT: the 10th percentile of its kernels' durations).
The host still dispatches every op, so a decode step runs at the host's pace (the launch-bound step a cached decode
is), and the first forward (the prefill) keeps its time. Not priced: the cache's own upkeep (HF's DynamicCache
appends with torch.cat, a copy of each layer's cache every step: 11 us for each K or V on the fresh5 H100 pair,
~13% of a decode step's kernel time there) and its ops' dispatch.
Checked on traces/fresh5/mistral_generate_no_cache (H100, bf16, 8 x 1,024 prompts, 20 new tokens; the before trace's
memory rate 1,751 GB/s): the after trace's decode GEMMs took 11.8 us ([2048, 5632] weight; priced 13.2 us), 10.8 us
([5632, 2048]; 13.2), 6.5 us ([2048, 2048]; 4.8) and 5.5 us ([2048, 1024]; 3.8, the trace's shortest GEMM kernel), its
attention 15.0 + 2.2 us (19.3 priced). The span is another matter: the replay keeps the before trace's host, which ran
each op ~1.5x slower than the after trace's (the same prefill forward: 25.9 against 17.1 ms of host), so it predicts
0.98 of the span where the pair measured 0.775 profiled (0.635 unprofiled).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.dtypes import DTYPE_BYTES, normalise_dtype
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import KERNEL, NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.knob import is_matrix_kernel, ops_named, outermost, peaks_of
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    went,
)

LINEAR = frozenset(("aten::linear", "aten::matmul"))
ATTENTION = ("aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
             "aten::_scaled_dot_product_cudnn_attention", "aten::_flash_attention_forward",
             "aten::_efficient_attention_forward", "aten::_cudnn_attention_forward")
BIAS_FIRST = frozenset(("aten::addmm", "aten::baddbmm"))   # their first input is the bias: the operands follow
MIN_LINEARS = 4        # a run of fewer linears on one activation shape is no layer stack (an LM head, a projection)
MIN_FORWARDS = 3       # the prefill and two forwards that re-run it: a sequence growing by one token, twice
SMALL_KERNEL_PCT = 10  # the trace's small-kernel time: this percentile of its kernels' durations


@dataclass(frozen=True)
class Forward:
    """One forward of the chain: its layers' window on the host and the tokens it ran."""
    start: int                       # the first linear's start
    end: int                         # the last linear's end
    tokens: int                      # T


@dataclass(frozen=True)
class Chain:
    """Forwards of one layer stack on one thread whose sequence grows by one token each."""
    thread: int
    batch: int                       # B
    forwards: tuple[Forward, ...]


def _tensor_dims(c: Context, op: int) -> tuple[list[list], list]:
    """The op's tensor inputs' shapes (a TensorList's tensors in its place), with each one's dtype; read once per
    signature (ops of one signature share them)."""
    memo = c._windows.setdefault("kv_dims", {})
    sig = int(c.trace.ev.shape[op])
    if sig not in memo:
        memo[sig] = _read_dims(c, op)
    return memo[sig]


def _read_dims(c: Context, op: int) -> tuple[list[list], list]:
    dims, types, _ = c.trace.shapes(op)
    out, kinds = [], []
    for i, d in enumerate(dims or []):
        t = (types or [])[i] if i < len(types or []) else ""
        if isinstance(d, list) and d and all(isinstance(x, list) for x in d):
            out += [x for x in d if x]
            kinds += [t] * len([x for x in d if x])
        elif isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            out.append(d)
            kinds.append(t)
    return out, kinds


def _runs(c: Context, rows: np.ndarray) -> list[tuple[int, int, tuple, list[int]]]:
    """Runs of MIN_LINEARS or more successive linears on one activation's (B, T): (B, T, the weights' shapes,
    the rows). A row's (B, T) and weight's shape follow from its signature alone, so they are read once per
    signature (tens in 10k linears) and the runs found over the rows' codes, not row by row in Python."""
    if not len(rows):
        return []
    sigs, first, inverse = np.unique(c.trace.ev.shape[rows], return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    codes: dict[tuple, int] = {}
    code_of_sig = np.empty(len(sigs), np.int64)
    weight_of_sig: list[tuple] = []
    for i, r in enumerate(rows[first].tolist()):
        dims, _ = _tensor_dims(c, r)
        act, w = (dims[0], dims[1]) if len(dims) >= 2 else ([], [])
        k = (act[0], act[1]) if len(act) == 3 and len(w) == 2 else None
        code_of_sig[i] = -1 if k is None else codes.setdefault(k, len(codes))
        weight_of_sig.append(tuple(w))
    key_of_code = list(codes)
    code = code_of_sig[inverse]
    edges = np.flatnonzero(code[1:] != code[:-1]) + 1
    out = []
    for lo, hi in zip([0, *edges.tolist()], [*edges.tolist(), len(code)]):
        if code[lo] < 0 or hi - lo < MIN_LINEARS:
            continue
        k = key_of_code[int(code[lo])]
        out.append((k[0], k[1], tuple(weight_of_sig[s] for s in inverse[lo:hi].tolist()), rows[lo:hi].tolist()))
    return out


def find(c: Context) -> list[Chain]:
    """The generations without a cache in the trace (steps 1-2 of the module's docstring), found once a trace
    (batch_items asks too)."""
    if "kv_chains" not in c._windows:
        c._windows["kv_chains"] = _find(c)
    return c._windows["kv_chains"]


def _find(c: Context) -> list[Chain]:
    ev = c.trace.ev
    lin = outermost(c, ops_named(c, lambda n: n in LINEAR))
    chains: list[Chain] = []
    if len(lin) < MIN_LINEARS * MIN_FORWARDS:
        return chains
    key = thread_keys(ev, lin)
    for k in distinct(key).tolist():
        runs = _runs(c, lin[key == k])
        i = 0
        while i < len(runs):
            j = i + 1
            while j < len(runs) and runs[j][0] == runs[i][0] and runs[j][2] == runs[i][2] \
                    and runs[j][1] == runs[j - 1][1] + 1:
                j += 1
            if j - i >= MIN_FORWARDS:
                chains.append(Chain(int(k), int(runs[i][0]), tuple(
                    Forward(int(ev.start[r[3][0]]), int(ev.end[r[3][-1]]), int(r[1])) for r in runs[i:j])))
            i = j
    return chains


def _carries(dims: list[list], batch: int, tokens: int) -> bool:
    """An input holds the forward's tokens: [B, T, ...], [B, H, T, d] ([1, T, ...] broadcast over the batch, [B x H,
    T, d] for attention by hand), or a GEMM's B x T rows."""
    for d in dims:
        if len(d) >= 3 and (d[0] in (1, batch) or d[0] % batch == 0) and tokens in (d[1], d[-2]):
            return True
        if len(d) == 2 and d[0] == batch * tokens:
            return True
    return False


def _nbytes(d: list, kind: str) -> int:
    return int(np.prod(d)) * DTYPE_BYTES.get(normalise_dtype(kind) or "", 2)


@dataclass(frozen=True)
class KvCache(Assumption):
    forwards: int = 0                # forwards of the generation, the prefill included
    batch: int = 0
    first_tokens: int = 0            # the prefill's T
    last_tokens: int = 0             # the last forward's T
    kernels: int = 0                 # kernels priced again
    kernel_ns: int = 0               # their time in the trace
    priced_ns: int = 0               # their time with the cache
    rate_gbps: float = 0.0           # the memory rate the GEMMs' weights and the cache are read at


def apply(c: Context, p, o: Options) -> tuple[KvCache, dict]:
    g, ev = c.g, c.trace.ev
    chains = find(c)
    detail = {"regrown_forwards": sum(len(ch.forwards) - 1 for ch in chains)}
    if not chains:
        return KvCache("kv_cache", 0), detail
    peaks = peaks_of(c)
    rate = c.memory_rate or (peaks.bytes_per_s / 1e9 if peaks is not None else None)   # bytes per ns
    kernels = np.flatnonzero((g.g_cat == KERNEL) & g.g_linked & (g.g_call >= 0))
    durs = g.g_dur[kernels]
    small = float(np.percentile(durs, SMALL_KERNEL_PCT)) if len(durs) else 0.0
    names = [c.trace.name_of(int(r)) for r in g.g_row[kernels].tolist()]
    gemm = np.array([is_matrix_kernel(n) for n in names], bool)
    shortest_gemm = float(durs[gemm].min()) if gemm.any() else small
    ops = c.trace.op_of[g.c_row[g.g_call[kernels]]]
    o_key = np.where(ops != NONE, thread_keys(ev, np.maximum(ops, 0)), 0)
    o_start = np.where(ops != NONE, ev.start[np.maximum(ops, 0)], 0)
    hit, before_ns, after_ns = 0, 0, 0
    for ch in chains:
        fw = ch.forwards
        ends = [f.end for f in fw]
        for i in range(1, len(fw)):
            lo, hi = ends[i - 1], ends[i] if i + 1 < len(fw) else fw[i].end + (fw[i].end - fw[i - 1].end)
            t = fw[i].tokens
            for j in np.flatnonzero((ops != NONE) & (o_key == ch.thread) & (o_start >= lo) & (o_start < hi)).tolist():
                op = int(ops[j])
                dims, kinds = _tensor_dims(c, op)
                if not _carries(dims, ch.batch, t):
                    continue
                name, dur = c.trace.name_of(op), float(durs[j])
                if name.startswith(ATTENTION) and len(dims) >= 3:
                    cache = _nbytes(dims[1], kinds[1]) + _nbytes(dims[2], kinds[2])
                    new = max(2.0 * dur / t, cache / rate if rate else 0.0, small)
                elif gemm[j] and len(dims) >= 2:
                    w = 2 if name in BIAS_FIRST and len(dims) >= 3 else 1
                    new = max(dur / t, _nbytes(dims[w], kinds[w]) / rate if rate else 0.0, shortest_gemm)
                else:
                    new = max(dur / t, small)
                new = min(new, dur)
                row = kernels[j]
                p.g_dur[row] = int(round(new))
                hit += 1
                before_ns += int(dur)
                after_ns += int(round(new))
    best = max(chains, key=lambda ch: len(ch.forwards))
    return (KvCache("kv_cache", sum(len(ch.forwards) - 1 for ch in chains), forwards=len(best.forwards),
                    batch=best.batch, first_tokens=best.forwards[0].tokens, last_tokens=best.forwards[-1].tokens,
                    kernels=hit, kernel_ns=before_ns, priced_ns=after_ns, rate_gbps=(rate or 0.0)),
            detail | {"kernels_priced": hit})


def says(a: KvCache) -> str:
    if a.count == 0:
        return ("no forwards of one layer stack whose sequence grows by one token each (a generation that re-runs "
                "its prefix without a KV cache)")
    return (f"each of the {units.integer(a.count)} forwards after the first re-runs the whole prefix (linears on "
            f"[{a.batch}, {a.first_tokens}..{a.last_tokens}, ...] tokens, one more a "
            f"forward): with a KV cache each takes its one new token, and their {units.integer(a.kernels)} kernels "
            f"({units.duration_ns(a.kernel_ns)}) take {units.duration_ns(a.priced_ns)} (GEMMs at least their "
            f"weights' bytes at {units.gbps(a.rate_gbps)}, attention reading the cached keys and values, the rest "
            "one token's worth); the host still dispatches every op")


CHANGE = ("keep a KV cache: feed only the new token with past_key_values (Hugging Face: "
          "model.generate(..., use_cache=True))")


def regrown(m: Measured) -> int:
    return m.whatif.lever("kv_cache").detail.get("regrown_forwards", 0)


SPEC = LeverSpec(
    name="kv_cache", effort=1, cause=None, apply=apply, says=says, words="a KV cache",
    fix="generate with a KV cache (use_cache=True): each forward after the prefill takes only the new token",
    recognise=Recognise(order=1, evidence="regrown_forwards", because="its forwards stopped re-running the prefix: "
                        "one new token each", amount=regrown, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="a KV cache (kv_cache)", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE,
              evidence="forwards of one layer stack (runs of linears with the same weights' shapes) whose activations "
                       "[B, T, H] grow by one token from forward to forward, three or more",
              applies="every device and dtype: autoregressive generation",
              model="each forward after the first takes one token: its GEMMs at least their weights' bytes at the "
                    "trace's memory rate (and the shortest GEMM kernel), its attention reading the cached K and V, "
                    "its other kernels one token's share (at least the trace's small-kernel time); the host's "
                    "dispatch stays",
              guide="past the guides: Hugging Face generation (use_cache, past_key_values)"))
