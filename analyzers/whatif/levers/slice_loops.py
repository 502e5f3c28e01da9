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
aten::rnn_relu_cell) -> nn.LSTM / nn.GRU / nn.RNN over the whole sequence; a body of indexing and elementwise ops
only (ELEMENTWISE, none in place) whose results aten::stack or aten::cat gathers right after the loop (a per-image
augment: `torch.stack([augment(img) for img in batch])`) -> the same ops once on the whole batch. A body whose ops
name no fused form (a softmax written out row by row, a custom scan) is left to the launch levers: whether its
iterations depend on one another is not in the trace, and "vectorise it" would be a guess.
Where an op runs in some iterations only (`if random.random() < 0.5: img = img.flip(-1)`) the names do not repeat
with one period; the iterations are then anchored at their first slicing op (`_anchored_runs`: each MAX_BODY ops or
fewer, all running one core of ops, OPTIONAL_OPS more at most in some), and the loop is that run.

Not this construct (the rule must not fire): a model's stack of layers (its ops repeat, but no op slices one tensor
each time: the next layer reads the output of the one before); iterations of the user's own loop (a profiler step
or a named range starts between them: steps, requests); a body longer than MAX_BODY ops (a whole model called per
item: batch_items' model loop, or a generation's decode step: kv_cache's); a loop whose iterations hold less than
MIN_SHARE of the traced span (a few slices at set-up, a post-processing loop beside a model that is the time).
Not this construct either: a loop whose slices each go to another module (`[emb(ids[:, i]) for i, emb in
enumerate(self.embs)]`, a table per feature): the family op's weights change shape between iterations (the
embedding's table [rows, d], a cell's weights) and no one call takes them; where every table has one shape the trace
cannot tell them apart (it records no tensor's identity) and the rule would fire falsely.
What would make the elementwise family fire falsely: a loop whose items need different ops that no mask expresses
(data-dependent Python control flow beyond a choice per item); each item's result used apart but stacked for
logging. What would make it fire falsely: a loop of embedding lookups whose ids depend on the step before (a greedy
decode feeding its own tokens back one at a time): its lookups cannot be made one call; kv_cache's and batch_items'
loops (a model per step) take longer bodies than MAX_BODY, so a decode step is not this construct.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.names import name_codes
from tracetriage.analyzers.model.trace import CPU_OP, GPU_CATS, USER_ANNOTATION, thread_keys
from tracetriage.analyzers.whatif.levers.knob import outermost_ops
from tracetriage.analyzers.whatif.levers.spec import Context

INDEXING = frozenset(("aten::slice", "aten::select", "aten::narrow"))
MIN_ITERATIONS = 8     # a loop of 2-4 passes is a model's heads or branches; eight tiny bodies in a row are a loop
MAX_BODY = 8           # outermost ops an iteration: a few tiny ops, not a model call (batch_items' item loop)
OPTIONAL_OPS = 2       # ops some iterations run and others skip (a random flip): more is another loop's body
MIN_SHARE = 0.1        # of the traced span the loop's iterations must hold to be the lever a report names
PROFILER_STEP = "ProfilerStep#"
# Ops that act on each element alike (or reverse/permute an axis): a body of only these on slices runs batched as is
ELEMENTWISE = frozenset(("aten::mul", "aten::sub", "aten::div", "aten::add", "aten::rsub", "aten::flip",
                         "aten::clamp", "aten::clip", "aten::neg", "aten::abs", "aten::pow", "aten::sqrt",
                         "aten::rsqrt", "aten::exp", "aten::log", "aten::where", "aten::to", "aten::contiguous",
                         "aten::permute", "aten::transpose", "aten::sigmoid", "aten::tanh", "aten::relu",
                         "aten::clone", "aten::mean", "aten::std", "aten::roll"))
GATHER = frozenset(("aten::stack", "aten::cat"))
GATHER_WITHIN = 2      # outermost ops after the loop's last iteration that may precede its torch.stack
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
    gathered: str = ""               # the op that gathers an elementwise loop's results (aten::stack, aten::cat)


def _family(body: tuple[str, ...]) -> str:
    return next((f for f, names in FAMILIES if any(n in names for n in body)), "")


def _core_body(names: list[str]) -> tuple[str, ...]:
    """One iteration's ops of a loop whose iterations differ by an optional op: the longest iteration's, in order."""
    indexing = [n in INDEXING for n in names]
    anchors = [i for i, x in enumerate(indexing) if x and (i == 0 or not indexing[i - 1])]
    parts = [names[a:b] for a, b in zip(anchors, anchors[1:] + [len(names)])]
    return tuple(max(parts, key=len)) if parts else tuple(names)


def _weights_differ(c: Context, rows: np.ndarray, family: str) -> bool:
    """The loop's family ops take weights of different shapes from one iteration to the next: each slice goes to
    another module (`[emb(ids[:, i]) for i, emb in enumerate(self.embs)]`: 26 tables), which no one call of one
    module can take. Weights of one shape may still be different modules (the trace records no tensor's identity):
    that case is not told apart, and the docstring says so."""
    names = dict(FAMILIES).get(family, ())
    weights = {tuple(map(tuple, (c.trace.shapes(int(r))[0] or [[]])[:1] if family == "embedding"
                              else (c.trace.shapes(int(r))[0] or [])[2:]))
               for r in rows.tolist() if c.trace.name_of(int(r)) in names}
    return len(weights) > 1


def _gathered(c: Context, body: tuple[str, ...], mine: np.ndarray, after: int) -> str:
    """The op that gathers the loop's results, aten::stack or aten::cat right after it, where the body is indexing and
    elementwise ops only (none in place: no iteration writes what another reads): a per-item transform (crop, flip,
    scale, normalise) that runs on the whole tensor as it does on one item (the "elementwise" family); "" for none."""
    ops = set(body) - INDEXING
    if not ops or not ops <= ELEMENTWISE:
        return ""
    nxt = [c.trace.name_of(int(r)) for r in mine[after:after + GATHER_WITHIN].tolist()]
    return next((n for n in nxt if n in GATHER), "")


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


def _anchored_runs(names: list[str], indexing: np.ndarray | None = None) -> list[tuple[int, int, int]]:
    """(first index, iterations, ops in all) of every stretch of MIN_ITERATIONS iterations or more that each begin at
    an indexing op (the first of a run of them) and hold MAX_BODY ops or fewer, whose op names all share one core
    (the ops every iteration runs): a body with an op only some iterations run (`if random.random() < 0.5:
    img = img.flip(-1)`), which `_runs` cannot see as periodic. `indexing`: name in INDEXING, per op (bool), where
    the caller has it from the names' ids."""
    if indexing is None:
        indexing = np.array([n in INDEXING for n in names], bool)
    anchors = np.flatnonzero(indexing & ~np.r_[False, indexing[:-1]])   # the first of each run of indexing ops
    # reach[i]: how many anchors in a row after anchor i lie MAX_BODY ops or fewer after the one before. A start
    # with fewer than MIN_ITERATIONS cannot become a run, nor can any later one before that row ends: the search
    # goes on past it (the x5 trace: 16,180 anchors on its one thread; find 52 -> 25 ms CPU)
    short = np.diff(anchors) <= MAX_BODY
    longs = np.flatnonzero(~short)
    at = np.arange(len(short))
    ends = np.r_[longs, len(short)][np.searchsorted(longs, at)] if len(short) else at
    reach = np.r_[ends - at, 0].tolist()
    anchors = anchors.tolist()
    out: list[tuple[int, int, int]] = []
    i = 0
    while i < len(anchors) - 1:
        if reach[i] < MIN_ITERATIONS:
            i += reach[i] + 1
            continue
        j, core, union = i, None, set()
        while j < len(anchors) - 1 and anchors[j + 1] - anchors[j] <= MAX_BODY:
            body = set(names[anchors[j]:anchors[j + 1]])
            nxt = body if core is None else core & body
            if len(nxt - INDEXING) < 2 or len((union | body) - nxt) > OPTIONAL_OPS:
                break                                  # another body: a different loop, or none
            core, union = nxt, union | body
            j += 1
        if j - i >= MIN_ITERATIONS:
            # the last iteration: from its anchor while its ops are the body's (the next anchor is the next loop's)
            tail = anchors[j]
            while tail < len(names) and tail - anchors[j] < MAX_BODY and names[tail] in union and \
                    (tail == anchors[j] or names[tail] not in INDEXING or names[tail - 1] in INDEXING):
                tail += 1
            whole = core is not None and core <= set(names[anchors[j]:tail])
            out.append((anchors[i], j - i + whole, (tail if whole else anchors[j]) - anchors[i]))
        i = max(j, i + 1)
    return out


def boundaries(c: Context) -> tuple[np.ndarray, np.ndarray]:
    """Where profiler steps start, and where the user's other named ranges start (sorted)."""
    ev = c.trace.ev
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    is_step = np.array([n.startswith(PROFILER_STEP) for n in c.trace.names], bool)   # (a test per name, not per row)
    step = is_step[ev.name[ann]]
    return (np.sort(ev.start[ann[step]]), np.sort(ev.start[ann[~step]])) if len(ann) else (ann, ann)


def _span(c: Context) -> int:
    """The traced work's span, first op or GPU activity to last (ns)."""
    ev = c.trace.ev
    rows = np.flatnonzero(any_of(ev.cat, (CPU_OP, *GPU_CATS)))   # (a comparison per category: np.isin sorts)
    return int(ev.end[rows].max() - ev.start[rows].min()) if len(rows) else 0


def find(c: Context) -> list[SliceLoop]:
    """The loops over slices in the trace (the module docstring's rule), longest first."""
    ev = c.trace.ev
    ops = outermost_ops(c)
    span_ns = _span(c)
    if len(ops) < MIN_ITERATIONS or span_ns <= 0:
        return []
    steps, ranges = boundaries(c)
    key = thread_keys(ev, ops)
    is_indexing = np.zeros(len(c.trace.names), bool)     # per name id
    is_indexing[[i for i, n in enumerate(c.trace.names) if n in INDEXING]] = True
    out = []
    for k in distinct(key).tolist():
        mine = ops[key == k]
        _, codes = name_codes(c.trace, mine)
        table = c.trace.names
        names = [table[i] for i in ev.name[mine].tolist()]      # name_of per row, without a call per op (158k at x5)
        # a loop whose iterations differ by an optional op holds periodic stretches (the iterations in a row that
        # skip it): the whole loop, anchored at its slicing, is the one kept
        anchored = _anchored_runs(names, is_indexing[ev.name[mine]])
        taken = np.zeros(len(mine), bool)
        for first, _, n in anchored:
            taken[first:first + n] = True
        periodic = [(first, iterations, p * iterations) for p, first, iterations in _runs(codes.reshape(-1))
                    if not taken[first:first + p * iterations].any()]
        for first, iterations, n, is_anchored in [(*x, False) for x in periodic] + [(*x, True) for x in anchored]:
            rows = mine[first:first + n]
            if is_anchored:     # each iteration starts at its slicing op
                body = _core_body(names[first:first + n])
                at = [i for i, name in enumerate(names[first:first + n]) if name in INDEXING
                      and (i == 0 or names[first + i - 1] not in INDEXING)]
            else:               # the body's first indexing op, every period
                p = n // iterations
                body = tuple(names[first:first + p])
                at = [i for i, name in enumerate(body) if name in INDEXING][:1]
                at = list(range(at[0], n, p)) if at else []
            if not at:
                continue        # no op slices a tensor each time: a stack of layers, or a repeated call
            sources = {tuple((c.trace.shapes(int(r))[0] or [[]])[0] or ()) for r in rows[at].tolist()}
            if len(sources) != 1 or not next(iter(sources)):
                continue        # the sliced input changes shape (or is unrecorded): not one tensor sliced in a loop
            start, end = int(ev.start[rows[0]]), int(ev.end[rows[-1]])
            if ((steps > start) & (steps < end)).any() or ((ranges > start) & (ranges < end)).any():
                continue        # iterations of the user's own loop (steps, named requests), not slices of one step
            if end - start < MIN_SHARE * span_ns:
                continue
            gathered = "" if _family(body) else _gathered(c, body, mine, first + n)
            family = _family(body) or ("elementwise" if gathered else "")
            if not family:
                continue        # no fused form named by the ops (the module docstring): the launch levers' case
            if _weights_differ(c, rows, family):
                continue        # each slice feeds another module (its own table or cell): no one call takes them
            out.append(SliceLoop(int(k), iterations, body, family, next(iter(sources)), start, end, gathered))
    return sorted(out, key=lambda x: x.start - x.end)
