"""batch_items: one call of the model on the whole batch (model(frames), or torch.stack of the items), not one call
per item (`[model([x])[0] for x in frames]`).

A loop that calls the model on one item at a time pays the model's host work (dispatch, launches, its own Python)
once per item, on kernels a batch would make N times larger. The trace shows it (found by `find`) as one thread
running the same sequence of weighted ops (convolutions, linears: the same ops on the same weights' shapes, in the
same order) MIN_ITEMS or more times in a row, each time on inputs of one item: every convolution's input has a
leading dimension of 1, or, in a model without convolutions, every linear's input is [1, T, H] with T > 1 (a decode
step's [1, 1, H] is a step of a generation, not an item: the next step needs its token). Not an item loop: a
generation that re-runs its prefix (kv_cache's chains), a stack of layers inside one call (each call must start from
the raw input: an image into its first convolution, token ids into an embedding), repetitions that hold a backward
(training steps, each updating the weights the next one uses), and repetitions that a profiler step boundary cuts or
that a named range marks call by call (iterations of the user's loop, items that may arrive one at a time).

The price is the launch lever's (cuda_graphs' replay: the dispatch and the launch calls vanish, the kernels run as
they ran, back to back), not a batched call's: how much of each item's host work one call on the batch keeps (a
model may loop over the items inside: torchvision's detectors run their RPN and box post-processing image by image)
and how fast N-times-larger kernels run are not in the trace. Measured on traces/fresh5/fasterrcnn_per_image (H100,
torchvision Faster R-CNN, 8 frames of 720p): predicted 0.54 of the traced span (0.70 without the profiler),
measured 0.58 profiled and 0.68 unprofiled.

Its second construct (slice_loops.find, where no model loop is found): a Python loop of a few tiny ops per slice of
one tensor (per-sample embedding bags, an RNN cell stepped over time); the change names the fused form the loop's op
family has (F.embedding_bag, nn.LSTM/GRU/RNN over the whole sequence), priced the
same way: the loop's launches collapse, the fused op's own kernels are not in the trace. "A bigger batch" is no fix
there: each sample of a batch is one more iteration, one more set of launches.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct, pair_codes
from tracetriage.analyzers.model.trace import USER_ANNOTATION, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif.levers import cuda_graphs, kv_cache, slice_loops
from tracetriage.analyzers.whatif.levers.knob import ops_named, outermost
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

CONVOLUTION = frozenset(("aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution"))
WEIGHTED = CONVOLUTION | {"aten::linear"}
MIN_ITEMS = 4          # four calls in a row on one item each: a loop over items, not a model that repeats a block twice
MIN_BLOCK = 2          # weighted ops in one item's call (a one-layer model repeated is a model's layers)
PROFILER_STEP = "ProfilerStep#"
# A backward ran where the trace records one of these (inference_mode reads them alike): autograd's engine, a node under
# its own name (torch 1.9), the gradient's accumulation, an ATen backward kernel.
_BACKWARD_NODE = re.compile(r"^[A-Za-z0-9_]+Backward\d*$")
IMAGE_CHANNELS = 4     # an image's channels (grey, RGB, RGBA): a first convolution reading more reads activations
EMBEDDING = "aten::embedding"
RAREST = 8            # the rarest ops whose spacing gives the periods tried


@dataclass(frozen=True)
class ItemLoop:
    """One model called item by item: its calls' span on one thread and what each call ran."""
    thread: int
    items: int                       # calls in a row
    ops: int                         # weighted ops in one call
    start: int                       # the first call's first weighted op
    end: int                         # the last call's last weighted op
    input_shape: tuple               # the first weighted op's input in each call ([1, 3, H, W])


def _dims(c: Context, op: int) -> list[list]:
    dims = c.trace.shapes(op)[0] or []
    return [d for d in dims if isinstance(d, list) and d and all(isinstance(x, int) for x in d)]


def _key(c: Context, op: int) -> tuple:
    """What one weighted op is, whatever its input: its name and its weight's shape."""
    d = _dims(c, op)
    return (c.trace.name_of(op), tuple(d[1]) if len(d) > 1 else ())


def _key_codes(c: Context, ops: np.ndarray) -> np.ndarray:
    """Each op's _key as a small integer, numbered by first appearance. _key reads only the op's name and shape ids,
    so it is computed once per distinct (name, shape) pair (tens in a loop of 10k ops), not per op: each op's
    shapes decoded from JSON was most of the what-if levers' time on a 300 MB trace."""
    ev = c.trace.ev
    _, _, inverse = pair_codes(ev.name[ops], ev.shape[ops])     # (the pairs in np.unique's order, sorting nothing)
    first = np.zeros(int(inverse.max(initial=-1)) + 1, np.intp)
    first[inverse[::-1]] = np.arange(len(inverse) - 1, -1, -1)   # (the last write of a repeated pair wins: its first)
    codes: dict[tuple, int] = {}
    code_of_pair = np.empty(len(first), np.int64)
    for p in np.argsort(first, kind="stable").tolist():     # pairs by first appearance: the keys' numbering
        code_of_pair[p] = codes.setdefault(_key(c, int(ops[first[p]])), len(codes))
    return code_of_pair[inverse.reshape(-1)]


