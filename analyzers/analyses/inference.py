"""Prefill and decode found from the ops' input shapes, in a trace without named ranges.

Each step (tracetriage.analyzers.analyses.steps) is read for how many new tokens its forward takes:

    aten::embedding's indices           [B, T]   (or [N]: an engine that flattens its batch)
    else the attention op's query       [B, H, T, D]   ([N, H, D]: varlen)
    else the rows of its matmuls        the most common M of mm/addmm/linear/matmul inputs: B×T

A step of T == 1 is a decode step (one new token per sequence), T > 1 a prefill (the forward whose
sequence dimension is the prompt). With a flattened count N only, the smallest N the steps repeat is
decode's, where it is below every prompt's B x T (a count as large is the prompt's own tokens: one forward
cut into pieces by a sync inside it); a step above it is a prefill when no decode step ran before it, else mixed: a
continuous-batching engine's prefill chunk batched with the running decodes, said as mixed, never
forced into one phase. A step with both a prefill and a decode attention kernel (FlashInfer's
BatchPrefill* and BatchDecode*) is mixed whatever its shapes say. Steps whose shapes are not in the
trace (CUDA-graph replays record none) take the kind of the recorded steps of their structure, or, when
none of them is recorded, decode if they repeat after a prefill (one replay per token): said as such.

Only a trace that shows a sequence model is read so: token ids looked up in an embedding (aten::embedding), an
attention op or kernel (SDPA, flash, fmha, paged KV), or a `generate` frame in its stacks. Matrix rows alone say
nothing of tokens: a script that multiplies 100x100 matrices once and then replays them from a CUDA graph 19
times read as 'a 100-token prompt' and '19 decode steps' (heldout-user19 gp_cudagraph), and any loop whose first
step is larger than the rest would too.

TTFT of a request: from its prefill step's host start until its first token reaches the host: the end of the
first device-to-host copy issued after the prefill's last matmul (the logits), before the step after it ends
(HF generate copies each token back for its streamer and its stopping check; an engine copies the sampled ids).
Where no such copy is in the trace, the end of the prefill step (its first token is ready when its last GPU
work ends). The step's own end is not the token's: where the repeated sequence is cut (at the LM head of one
forward, say, when nothing marks a step's start once), a step can end before its token is computed, or after
the next forward's inputs are prepared (GPT-2 at batch 1 read 8% short). Per-token latency: each decode step's
wall, the time it added to the timeline (tracetriage.analyzers.analyses.steps: the windows partition it), median
and p90 over the decode steps.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from enum import Enum

import numpy as np

from tracetriage.analyzers.analyses.idle import dominant_cause
from tracetriage.analyzers.analyses.roofline import RegimeVerdict, Roofline, regime
from tracetriage.analyzers.analyses.steps import Step, Steps, StepSummary, summarize
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, MEMCPY, NONE, PYTHON, Trace
from tracetriage.analyzers.model.verdicts import CAUSES, Cause

EMBEDDING_OPS = frozenset({"aten::embedding"})
ATTENTION_OPS = frozenset({"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
                           "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
                           "aten::_flash_attention_forward", "aten::_efficient_attention_forward",
                           "aten::_cudnn_attention_forward"})
MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::linear", "aten::matmul"})
# a sequence model's own ops and kernels by name: attention in any of its spellings (aten's SDPA variants,
# flash-attn, xformers' fmha, FlashInfer's and vLLM's paged-KV kernels, Inductor kernels that fused an SDPA)
_ATTENTION_NAME = re.compile(r"attention|flash_?attn|flash_fwd|fmha|paged_?kv|pagedattention", re.I)
_GENERATE_FRAME = re.compile(r"\(\d+\): (generate|_sample|_greedy_search|greedy_search|sample)$")


class PhasesFrom(str, Enum):
    """Where a trace's prefill and decode were found."""
    RANGES = "ranges"      # the user's named ranges (prefill, decode_step)
    SHAPES = "shapes"      # the steps' input shapes (this module)

    def __str__(self) -> str:
        return self.value


