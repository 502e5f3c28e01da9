"""Exposed communication: the time a collective runs with no compute kernel beside it, and why it takes long.

A collective kernel occupies its GPU from the moment its rank arrives until the last rank has arrived
and the bytes have moved, so its time is two things: waiting for a peer, then moving bytes. What the
step pays is only the part with no compute kernel running beside it on the device (any stream):
collective time hidden behind compute costs nothing, and summing the collectives' own times overstates
the bubble (a peer tool's user found 3.17 s that way where the real one was 1.02 s).

Per collective kind (AllReduce, AllGather ...): its calls, their time, the exposed part, and the
exposed part split in two. Each call's transfer takes what the fastest call of its kind and group
that moved at least as many bytes took (the one that waited least; where the trace records no message
size, the fastest call of the same kernel whose op had the same input shapes); the call's first (its time − that) is
waiting for a peer, its last stretch moving bytes. A call with neither a message size nor its op's shapes has no call
it is known to match: a slow one may be moving more bytes (heldout-user18 llama4l_4090_r1: a 4.2 GB full-vocab logits
all-gather of 441 ms, at the link rate of the 3.3 ms per-layer gathers, read as 441 ms waiting for a peer), so its
exposed time stays unsplit (`unsplit_ns`), neither waiting nor moving. Within one rank's trace this
is an estimate: every call may have waited some, and a call may take longer for reasons of its own (a first call's
set-up). With every rank's trace (`tracetriage report DIR`) the fastest rank's same call is the transfer
(`peer_transfer_ns`, from tracetriage.analyzers.analyses.ranks): the rank that arrived last at a call waits
nothing in it, and only the ranks that came before it wait.
The transfer's bus bandwidth (message bytes x bus factor / time, tracetriage.analyzers.model.kernels) is held
against the GPU-to-GPU link (tracetriage.analyzers.analyses.peer_links) where the trace records the message.

A span is communication-bound when its exposed collective time holds most of its kernel busy time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.peer_links import PeerLink, peer_link
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.kernels import bus_factor, collective_kind, is_collective
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import NONE, Trace

COMM_MOSTLY = 0.5        # exposed collective time above this share of the kernel busy time: communication-bound
WAIT_MOSTLY = 0.5        # ... and mostly waiting for a peer when waiting holds this share of the exposed time
LINK_SLOW = 0.5          # a transfer's bus bandwidth under this share of the link's: the link is worth checking


@dataclass(frozen=True)
class CollectiveKind:
    """One kind of collective on this rank: its calls, their time, and what of it the step pays."""
    kind: str                 # AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv, Broadcast, collective
    calls: int
    total_ns: int
    exposed_ns: int           # with no compute kernel beside it
    wait_ns: int              # of the exposed time, waiting for a peer
    transfer_ns: int          # of the exposed time, moving bytes
    message_bytes: int | None     # the messages' bytes, summed (None: the trace records no message size)
    bus_gbps: float | None    # the fastest calls' bus bandwidth (None: no message size or ranks)
    link: PeerLink | None     # the GPU-to-GPU link it is held against
    unsplit_ns: int = 0       # of the exposed time, calls with no message size and no op shapes: no call they are
                              # known to match, so waiting cannot be told from moving more bytes

    @property
    def link_share(self) -> float | None:
        return self.bus_gbps / self.link.gbps if self.bus_gbps is not None and self.link else None

    @property
    def link_slow(self) -> bool:
        """Its fastest calls move bytes well under what the link carries (topology, NCCL's algorithm, PCIe)."""
        return self.link_share is not None and self.link_share < LINK_SLOW


@dataclass(frozen=True)
class Communication:
    """The collectives of a span on one rank."""
    collective_ns: int        # the collectives' own time, summed
    exposed_ns: int           # time some collective runs and no compute kernel does (union over the devices)
    wait_ns: int
    transfer_ns: int
    busy_ns: int              # kernel busy time of the span (any kernel, union per device)
    kinds: tuple[CollectiveKind, ...]    # largest exposed first
    ranks: int | None         # the process group's size where recorded, else the run's world size
    against_peers: bool = False   # the wait is against the fastest rank's same call (every rank's trace), not
                                  # against this rank's own fastest call
    unsplit_ns: int = 0       # of the exposed time, calls neither waiting nor moving can be told of (CollectiveKind)

    @property
    def exposed_share(self) -> float:
        """Of the kernel busy time."""
        return self.exposed_ns / self.busy_ns if self.busy_ns else 0.0

    @property
    def bound(self) -> bool:
        """Most of the busy time is collectives that nothing overlaps: the span is communication-bound."""
        return self.exposed_ns > COMM_MOSTLY * self.busy_ns

    @property
    def top(self) -> CollectiveKind:
        """The kind that exposes the most time."""
        return self.kinds[0]

    @property
    def mostly_waiting(self) -> bool:
        """Most of the exposed time is waiting for a peer, not moving bytes: the straggler is the lever."""
        return self.exposed_ns > 0 and self.wait_ns >= WAIT_MOSTLY * self.exposed_ns


def analyze(trace: Trace, kernel_rows: np.ndarray, peer_transfer_ns: tuple[int, ...] | None = None) \
        -> Communication | None:
    """The collectives among `kernel_rows` (kernel rows of the trace); None when there is none. `peer_transfer_ns`:
    per collective call, in time order, what the fastest rank's same call took (used when this rank ran as many
    calls)."""
    ev = trace.ev
    if not len(kernel_rows) or not any(map(is_collective, trace.names)):   # (names, not rows: most traces have none)
        return None
    coll = name_flags(trace, kernel_rows, is_collective)
    if not coll.any():
        return None
    rows = kernel_rows[coll]
    transfer, matched = _transfer_ns(trace, rows)
    against_peers = peer_transfer_ns is not None and len(peer_transfer_ns) == len(rows)
    if against_peers:
        order = np.argsort(ev.start[rows], kind="stable")
        dur = ev.end[rows] - ev.start[rows]
        transfer[order] = np.minimum(dur[order], np.asarray(peer_transfer_ns, np.int64))
        matched[:] = True          # the fastest rank's same call: the same bytes
    exposed = np.zeros(len(rows), np.int64)
    waited = np.zeros(len(rows), np.int64)
    busy = exposed_total = 0
    for d in distinct(ev.device[kernel_rows]).tolist():
        on = kernel_rows[ev.device[kernel_rows] == d]
        c_on = coll[ev.device[kernel_rows] == d]
        busy += iv.total(*iv.union(ev.start[on], ev.end[on]))
        ks, ke = iv.union(ev.start[on[~c_on]], ev.end[on[~c_on]])
        cs, ce = iv.union(ev.start[on[c_on]], ev.end[on[c_on]])
        free_s, free_e = iv.complement(ks, ke, int(cs.min()), int(ce.max()))
        xs, xe = iv.intersect(free_s, free_e, cs, ce)        # collectives, nothing else running
        exposed_total += iv.total(xs, xe)
        mine = ev.device[rows] == d
        s, e = ev.start[rows[mine]], ev.end[rows[mine]]
        exposed[mine] = iv.covered(xs, xe, s, e)
        waited[mine] = iv.covered(xs, xe, s, np.maximum(e - transfer[mine], s))   # the wait comes first
    waited[~matched] = 0
    unsplit = np.where(matched, 0, exposed)
    kinds = _by_kind(trace, rows, transfer, exposed, waited, against_peers, unsplit)
    # the product of two ns totals passes int64 past ~3 s each: it is taken in Python ints (then divided as floats,
    # as before)
    wait_total, unsplit_total = ((int(round(float(int(exposed_total) * int(x.sum())) / float(exposed.sum())))
                                  if exposed.sum() else 0) for x in (waited, unsplit))
    return Communication(collective_ns=int((ev.end[rows] - ev.start[rows]).sum()), exposed_ns=exposed_total,
                         wait_ns=wait_total, transfer_ns=exposed_total - wait_total - unsplit_total, busy_ns=busy,
                         kinds=kinds, ranks=_ranks(trace, rows), against_peers=against_peers,
                         unsplit_ns=unsplit_total)


def _transfer_ns(trace: Trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each call's transfer time: what the fastest call of its kind and group that moved at least as many
    bytes took (moving more never takes less), or, where the trace records no message size, the fastest
    call of the same kernel launched by an op with the same input shapes. A lone call of its kind is all transfer,
    as far as one rank's trace can tell. With it, per call, whether that match is known: False for a call with no
    message size and no op shapes (its transfer is its own time, and no part of it is known to be waiting)."""
    ev = trace.ev
    dur = ev.end[rows] - ev.start[rows]
    nbytes, group = ev.nbytes[rows], ev.group[rows]
    kind = np.array([collective_kind(trace.names[i]) for i in ev.name[rows].tolist()], dtype=object)
    out = dur.copy()
    sized = nbytes != NONE
    kinds = {k: i for i, k in enumerate(dict.fromkeys(kind.tolist()))}
    kid = np.array([kinds[k] for k in kind.tolist()], np.int64)
    for k, g in set(zip(kid[sized].tolist(), group[sized].tolist())):
        m = np.flatnonzero(sized & (kid == k) & (group == g))
        order = m[np.argsort(-nbytes[m], kind="stable")]          # most bytes first
        best = np.minimum.accumulate(dur[order])                  # fastest of those with at least as many bytes
        b = nbytes[order]
        last_of_tie = np.searchsorted(-b, -b, side="right") - 1   # equal sizes: the fastest of them all
        out[order] = best[last_of_tie]
    matched = sized.copy()
    if (~sized).any():
        unsized = np.flatnonzero(~sized)
        shaped = _op_shapes(trace, rows[unsized])
        # the same kernel moves the same bytes only where its op took the same shapes: no shapes, no match
        keys = [(int(ev.name[rows[i]]), sh) for i, sh in zip(unsized.tolist(), shaped)]
        fastest: dict = {}
        for i, k in zip(unsized.tolist(), keys):
            if k[1] is not None:
                fastest[k] = min(fastest.get(k, int(dur[i])), int(dur[i]))
        for i, k in zip(unsized.tolist(), keys):
            if k[1] is not None:
                out[i], matched[i] = fastest[k], True
    return out, matched


def _op_shapes(trace: Trace, rows: np.ndarray) -> list[str | None]:
    """Per collective activity, its launching op's Input Dims (as text), None where the op or its shapes are not in
    the trace."""
    op = trace.launching_op(rows)
    out: list[str | None] = []
    for o in op.tolist():
        dims = trace.shapes(o)[0] if o != NONE else None
        out.append(repr(dims) if dims else None)
    return out


def _ranks(trace: Trace, rows: np.ndarray) -> int | None:
    g = trace.ev.group[rows]
    g = g[g > 0]
    return int(np.bincount(g).argmax()) if len(g) else trace.world_size


def _by_kind(trace: Trace, rows, transfer, exposed, waited, against_peers: bool = False, unsplit=None) \
        -> tuple[CollectiveKind, ...]:
    ev = trace.ev
    kind = np.array([collective_kind(trace.names[i]) for i in ev.name[rows].tolist()], dtype=object)
    link = peer_link(trace.device_name())
    out = []
    for k in dict.fromkeys(kind.tolist()):
        m = kind == k
        nbytes = ev.nbytes[rows[m]]
        sized = nbytes != NONE
        bus = None
        if sized.any():
            # the fastest calls (the ones that waited least) measure the link: bytes on it over their time; against
            # every rank, each call's transfer is the fastest rank's, so every call measures it
            f = bus_factor(k, _ranks(trace, rows[m]))
            fastest = against_peers | (transfer[m] == ev.end[rows[m]] - ev.start[rows[m]])
            fast = sized & (nbytes > 0) & fastest & (transfer[m] > 0)
            if f is not None and fast.any():
                bus = float(np.median(nbytes[fast] * f / transfer[m][fast]))    # bytes/ns == GB/s
        ex, wt = int(exposed[m].sum()), int(waited[m].sum())
        un = int(unsplit[m].sum()) if unsplit is not None else 0
        out.append(CollectiveKind(kind=k, calls=int(m.sum()), total_ns=int((ev.end[rows[m]] - ev.start[rows[m]]).sum()),
                                  exposed_ns=ex, wait_ns=wt, transfer_ns=ex - wt - un, unsplit_ns=un,
                                  message_bytes=int(nbytes[sized].sum()) if sized.all() else None,
                                  bus_gbps=bus, link=link))
    return tuple(sorted(out, key=lambda c: -c.exposed_ns))
