"""Named ranges: what each record_function / named_range cost on the device.

A range instance is a CPU interval [start, end) on one thread. Its GPU work is every
activity launched by a call made inside it on that thread. Its wall time runs from
the range's start to the later of its end and its last GPU activity's end: for a
`prefill` range that is the time to first token, whatever the host did meanwhile.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.idle import DeviceIdle, dominant_cause
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.names import name_codes
from tracetriage.analyzers.model.trace import (
    CPU_OP,
    GPU_CATS,
    HOST_CALL_CATS,
    KERNEL,
    NONE,
    USER_ANNOTATION,
    Trace,
    TraceError,
)
from tracetriage.analyzers.model.verdicts import CAUSES, Cause

_STEP = re.compile(r"^(ProfilerStep)#\d+$")
ENGINE_NODE = "autograd::engine::evaluate_function: "   # a node autograd's engine runs, on its own thread


def range_name(raw: str) -> str:
    m = _STEP.match(raw)
    return m.group(1) if m else raw


@dataclass(frozen=True)
class RangeStats:
    name: str
    count: int
    wall_us: float              # summed over instances
    median_wall_us: float
    kernel_busy_us: float
    gpu_rows: np.ndarray        # GPU activities launched inside the range
    windows: tuple[np.ndarray, np.ndarray]   # per instance: [cpu start, max(cpu end, last gpu end))
    idle_by_cause_us: dict[Cause, float]
    idle_us: float
    instances: np.ndarray | None = None     # the range's user_annotation rows, in the order of `windows`

    @property
    def idle_dominant(self) -> Cause | None:
        return dominant_cause(self.idle_by_cause_us, self.idle_us)

    @property
    def union_wall_us(self) -> float:
        """Wall time covered by any instance: instances overlap when the host runs ahead."""
        s, e = iv.union(*self.windows)
        return iv.total(s, e) / 1e3

    @property
    def idle_share(self) -> float:
        wall = self.union_wall_us
        return self.idle_us / wall if wall else 0.0


def analyze(trace: Trace, idle: list[DeviceIdle], names: list[str] | None = None) -> list[RangeStats]:
    ev = trace.ev
    ann = np.flatnonzero(ev.cat == USER_ANNOTATION)
    if len(ann) == 0:
        return []
    labels = np.array([range_name(trace.names[i]) for i in ev.name[ann]], dtype=object)
    calls = np.flatnonzero(any_of(ev.cat, HOST_CALL_CATS))
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS) & (trace.launch_of != NONE))
    gpu_call = trace.launch_of[gpu]
    # autograd's backward threads (they run its engine's nodes): their calls made while an instance is open on
    # another thread count as the instance's, whose thread waits in loss.backward() meanwhile
    helpers = _autograd_threads(trace)
    out = []
    for name in (names or list(dict.fromkeys(labels.tolist()))):
        inst = ann[labels == name]
        if len(inst) == 0:
            continue
        s, e = ev.start[inst], ev.end[inst]
        # calls inside an instance, on the instance's thread
        inst_of_call = np.full(len(ev), NONE, np.int64)
        for tid in distinct(ev.tid[inst]):
            mine = inst[ev.tid[inst] == tid]
            ms, me = ev.start[mine], ev.end[mine]
            order = np.argsort(ms)
            ms, me, mine_sorted = ms[order], me[order], np.arange(len(inst))[np.isin(inst, mine)][order]
            c = calls[ev.tid[calls] == tid]
            k = np.searchsorted(ms, ev.start[c], side="right") - 1
            inside = (k >= 0) & (ev.start[c] < me[np.maximum(k, 0)])
            inst_of_call[c[inside]] = mine_sorted[k[inside]]
        _helpers_calls(ev, calls[np.isin(ev.tid[calls], np.setdiff1d(helpers, ev.tid[inst]))], inst, inst_of_call)
        g_inst = inst_of_call[gpu_call]
        g_rows = gpu[g_inst != NONE]
        g_inst = g_inst[g_inst != NONE]
        last = np.full(len(inst), np.iinfo(np.int64).min)
        np.maximum.at(last, g_inst, ev.end[g_rows])
        wend = np.maximum(e, last)
        ws, we = iv.union(s, wend)
        walls = (wend - s).astype(np.float64)
        kr = g_rows[ev.cat[g_rows] == KERNEL]
        ks, ke = iv.union(ev.start[kr], ev.end[kr])
        idle_by = {c: 0.0 for c in CAUSES}
        for d in idle:
            gp = d.gaps
            for ci, cname in enumerate(CAUSES):
                m = gp.cause == ci
                if m.any():
                    idle_by[cname] += float(iv.covered(gp.start[m], gp.end[m], ws, we).sum()) / 1e3
        out.append(RangeStats(name=name, count=len(inst), wall_us=float(walls.sum()) / 1e3,
                              median_wall_us=float(np.median(walls)) / 1e3, kernel_busy_us=iv.total(ks, ke) / 1e3,
                              gpu_rows=g_rows, windows=(s, wend), idle_by_cause_us=idle_by,
                              idle_us=sum(idle_by.values()), instances=inst))
    return out


def _autograd_threads(trace: Trace) -> np.ndarray:
    """The threads that run autograd's engine nodes (cpu_ops 'autograd::engine::evaluate_function: ...')."""
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if not len(ops):
        return np.zeros(0, ev.tid.dtype)
    ids, inv = name_codes(trace, ops)
    engine = np.array([trace.names[i].startswith(ENGINE_NODE) for i in ids.tolist()], bool)[inv]
    return distinct(ev.tid[ops[engine]])