class StepKind(str, Enum):
    PREFILL = "prefill"
    DECODE = "decode"
    MIXED = "mixed"        # prefill tokens and decode tokens in one step (continuous batching)
    OTHER = "other"        # no forward in it (set-up, a prologue), or nothing to tell by

    def __str__(self) -> str:
        return self.value


class TokensFrom(str, Enum):
    EMBEDDING = "embedding"      # the embedding lookup's indices
    ATTENTION = "attention"      # the attention op's query
    MATMUL = "matmul"            # the matmuls' rows
    STRUCTURE = "structure"      # no shapes in the step: its kind follows the steps of its structure

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class StepTokens:
    """One step read as a forward: its kind, and the tokens it takes."""
    step: int
    kind: StepKind
    batch: int | None              # sequences (None: the batch is flattened, or not recorded)
    tokens: int | None             # new tokens per sequence (with batch), or in all (flattened)
    source: TokensFrom | None


@dataclass(frozen=True)
class PhaseStats:
    """The steps of one phase, summed: what its regime is decided on."""
    kind: StepKind
    steps: tuple[int, ...]
    wall_ns: int                   # summed walls (the windows partition the timeline)
    median_wall_ns: int
    p90_wall_ns: int
    kernel_busy_ns: int
    idle_by_cause_ns: dict[Cause, int]
    verdict: RegimeVerdict

    @property
    def idle_ns(self) -> int:
        return sum(self.idle_by_cause_ns.values())

    @property
    def idle_share(self) -> float:
        return self.idle_ns / self.wall_ns if self.wall_ns else 0.0

    @property
    def idle_dominant(self) -> Cause | None:
        return dominant_cause(self.idle_by_cause_ns, self.idle_ns)


@dataclass(frozen=True)
class Inference:
    """Prefill and decode of a trace, from its steps' shapes."""
    steps: tuple[StepTokens, ...]
    prefill: PhaseStats
    decode: PhaseStats
    ttft_ns: tuple[int, ...]       # per request (a run of prefill steps)
    mixed: tuple[int, ...]         # indices of mixed steps
    batch: int | None              # sequences per decode step, where the shapes say it
    prompt_tokens: int | None      # tokens per sequence in the (first) prefill
    decode_summary: StepSummary    # median, p90, max per-token latency, and the decode outlier
    decode_inferred: bool          # decode steps recorded no shapes: taken as decode from their structure


def _dims(trace: Trace, row: int, arg: int) -> list | None:
    dims = trace.shapes(row)[0]
    if not dims or len(dims) <= arg or not isinstance(dims[arg], list) or not dims[arg]:
        return None
    d = dims[arg]
    return d if all(isinstance(x, int) for x in d) else None


_SOURCES = (TokensFrom.EMBEDDING, TokensFrom.ATTENTION, TokensFrom.MATMUL)   # the most telling first


def _tokens_of(trace: Trace, row: int) -> tuple[int, int, int] | None:
    """(source code, batch or -1, tokens) that one op's shapes say, or None."""
    n = trace.name_of(row)
    if n in EMBEDDING_OPS:
        d = _dims(trace, row, 1)
        return (0, d[0], d[1]) if d and len(d) == 2 else (0, -1, int(np.prod(d))) if d else None
    if n in ATTENTION_OPS:
        d = _dims(trace, row, 0)
        return (1, d[0], d[2]) if d and len(d) == 4 else (1, -1, d[0]) if d and len(d) == 3 else None
    d = _dims(trace, row, 1 if n == "aten::addmm" else 0)
    return (2, -1, int(np.prod(d[:-1]))) if d and len(d) >= 2 else None


