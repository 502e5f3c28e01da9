"""sparse_embedding: an embedding table whose batch touches a sliver of its rows given sparse gradients
(nn.Embedding(n, d, sparse=True) with an optimizer that takes them: SGD, Adagrad, SparseAdam), not a dense gradient of
the whole table every step and an optimizer pass over every row.

What any trace of it shows (record_shapes): `aten::embedding_dense_backward` with its Input Dims (the gradient
[..., d], the indices [...]) and Concrete Inputs (num_weights, the table's rows). A table of num_weights rows looked up
by N indices gets a dense gradient of num_weights x d: zero-filled and scattered into in the backward, then read and
written by every pass of the optimizer (Adagrad's addcmul, sqrt, addcdiv over the table, its state beside it). Where
the rows are DENSE_OVER_TOUCHED times the indices or more, nearly all of that is zeros. fresh9
ctr_huge_tables_dense_grads: 26 tables, 30M rows x 64, 8,192 lookups each; the step's optimizer passes stream ~7.7 GB
tensors several times.

Price (in the graph): the dense backward's autograd node goes whole, its host time and the kernels launched inside (a
sparse gradient is the indices and the rows looked up, no table-sized tensor: the fill, sort and scatter go, and the sum
of a table's two dense gradients where it is looked up twice), SPARSE_BACKWARD_PLAIN_OPS ops that launch nothing in its
place; every lookup of a table found sparse enough goes sparse (sparse=True is the module's); the optimizer step's
kernels keep only the share of the parameters that are not tables (the tables' elements against the GEMMs' weights, by
their recorded shapes); and each table's sparse update costs the host, added before the step's first launch: Adagrad's
and SparseAdam's SPARSE_UPDATE_HOST_NS (coalescing the indices, masking the state, the per-parameter path an optimizer
takes for sparse gradients: measured ~0.8-1.1 ms a table under the profiler in the fresh9 pair's after trace, the one
pair this is fitted to), SGD's one sparse add (SGD_SPARSE_ADD_PLAIN_OPS ops that launch nothing and one that launches,
at this trace's own op costs).

What would make it fire falsely: a table most of whose rows a step does touch (a small vocabulary): under
DENSE_OVER_TOUCHED, not counted. An optimizer that cannot take sparse gradients (Adam, AdamW: SparseAdam's lazy update
is another optimizer, not a flag; traces/fixes/knobs5 maxnorm_embedding_bag) or several optimizer classes in one trace
(which holds the tables is not recorded): not counted.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.opargs import as_int
from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.foreach_fused import step_class
from tracetriage.analyzers.whatif.levers.host_windows import remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import (
    calls_inside,
    gpu_of_calls,
    mirror_queued,
    op_cost,
    ops_named,
    ranges_named,
)
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

DENSE_BACKWARD = "aten::embedding_dense_backward"
STEP_RANGE = "Optimizer.step#"
GEMMS = frozenset(("aten::linear", "aten::addmm", "aten::mm", "aten::matmul"))
# table rows per index looked up, at least: the dense path zero-fills, scatters into and then has the optimizer read
# and write rows x dim (three passes and more), the sparse path sorts and coalesces the n looked-up rows and updates
# them (about ten passes over n x dim): from 16 rows an index the dense path moves five times the bytes or more.
# (64 left traces/pending2 neumf_dense_table_grads' item tables, 1M rows for 16,384 lookups, 61 an index, priced dense
# where the fix, sparse=True on every table, made them sparse too.)
DENSE_OVER_TOUCHED = 16
SPARSE_UPDATE_HOST_NS = 800_000   # one table's sparse update on the host, Adagrad's (see the module docstring)
# SGD's sparse update is one param.add_(grad, alpha=-lr): aten::add of a sparse tensor, which reads its nnz, values
# and indices, squeezes and reshapes them (about 15 ops that launch nothing) and launches one index_add_ (traces/
# pending2 neumf_dense_table_grads' after trace: 30-115 us a table under the profiler, not Adagrad's 0.8 ms)
SGD_SPARSE_ADD_PLAIN_OPS = 15
# the sparse backward (aten::embedding_sparse_backward): reshapes, views, _sparse_coo_tensor_unsafe and its empties and
# resizes, about 12 ops that launch nothing (pairs3 word2vec_sgns_dense_table_grads' after trace: 40-60 us a node)
SPARSE_BACKWARD_PLAIN_OPS = 12
NODE = "autograd::engine::evaluate_function: EmbeddingBackward"
TAKE_SPARSE = frozenset(("SGD", "Adagrad", "SparseAdam"))


@dataclass(frozen=True)
class SparseTables(Assumption):
    tables: int = 0             # distinct tables (count: dense backwards, all steps)
    rows: int = 0               # their rows, together
    indices: int = 0            # lookups a step, together
    dense_ns: int = 0           # the dense backwards' kernels, all steps
    step_ns: int = 0            # the optimizer steps' kernels, all steps
    table_share: float = 0.0    # the tables' elements of the parameters the trace sizes
    optimizer: str = ""
    update_ns: int = 0          # one table's sparse update on the host (sparse_update_host_ns)
    node_host_ns: int = 0       # the dense backwards' autograd nodes' host windows, all steps (taken out whole)


def _dense_backwards(c: Context) -> list[tuple[int, int, int, int]]:
    """(dense backward op row, table rows, indices looked up, embedding dim) of every dense backward the trace sizes."""
    out = []
    for r in ops_named(c, lambda n: n == DENSE_BACKWARD).tolist():
        dims, _, concrete = c.trace.shapes(r)
        if not dims or len(dims) < 2 or not concrete or len(concrete) < 3:
            continue
        rows = as_int(concrete[2])
        grad, idx = dims[0], dims[1]
        if not rows or not isinstance(idx, list) or not isinstance(grad, list) or not grad:
            continue
        out.append((r, rows, int(np.prod(idx)) if idx else 1, int(grad[-1])))
    return out


def dense_tables(c: Context) -> list[tuple[int, int, int, int]]:
    """(dense backward op row, table rows, indices looked up, embedding dim) of each sparse-enough table."""
    return [t for t in _dense_backwards(c) if t[2] and t[1] >= DENSE_OVER_TOUCHED * t[2]]


def same_tables(c: Context, found: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """The other dense backwards of a table found sparse enough: sparse=True is the module's, so every lookup of it
    gets a sparse gradient (word2vec's output table, looked up for the context words and, 5 rows an index, for the
    negatives); a table is told by its rows and dim alone, as nothing else names it."""
    shapes = {(rows, d) for _, rows, _, d in found}
    mine = {r for r, *_ in found}
    return [t for t in _dense_backwards(c) if t[0] not in mine and (t[1], t[3]) in shapes]


def embedding_nodes(c: Context, rows: np.ndarray) -> np.ndarray:
    """Each dense backward's autograd node (NODE, the op around it on its thread), or the dense backward itself where
    the trace has none (a backward called outside the autograd engine)."""
    ev = c.trace.ev
    nodes = ops_named(c, lambda n: n.startswith(NODE))
    out = []
    for r in rows.tolist():
        around = nodes[(ev.start[nodes] <= ev.start[r]) & (ev.end[nodes] >= ev.end[r])
                       & (thread_keys(ev, nodes) == thread_keys(ev, np.array([r]))[0])]
        out.append(int(around[0]) if len(around) else r)
    return np.array(sorted(set(out)), np.int64)


def _steps(c: Context) -> np.ndarray:
    return ranges_named(c, lambda n: n.startswith(STEP_RANGE))


def _dense_enough_elems(c: Context, found: list[tuple[int, int, int, int]]) -> int:
    """Elements of the tables whose batch touches enough of their rows to keep a dense gradient (all steps), none of
    them of a table found sparse enough (same_tables)."""
    shapes = {(rows, d) for _, rows, _, d in found}
    return sum(rows * d for _, rows, n, d in _dense_backwards(c)
               if rows < DENSE_OVER_TOUCHED * n and (rows, d) not in shapes)


def _other_weights(c: Context) -> int:
    """Elements of the distinct GEMM weights the forward sizes (a Linear's [out, in], an addmm's [in, out])."""
    seen = set()
    for r in ops_named(c, lambda n: n in GEMMS).tolist():
        dims = c.trace.shapes(r)[0] or []
        w = dims[2] if c.trace.name_of(r) == "aten::addmm" and len(dims) > 2 else dims[1] if len(dims) > 1 else None
        if isinstance(w, list) and len(w) == 2 and all(isinstance(x, int) for x in w):
            seen.add(tuple(w))
    return sum(a * b for a, b in seen)


def sparse_update_host_ns(c: Context, optimizer: str) -> int:
    """One table's sparse update on the host: SGD's one sparse add priced at this trace's own op costs, Adagrad's and
    SparseAdam's (coalesce, masks, several sparse tensors made) as measured."""
    if optimizer == "SGD":
        cost = op_cost(c)
        return int(cost.launching_ns + SGD_SPARSE_ADD_PLAIN_OPS * cost.plain_ns)
    return SPARSE_UPDATE_HOST_NS