def _one_item(c: Context, ops: np.ndarray) -> bool:
    """Each op of one call runs on one item (the module docstring's rule)."""
    names = [c.trace.name_of(int(r)) for r in ops.tolist()]
    firsts = [(_dims(c, int(r)) or [[]])[0] for r in ops.tolist()]
    convs = [d for n, d in zip(names, firsts) if n in CONVOLUTION]
    if convs:
        return all(len(d) >= 3 and d[0] == 1 for d in convs)
    return bool(firsts) and all(len(d) >= 3 and d[0] == 1 and d[1] > 1 for d in firsts)


def _from_raw_input(c: Context, block: np.ndarray, windows: list[tuple[int, int]], thread: int) -> bool:
    """Each call starts from the model's raw input, not from the activations of a block before it: its first
    convolution reads an image (IMAGE_CHANNELS or fewer channels), or, without convolutions, each call's window holds
    an embedding of one item's token ids. A stack of layers repeated inside one call (a transformer's at batch 1:
    traces/gpt-compile, generate-llama-b1-static) starts from the layer before's output."""
    first = (_dims(c, int(block[0])) or [[]])[0]
    if c.trace.name_of(int(block[0])) in CONVOLUTION:
        return len(first) >= 3 and first[1] <= IMAGE_CHANNELS
    ev = c.trace.ev
    emb = ops_named(c, lambda n: n == EMBEDDING)
    emb = emb[thread_keys(ev, emb) == thread]
    starts = ev.start[emb]
    return all(((starts >= s) & (starts < e)).any() for s, e in windows)