def _read(trace: Trace, rows: np.ndarray, steps: tuple[Step, ...]) -> dict[int, tuple[int | None, int, TokensFrom]]:
    """Per step: (batch, tokens, source) from its ops' shapes: the most telling source it has, and among that
    source's ops the most common reading."""
    ev = trace.ev
    rows = rows[ev.shape[rows] != NONE]
    starts = np.array([s.host_start_ns for s in steps], np.int64)
    step_of = np.searchsorted(starts, ev.start[rows], side="right") - 1
    rows, step_of = rows[step_of >= 0], step_of[step_of >= 0]
    if not len(rows):
        return {}
    # one reading per distinct (op name, shapes), not per op: a decode loop repeats a few signatures
    key = ev.name[rows].astype(np.int64) * (len(trace.shapes_raw) + 1) + ev.shape[rows]
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    read = np.array([_tokens_of(trace, int(rows[i])) or (9, -1, -1) for i in first], np.int64)[inv.ravel()]
    src, b, t = read[:, 0], read[:, 1], read[:, 2]
    ok = src < len(_SOURCES)
    step_of, src, b, t = step_of[ok], src[ok], b[ok], t[ok]
    out: dict[int, tuple[int | None, int, TokensFrom]] = {}
    if not len(step_of):
        return out
    best = np.full(len(steps), len(_SOURCES))
    np.minimum.at(best, step_of, src)
    mine = src == best[step_of]
    combos, counts = np.unique(np.stack([step_of[mine], src[mine], b[mine], t[mine]], axis=1), axis=0,
                               return_counts=True)
    order = np.lexsort((-counts, combos[:, 0]))          # per step, its most common reading first
    combos = combos[order]
    keep = np.ones(len(combos), bool)
    keep[1:] = combos[1:, 0] != combos[:-1, 0]
    for k, s_, b_, t_ in combos[keep].tolist():
        out[k] = (None if b_ < 0 else b_, t_, _SOURCES[s_])
    return out


def _attention_kinds(trace: Trace, steps: tuple[Step, ...]) -> set[int]:
    """Steps that launch both a prefill and a decode attention kernel (FlashInfer names them so)."""
    ev = trace.ev
    kr = np.flatnonzero(ev.cat == KERNEL)
    if not len(kr):
        return set()
    pre = name_flags(trace, kr, lambda n: "prefill" in n.lower())
    dec = name_flags(trace, kr, lambda n: "decode" in n.lower())
    if not (pre.any() and dec.any()):
        return set()
    starts = np.array([s.start_ns for s in steps], np.int64)
    k = np.searchsorted(starts, ev.start[kr], side="right") - 1
    return set(np.intersect1d(k[pre], k[dec]).tolist()) - {-1}


def classify(trace: Trace, steps: Steps) -> tuple[StepTokens, ...]:
    ev = trace.ev
    rows = np.flatnonzero(ev.cat == CPU_OP)
    rows = rows[name_flags(trace, rows, lambda n: n in EMBEDDING_OPS or n in ATTENTION_OPS or n in MATMUL_OPS)]
    read = _read(trace, rows, steps.steps)
    both = _attention_kinds(trace, steps.steps)
    flat = [t for b, t, _ in read.values() if b is None]
    # a flattened count is decode's when it is the decode batch the [B, T] readings show, else the smallest the
    # steps repeat
    batches = [b for b, t, _ in read.values() if b is not None and t == 1]
    decode_level = min(batches) if batches else min(flat) if flat else None
    # a flattened count as large as a prompt's B x T is that prompt's tokens, not a decode step's: the pieces of
    # one forward cut by a sync inside it (issue 33: one MoE forward of [8, 1024] tokens, its 20 router syncs read
    # as 20 decode steps of 8,192 "tokens" each)
    prompts = [b * t for b, t, _ in read.values() if b is not None and t > 1]
    prompt_level = min(prompts) if prompts else None
    # the loop's own forwards read from their most telling source; a step read only from a less telling one
    # (a stray matmul after the loop) has no forward of its own
    typical = Counter(read[s.index][2] for s in steps.steps if s.regular and s.index in read).most_common(1)
    rank = {src: i for i, src in enumerate(_SOURCES)}
    out: list[StepTokens] = []
    decode_seen = False
    for s in steps.steps:
        b, t, src = read.get(s.index, (None, None, None))
        if t is None or (typical and not s.regular and rank[src] > rank[typical[0][0]]):
            kind = StepKind.OTHER
        elif s.index in both:
            kind = StepKind.MIXED
        elif b is not None:
            kind = StepKind.DECODE if t == 1 else StepKind.PREFILL
        elif t <= decode_level and (prompt_level is None or t < prompt_level) \
                and (batches or sum(1 for x in flat if x == t) > 1):
            kind = StepKind.DECODE
        else:
            kind = StepKind.MIXED if decode_seen else StepKind.PREFILL
        decode_seen |= kind is StepKind.DECODE
        out.append(StepTokens(s.index, kind, b, t, src))
    return _by_structure(tuple(out), steps)