def _helpers_calls(ev, calls: np.ndarray, inst: np.ndarray, inst_of_call: np.ndarray) -> None:
    """Charge the helper threads' `calls` (module: analyze) to the instance open when each was made, the latest
    begun where several are (heldout-user17 compilecold: 'resnet18 compile 1.16 ms busy' where the range's CPU
    interval holds 3.43 ms of kernels, its backward's launched from autograd's thread)."""
    if not len(calls) or not len(inst):
        return
    order = np.argsort(ev.start[inst], kind="stable")
    ms, me = ev.start[inst][order], ev.end[inst][order]
    k = np.searchsorted(ms, ev.start[calls], side="right") - 1
    inside = (k >= 0) & (ev.start[calls] < me[np.maximum(k, 0)])
    inst_of_call[calls[inside]] = order[k[inside]]


def window_of(trace: Trace, name: str) -> tuple[int, int]:
    """The span from the named range's first instance to its last end (`report --range NAME`)."""
    stats = analyze(trace, [], names=[name])
    if not stats:
        known = sorted({range_name(trace.names[i]) for i in trace.ev.name[trace.ev.cat == USER_ANNOTATION]})
        raise TraceError(f"no range named {name!r} in {trace.path}; ranges: {', '.join(known) or 'none'}")
    s, e = stats[0].windows
    return int(s.min()), int(e.max())


def idle_split(named: list[RangeStats], idle_ns: int, ev, at_least: float) -> tuple[tuple[str, float], ...]:
    """(name, share of the idle) of the user's named ranges that split the idle, most first: two or more hold
    `at_least` of it each and, side by side rather than nested, no more than the idle in all."""
    idle_us = idle_ns / 1e3
    ranges = sorted((r for r in named if idle_us > 0 and r.idle_us >= at_least * idle_us),
                    key=lambda r: -r.idle_us)
    if len(ranges) < 2 or sum(r.idle_us for r in ranges) > idle_us:
        return ()
    # side by side on the host: no range inside another (a user's `allreduce` around torch's `nccl:all_reduce`)
    rows = [r.instances for r in ranges if r.instances is not None]
    if len(rows) == len(ranges):
        own = [iv.total(*iv.union(ev.start[x], ev.end[x])) for x in rows]
        both = np.concatenate(rows)
        if iv.total(*iv.union(ev.start[both], ev.end[both])) < 0.95 * sum(own):
            return ()
    return tuple((r.name, r.idle_us / idle_us) for r in ranges)
