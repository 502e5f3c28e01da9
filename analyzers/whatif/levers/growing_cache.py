"""A decode loop whose KV cache grows a token each step: what a CUDA graph cannot capture as the loop stands.

A graph replays fixed shapes at fixed addresses. Hugging Face's generate() with its default DynamicCache appends each
new token's keys and values to the cache (torch.cat): the attention op of every decode step reads a key one token
longer than the step before, so each step is a new shape, a new allocation, and neither torch.cuda.graph nor
torch.compile(mode="reduce-overhead") captures the loop as written (reduce-overhead re-records, or falls back, for
every new length). The graph needs a static cache first (generate(..., cache_implementation="static"), the decode step
compiled), a restructure, not a wrapper (fresh12 bart_generate_no_repeat_ngram: keys 2 to 49 over 48 tokens, told
"capture the step in CUDA graphs ... predicted −81%" as if it applied directly).

What the trace shows: attention ops (ATTENTION_OPS) whose query holds one token ([B, H, 1, D]) and whose key's length
(dimension -2) takes MIN_STEPS or more consecutive values, each one more than the last. A static cache reads one fixed
length (its maximum) every step; a prefill's query holds many tokens; a training loop's attention reads equal lengths.
Needs record_shapes; without shapes nothing is found.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, NONE

ATTENTION_OPS = frozenset({"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
                           "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
                           "aten::_flash_attention_forward", "aten::_efficient_attention_forward",
                           "aten::_cudnn_attention_forward"})
MIN_STEPS = 4        # consecutive key lengths, one token apart: a decode loop, not one odd shape


@dataclass(frozen=True)
class GrowingCache:
    first: int          # the key length of the run's first decode step
    last: int           # ... of its last
    calls: int          # one-token attention calls that read it


def find(trace) -> GrowingCache | None:
    """The longest run of consecutive key lengths read by one-token attention calls, where MIN_STEPS or more."""
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if not len(ops):
        return None
    ops = ops[name_flags(trace, ops, lambda n: n in ATTENTION_OPS)]
    # each distinct shape (an id into trace.shapes_raw) decoded once and counted for every call that has it: a decode
    # loop's attention calls repeat a few shapes (the 942k-event benchmark trace: 5,940 calls of 6 shapes: 24 ms of CPU
    # decoding each call's shapes, 5 ms so)
    sids, first, calls = np.unique(ev.shape[ops], return_index=True, return_counts=True)
    lengths: dict[int, int] = {}
    for sid, r, n in zip(sids.tolist(), ops[first].tolist(), calls.tolist()):
        dims = trace.shapes(r)[0] if sid != NONE else None
        if not dims or len(dims) < 2:
            continue
        q, k = dims[0], dims[1]
        if not (isinstance(q, list) and isinstance(k, list) and len(q) == 4 and len(k) == 4):
            continue
        if q[2] == 1 and isinstance(k[2], int):
            lengths[k[2]] = lengths.get(k[2], 0) + n
    if len(lengths) < MIN_STEPS:
        return None
    ks = sorted(lengths)
    best, start = (0, 0), 0
    for i in range(1, len(ks) + 1):
        if i == len(ks) or ks[i] != ks[i - 1] + 1:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = i
    lo, hi = best
    if hi - lo < MIN_STEPS:
        return None
    return GrowingCache(ks[lo], ks[hi - 1], sum(lengths[k] for k in ks[lo:hi]))
