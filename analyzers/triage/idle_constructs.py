"""Which framework construct held the host in each idle gap, on the timeline's clock.

tracetriage.analyzers.analyses.framework charges every gap to the construct that covers most of it on the host
thread that explains it (Framework.gap_construct); this module lays those answers out the way a
timeline view asks for them:

    gap_constructs(a, window_us)   per gap of the window, in the order timeline.build lists its gaps
    bin_constructs(a, edges_us)    per device, per construct, per bin: the share of the bin idle in gaps
                                   charged to that construct (the overview's idle lane)

A gap counts whole for its construct (the one covering most of it), as the framework's per-gap answer
does; a bin's shares by construct then add up to its idle share, as its shares by cause do.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.verdicts import CONSTRUCTS, Construct
from tracetriage.analyzers.triage import timeline
from tracetriage.analyzers.triage.report import Analysis

USER = CONSTRUCTS.index(Construct.USER)


def _codes(a: Analysis, j: int) -> np.ndarray:
    """The construct code of each gap of the j-th device (the user's own code when nothing was charged)."""
    n = len(a.devices[j].gaps)
    fw = a.framework
    if fw is None or j >= len(fw.gap_construct) or len(fw.gap_construct[j]) != n:
        return np.full(n, USER, np.int8)
    return fw.gap_construct[j]


def gap_constructs(a: Analysis, window_us: tuple[float, float] | None = None) -> list[Construct]:
    """The construct of each gap overlapping the window (µs from the timeline's origin), device by device in
    the analysis' order, each device's gaps in their own order: the order of timeline.build's gap arrays."""
    o = timeline.origin_ns(a.trace)
    out: list[Construct] = []
    for j, d in enumerate(a.devices):
        g = d.gaps
        codes = _codes(a, j)
        if window_us is not None:
            s, e = (g.start - o) / 1e3, (g.end - o) / 1e3      # the same test as timeline.build's
            codes = codes[(e > window_us[0]) & (s < window_us[1])]
        out += [CONSTRUCTS[int(c)] for c in codes]
    return out


def bin_constructs(a: Analysis, edges_us: np.ndarray) -> np.ndarray:
    """[device, construct (CONSTRUCTS order), bin]: the share of each bin (between consecutive edges, µs from
    the origin, as timeline.Overview.edges_us) idle in gaps charged to that construct."""
    o = timeline.origin_ns(a.trace)
    edges = np.round(np.asarray(edges_us, np.float64) * 1e3).astype(np.int64) + o     # back to the trace's ns
    width = np.maximum(np.diff(edges), 1).astype(np.float64)
    out = np.zeros((len(a.devices), len(CONSTRUCTS), len(edges) - 1))
    for j, d in enumerate(a.devices):
        g = d.gaps
        codes = _codes(a, j)
        for code in distinct(codes).tolist():
            m = codes == code
            s, e = iv.union(g.start[m], g.end[m])
            out[j, code] = iv.covered(s, e, edges[:-1], edges[1:]) / width
    return out