def _by_structure(read: tuple[StepTokens, ...], steps: Steps) -> tuple[StepTokens, ...]:
    """Steps with no shapes: the kind their structure's recorded steps have, or decode after a prefill."""
    regular_kinds = Counter(t.kind for t, s in zip(read, steps.steps) if s.regular and t.source is not None)
    kind = regular_kinds.most_common(1)[0][0] if regular_kinds else None
    after_prefill = any(t.kind is StepKind.PREFILL for t in read)
    out, prefill_seen = [], False
    for t, s in zip(read, steps.steps):
        prefill_seen |= t.kind is StepKind.PREFILL
        if t.source is None and s.regular and s.kernels and (kind or (after_prefill and prefill_seen)):
            out.append(StepTokens(t.step, kind or StepKind.DECODE, None, None, TokensFrom.STRUCTURE))
        else:
            out.append(t)
    return tuple(out)


def sequence_model(trace: Trace) -> bool:
    """Whether the trace shows a sequence model at work: an embedding lookup or an attention op among its ops, an
    attention kernel, or a generate() frame (transformers' generation loop) in its stacks."""
    if not any(n in EMBEDDING_OPS or _ATTENTION_NAME.search(n) or _GENERATE_FRAME.search(n) for n in trace.names):
        return False      # (a few thousand names: no pass over the rows where no name says so)
    ev = trace.ev
    ops = distinct(ev.name[(ev.cat == CPU_OP) | (ev.cat == KERNEL)])
    if any(trace.names[i] in EMBEDDING_OPS or _ATTENTION_NAME.search(trace.names[i]) for i in ops.tolist()):
        return True
    frames = distinct(ev.name[ev.cat == PYTHON])
    return any(_GENERATE_FRAME.search(trace.names[i]) for i in frames.tolist())


def find(trace: Trace, steps: Steps, roof: Roofline, devices=(), framework=None) -> Inference | None:
    """Prefill and decode from the steps' shapes; None unless the trace has both, and shows a sequence model."""
    if not steps.found or not sequence_model(trace):
        return None
    kinds = classify(trace, steps)
    by_kind = {k: [s for s, t in zip(steps.steps, kinds) if t.kind is k] for k in StepKind}
    pre, dec = by_kind[StepKind.PREFILL], by_kind[StepKind.DECODE]
    if not pre or not dec:
        return None
    first_pre = next(t for t in kinds if t.kind is StepKind.PREFILL)
    batch = Counter(t.batch for t in kinds if t.kind is StepKind.DECODE and t.batch).most_common(1)
    decode_summary = summarize(trace, devices, dec, framework)
    return Inference(steps=kinds, prefill=_phase(trace, roof, StepKind.PREFILL, pre),
                     decode=_phase(trace, roof, StepKind.DECODE, dec),
                     ttft_ns=tuple(_first_token_home(trace, steps.steps, last)
                                   - _request_start(steps.steps, kinds, first) for first, last in _requests(pre)),
                     mixed=tuple(s.index for s in by_kind[StepKind.MIXED]),
                     batch=batch[0][0] if batch else first_pre.batch, prompt_tokens=first_pre.tokens,
                     decode_summary=decode_summary,
                     decode_inferred=all(t.source is TokensFrom.STRUCTURE for t in kinds if t.kind is StepKind.DECODE))


def _requests(pre: list[Step]) -> list[tuple[Step, Step]]:
    """Each request's prefill: a run of consecutive prefill steps (a prompt's forward that an op inside it cut
    into pieces is one prefill), as (first step, last step)."""
    out: list[tuple[Step, Step]] = []
    for s in pre:
        if out and s.index == out[-1][1].index + 1:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out


