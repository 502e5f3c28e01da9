"""topk: torch.topk(x, k) in place of a full sort of which only the first k are kept (torch.argsort(x, dim,
descending=True)[:, :k], x.sort().values[..., :k]).

What any trace of it shows: an outermost aten::sort / aten::argsort on the device over a long dimension (n of
MIN_N or more; its dim read from Concrete Inputs, the last where none is recorded), then, on the same thread within
LOOK_AHEAD outermost ops, an aten::slice (or aten::narrow) of a tensor of the sort's shape along the sorted dim that
keeps k of its n, the first k or the last k, with k * FEW <= n: a slice of the sort's values (its dtype) or of its
int64 indices, read (not written into: no fill or copy right after it). The sort orders every element of every row (a
segmented radix sort: a histogram, then per 8-bit digit a pass that reads and writes keys and their int64 indices)
to keep k of them. torch.topk selects them by radix select: per digit a pass that only counts the keys, then one that
gathers the k, never writing the n keys or indices back.

The price: the sort's GPU work (every kernel, memset and copy its op launched) becomes one kernel of the sort kernels'
own time times topk's time over the sort's per element of the input, both counted in passes over the keys (P = 8 * kb
/ 8 for kb-byte keys, the 8-bit digit passes):
    sort  P * SORT_PASS + SORT_FIXED (each pass reads and writes keys and their int64 indices; the histogram, the
          indices' fill and the keys' copy before the first)
    topk  P * COUNT_PASS + GATHER (each digit's counting pass only reads the keys; one gather of the k)
Both cost per element, not per byte: on an H100 PyTorch's mbtopk counted 1.84 ps an element a pass over bf16 keys
(fresh11 retrieval_full_argsort_for_topk's after trace: 0.47 ms over 256M) and 1.99 ps over fp32 ones (pairs4
sasrec_recommend_top10_argsort's: 0.20 ms over 102M), its gather 3.5 and 3.7 ps; the segmented sort took 48 ps an
element for bf16 (2 passes) and 82.5 ps for fp32 (4). Priced by bytes (keys and indices read and written against keys
read) fp32 came out at 0.22 of the sort where its after trace took 0.15 (1.26 of 8.45 ms a step): a counting pass reads
4 bytes an element in the time a sort's pass moves 24. Here bf16 keys: 0.15 of the sort kernels' time, fp32: 0.14.
The launches of the sort's other kernels (a segmented sort launches a few per row) go with their dispatch.

What would make it fire falsely: a sort whose full order is used elsewhere (a rank of every item, a later slice
of another range): the slice is then one reader among others; the trace cannot tell, and the knob says "where only
the top k are used". A short row (n below MIN_N) sorts in shared memory and costs little either way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.opargs import Malformed, as_int, parse_args
from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.dtypes import DTYPE_BYTES
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.host_windows import calls_inside
from tracetriage.analyzers.whatif.levers.knob import gpu_of_calls, mirror_queued, ops_named, outermost, outermost_ops
from tracetriage.analyzers.whatif.levers.sdpa import fuse_windows
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

SORTS = frozenset(("aten::sort", "aten::argsort", "aten::msort"))
SLICES = frozenset(("aten::slice", "aten::narrow"))
WRITES = frozenset(("aten::fill_", "aten::copy_", "aten::zero_", "aten::masked_fill_"))   # into a slice: no read
MIN_N = 4096            # a row this long sorts through global memory (segmented radix sort); shorter ones in a block
FEW = 16                # k * FEW <= n: the slice keeps few of the row (a top-k), not most of it
LOOK_AHEAD = 6          # outermost ops after the sort on its thread in which its slice is looked for
DIGIT_BITS = 8          # radix sort and radix select go 8 bits a pass
# per element of the input, in ps on an H100 (module docstring): only their ratio is used
SORT_PASS_PS = 17.25    # a segmented radix sort's digit pass
SORT_FIXED_PS = 13.5    # its histogram, the indices' fill and the keys' copy
COUNT_PASS_PS = 1.9     # radix select's counting pass (reads the keys)
GATHER_PS = 3.6         # its gather of the k
INT_MAX = 1 << 62       # a slice's end at or past this is "to the end" (Python's [-k:] records INT64_MAX)


@dataclass(frozen=True)
class SortSlice:
    """One sort of which a slice keeps k of n along the sorted dim."""
    op: int              # the sort's outermost op row
    rows: int            # elements sorted / n (the other dims' product)
    n: int
    k: int
    key_bytes: int
    largest: bool = True  # the slice keeps the largest (a descending sort's first k, an ascending one's last k)


def time_ratio(key_bytes: int) -> float:
    """topk's time over the sort's, per element: both in digit passes over the keys (module docstring)."""
    passes = max(1, key_bytes * 8 // DIGIT_BITS)
    return (passes * COUNT_PASS_PS + GATHER_PS) / (passes * SORT_PASS_PS + SORT_FIXED_PS)


def _sorted_dim(args, ndim: int) -> int:
    """The sort's dim: the first int among its Concrete Inputs after the tensor (sort(self, dim, descending),
    sort.stable(self, stable, dim, descending), argsort(self, dim, descending)); the last where none is recorded."""
    dim = next((v for a in args[1:] if (v := as_int(a.concrete)) is not None), -1)
    return dim % ndim if ndim else 0


def _descending(args) -> bool:
    """The sort's descending flag: the last bool among its Concrete Inputs (sort(self, dim, descending),
    sort.stable(self, stable, dim, descending), argsort likewise); ascending where none is recorded."""
    flags = [a.concrete.strip() for a in args[1:] if a.concrete.strip() in ("True", "False")]
    return bool(flags) and flags[-1] == "True"


def _kept(args, dims: tuple, dtypes: tuple, dim: int, narrow: bool) -> int | None:
    """How many the slice keeps along `dim` of a tensor of `dims` and one of `dtypes` (the sort's values or its int64
    indices), where it keeps the first k (k) or the last k (-k); None for any other slice (another dim, a stride, a
    middle range, another tensor of that shape: top-p sampling's bool mask of the sorted row)."""
    if len(args) < 4 or args[0].kind != "tensor" or args[0].dims != dims or args[0].dtype not in dtypes:
        return None
    got = [as_int(a.concrete) for a in args[1:]]
    if got[0] is None or got[0] % len(dims) != dim:
        return None
    n = dims[dim]
    start = got[1] if got[1] is not None else 0
    start = start + n if start < 0 else start
    if narrow:                                   # narrow(self, dim, start, length)
        length = got[2]
        end = start + length if length is not None else None
    else:                                        # slice(self, dim, start, end, step)
        end = got[2] if len(got) > 2 else None
        if len(got) > 3 and got[3] not in (None, 1):
            return None
        end = n if end is None or end >= INT_MAX else (end + n if end < 0 else end)
    if end is None:
        return None
    end = min(end, n)
    if start == 0:
        return end                               # the first k
    if end == n:
        return start - n                         # the last k, as -k
    return None


def _written(c: Context, tops: np.ndarray, r: int) -> bool:
    """The slice is written into, not read: the next outermost op on its thread after it is an in-place fill or copy
    (x[..., -k:] = 0: aten::slice, then aten::fill_)."""
    ev = c.trace.ev
    nxt = tops[ev.start[tops] >= ev.end[r]]
    return bool(len(nxt)) and c.trace.name_of(int(nxt[0])) in WRITES


def find(c: Context) -> list[SortSlice]:
    """The sorts (SORTS, outermost) followed by a slice keeping few of their n (module docstring)."""
    tr, ev = c.trace, c.trace.ev
    sorts = outermost(c, ops_named(c, lambda n: n in SORTS))
    slices = ops_named(c, lambda n: n in SLICES)
    if not len(sorts) or not len(slices):
        return []
    tops = outermost_ops(c)
    t_key, s_key = thread_keys(ev, tops), thread_keys(ev, slices)
    out = []
    for s in sorts.tolist():
        try:
            args = parse_args(*tr.shapes(s))
        except Malformed:
            continue
        if not args or args[0].kind != "tensor" or not args[0].dims:
            continue
        dims = args[0].dims
        dim = _sorted_dim(args, len(dims))
        n = dims[dim]
        if n < MIN_N:
            continue
        key = int(thread_keys(ev, s))
        mine = tops[(t_key == key) & (ev.start[tops] >= ev.end[s])]
        horizon = int(ev.end[mine[min(LOOK_AHEAD, len(mine)) - 1]]) if len(mine) else int(ev.end[s])
        near = slices[(s_key == key) & (ev.start[slices] >= ev.end[s]) & (ev.start[slices] <= horizon)]
        for r in near[np.argsort(ev.start[near], kind="stable")].tolist():
            if _written(c, tops[t_key == key], r):
                continue
            try:
                k = _kept(parse_args(*tr.shapes(r)), dims, (args[0].dtype, "int64"), dim,
                          tr.name_of(r) == "aten::narrow")
            except Malformed:
                continue
            if k is not None and k != 0 and abs(k) * FEW <= n:
                out.append(SortSlice(op=s, rows=int(np.prod(dims)) // n, n=n, k=abs(k),
                                     largest=_descending(args) != (k < 0),
                                     key_bytes=DTYPE_BYTES.get(args[0].dtype or "", 4)))
                break
    return out


@dataclass(frozen=True)
class TopK(Assumption):
    n: int = 0                 # count: sorts whose slice keeps few; the longest row sorted
    k: int = 0                 # the most a slice keeps
    rows: int = 0              # rows of the first such sort
    kernels: int = 0           # GPU activities the sorts launched
    sort_ns: int = 0           # their time on the device
    topk_ns: int = 0           # the topk kernels' predicted time
    ratio: float = 0.0         # topk's time over the sort's, per element
    taken_ns: int = 0          # the host and device time the edit takes out (kernels, bubbles, launches)
    smallest: int = 0          # of the sorts, those whose slice keeps the smallest (topk's largest=False)


def apply(c: Context, p, o: Options) -> tuple[TopK, dict]:
    found = find(c)
    if not found:
        return TopK("topk", 0), {"sorts": 0}
    ev, g = c.trace.ev, c.g
    ops = np.array([f.op for f in found], np.int64)
    keys = thread_keys(ev, ops)
    windows = []
    kernels = 0
    for f, key in zip(found, keys.tolist()):
        inside = calls_inside(c, ev.start[[f.op]], ev.end[[f.op]], np.array([key]))
        rows = gpu_of_calls(c, np.flatnonzero(inside))
        kernels += len(rows)
        windows.append((int(ev.start[f.op]), int(ev.end[f.op]), key,
                        float(g.g_dur[rows].sum()) * time_ratio(f.key_bytes)))
    windows = [w for w in windows if w[3] > 0]
    if not windows:
        return TopK("topk", 0), {"sorts": 0}
    sort_ns, topk_ns = fuse_windows(c, p, windows)
    mirror_queued(c, p)                  # a sort queued before the window: its kernels shrink alike
    # what the edit takes out, for the claim checker's bound: the kernels' time and the device's bubbles between the
    # sort's many kernels (a segmented sort: a few a row), the queued sort's too, and the launches' host time
    taken = int(np.clip(g.g_dur - p.g_dur, 0, None).sum() + np.clip(g.g_gap - p.g_gap, 0, None).sum()
                + np.clip(g.c_dur - p.c_dur, 0, None).sum() + np.clip(g.c_gap - p.c_gap, 0, None).sum())
    return (TopK("topk", len(windows), n=max(f.n for f in found), k=max(f.k for f in found), rows=found[0].rows,
                 kernels=kernels, sort_ns=sort_ns, topk_ns=topk_ns, ratio=time_ratio(found[0].key_bytes),
                 taken_ns=taken, smallest=sum(not f.largest for f in found)),
            {"sorts": len(windows), "sort_ns": sort_ns, "threads": len(distinct(keys))})


def says(a: TopK) -> str:
    if a.count == 0:
        return ("no sort over a long row of which a slice keeps only the first (or last) few (argsort(x)[:, :k]) "
                "in this trace")
    return (f"{units.integer(a.count)} sorts of {units.integer(a.rows)} rows of {units.integer(a.n)} "
            f"({units.integer(a.kernels)} GPU activities, {units.duration_ns(a.sort_ns)}) of which a slice keeps "
            f"{units.integer(a.k)}: torch.topk selects them by radix select, reading the keys a few times and writing "
            f"no sorted copy, priced at {a.ratio:.2f} of the sort's time (its passes over the keys against the "
            f"sort's): "
            f"{units.duration_ns(a.topk_ns)}")


def change_for(a: Assumption) -> str:
    k = getattr(a, "k", 0) or "k"
    small = getattr(a, "smallest", 0) * 2 > getattr(a, "count", 0)
    return (f"torch.topk(x, {k}, dim=-1{', largest=False' if small else ''}) (its .indices where argsort's were kept), "
            f"in place of a full torch.argsort / sort of which a slice keeps {k}, where only those are used")


def sorts(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("sorts", 0)


def most_saved(a: TopK) -> int:
    return a.taken_ns if a.count else 0


SPEC = LeverSpec(
    name="topk", effort=1, cause=None, apply=apply, says=says, words="torch.topk",
    fix="torch.topk(x, k, dim=1).indices in place of torch.argsort(x, dim=1, descending=True)[:, :k]",
    recognise=Recognise(order=4, evidence="sorts_sliced", because="its full sort sliced to k became torch.topk",
                        amount=sorts, acted=lambda m: m.whatif.lever("topk").detail.get("sort_ns", 0), applied=went),
    applied_words="torch.topk for a sliced sort", weighed_only_if_found=True, removes_work=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change="torch.topk(x, k, dim=-1) in place of torch.argsort(x, dim=-1, descending=True)[..., :k]",
              evidence="an aten::sort / argsort on the device over a dim of 4,096 or more, then within six ops an "
                       "aten::slice (or narrow) of its values or int64 indices along that dim keeping the first or "
                       "last k, k at most 1/16 of it, read (no fill or copy into it next)",
              applies="every device; PyTorch's topk (radix select) on CUDA and ROCm",
              model="the sort's GPU work becomes one kernel of the sort kernels' time x topk's time over the "
                    "sort's, per element in digit passes (bf16 keys: 0.15, fp32: 0.14), the other launches gone with "
                    "their dispatch",
              guide="past the guides: torch.topk (the documentation's selection op; argsort sorts every element)",
              line=change_for))
