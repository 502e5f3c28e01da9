"""logits_to_keep: an output projection applied only to the rows the program reads (the hidden states sliced before the
head; a Hugging Face causal LM: model(..., logits_to_keep=1)), not to every position with all but a few rows thrown
away.

What any trace of it shows (record_shapes): a projection op -- `aten::linear` / `aten::matmul` / `aten::mm` over an
input [..., R rows, K] and a weight [N, K] -- whose output (R x N, a vocabulary's logits for every position) is read
next, past views only (view, reshape, _unsafe_view, as_strided, a dtype cast), by an `aten::select` or `aten::slice`
that keeps a few of its rows (`logits[:, -1]`: select on the position dim, Concrete Inputs [.., '1', '-1']), and by
no op that reads it whole (a loss, a softmax, an argmax over every position). The rows kept are the select's or
slice's result over N. fresh9 qwen_judge_all_position_logits: [16, 512, 896] x [151936, 896], then select(1, -1):
16 rows of 8,192 read, the GEMM 2.2 TFLOP a step.

Price (in the graph): the projection's kernels (and the casts of its whole output) take kept/R of their time, but
no less than reading the weight once at the device's memory roof (a GEMM of a few rows streams its weight); the
dispatch stays.

What would make it fire falsely: a training step's head whose logits go to the loss whole (a cross_entropy reads the
output: not counted); a generation step that already projects one position (R == kept: nothing saved); a head whose
output a later op reads whole after the select (a second consumer within the projection's step) -- any op other than
views, casts, select and slice reading a tensor of the output's size stops the match.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.opargs import as_int
from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.knob import calls_inside, mirror_queued, outermost_ops, peaks_of
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

PROJECTIONS = frozenset(("aten::linear", "aten::matmul", "aten::mm"))
VIEWS = frozenset(("aten::view", "aten::reshape", "aten::_unsafe_view", "aten::as_strided", "aten::to",
                   "aten::_to_copy", "aten::contiguous", "aten::detach", "aten::alias"))
PICKS = frozenset(("aten::select", "aten::slice"))
WIDE_AT_LEAST = 4096        # output features: a vocabulary or a class head, not a hidden layer
WIDER_THAN_INPUT = 4        # ... several times its input's width (a vocabulary from a hidden size); a square GEMM in
                            # a chain is a layer, however its result is read
KEPT_AT_MOST = 0.25         # the rows read, of the rows projected: less than this is the construct
LOOK_AHEAD = 64             # outermost ops after the projection searched for its consumer


@dataclass(frozen=True)
class RowsKept(Assumption):
    rows: int = 0               # rows projected (a step)
    kept: int = 0               # rows read
    features: int = 0           # the projection's output features (N)
    gemm_ns: int = 0            # the projections' kernels, before (all steps)
    kept_ns: int = 0            # ... after
    read: str = ""              # how the program picks the rows ("[:, -1]"), and the slice of the head's input that
    keep: str = ""              # keeps them ("[:, -1:]"); "" where the pick's arguments were not recorded


def _kept_rows(c: Context, op: int, out_shape: list[int]) -> int | None:
    """Rows of the projection's output that this select/slice keeps (None: not a pick of rows)."""
    name = c.trace.name_of(op)
    dims, _, concrete = c.trace.shapes(op)
    if not dims or not concrete or list(dims[0]) != out_shape or len(out_shape) < 2:
        return None
    d = as_int(concrete[1]) if len(concrete) > 1 else None
    if d is None:
        return None
    d %= len(out_shape)
    if d == len(out_shape) - 1:                 # a pick of features (a "Yes"/"No" column), not of rows
        return None
    rows = math.prod(out_shape[:-1])
    if name == "aten::select":
        return rows // out_shape[d]
    start = as_int(concrete[2]) if len(concrete) > 2 else 0
    end = as_int(concrete[3]) if len(concrete) > 3 else None
    step = as_int(concrete[4]) if len(concrete) > 4 else 1
    n = len(range(out_shape[d]))
    picked = len(range(*slice(start, end, step or 1).indices(n)))
    return rows // out_shape[d] * picked


