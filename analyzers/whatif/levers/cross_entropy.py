"""cross_entropy: a classification loss written by hand over a one-hot target -> F.cross_entropy(logits, y).

`-(F.one_hot(y, C).float() * F.log_softmax(logits.float(), -1)).sum(-1).mean()` (written so that label smoothing
can be added later, or copied from a notebook) materialises the target as a dense [N, C] tensor: one_hot writes it
in int64 (a fill of zeros and a scatter), .float() converts it, .float() widens the logits, the multiply reads two
[N, C] fp32 tensors and writes a third, the sum reads it back; backward multiplies the [N, C] gradient by the
one-hot again. At a language model's vocabulary (N = 4096 tokens, C = 50257) each of those tensors is 0.8-1.6 GB.
F.cross_entropy reads the target as N class indices: its log_softmax and an nll_loss that gathers N values
(label_smoothing= is an argument of it).

What any trace of the construct shows (found by `find`), on one thread: an outermost aten::one_hot of an integer
tensor of shape S; within MAX_BETWEEN outermost ops after it, an aten::mul of two inputs both of shape S + [C] (the
class dimension last, or anywhere: a one-hot permuted to [N, C, H, W] logits, a segmentation loss) and
an aten::log_softmax (or aten::_log_softmax) of shape S + [C] before that multiply; within SUM_WITHIN ops after the
multiply, an aten::sum of shape S + [C]. In backward (recorded when the step trains), the multiply's autograd node
(`autograd::engine::evaluate_function: MulBackward0`) multiplies two S + [C] tensors again. Not this construct: a
one_hot used as a mask or an embedding of labels (no log_softmax of its shape multiplied by it); a knowledge-
distillation loss (soft targets: a softmax, not a one_hot, in the multiply); a loss already F.cross_entropy or
F.nll_loss (no one_hot). What would make it fire falsely: label smoothing done by hand on the one-hot (a mul/add
of the one-hot before the multiply: F.cross_entropy(..., label_smoothing=eps) is the same fix, and the ops between
are inside the window, so they are priced as gone too) or a per-class weighting (weight= of F.cross_entropy).

The price: the forward window's GPU work and dispatch go (the one-hot's fill and scatter, the conversions, the
multiply, the sum, the mean), but for the log_softmax's kernels, which F.cross_entropy runs too (its nll_loss
gathers N values: microseconds, not added); in backward each MulBackward0 node on S + [C] keeps one kernel at a
third of its kernels' time: the multiply read two [N, C] tensors and wrote one, nll_loss_backward writes the [N, C]
gradient once. The log_softmax in the inputs' own precision (bf16 logits not widened) is not priced: it keeps its
fp32 time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers import drop_ops
from tracetriage.analyzers.whatif.levers.knob import (
    gpu_of_calls,
    mirror_queued,
    ops_named,
    outermost_ops,
    remove_gpu_work,
)
from tracetriage.analyzers.whatif.levers.spec import (
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Options,
    Recognise,
    replay_figure,
    went,
)

ONE_HOT = "aten::one_hot"
MUL = "aten::mul"
SUM = "aten::sum"
LOG_SOFTMAX = frozenset(("aten::log_softmax", "aten::_log_softmax"))
AFTER_SUM = frozenset(("aten::mean", "aten::neg", "aten::div", "aten::sum", "aten::mul", "aten::rsub"))
NODE = "autograd::engine::evaluate_function: "
MUL_BACKWARD = NODE + "MulBackward0"
LOG_SOFTMAX_BACKWARD = NODE + "LogSoftmaxBackward0"
TO_COPY_BACKWARD = NODE + "ToCopyBackward0"
CONVERSIONS = frozenset(("aten::to", "aten::_to_copy"))
HALF = frozenset(("c10::BFloat16", "c10::Half"))
MAX_BETWEEN = 12       # outermost ops from the one_hot to the multiply (.float() twice, log_softmax, a smoothing)
SUM_WITHIN = 2         # outermost ops from the multiply to its sum
TAIL = 3               # the loss's reduction after the sum (.mean(), the minus sign)


@dataclass(frozen=True)
class OneHotLoss:
    thread: int
    start: int             # the first op of the loss (one_hot, or the log_softmax where it came first)
    end: int               # the loss's last op (its mean or minus sign)
    shape: tuple           # S + [C]
    keep: tuple            # (start, end) of the log_softmax ops inside the window: F.cross_entropy runs them too
    widened: bool = False  # the window widens half-precision logits of S + [C] to fp32 (logits.float())


def _first_dims(c: Context, r: int) -> list:
    return list(c.trace.shapes(r)[0] or [])


def _with_classes(dims, index) -> bool:
    """`dims` is the index tensor's shape with one class dimension inserted: last (one_hot's own [N, C]) or anywhere
    else, the one-hot permuted to the logits' layout (a segmentation loss over [N, C, H, W] logits: one_hot(y)
    .permute(0, 3, 1, 2) of a [N, H, W] target; knobs5 onehot_segmentation)."""
    if not isinstance(dims, list) or len(dims) != len(index) + 1:
        return False
    return any(dims[:p] + dims[p + 1:] == index for p in range(len(dims)))


def find(c: Context) -> list[OneHotLoss]:
    ev, names = c.trace.ev, c.trace.names
    hot_ids = [i for i, n in enumerate(names) if n == ONE_HOT]
    if not hot_ids:
        return []
    ops = outermost_ops(c)
    key = thread_keys(ev, ops)
    out = []
    for k in distinct(key[np.isin(ev.name[ops], hot_ids)]).tolist():
        mine = ops[key == k]
        seq = [names[int(n)] for n in ev.name[mine].tolist()]
        for i in [j for j, n in enumerate(seq) if n == ONE_HOT]:
            idx = _first_dims(c, int(mine[i]))
            if not idx or not isinstance(idx[0], list):
                continue
            shape = None
            for m in range(i + 1, min(i + 1 + MAX_BETWEEN, len(seq))):
                dims = _first_dims(c, int(mine[m]))
                if seq[m] == MUL and len(dims) >= 2 and dims[0] == dims[1] and _with_classes(dims[0], idx[0]):
                    shape = dims[0]
                    break
            if shape is None:
                continue
            soft = [j for j in range(max(i - MAX_BETWEEN, 0), m) if seq[j] in LOG_SOFTMAX
                    and (_first_dims(c, int(mine[j])) or [None])[0] == shape]
            s = next((j for j in range(m + 1, min(m + 1 + SUM_WITHIN, len(seq))) if seq[j] == SUM
                      and (_first_dims(c, int(mine[j])) or [None])[0] == shape), None)
            if not soft or s is None:
                continue
            last = s
            while last + 1 < len(seq) and last + 1 - s <= TAIL and seq[last + 1] in AFTER_SUM:
                last += 1
            first = min(i, soft[0]) if soft[0] >= i - 2 else i
            keep = tuple((int(ev.start[mine[j]]), int(ev.end[mine[j]])) for j in soft)
            widened = any(seq[j] in CONVERSIONS and (c.trace.shapes(int(mine[j])))[0][:1] == [shape]
                          and next(iter(c.trace.shapes(int(mine[j]))[1] or []), "") in HALF for j in range(first, m))
            out.append(OneHotLoss(int(k), int(ev.start[mine[first]]), int(ev.end[mine[last]]), tuple(shape), keep,
                                  widened))
    return out


def _backward_nodes(c: Context, node: str, op: str, shapes: set) -> list[tuple[int, int, int]]:
    """The autograd nodes named `node` whose `op` takes a tensor of a found loss's shape (a multiply: two of them):
    (thread, start, end)."""
    ev = c.trace.ev
    nodes = ops_named(c, lambda n: n == node)
    inner = ops_named(c, lambda n: n == op)
    if not len(nodes) or not len(inner):
        return []
    i_key = thread_keys(ev, inner)
    out = []
    for r in nodes.tolist():
        k = int(thread_keys(ev, r))
        inside = inner[(i_key == k) & (ev.start[inner] >= ev.start[r]) & (ev.end[inner] <= ev.end[r])]
        if any(len(d := _first_dims(c, int(x))) >= 1 and tuple(d[0] or ()) in shapes
               and (op != MUL or (len(d) >= 2 and d[0] == d[1])) for x in inside.tolist()):
            out.append((k, int(ev.start[r]), int(ev.end[r])))
    return out


def _gpu_in(c: Context, windows: list[tuple[int, int, int]]) -> np.ndarray:
    return gpu_of_calls(c, np.flatnonzero(drop_ops.calls_in(c, windows)))


@dataclass(frozen=True)
class CrossEntropy(Assumption):
    shape: str = ""
    gpu_ns: int = 0            # the forward windows' GPU work that goes
    backward_ns: int = 0       # the backward multiplies' kernels, before
    backward_kept_ns: int = 0  # ... and the one write each keeps
    launches: int = 0
    softmax_ns: int = 0        # the log_softmax's kernels (forward and backward) on widened logits, halved
    copy_ns: int = 0           # the [N, C] gradient's conversion back to the logits' precision, gone


def apply(c: Context, p, o: Options) -> tuple[CrossEntropy, dict]:
    found = find(c)
    if not found or not c.g.n_calls:
        return CrossEntropy("cross_entropy", 0), {"one_hot_losses": 0}
    g = c.g
    keep = [(f.thread, s, e) for f in found for s, e in f.keep]
    _, gpu_ns, launches = drop_ops.drop(c, p, [(f.thread, f.start, f.end) for f in found], keep)
    back_ns = kept_ns = 0
    shapes = {f.shape for f in found}
    for node in _backward_nodes(c, MUL_BACKWARD, MUL, shapes):
        rows = _gpu_in(c, [node])
        if not len(rows):
            continue
        total = int(g.g_dur[rows].sum())
        remove_gpu_work(c, p, rows[1:])
        p.g_dur[rows[0]] = total // 3       # nll_loss_backward writes the [N, C] gradient once: 1 of 3 passes
        back_ns, kept_ns = back_ns + total, kept_ns + total // 3
    softmax_ns = copy_ns = 0
    if any(f.widened for f in found):
        # the logits stay in bf16/fp16: log_softmax reads and writes 2-byte elements (half its fp32 bytes) each way,
        # and no conversion of the [N, C] gradient back to the logits' precision runs in backward
        rows = np.union1d(_gpu_in(c, keep), _gpu_in(c, _backward_nodes(c, LOG_SOFTMAX_BACKWARD,
                                                                       "aten::_log_softmax_backward_data", shapes)))
        softmax_ns = int(g.g_dur[rows].sum())
        p.g_dur[rows] = p.g_dur[rows] // 2
        copies = _gpu_in(c, _backward_nodes(c, TO_COPY_BACKWARD, "aten::copy_", shapes))
        copy_ns = int(g.g_dur[copies].sum())
        remove_gpu_work(c, p, copies)
    queued = mirror_queued(c, p)     # the window's first step, queued before it: its loss goes too
    shape = "x".join(str(x) for x in found[0].shape)
    return (CrossEntropy("cross_entropy", len(found), shape=shape, gpu_ns=gpu_ns, backward_ns=back_ns,
                         backward_kept_ns=kept_ns, launches=launches, softmax_ns=softmax_ns, copy_ns=copy_ns),
            {"one_hot_losses": len(found), "queued_kernels": queued})


def says(a: CrossEntropy) -> str:
    if a.count == 0:
        return ("no loss written over a one-hot target (aten::one_hot, then aten::mul of two [..., C] tensors with an "
                "aten::log_softmax of that shape, then aten::sum)")
    back = (f"; in backward the [{a.shape}] multiplies ({units.duration_ns(a.backward_ns)}) become one write of the "
            f"gradient ({units.duration_ns(a.backward_kept_ns)})" if a.backward_ns else "")
    soft = (f"; the logits are half precision widened by .float(): log_softmax's kernels "
            f"({units.duration_ns(a.softmax_ns)}) move half their bytes on them and the gradient's conversion back "
            f"({units.duration_ns(a.copy_ns)}) goes" if a.softmax_ns
            else ", the log_softmax's kernels kept as they ran")
    return (f"{units.integer(a.count)} losses over a one-hot [{a.shape}] target: the one_hot, the .float() "
            f"conversions, the multiply and the sum go ({units.integer(a.launches)} GPU activities, "
            f"{units.duration_ns(a.gpu_ns)}){soft}{back}; nll_loss's gather of one value a row not added")


CHANGE = ("the loss as F.cross_entropy(logits.view(-1, C), y.view(-1)) (label_smoothing= if it is wanted) in place of "
          "-(F.one_hot(y, C).float() * F.log_softmax(logits.float(), -1)).sum(-1).mean()")

SPEC = LeverSpec(
    name="cross_entropy", effort=1, cause=None, apply=apply, says=says, words="the loss as F.cross_entropy",
    fix="a one-hot loss written by hand -> F.cross_entropy(logits, y)",
    recognise=Recognise(order=1, evidence="one_hot_losses", because="its one-hot loss became F.cross_entropy",
                        amount=replay_figure("cross_entropy", "one_hot_losses"),
                        acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="the loss as F.cross_entropy (cross_entropy)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE,
              evidence="aten::one_hot of [S], then aten::mul of two [S, C] tensors beside an aten::log_softmax of "
                       "[S, C], then aten::sum, on one thread (needs record_shapes=True)",
              applies="every device and dtype",
              model="the one-hot, conversions, multiply and sum's kernels and dispatch removed, the log_softmax "
                    "kept; the backward multiply becomes one write of the gradient (a third of its time)",
              guide="torch.nn.functional.cross_entropy (PyTorch reference); past the tuning guides",
              ops=(ONE_HOT,)))