def _request_start(steps: tuple[Step, ...], kinds: tuple[StepTokens, ...], prefill: Step) -> int:
    """Where a request begins: its prefill's host start, or that of the prologue right before it (generate's
    set-up, a first request's masks and positions: steps with no forward of their own, before its embedding
    lookup)."""
    i = prefill.index
    while i > 0 and kinds[i - 1].kind is StepKind.OTHER and not steps[i - 1].regular:
        i -= 1
    return steps[i].host_start_ns


def _first_token_home(trace: Trace, steps: tuple[Step, ...], prefill: Step) -> int:
    """When a request's first token reaches the host: the end of the first device-to-host copy whose call follows
    the prefill's last matmul op (the logits) and comes before the step after the prefill ends; else the prefill
    step's end."""
    ev = trace.ev
    after = steps[prefill.index + 1].end_ns if prefill.index + 1 < len(steps) else prefill.end_ns
    ops = np.flatnonzero((ev.cat == CPU_OP) & (ev.start >= prefill.host_start_ns) & (ev.start < prefill.end_ns))
    mm = ops[name_flags(trace, ops, lambda n: n in MATMUL_OPS)] if len(ops) else ops
    copies = np.flatnonzero(ev.cat == MEMCPY)
    if not len(mm) or not len(copies):
        return prefill.end_ns
    copies = copies[name_flags(trace, copies, to_host)]
    call = trace.launch_of[copies]
    issued = np.where(call != NONE, ev.start[np.maximum(call, 0)], ev.start[copies])
    home = copies[(issued >= ev.start[mm].max()) & (issued < after)]
    return int(ev.end[home[np.argmin(ev.start[home])]]) if len(home) else prefill.end_ns


def to_host(name: str) -> bool:
    """A device-to-host copy: CUDA's 'Memcpy DtoH (Device -> Pageable)', ROCm's 'CopyDeviceToHost'."""
    return "DtoH" in name or "DeviceToHost" in name


def _phase(trace: Trace, roof: Roofline, kind: StepKind, steps: list[Step]) -> PhaseStats:
    walls = np.array([s.wall_ns for s in steps], np.int64)
    idle = {c: sum(s.idle_by_cause_ns[c] for s in steps) for c in CAUSES}
    wall = int(walls.sum())
    kernels = kernel_rows(trace, steps)
    return PhaseStats(kind=kind, steps=tuple(s.index for s in steps), wall_ns=wall,
                      median_wall_ns=int(round(np.median(walls))), p90_wall_ns=int(round(np.percentile(walls, 90))),
                      kernel_busy_ns=sum(s.kernel_busy_ns for s in steps), idle_by_cause_ns=idle,
                      verdict=regime(trace, roof, kernels, sum(idle.values()) / wall if wall else 0.0))


def kernel_rows(trace: Trace, steps: list[Step]) -> np.ndarray:
    """The kernels that run inside the steps' windows."""
    ev = trace.ev
    kr = np.flatnonzero(ev.cat == KERNEL)
    if not steps or not len(kr):
        return kr[:0]
    s = np.array([x.start_ns for x in steps], np.int64)
    e = np.array([x.end_ns for x in steps], np.int64)
    order = np.argsort(s)
    s, e = s[order], e[order]
    k = np.searchsorted(s, ev.start[kr], side="right") - 1
    inside = (k >= 0) & (ev.start[kr] < e[np.maximum(k, 0)])
    return kr[inside]


def inter_token_ns(prefill_windows: tuple[np.ndarray, np.ndarray],
                   decode_windows: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per decode step of named ranges, the time between its token and the one before it: the end of each
    instance (its last GPU work) minus the previous instance's end, the first after its request's prefill."""
    ps, pe = prefill_windows
    order = np.argsort(ps)
    ps, pe = ps[order], pe[order]
    ds, de = decode_windows
    order = np.argsort(ds)
    ds, de = ds[order], de[order]
    out = []
    for i in range(len(ps)):
        hi = ps[i + 1] if i + 1 < len(ps) else np.iinfo(np.int64).max
        m = (ds >= ps[i]) & (ds < hi)
        ends = np.concatenate(([pe[i]], np.maximum.accumulate(de[m])))
        out.append(np.diff(ends))
    return np.concatenate(out) if out else np.empty(0, np.int64)