def apply(c: Context, p, o: Options) -> tuple[SparseTables, dict]:
    g, ev = c.g, c.trace.ev
    found = dense_tables(c)
    steps = _steps(c)
    if not found or not len(steps) or step_class(c) not in TAKE_SPARSE:
        # (Adam and AdamW refuse sparse gradients: SparseAdam's lazy update is another optimizer, not a flag; several
        # optimizer classes: which one holds the tables is not in the trace)
        return SparseTables("sparse_embedding", 0), {"dense_tables": 0}
    # a step's tables: each backward once a step (tables of one shape are told apart by nothing else)
    per_step = max(len(found) // len(steps), 1)
    n_steps = len(found) / per_step
    table_elems = sum(rows * d for _, rows, _, d in found) / n_steps
    share = table_elems / (table_elems + _other_weights(c) + _dense_enough_elems(c, found) / n_steps)
    # the dense backwards' autograd nodes go whole, host and device: the zero-fill, the sort and scatter into the
    # table-sized gradient, and the sum of a table's two gradients (a table looked up twice: word2vec's output table,
    # for the context and the negatives), with the 50-odd runtime calls that launch them (pairs3
    # word2vec_sgns_dense_table_grads: 0.44-0.52 ms of host a node before, 40-60 us after)
    nodes = embedding_nodes(c, np.array([r for r, *_ in found + same_tables(c, found)]))
    ws, we, wk = ev.start[nodes], ev.end[nodes], thread_keys(ev, nodes)
    dense = gpu_of_calls(c, calls_inside(c, nodes))
    dense_ns = int(g.g_dur[dense].sum())
    remove_host_windows(c, p, ws, we, wk, drop_gpu=True)
    # ... and the sparse backward takes their place: a view of the rows looked up wrapped as a sparse tensor,
    # SPARSE_BACKWARD_PLAIN_OPS ops that launch nothing, before the thread's next call
    sparse_ns = int(SPARSE_BACKWARD_PLAIN_OPS * op_cost(c).plain_ns)
    c_key = c.call_keys
    for e, k in zip(we.tolist(), wk.tolist()):
        nxt = np.flatnonzero((c_key == k) & (g.c_start >= e))
        if len(nxt):
            p.c_gap[nxt[np.argmin(g.c_start[nxt])]] += sparse_ns
    in_step = gpu_of_calls(c, calls_inside(c, steps))
    step_ns = int(g.g_dur[in_step].sum())
    p.g_dur[in_step] = np.round(g.g_dur[in_step] * (1.0 - share)).astype(p.g_dur.dtype)
    # each table's sparse update: host time before the step's first launch
    update_ns = sparse_update_host_ns(c, step_class(c) or "")
    step_calls = calls_inside(c, steps)
    for s in steps.tolist():
        mine = step_calls[(g.c_start[step_calls] >= ev.start[s]) & (g.c_start[step_calls] < ev.end[s])]
        if len(mine):
            first = mine[np.argmin(g.c_start[mine])]
            p.c_gap[first] += update_ns * per_step
    mirror_queued(c, p)
    return (SparseTables("sparse_embedding", len(found), tables=per_step,
                         rows=int(sum(r for _, r, _, _ in found) / n_steps),
                         indices=int(sum(n for _, _, n, _ in found) / n_steps), dense_ns=dense_ns, step_ns=step_ns,
                         table_share=share, optimizer=step_class(c) or "", update_ns=update_ns,
                         node_host_ns=int((we - ws).sum())),
            {"dense_tables": len(found)})


def says(a: SparseTables) -> str:
    if a.count == 0:
        return "no embedding table given a dense gradient of rows its batch does not touch"
    return (f"{units.count(a.tables, 'embedding table')} ({units.integer(a.rows)} rows) get a dense gradient a step "
            f"for {units.integer(a.indices)} lookups, and the optimizer passes over every row "
            f"({units.duration_ns(a.dense_ns)} of dense backward and {units.duration_ns(a.step_ns)} of optimizer "
            f"kernels, the tables {units.share(a.table_share)} of the sized parameters): with sparse gradients "
            f"those go, each table's sparse update costing the host {units.duration_ns(a.update_ns)} instead "
            + ("(one sparse add at this trace's op costs)" if a.optimizer == "SGD" else "(measured on one pair)"))


def dense_backwards(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("dense_tables", 0)


def most_saved(a: SparseTables) -> int:
    # what the edit takes out: the dense backwards' and the optimizer steps' kernels, and the nodes' host windows
    return a.dense_ns + a.step_ns + a.node_host_ns if a.count else 0


def _line(a: Assumption) -> str:
    opt = a.optimizer if isinstance(a, SparseTables) else ""
    how = f"torch.optim.{opt} takes them" if opt else "with SGD, Adagrad or SparseAdam"
    return (f"give the embedding tables sparse gradients: nn.Embedding(n, dim, sparse=True) ({how}), so a step "
            "writes and updates only the rows its batch looks up")


SPEC = LeverSpec(
    name="sparse_embedding", effort=1, cause=None, apply=apply, says=says,
    words="giving the embedding tables sparse gradients",
    fix="nn.Embedding(n, dim, sparse=True) with an optimizer that takes sparse gradients",
    recognise=Recognise(order=2, evidence="dense_embedding_backwards", because="its tables' gradients became sparse",
                        amount=dense_backwards, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="sparse embedding gradients", weighed_only_if_found=True, removes_work=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change="give the embedding tables sparse gradients: nn.Embedding(n, dim, sparse=True) with an optimizer "
                     "that takes them (SGD, Adagrad, SparseAdam)",
              evidence="aten::embedding_dense_backward whose num_weights (Concrete Inputs) is 16 or more times the "
                       "indices looked up (Input Dims)",
              applies="every device, under an optimizer that takes sparse gradients (SGD, Adagrad, SparseAdam; not "
                      "Adam/AdamW)",
              model="the dense backward's autograd node goes, host and kernels (a dozen plain ops in its place), the "
                    "optimizer's kernels keep the non-table parameters' share, "
                    "and each table's sparse update adds host time: 0.8 ms under Adagrad or SparseAdam (one measured "
                    "pair), one sparse add at the trace's op costs under SGD",
              guide="torch.nn.Embedding (sparse=True); torch.optim.SparseAdam",
              line=_line))
