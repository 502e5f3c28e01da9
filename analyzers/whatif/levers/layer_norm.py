"""layer_norm: nn.LayerNorm (F.layer_norm) in place of a LayerNorm written by hand.

A LayerNorm written out (the TF-style "BertLayerNorm" of ported code: u = x.mean(-1, keepdim=True);
s = (x - u).pow(2).mean(-1, keepdim=True); (x - u) / torch.sqrt(s + eps) * w + b) runs each step as its own eager
op: every one a full pass over the [..., D] activations in HBM, and in training each again in its backward, where
nn.LayerNorm is one fused kernel each way. Any trace of it recorded with shapes shows, on one thread (found by
`find`), a run of consecutive outermost ops, all of them NORM_OPS, on a tensor X of shape [..., D] (D > 1), its
[..., 1] statistics and its [D] weight and bias only, holding:
  1. two aten::mean of X's shape (the mean, then the variance: aten::var in its place counts the same), and
  2. aten::sqrt or aten::rsqrt of a [..., 1] tensor (the normaliser);
and, in training, on the backward's thread, a run of consecutive autograd nodes of those ops' backward
(MeanBackward, PowBackward0, SubBackward0, SqrtBackward0/RsqrtBackward0, DivBackward0, MulBackward0, AddBackward0;
AccumulateGrad between them for w and b) with two MeanBackward and a Sqrt/RsqrtBackward0.
Priced: each run's kernels go, and one fused kernel takes their place: forward it reads X and writes the output once
(2 x X's bytes), backward it reads X and the incoming gradient and writes X's gradient (3 x X's bytes), at this
trace's memory rate (the median rate of its kernels that move 1 MB or more); the weight's and bias's gradients and the
saved statistics are small beside X ([D] and [..., 1]) and left out. The host keeps one op's dispatch per run.
What would fire falsely: a standardisation over the features that is not a LayerNorm (a z-score of a batch over
dim -1 with no weight is still one F.layer_norm(x, x.shape[-1:]) call: no false advice); an RMSNorm
(x * rsqrt(mean(x^2) + eps) * w: one mean) does not fire (its fix is nn.RMSNorm, not this one); a GroupNorm or
BatchNorm written by hand reduces other dimensions than the last ([..., 1] statistics are required); without shapes
nothing fires.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers import sdpa
from tracetriage.analyzers.whatif.levers.knob import (
    mirror_queued,
    ops_named,
    outermost,
    outermost_ops,
    peaks_of,
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

NORM_OPS = frozenset(("aten::mean", "aten::sub", "aten::pow", "aten::add", "aten::sqrt", "aten::rsqrt", "aten::div",
                      "aten::mul", "aten::var", "aten::square", "aten::reciprocal"))
STATS = frozenset(("aten::mean", "aten::var"))
ROOT = frozenset(("aten::sqrt", "aten::rsqrt"))
BACKWARD = "autograd::engine::evaluate_function: "
NORM_BACKWARD = frozenset(("MeanBackward0", "MeanBackward1", "VarBackward0", "PowBackward0", "SubBackward0",
                           "SqrtBackward0", "RsqrtBackward0", "DivBackward0", "MulBackward0", "AddBackward0",
                           "torch::autograd::AccumulateGrad"))
BYTES = {"float": 4, "c10::BFloat16": 2, "c10::Half": 2}
FORWARD_PASSES = 2            # X read, the output written
BACKWARD_PASSES = 3           # X and the output's gradient read, X's gradient written


@dataclass(frozen=True)
class Norm:
    start: int
    end: int
    thread: int
    shape: tuple                  # X's
    width: int                    # bytes an element

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.width


def _dims(c: Context, r: int) -> list[list]:
    return [d for d in (c.trace.shapes(r)[0] or []) if isinstance(d, list)]


def _fits(dims: list[list], x: list) -> bool:
    """Every tensor input is X, its [..., 1] statistics or its [D] weight (or a scalar)."""
    stat = x[:-1] + [1]
    return all(d in (x, stat, x[-1:], []) for d in dims)


def find(c: Context) -> list[Norm]:
    ev = c.trace.ev
    ops = outermost_ops(c)
    key = thread_keys(ev, ops)
    # a norm starts at a statistic (mean/var): found by name id; only the ops from one on are named (naming all
    # 158k outermost ops of a 942k-event trace took 0.19 s)
    is_stat, is_norm, is_root = (np.zeros(len(c.trace.names), bool) for _ in range(3))
    for i, n in enumerate(c.trace.names):
        is_stat[i], is_norm[i], is_root[i] = n in STATS, n in NORM_OPS, n in ROOT
    dims = _ShapeDims(c)
    out = []
    for k in distinct(key).tolist():
        mine = ops[key == k]
        ids = ev.name[mine]
        # a norm lies inside one unbroken run of NORM_OPS holding two statistics and a root: only starts in such
        # runs are walked (a GPT's thousands of lone means are not)
        norm = is_norm[ids]
        run = np.cumsum(~norm)
        stat = is_stat[ids] & norm
        n_stats = np.bincount(run[stat], minlength=int(run[-1]) + 1) if len(run) else np.zeros(0, np.int64)
        n_roots = np.bincount(run[is_root[ids]], minlength=len(n_stats))
        starts = np.flatnonzero(stat & (n_stats[run] >= 2) & (n_roots[run] >= 1))
        if not len(starts):
            continue
        names = _LazyNames(c, ids)
        i = 0
        while i < len(mine):
            if not (i == starts[min(np.searchsorted(starts, i), len(starts) - 1)]):
                nxt = np.searchsorted(starts, i, side="left")
                if nxt >= len(starts):
                    break
                i = int(starts[nxt])
                continue
            x = next(iter(dims(int(mine[i]))), [])
            if len(x) < 2 or x[-1] <= 1:
                i += 1
                continue
            j = i
            while j < len(mine) and names[j] in NORM_OPS and _fits(dims(int(mine[j])), x):
                j += 1
            run = names[i:j]
            stats = sum(1 for r, n in zip(mine[i:j].tolist(), run) if n in STATS and dims(r)[:1] == [x])
            if stats >= 2 and any(n in ROOT for n in run):
                types = c.trace.shapes(int(mine[i]))[1] or []
                out.append(Norm(int(ev.start[mine[i]]), int(ev.end[mine[j - 1]]), int(k), tuple(x),
                                BYTES.get(next(iter(types), ""), 4)))
            i = max(j, i + 1)
    return out


class _ShapeDims:
    """An op's tensor dims, decoded once per distinct shape record (a layer stack repeats the same few)."""

    def __init__(self, c: Context):
        self.c, self.seen = c, {}

    def __call__(self, r: int) -> list[list]:
        sid = int(self.c.trace.ev.shape[r])
        if sid not in self.seen:
            self.seen[sid] = _dims(self.c, r)
        return self.seen[sid]