def _wide_projection(dims, name: str) -> tuple[list, int] | None:
    """(the input's dims, the output features) of a projection to WIDE_AT_LEAST features or more, WIDER_THAN_INPUT
    times its input's width; None for any other product."""
    if not dims or len(dims) < 2 or not dims[0] or not dims[1] or len(dims[1]) != 2:
        return None
    x, w = list(dims[0]), list(dims[1])
    n = int(w[0]) if name == "aten::linear" else int(w[1])
    if n < WIDE_AT_LEAST or n < WIDER_THAN_INPUT * int(x[-1]) or len(x) < 2:
        return None
    return x, n


def projections_read_in_part(c: Context) -> list[tuple[int, int, int, int]]:
    """(projection op row, rows projected, rows read, output features) of each projection whose output is read only
    through a pick of a few rows."""
    ev, tr = c.trace.ev, c.trace
    tops = outermost_ops(c)
    if not len(tops):
        return []
    proj = [i for i, n in enumerate(tr.names) if n in PROJECTIONS]
    if not proj:
        return []
    key = thread_keys(ev, tops)
    name_ids = ev.name[tops]     # (a top op's name looked up only where a projection reaches it: not one per op)
    found = []
    wide: dict[tuple[int, int], tuple[list, int] | None] = {}   # by (name id, shape id): a few dozen, not every call
    for i in np.flatnonzero(np.isin(name_ids, proj)).tolist():
        op = int(tops[i])
        sig = (int(name_ids[i]), int(ev.shape[op]))
        if sig not in wide:
            wide[sig] = _wide_projection(tr.shapes(op)[0], tr.names[sig[0]])
        hit = wide[sig]
        if hit is None:
            continue
        x, n = hit
        out = x[:-1] + [n]
        full = math.prod(out)
        kept, pick = None, ("", "")
        for j in range(i + 1, min(i + 1 + LOOK_AHEAD, len(tops))):
            if key[j] != key[i]:
                continue
            r, name = int(tops[j]), tr.names[name_ids[j]]
            if name in PROJECTIONS:
                break
            jd = tr.shapes(r)[0]
            reads_whole = bool(jd) and isinstance(jd[0], list) and bool(jd[0]) \
                and all(isinstance(v, int) for v in jd[0]) and math.prod(jd[0]) == full
            if not reads_whole:
                continue
            if name in PICKS:
                k = _kept_rows(c, r, list(jd[0])) if list(jd[0]) == out else None
                if k is None:
                    kept = None
                    break
                kept = k if kept is None else max(kept, k)
                pick = pick if pick[0] else _index_words(c, r, len(out))
                continue
            if name in VIEWS:
                continue
            kept = None                           # a loss, a softmax ... reads every row
            break
        rows = full // n
        if kept is not None and 0 < kept <= KEPT_AT_MOST * rows:
            found.append((op, rows, kept, n, pick))
    return found


def _index_words(c: Context, op: int, ndim: int) -> tuple[str, str]:
    """The pick as Python indexing (`[:, -1]`) and the slice of the head's input that keeps the same rows (`[:, -1:]`);
    ("", "") where the arguments are not plain integers."""
    name, concrete = c.trace.name_of(op), c.trace.shapes(op)[2] or []
    d = as_int(concrete[1]) if len(concrete) > 1 else None
    if d is None:
        return "", ""
    lead = ":, " * (d % ndim)
    if name == "aten::select":
        i = as_int(concrete[2]) if len(concrete) > 2 else None
        if i is None:
            return "", ""
        return f"[{lead}{i}]", f"[{lead}{i}:{'' if i == -1 else i + 1}]"
    s = as_int(concrete[2]) if len(concrete) > 2 else None
    e = as_int(concrete[3]) if len(concrete) > 3 else None
    text = f"{'' if not s else s}:{'' if e is None or e >= 1 << 62 else e}"
    return f"[{lead}{text}]", f"[{lead}{text}]"


