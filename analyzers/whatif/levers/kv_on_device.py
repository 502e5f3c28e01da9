"""kv_on_device: a decoder's KV cache kept on the device, not offloaded to the host between layers (Hugging Face's
model.generate(..., cache_implementation="offloaded"), OffloadedCache / a hand-written offload), where the device
holds it.

What any trace of it shows: each layer's keys and values, [B, H, T, D] tensors, copied to the host (Memcpy DtoH)
after the layer has run and back (Memcpy HtoD, a prefetch, often on a side stream) before it runs again, at every
decode step; T, the cache's length, grows by one token from step to step. Found as the copies whose op (aten::copy_
under aten::to) moves a 4-D tensor, with tensors of one [B, H, *, D] shape and dtype going both ways, ROUND_TRIPS or
more each way, over MIN_LENGTHS or more consecutive lengths T (a cache appended to one token at a time). None of them
may be inside autograd's backward nodes (an activation offload is activations_on_gpu's).

The price, in the graph: those copies go both ways, with their launch calls' dispatch, and the calls and stream syncs
of their ops stop blocking the host (as activations_on_gpu prices its round trips). The cache then kept on the device
is appended to there (DynamicCache's torch.cat, already in the trace for the layer's new token) and the offload's own
Python (its per-layer bookkeeping, events, the side stream's waits) stays: a floor on the saving. Where the decode is
paced by the host, the replay says so: the copies' time leaves the device, the host's does not.

What would make it fire falsely: a cache offloaded on purpose because the device cannot hold it (long contexts, a
big batch on a small card): the knob says "where the device holds it"; the trace does not show the memory. A static
offloaded cache (OffloadedStaticCache: every step copies one fixed [B, H, max_len, D]) shows no growing length and
is not recognised here.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.opargs import Malformed, parse_args
from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import MEMCPY, NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.host_windows import remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import calls_inside, mirror_queued, ops_named, remove_gpu_work
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

BACKWARD_NODE = "autograd::engine::evaluate_function: "
ROUND_TRIPS = 8       # copies each way: a layer stack's keys and values over a few steps, not a user's .cpu()
MIN_LENGTHS = 3       # consecutive cache lengths T among them: the cache grows one token a step (a decode)


@dataclass(frozen=True)
class OffloadedCache(Assumption):
    to_host_bytes: int = 0      # count: the cache's copies to the host; these their bytes
    to_device: int = 0          # its copies back
    to_device_bytes: int = 0
    copy_ns: int = 0            # both ways' time on the device
    syncs: int = 0              # stream syncs inside the copies' ops
    lengths: int = 0            # distinct cache lengths T seen
    shape: str = ""             # [B, H, T, D] of the first copy, as the trace gives it


def _tensor(c: Context, op: int) -> tuple[tuple, str] | None:
    """The first tensor argument of a copy op: (its dims, its dtype); None where not recorded."""
    try:
        args = parse_args(*c.trace.shapes(op))
    except Malformed:
        return None
    t = next((a for a in args if a.kind == "tensor"), None)
    return (t.dims, t.dtype or "") if t is not None else None


def cache_copies(c: Context) -> tuple[np.ndarray, np.ndarray, int]:
    """The graph's memcpy rows of an offloaded KV cache (module docstring): (to the host, back to the device, how many
    cache lengths they cover)."""
    g, tr = c.g, c.trace
    rows = np.flatnonzero((g.g_cat == MEMCPY) & g.g_linked & (g.g_call >= 0))
    none = rows[:0]
    if len(rows) < 2 * ROUND_TRIPS:
        return none, none, 0
    nodes = ops_named(c, lambda n: n.startswith(BACKWARD_NODE))
    in_bwd = np.zeros(g.n_calls, bool)
    in_bwd[calls_inside(c, nodes)] = True
    rows = rows[~in_bwd[g.g_call[rows]]]
    ops = tr.op_of[g.c_row[g.g_call[rows]]]
    groups: dict[tuple, dict[str, list]] = defaultdict(lambda: {"out": [], "back": [], "t": []})
    for r, op in zip(rows.tolist(), ops.tolist()):
        name = tr.name_of(int(g.g_row[r]))
        way = "out" if name.startswith("Memcpy DtoH") else "back" if name.startswith("Memcpy HtoD") else ""
        if not way or op == NONE:
            continue
        got = _tensor(c, int(op))
        if got is None or len(got[0]) != 4:
            continue
        (b, h, t, d), dtype = got
        grp = groups[(b, h, d, dtype)]
        grp[way].append(r)
        grp["t"].append(t)
    out, back, lengths = [], [], 0
    for grp in groups.values():
        if len(grp["out"]) < ROUND_TRIPS or len(grp["back"]) < ROUND_TRIPS:
            continue
        ts = distinct(np.array(grp["t"], np.int64))
        run = _longest_run(ts)
        if run < MIN_LENGTHS:
            continue
        out += grp["out"]
        back += grp["back"]
        lengths = max(lengths, len(ts))
    return np.array(sorted(out), np.int64), np.array(sorted(back), np.int64), lengths


def _longest_run(ts: np.ndarray) -> int:
    """The longest run of consecutive integers in a sorted array of distinct ones."""
    if not len(ts):
        return 0
    breaks = np.flatnonzero(np.diff(ts) != 1)
    edges = np.concatenate([[-1], breaks, [len(ts) - 1]])
    return int(np.diff(edges).max())


def apply(c: Context, p, o: Options) -> tuple[OffloadedCache, dict]:
    g, ev = c.g, c.trace.ev
    out, back, lengths = cache_copies(c)
    if not len(out):
        return OffloadedCache("kv_on_device", 0), {"cache_copies": 0}
    rows = np.concatenate([out, back])
    calls = g.g_call[rows]
    ext = ev.ext[g.c_row]
    syncs = np.flatnonzero((g.c_kind == dg.SYNC_CALL) & np.isin(ext, list(set(ext[calls].tolist()))))
    first = _tensor(c, int(c.trace.op_of[g.c_row[g.g_call[out[0]]]]))
    a = OffloadedCache("kv_on_device", len(out), to_host_bytes=int(np.maximum(g.g_nbytes[out], 0).sum()),
                       to_device=len(back), to_device_bytes=int(np.maximum(g.g_nbytes[back], 0).sum()),
                       copy_ns=int(g.g_dur[rows].sum()), syncs=len(syncs), lengths=lengths,
                       shape=str(list(first[0])) if first is not None else "")
    # the copies' ops go whole (aten::to -> _to_copy: the pinned buffer's allocation, the dispatch, the call): a cache
    # kept on the device has no op moving it
    outer = distinct(g.c_outer_op[calls])
    outer = outer[outer != NONE]
    _, host_ns = remove_host_windows(c, p, ev.start[outer], ev.end[outer], thread_keys(ev, outer))
    remove_gpu_work(c, p, rows)
    p.c_blocked[calls] = False
    p.c_blocked[syncs] = False
    p.c_dur[syncs] = p.c_min[syncs]
    mirror_queued(c, p)
    return a, {"cache_copies": len(rows), "syncs": len(syncs), "host_ns": host_ns}


def says(a: OffloadedCache) -> str:
    if a.count == 0:
        return ("no KV cache offloaded to the host (4-D [B, H, T, D] tensors copied to the host and back, their "
                "length T growing a token a step) in this trace")
    return (f"the KV cache is offloaded: {units.integer(a.count)} copies of keys and values ({a.shape} at first, "
            f"{units.integer(a.lengths)} cache lengths) to the host ({units.size(a.to_host_bytes)}) and "
            f"{units.integer(a.to_device)} back ({units.size(a.to_device_bytes)}), {units.duration_ns(a.copy_ns)} on "
            "the device: kept on the device, they and their ops go (the offload's own Python stays, and so does the "
            "host's dispatch of every layer, which paces a decode whose kernels are short)")


def blocks_graphs(assumption: Assumption | None) -> bool:
    """The cache leaves the step through the host at every layer (copies into host memory, a side stream's prefetch
    that the host orders with events): no CUDA graph replays the decode as one until the cache stays on the device
    (Hugging Face's offloaded caches are not graph- or compile-compatible)."""
    return isinstance(assumption, OffloadedCache) and assumption.count >= ROUND_TRIPS


def change_for(a: Assumption) -> str:
    return ('model.generate(...) without cache_implementation="offloaded": the default DynamicCache (or '
            'cache_implementation="static") keeps the keys and values on the device, where it has the memory for them')


def copies(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("cache_copies", 0)


def most_saved(a: OffloadedCache) -> int:
    return a.copy_ns if a.count else 0


SPEC = LeverSpec(
    name="kv_on_device", effort=1, cause=Cause.DATA_TRANSFER, apply=apply, says=says,
    words="keeping the KV cache on the device",
    fix='model.generate(...) without cache_implementation="offloaded" (the KV cache stays on the device)',
    recognise=Recognise(order=2, evidence="offloaded_cache_copies", because="the KV cache's round trips went",
                        amount=copies, acted=lambda m: float(m.by_cause_ns.get(Cause.DATA_TRANSFER, 0)),
                        applied=went),
    applied_words="the KV cache kept on the device", weighed_only_if_found=True, removes_work=True,
    experiment=Experiment.TURN_KNOB, most_saved=most_saved,
    knob=Knob(change='keep the KV cache on the device: model.generate(...) without cache_implementation="offloaded" '
                     '(the default DynamicCache, or cache_implementation="static")',
              evidence="Memcpy DtoH and HtoD of 4-D [B, H, T, D] tensors of one shape and dtype both ways, 8 or more "
                       "each way, their length T over 3 or more consecutive values (a cache growing a token a step), "
                       "none inside autograd's backward",
              applies="every GPU whose memory holds the cache (not in the trace: the advice says where it does)",
              model="the cache's copies both ways go with their dispatch, and their ops' calls and stream syncs stop "
                    "blocking the host; the offload's own Python stays",
              guide="Hugging Face transformers: KV cache strategies (the default DynamicCache; OffloadedCache trades "
                    "speed for device memory)",
              line=change_for, where=Cause.DATA_TRANSFER))
