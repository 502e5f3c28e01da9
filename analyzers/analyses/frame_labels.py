"""Built-in frames the profiler named after another call: a `with_stack` trace's `<built-in method X of ...>`
events whose X is not what ran inside them.

The Python tracer names a call into C after the callable's object, by its address: when a later call reuses
that address, its frames carry the first call's name. heldout-user19 gp_cudagraph calls `.pow()` once, then
`.copy_()` 222 times: every copy_ frame reads `<built-in method pow of Tensor object at 0x7fd93fc44cc0>`, and
its 222 aten::copy_ ops were said to come 'from the `.pow()` in `do_work`'.

A built-in named after an ATen op (pow, matmul, linear, add_) dispatches that op first. Where some frames of
one name hold that op first (the call that named it) and others hold a different op first, those others are
mislabelled: the user's line called something, but not what the name says. A built-in whose name is no op
that ran (`.cpu()` runs aten::to, `__getitem__` a select or a slice) is never judged: nothing in the trace says
what it should hold. Frames that hold no op are left as they are.
"""
from __future__ import annotations

import re

import numpy as np

from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import CPU_OP, NONE, Trace

_BUILTIN = re.compile(r"^<built-in (?:method|function) ([^ >]+)")


def _bare(op: str) -> str:
    """'aten::add_' -> 'add', 'pow' -> 'pow': the op's name as a built-in's, in-place or private spelling aside."""
    return op.rsplit("::", 1)[-1].strip("_")


def mislabelled(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """For python_function rows (sorted by start): whether each is a built-in frame named after an op it does not
    run, where other frames of its name do run that op first."""
    ev = trace.ev
    out = np.zeros(len(rows), bool)
    if not len(rows):
        return out
    ids = distinct(ev.name[rows])
    said = {int(i): _bare(m.group(1)) for i in ids.tolist() if (m := _BUILTIN.match(trace.names[int(i)]))}
    if not said:
        return out
    cand = np.flatnonzero(np.isin(ev.name[rows], np.array(list(said), dtype=ev.name.dtype)))
    first = np.full(len(cand), NONE, np.int64)       # the first op each candidate frame holds on its thread
    ops = np.flatnonzero(ev.cat == CPU_OP)
    for t in distinct(ev.tid[rows[cand]]):
        mine = ops[ev.tid[ops] == t]
        if not len(mine):
            continue
        c = np.flatnonzero(ev.tid[rows[cand]] == t)
        fr = rows[cand[c]]
        k = np.searchsorted(ev.start[mine], ev.start[fr], side="left")
        inside = k < len(mine)
        k = np.minimum(k, len(mine) - 1)
        inside &= ev.start[mine[k]] < ev.end[fr]
        first[c] = np.where(inside, mine[k], NONE)
    held = first != NONE
    if not held.any():
        return out
    # one code per bare name, for the frames' names and the ops' alike: a frame matches when the codes agree
    codes: dict[str, int] = {}
    frame_code = np.full(len(trace.names), -1, np.int64)
    for i, b in said.items():
        frame_code[i] = codes.setdefault(b, len(codes))
    op_code = np.full(len(trace.names), -2, np.int64)
    for n in distinct(ev.name[first[held]]).tolist():
        op_code[int(n)] = codes.get(_bare(trace.names[int(n)]), -2)
    frame_name = ev.name[rows[cand]].astype(np.int64)
    match = held & (frame_code[frame_name] == op_code[ev.name[np.maximum(first, 0)]])
    honest = distinct(frame_name[match])         # names some frame of which ran the op it is named after
    wrong = held & ~match & np.isin(frame_name, honest)
    out[cand[wrong]] = True
    return out