def _longest_repeat(keys: np.ndarray) -> tuple[int, int, int]:
    """The period P whose blocks repeat MIN_ITEMS times in a row or more over the most ops: (P, first index,
    repeats); (0, 0, 0) for none. A call on one item runs each of its rarest ops once, so the periods tried are the
    distances between successive runs of the rarest ops that occur MIN_ITEMS times or more (a few, not every P)."""
    counts = np.bincount(keys)
    often = counts >= MIN_ITEMS
    if not often.any():
        return 0, 0, 0
    tried: set[int] = set()
    for k in np.flatnonzero(counts == counts[often].min())[:RAREST].tolist():
        tried |= set(np.diff(np.flatnonzero(keys == k)).tolist())
    best = (0, 0, 0)
    for p in sorted(x for x in tried if MIN_BLOCK <= x <= len(keys) // MIN_ITEMS):
        same = keys[p:] == keys[:-p]
        # the longest stretch of i with keys[i] == keys[i + p]: (r - 1) * p of them make r blocks in a row
        edges = np.flatnonzero(np.diff(np.r_[0, same.astype(np.int8), 0]))
        starts, ends = edges[::2], edges[1::2]
        at = int(np.argmax(ends - starts))
        items = int(ends[at] - starts[at]) // p + 1
        if items >= MIN_ITEMS and items * p > best[0] * best[2]:
            best = (p, int(starts[at]), items)
    return best


def _is_backward(name: str) -> bool:
    return (name.startswith("autograd::engine::evaluate_function") or name == "torch::autograd::AccumulateGrad"
            or _BACKWARD_NODE.match(name) is not None or (name.startswith("aten::") and "_backward" in name))


def _range_starts(c: Context) -> tuple[np.ndarray, np.ndarray]:
    """Where the profiler's steps start, and where the user's other named ranges start (sorted)."""
    ev = c.trace.ev
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    step = np.array([c.trace.name_of(int(r)).startswith(PROFILER_STEP) for r in ann.tolist()], bool)
    return np.sort(ev.start[ann[step]]) if len(ann) else ann, np.sort(ev.start[ann[~step]]) if len(ann) else ann


def _marked_as_iterations(ranges: np.ndarray, heads: list[int], ends: list[int]) -> bool:
    """A named range starts between most successive calls (after one call's last weighted op, before the next one's
    first): the user marks each call as an iteration of a loop (traces/realworld/cnn_b1's "iteration" ranges around
    model(x), the same input each time), not as items of one batch at hand."""
    between = [((ranges >= e) & (ranges <= h)).any() for e, h in zip(ends[:-1], heads[1:])]
    return sum(between) * 2 >= len(between)


def find(c: Context) -> list[ItemLoop]:
    """The loops over items in the trace (the module docstring's rule)."""
    ev = c.trace.ev
    ops = outermost(c, ops_named(c, lambda n: n in WEIGHTED))
    if len(ops) < MIN_BLOCK * MIN_ITEMS or kv_cache.find(c):
        return []
    backward = ops_named(c, _is_backward)
    steps, ranges = _range_starts(c)
    key = thread_keys(ev, ops)
    out = []
    for k in distinct(key).tolist():
        mine = ops[key == k]
        keys = _key_codes(c, mine)
        p, first, items = _longest_repeat(keys)
        if not p:
            continue
        calls = mine[first:first + p * items]
        if len(set(keys[first:first + p].tolist())) == p:
            continue            # a block of distinct ops repeated is a model's layers (one call of a transformer at
                                # batch 1): a call on an item that repeats nothing inside is too small to tell apart
        start, end = int(ev.start[calls[0]]), int(ev.end[calls[-1]])
        if not _one_item(c, calls[:p]) or not _one_item(c, calls[-p:]):
            continue
        heads = [int(ev.start[calls[i * p]]) for i in range(items)]
        # each call's window: from the end of the call before (its last weighted op) to the end of its own
        ends = [int(ev.end[calls[i * p + p - 1]]) for i in range(items)]
        if not _from_raw_input(c, calls[:p], list(zip([heads[0] - (ends[0] - heads[0])] + ends[:-1], ends)), k):
            continue
        if ((steps > start) & (steps < end)).any() or _marked_as_iterations(ranges, heads, ends):
            continue            # iterations of the user's loop, not items of one step
        if ((ev.start[backward] >= start) & (ev.start[backward] < end)).any():
            continue            # training steps
        out.append(ItemLoop(int(k), items, p, start, end, tuple((_dims(c, int(calls[0])) or [[]])[0])))
    return out


@dataclass(frozen=True)
class Batched(Assumption):
    items: int = 0                   # calls on one item each, in the longest loop
    ops: int = 0                     # weighted ops a call
    input_shape: tuple = ()
    kernels: int = 0                 # kernels whose launches the launch lever's replay takes away
    # the loop over slices of one tensor, where no model loop is found (slice_loops): 0 iterations for none
    iterations: int = 0
    body: tuple[str, ...] = ()       # one iteration's outermost ops
    family: str = ""                 # slice_loops.FAMILIES' name
    reduces: bool = False            # the body reduces what it looked up (sum/mean after the embedding): a bag
    source_shape: tuple = ()         # the sliced tensor
    gathered: str = ""               # the op gathering an elementwise loop's results (aten::stack, aten::cat)


REDUCTIONS = frozenset(("aten::sum", "aten::mean", "aten::amax", "aten::max"))


def _sliced(c: Context, p, o: Options) -> tuple[Batched, dict]:
    """The loop over slices (slice_loops), priced as the model loop is: its launches cut."""
    slices = slice_loops.find(c)
    detail = {"item_calls": sum(x.iterations for x in slices)}
    if not slices:
        return Batched("batch_items", 0), detail
    graphed, _ = cuda_graphs.apply(c, p, o)
    top = slices[0]
    emb = [i for i, n in enumerate(top.body) if n in slice_loops.FAMILIES[0][1]]
    reduces = bool(emb) and any(n in REDUCTIONS for n in top.body[emb[0]:])
    return (Batched("batch_items", detail["item_calls"], kernels=graphed.count, iterations=top.iterations,
                    body=top.body, family=top.family, reduces=reduces, source_shape=top.source_shape,
                    gathered=top.gathered), detail)


def apply(c: Context, p, o: Options) -> tuple[Batched, dict]:
    loops = find(c)
    detail = {"item_calls": sum(x.items for x in loops)}
    if not loops:
        return _sliced(c, p, o)
    graphed, _ = cuda_graphs.apply(c, p, o)
    best = max(loops, key=lambda x: x.items)
    return (Batched("batch_items", sum(x.items for x in loops), items=best.items, ops=best.ops,
                    input_shape=best.input_shape, kernels=graphed.count), detail)


def _shape(dims: tuple) -> str:
    return f"[{', '.join(str(x) for x in dims)}]"


def says(a: Batched) -> str:
    if a.count == 0:
        return ("no model called item by item (the same weighted ops on one item's inputs, four times in a row or "
                "more) and no Python loop of a few ops over slices of one tensor")
    if a.iterations:
        sliced = (f"items of one {_shape(a.source_shape)} shape, gathered by {a.gathered}" if a.family == "elementwise"
                  else f"slices of one {_shape(a.source_shape)} tensor")
        return (f"a Python loop runs {units.integer(a.iterations)} iterations in a row of "
                f"{', '.join(a.body)} on {sliced}; priced as the launches cut "
                "(the CUDA-graphs replay: dispatch and launch calls gone, the kernels as they ran), not as the one "
                "op that takes the whole tensor, whose kernels this trace cannot show")
    shape = f" on [{', '.join(str(x) for x in a.input_shape)}]" if a.input_shape else ""
    return (f"the model runs {units.integer(a.items)} times in a row on one item each ({units.integer(a.ops)} "
            f"convolutions and linears a call, the first{shape}); priced as the launches cut (the CUDA-graphs "
            "replay: dispatch and launch calls gone, the kernels as they ran), not as one call on the batch, whose "
            "host work (a model may still loop over the items inside) and larger kernels this trace cannot show")


# The fused form of a loop over slices, by the op family of its body (slice_loops.FAMILIES)
LOOP_CHANGE = {
    "embedding_bag": "pool every bag in one call: F.embedding_bag(ids, emb.weight, offsets, mode='sum') (or "
                     "nn.EmbeddingBag) in place of the Python loop of emb(ids[s:e]).sum(0), one lookup per sample",
    "elementwise": "do it batched on the whole tensor: the loop body's ops once on the whole [B, ...] batch "
                   "(per-item random choices drawn on the GPU as [B, 1, 1, 1] tensors or torch.where masks, per-item "
                   "slices as advanced indexing) in place of the Python loop over items and torch.stack",
    "embedding": "look every id up in one call: emb(ids) on the whole index tensor in place of the Python loop of "
                 "emb(ids[i]), one lookup per item",
    "lstm": "run the recurrence in one call: nn.LSTM(input_size, hidden_size, batch_first=True) over the whole "
            "sequence (cuDNN's recurrence kernels) in place of the Python loop of nn.LSTMCell over time steps",
    "gru": "run the recurrence in one call: nn.GRU(input_size, hidden_size, batch_first=True) over the whole "
           "sequence (cuDNN's recurrence kernels) in place of the Python loop of nn.GRUCell over time steps",
    "rnn": "run the recurrence in one call: nn.RNN(input_size, hidden_size, batch_first=True) over the whole "
           "sequence (cuDNN's recurrence kernels) in place of the Python loop of nn.RNNCell over time steps",
}


def change_for(a: Assumption) -> str:
    """The change as this trace needs it: one call on the batch, or the fused form of the loop over slices."""
    if not isinstance(a, Batched) or not a.iterations:
        return CHANGE
    family = "embedding_bag" if a.family == "embedding" and a.reduces else a.family
    return LOOP_CHANGE[family]


CHANGE = ("call the model once on the batch: model(frames) (or model(torch.stack(items))) in place of one call per "
          "item ([model([x])[0] for x in frames])")


def item_calls(m: Measured) -> int:
    return m.whatif.lever("batch_items").detail.get("item_calls", 0)


def _launches_and_kernels(m: Measured) -> float:
    """What one call on the batch acts on: the launch overhead the item calls leave the GPU idle in, and the kernels
    (fresh5 fasterrcnn: −59.7 ms of launch overhead and −18.0 ms of kernels, where autocast's recogniser, which reads
    the kernels alone, saw its fp32 GEMMs go)."""
    return float(m.kernel_busy_ns + m.by_cause_ns.get(Cause.LAUNCH_OVERHEAD, 0))


def still_calls_the_model(before: Measured, after: Measured) -> bool:
    """The after trace still runs the model's convolutions or linears as ops (on the batch): a graph replayed in
    their place records none, and its item calls went for another reason (traces/realworld/cnn_b1--cuda_graphs)."""
    return bool(len(ops_named(Context(after.trace, None), lambda n: n in WEIGHTED)))


SPEC = LeverSpec(
    name="batch_items", effort=1, cause=None, apply=apply, says=says, words="one call on the batch",
    fix="the model called once on the batch (model(frames)) in place of once per item",
    recognise=Recognise(order=1, evidence="item_calls",
                        because="its model stopped running item by item (or its Python loop over slices of a tensor "
                                "went)",
                        amount=item_calls, acted=_launches_and_kernels, applied=went,
                        also=still_calls_the_model),
    applied_words="one call on the batch (batch_items)", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE, line=change_for,
              evidence="the same weighted ops (convolutions, linears: names and weights' shapes) run four times in a "
                       "row or more on one thread, each convolution's input of leading dimension 1 ([1, T, H], T > "
                       "1, without convolutions), each call from the raw input, inside one profiler step and not "
                       "marked call by call by a named range, with no backward; or a Python loop: a body of a few "
                       "ops repeated eight times or more on one thread, each iteration slicing one tensor of one "
                       "shape, the loop holding a tenth of the span or more",
              applies="every device and dtype: inference over items that are all at hand; a loop over slices in "
                      "training too",
              model="the launch lever's price (cuda_graphs' replay: dispatch and launch calls gone, kernels as they "
                    "ran); a batched call's own host work and larger kernels are not priced",
              guide="past the guides: batch the inputs (torch.stack, a list to a torchvision detector)"))
