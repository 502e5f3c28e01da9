"""slice_loops: a Python loop that runs the same few ops once per slice of one tensor (batch_items' second construct).

`torch.stack([emb(ids[s:e]).sum(0) for s, e in zip(starts, ends)])` (a bag of ids per sample, pooled one sample at a
time) and `for t in range(T): h, c = cell(x[:, t], (h, c))` (an RNN cell stepped over time) issue one short op
sequence per iteration, each op a launch or two on a slice of a tensor that one op could take whole
(F.embedding_bag over every bag; nn.LSTM over the whole window, cuDNN's fused recurrence).

What any trace of the construct shows, whatever the model: on one thread, the outermost CPU ops repeat a short
sequence of names (a body of MAX_BODY ops or fewer) MIN_ITERATIONS times or more in a row, and each iteration holds
an indexing op (aten::slice, aten::select, aten::narrow) whose input has the same shape every time (the loop slices
one tensor; the slice's bounds change, the source does not). The body's op family names the fused form: an
embedding lookup -> F.embedding_bag; an RNN cell (aten::lstm_cell, aten::gru_cell, aten::rnn_tanh_cell,
aten::rnn_relu_cell) -> nn.LSTM / nn.GRU / nn.RNN over the whole sequence. A body whose ops name no fused form (a
softmax written out row by row, a custom scan) is left to the launch levers: whether its iterations depend on one
another is not in the trace, and "vectorise it" would be a guess.

Not this construct (the rule must not fire): a model's stack of layers (its ops repeat, but no op slices one tensor
each time: the next layer reads the output of the one before); iterations of the user's own loop (a profiler step
or a named range starts between them: steps, requests); a body longer than MAX_BODY ops (a whole model called per
item: batch_items' model loop, or a generation's decode step: kv_cache's); a loop whose iterations hold less than
MIN_SHARE of the traced span (a few slices at set-up, a post-processing loop beside a model that is the time).
What would make it fire falsely: a loop of embedding lookups whose ids depend on the step before (a greedy decode
feeding its own tokens back one at a time): its lookups cannot be made one call; kv_cache's and batch_items' loops
(a model per step) take longer bodies than MAX_BODY, so a decode step is not this construct.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.trace import CPU_OP, GPU_CATS, USER_ANNOTATION, thread_key
from tracetriage.analyzers.whatif.levers.knob import outermost_ops
from tracetriage.analyzers.whatif.levers.spec import Context

INDEXING = frozenset(("aten::slice", "aten::select", "aten::narrow"))
MIN_ITERATIONS = 8     # a loop of 2-4 passes is a model's heads or branches; eight tiny bodies in a row are a loop
MAX_BODY = 8           # outermost ops an iteration: a few tiny ops, not a model call (batch_items' item loop)
MIN_SHARE = 0.1        # of the traced span the loop's iterations must hold to be the lever a report names
PROFILER_STEP = "ProfilerStep#"
# The op family in the body and the fused form that takes the whole tensor (family, the op names that show it)
FAMILIES = (
    ("embedding", ("aten::embedding",)),
    ("lstm", ("aten::lstm_cell", "aten::_thnn_fused_lstm_cell")),
    ("gru", ("aten::gru_cell", "aten::_thnn_fused_gru_cell")),
    ("rnn", ("aten::rnn_tanh_cell", "aten::rnn_relu_cell")),
)


@dataclass(frozen=True)
class SliceLoop:
    """One Python loop over slices of a tensor: where it ran and what each iteration did."""
    thread: int
    iterations: int
    body: tuple[str, ...]            # the outermost ops of one iteration, in order
    family: str                      # "embedding", "lstm", "gru", "rnn"
    source_shape: tuple              # the sliced tensor's shape
    start: int                       # the first iteration's first op (ns)
    end: int                         # the last iteration's last op (ns)


def _family(body: tuple[str, ...]) -> str:
    return next((f for f, names in FAMILIES if any(n in names for n in body)), "")


def _runs(codes: np.ndarray) -> list[tuple[int, int, int]]:
    """(period, first index, iterations) of every maximal stretch where codes[i] == codes[i + period] for a period of
    MAX_BODY or fewer, MIN_ITERATIONS periods long or more; the shortest period wins where two cover the same ops."""
    out: list[tuple[int, int, int]] = []
    taken = np.zeros(len(codes), bool)
    for p in range(1, MAX_BODY + 1):
        if len(codes) < p * MIN_ITERATIONS:
            break
        same = codes[p:] == codes[:-p]
        edges = np.flatnonzero(np.diff(np.r_[0, same.astype(np.int8), 0]))
        starts, ends = edges[::2], edges[1::2]
        # only stretches long enough for MIN_ITERATIONS are looked at in Python (most are an op or two long)
        long_enough = ends - starts >= (MIN_ITERATIONS - 1) * p
        for s, e in zip(starts[long_enough].tolist(), ends[long_enough].tolist()):
            iterations = (e - s) // p + 1
            if iterations >= MIN_ITERATIONS and not taken[s:s + iterations * p].any():
                taken[s:s + iterations * p] = True
                out.append((p, s, iterations))
    return out


def _boundaries(c: Context) -> tuple[np.ndarray, np.ndarray]:
    """Where profiler steps start, and where the user's other named ranges start (sorted)."""
    ev = c.trace.ev
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    is_step = np.array([n.startswith(PROFILER_STEP) for n in c.trace.names], bool)   # (a test per name, not per row)
    step = is_step[ev.name[ann]]
    return (np.sort(ev.start[ann[step]]), np.sort(ev.start[ann[~step]])) if len(ann) else (ann, ann)