class _LazyNames:
    """The names of a thread's ops, looked up only where the scan reads them (by index or slice)."""

    def __init__(self, c: Context, ids: np.ndarray):
        self.names, self.ids = c.trace.names, ids

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.names[int(n)] for n in self.ids[i].tolist()]
        return self.names[int(self.ids[i])]


def backward_windows(c: Context) -> list[tuple[int, int, int]]:
    """The hand-written norms' backward: runs of consecutive autograd nodes of NORM_BACKWARD, two MeanBackward and
    a Sqrt/RsqrtBackward0 among them; (start, end, thread)."""
    ev = c.trace.ev
    nodes = outermost(c, ops_named(c, lambda n: n.startswith(BACKWARD)))
    if not len(nodes):
        return []
    key = thread_keys(ev, nodes)
    names = [c.trace.name_of(int(r))[len(BACKWARD):] for r in nodes.tolist()]
    out = []
    i = 0
    while i < len(nodes):
        j = i
        while j < len(nodes) and key[j] == key[i] and names[j] in NORM_BACKWARD:
            j += 1
        run = names[i:j]
        if sum(n.startswith(("MeanBackward", "VarBackward")) for n in run) >= 2 and \
                any(n in ("SqrtBackward0", "RsqrtBackward0") for n in run):
            out.append((int(ev.start[nodes[i]]), int(ev.end[nodes[j - 1]]), int(key[i])))
        i = max(j, i + 1)
    return out