def apply(c: Context, p, o: Options) -> tuple[RowsKept, dict]:
    g = c.g
    found = projections_read_in_part(c)
    if not found:
        return RowsKept("logits_to_keep", 0), {"projections": 0}
    pk = peaks_of(c)
    rate = pk.bytes_per_s / 1e9 if pk is not None else None     # bytes per ns: the device's memory roof
    before = after = 0
    for op, rows, kept, n, _ in found:
        calls = calls_inside(c, np.array([op]))
        mark = np.zeros(g.n_calls, bool)
        mark[calls] = True
        acts = np.flatnonzero(g.g_linked & (g.g_call >= 0) & mark[np.maximum(g.g_call, 0)])
        if not len(acts):
            continue
        k_dim = int(c.trace.shapes(op)[0][0][-1])
        floor_ns = (2 * n * k_dim / rate) if rate else 0.0     # the bf16/fp16 weight read once
        t = g.g_dur[acts].astype(np.float64)
        new = np.maximum(t * kept / rows, floor_ns * t / max(t.sum(), 1.0))
        p.g_dur[acts] = np.minimum(np.round(new), g.g_dur[acts]).astype(p.g_dur.dtype)
        before += int(t.sum())
        after += int(p.g_dur[acts].sum())
    if not before:
        return RowsKept("logits_to_keep", 0), {"projections": 0}
    if mirror_queued(c, p):
        # the projections queued before the window shrink alike and run inside the span: counted with the rest, so
        # the time the edit takes out is all of it (traces/pending2 gpt2_last_token_scorer_full_logits: 3 GEMMs of
        # 3.3 ms, one queued; '44.1 µs in place of 6.68 ms' beside a span that fell 7.0 ms)
        changed = np.flatnonzero(p.g_dur != g.g_dur)
        before, after = int(g.g_dur[changed].sum()), int(p.g_dur[changed].sum())
    _, rows, kept, n, (read, keep) = found[0]
    return (RowsKept("logits_to_keep", len(found), rows=rows, kept=kept, features=n, gemm_ns=before, kept_ns=after,
                     read=read, keep=keep),
            {"projections": len(found)})


def says(a: RowsKept) -> str:
    if a.count == 0:
        return "no output projection read in part (every row a projection computes is read)"
    return (f"the output projection computes {units.integer(a.rows)} rows of {units.integer(a.features)} features, "
            f"and {units.integer(a.kept)} of them are read (a select or slice next, nothing reading it whole): "
            f"projected for those rows alone, its kernels take {units.duration_ns(a.kept_ns)} in place of "
            f"{units.duration_ns(a.gemm_ns)}")


def projections(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("projections", 0)


def most_saved(a: RowsKept) -> int:
    return max(a.gemm_ns - a.kept_ns, 0) if a.count else 0


def _line(a: Assumption) -> str:
    if isinstance(a, RowsKept) and a.count:
        how = f" (head(h{a.keep}) in place of head(h){a.read})" if a.read else ""
        return (f"project only the rows you read ({units.integer(a.kept)} of {units.integer(a.rows)}): slice the "
                f"hidden states before the output head{how}; a Hugging Face causal LM takes "
                "model(..., logits_to_keep=1)")
    return SPEC_CHANGE


SPEC_CHANGE = ("project only the rows you read: slice the hidden states before the output head (head(h[:, -1:]) in "
               "place of head(h)[:, -1]); a Hugging Face causal LM takes model(..., logits_to_keep=1)")

SPEC = LeverSpec(
    name="logits_to_keep", effort=1, cause=None, apply=apply, says=says, words="projecting only the rows read",
    fix="the hidden states sliced before the output head (logits_to_keep=1)",
    recognise=Recognise(order=2, evidence="projections_read_in_part", because="its head stopped projecting rows "
                        "nobody reads", amount=projections, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="the output head applied to the rows read", weighed_only_if_found=True, removes_work=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change=SPEC_CHANGE,
              evidence="a projection to 4,096 or more features, 4x its input's or more (aten::linear/matmul/mm), "
                       "whose output is read next "
                       "only by an aten::select/slice keeping a quarter of its rows or fewer (Input Dims and Concrete "
                       "Inputs), past views and casts",
              applies="every device; the output is then the rows read, as the code that selects them expects",
              model="the projection's kernels take the rows' share of their time, no less than reading the weight "
                    "once at the device's memory roof",
              guide="Hugging Face transformers: logits_to_keep (num_logits_to_keep) in a causal LM's forward",
              line=_line))