def _span(c: Context) -> int:
    """The traced work's span, first op or GPU activity to last (ns)."""
    ev = c.trace.ev
    rows = np.flatnonzero(np.isin(ev.cat, (CPU_OP, *GPU_CATS)))
    return int(ev.end[rows].max() - ev.start[rows].min()) if len(rows) else 0


def find(c: Context) -> list[SliceLoop]:
    """The loops over slices in the trace (the module docstring's rule), longest first."""
    ev = c.trace.ev
    ops = outermost_ops(c)
    span_ns = _span(c)
    if len(ops) < MIN_ITERATIONS or span_ns <= 0:
        return []
    steps, ranges = _boundaries(c)
    key = thread_key(ev.pid[ops], ev.tid[ops])
    out = []
    for k in np.unique(key).tolist():
        mine = ops[key == k]
        _, codes = np.unique(ev.name[mine], return_inverse=True)
        for p, first, iterations in _runs(codes.reshape(-1)):
            rows = mine[first:first + p * iterations]
            body = tuple(c.trace.name_of(int(r)) for r in rows[:p].tolist())
            at = [i for i, n in enumerate(body) if n in INDEXING]
            if not at:
                continue        # no op slices a tensor each time: a stack of layers, or a repeated call
            sources = {tuple((c.trace.shapes(int(r))[0] or [[]])[0] or ()) for r in rows[at[0]::p].tolist()}
            if len(sources) != 1 or not next(iter(sources)):
                continue        # the sliced input changes shape (or is unrecorded): not one tensor sliced in a loop
            start, end = int(ev.start[rows[0]]), int(ev.end[rows[-1]])
            if ((steps > start) & (steps < end)).any() or ((ranges > start) & (ranges < end)).any():
                continue        # iterations of the user's own loop (steps, named requests), not slices of one step
            if end - start < MIN_SHARE * span_ns:
                continue
            if not _family(body):
                continue        # no fused form named by the ops (the module docstring): the launch levers' case
            out.append(SliceLoop(int(k), iterations, body, _family(body), next(iter(sources)), start, end))
    return sorted(out, key=lambda x: x.start - x.end)