@dataclass(frozen=True)
class LayerNorm(Assumption):
    backward: int = 0
    kernel_ns: int = 0
    fused_ns: int = 0
    shape: tuple = ()
    nbytes: int = 0
    rate_gbps: float = 0.0
    found: int = 0


def apply(c: Context, p, o: Options) -> tuple[LayerNorm, dict]:
    found = find(c)
    detail = {"hand_written_norms": len(found), "queued_kernels": 0}
    peaks = peaks_of(c)
    rate = c.memory_rate or (peaks.bytes_per_s / 1e9 if peaks is not None else None)   # bytes per ns
    if not found or not rate:
        return LayerNorm("layer_norm", 0, found=len(found)), detail
    big = max(found, key=lambda n: n.nbytes)
    forward = [(n.start, n.end, n.thread, FORWARD_PASSES * n.nbytes / rate) for n in found]
    back = backward_windows(c)
    backward = [(s, e, k, BACKWARD_PASSES * big.nbytes / rate) for s, e, k in back]
    kernel_ns, fused_ns = sdpa.fuse_windows(c, p, forward, backward)
    queued = mirror_queued(c, p)
    return (LayerNorm("layer_norm", len(found), backward=len(backward), kernel_ns=kernel_ns, fused_ns=fused_ns,
                      shape=big.shape, nbytes=big.nbytes, rate_gbps=rate, found=len(found)),
            detail | {"queued_kernels": queued})


def says(a: LayerNorm) -> str:
    if a.count == 0 and a.found:
        return (f"{a.found} LayerNorms written by hand in this trace, but no memory rate to price one fused kernel "
                "(no kernel moving 1 MB or more, no peak table entry)")
    if a.count == 0:
        return ("no LayerNorm written by hand in this trace (mean, sub, pow, mean, add, sqrt, div over [..., D] on "
                "one thread)")
    back = f" and their {units.integer(a.backward)} backward passes" if a.backward else ""
    shape = f"[{', '.join(str(x) for x in a.shape)}]"
    return (f"the {units.integer(a.count)} LayerNorms written by hand{back} (mean, sub, pow, mean, add, sqrt, div "
            f"... over {shape}; {units.duration_ns(a.kernel_ns)} of kernels) become one fused kernel each way, "
            f"moving {units.size(a.nbytes)} twice forward and three times backward at this trace's memory rate "
            f"({units.gbps(a.rate_gbps)}): {units.duration_ns(a.fused_ns)}")



CHANGE = ("nn.LayerNorm(d) (F.layer_norm(x, x.shape[-1:], w, b, eps)) in place of the LayerNorm written by hand "
          "(x.mean(-1), (x - u).pow(2).mean(-1), / torch.sqrt(s + eps)): one fused kernel each way")

SPEC = LeverSpec(
    name="layer_norm", effort=1, cause=None, apply=apply, says=says, words="nn.LayerNorm",
    fix="a hand-written LayerNorm (mean, pow, mean, sqrt, div) -> nn.LayerNorm",
    recognise=Recognise(order=1, evidence="hand_written_norms", because="its LayerNorm written by hand became "
                        "nn.LayerNorm (aten::native_layer_norm)",
                        amount=replay_figure("layer_norm", "hand_written_norms"),
                        acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="nn.LayerNorm (layer_norm)", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE,
              evidence="a run of consecutive ops on one thread over X [..., D], its [..., 1] statistics and [D] "
                       "weights only: two aten::mean (or mean and var) of X and aten::sqrt/rsqrt; in training a run "
                       "of their autograd nodes (MeanBackward twice, SqrtBackward0) (needs record_shapes=True)",
              applies="every device and precision",
              model="the run's kernels go; one fused kernel each way moving X twice forward and three times backward "
                    "at the trace's memory rate",
              guide="torch.nn.LayerNorm / torch.nn.functional.layer_norm (PyTorch reference); past the tuning guides",
              ops=("aten::mean", "aten::sqrt")))
