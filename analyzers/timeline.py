"""The timeline as arrays: what a timeline view draws and a drill grader quotes.

Every bar is (lane, start, end, kind, name) in µs from the first GPU activity:
GPU lanes per (device, stream), host lanes per thread (cpu_ops, launch calls),
named ranges, and the idle gaps with their causes. Nothing here re-derives a
number: gaps and causes come from the analysis.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzers.verdicts import CAUSES
from analyzers.report import Analysis
from analyzers.trace import (CPU_OP, DRIVER, GPU_CATS, KERNEL, MEMCPY, MEMSET, RUNTIME, USER_ANNOTATION)

KINDS = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset", CPU_OP: "cpu_op", RUNTIME: "launch call",
         DRIVER: "launch call", USER_ANNOTATION: "range"}


@dataclass(frozen=True)
class Timeline:
    origin_ns: int
    lanes: list[str]
    lane: np.ndarray      # int32 index into lanes
    start_us: np.ndarray  # float64, from origin
    end_us: np.ndarray
    kind: list[str]
    name: list[str]
    gap_device: np.ndarray
    gap_start_us: np.ndarray
    gap_end_us: np.ndarray
    gap_cause: list[str]

    def records(self) -> list[dict]:
        """Bars then gaps, as plain dicts (for Altair / pandas)."""
        bars = [{"lane": self.lanes[l], "start_us": float(s), "end_us": float(e), "kind": k, "name": n}
                for l, s, e, k, n in zip(self.lane, self.start_us, self.end_us, self.kind, self.name)]
        gaps = [{"lane": f"gpu{d} idle", "start_us": float(s), "end_us": float(e), "kind": "idle", "name": c}
                for d, s, e, c in zip(self.gap_device, self.gap_start_us, self.gap_end_us, self.gap_cause)]
        return bars + gaps


def build(a: Analysis, window_us: tuple[float, float] | None = None, max_bars: int = 20000) -> Timeline:
    """The bars overlapping window_us (µs from the origin); the longest max_bars if there are more."""
    tr = a.trace
    ev = tr.ev
    gpu = np.isin(ev.cat, GPU_CATS)
    origin = int(ev.start[gpu].min()) if gpu.any() else int(ev.start.min(initial=0))
    rows = np.flatnonzero(np.isin(ev.cat, list(KINDS)))
    s = (ev.start[rows] - origin) / 1e3
    e = (ev.end[rows] - origin) / 1e3
    keep = np.ones(len(rows), dtype=bool)
    if window_us is not None:
        keep = (e > window_us[0]) & (s < window_us[1])
    rows, s, e = rows[keep], s[keep], e[keep]
    if len(rows) > max_bars:
        top = np.argsort(-(e - s), kind="stable")[:max_bars]
        top.sort()
        rows, s, e = rows[top], s[top], e[top]
    lane_keys = [(f"gpu{ev.device[r]} stream {ev.stream[r]}" if ev.cat[r] in GPU_CATS else
                  f"host thread {ev.tid[r]}" + (" ranges" if ev.cat[r] == USER_ANNOTATION else ""))
                 for r in rows]
    lanes = sorted(set(lane_keys), key=lambda x: (not x.startswith("host"), x))
    index = {l: i for i, l in enumerate(lanes)}
    gs, ge, gc, gd = [], [], [], []
    for d in a.devices:
        g = d.gaps
        s_g, e_g = (g.start - origin) / 1e3, (g.end - origin) / 1e3
        m = np.ones(len(g), dtype=bool) if window_us is None else (e_g > window_us[0]) & (s_g < window_us[1])
        gs.append(s_g[m]); ge.append(e_g[m]); gd.append(g.device[m]); gc += [CAUSES[c] for c in g.cause[m]]
    cat = np.concatenate
    return Timeline(origin_ns=origin, lanes=lanes, lane=np.array([index[k] for k in lane_keys], np.int32),
                    start_us=s, end_us=e, kind=[KINDS[int(c)] for c in ev.cat[rows]],
                    name=[tr.names[i] for i in ev.name[rows]],
                    gap_device=cat(gd) if gd else np.zeros(0, np.int32), gap_start_us=cat(gs) if gs else np.zeros(0),
                    gap_end_us=cat(ge) if ge else np.zeros(0), gap_cause=gc)
