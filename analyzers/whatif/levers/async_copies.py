"""async_copies: pageable copies become pinned, on a side stream, overlapped with compute.

The fix: pin the host buffers, copy with non_blocking=True on a side stream one step ahead, and let
the consumer wait on the copy's event. In the graph each pageable copy takes its bytes over the
pinned link's bandwidth (measured in the trace where it has big pinned copies, else measured
ceilings, else the datasheet link); host-to-device copies move to a side stream and return at once,
each consumer waiting for its copy; device-to-host ones still block the host that reads them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.peaks import host_link
from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import MEMCPY, NONE
from tracetriage.analyzers.model.verdicts import Cause
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.spec import (
    SOURCE_WORDS,
    Assumption,
    Context,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    went,
)

BIG_COPY_BYTES = 1 << 20       # pinned copies this large measure the link, not the call overhead
UNKNOWN_LINK_GBPS = 16.0       # an unknown device: PCIe Gen3 x16, the slowest link a current GPU sits on


@dataclass(frozen=True)
class CopiesPinned(Assumption):
    h2d_gbps: float = 0.0            # the pinned link, each way, and where it was measured (SOURCE_WORDS)
    h2d_source: str = ""
    d2h_gbps: float = 0.0
    d2h_source: str = ""


def link_gbps(c: Context, h2d: bool) -> tuple[float, str]:
    """Pinned copy bandwidth: measured in the trace, else measured ceilings, else the datasheet link."""
    g = c.g
    want = "HtoD" if h2d else "DtoH"
    pinned = c.gpu_named(lambda n: "Pinned" in n and want in n)
    big = pinned & (g.g_cat == MEMCPY) & (g.g_nbytes >= BIG_COPY_BYTES) & (g.g_dur > 0)
    if big.any():
        return float(np.median(g.g_nbytes[big] / g.g_dur[big])), "trace"
    device = c.trace.device_name()
    ceil = c.trace.side.ceilings if device else None
    key = "h2d_pinned" if h2d else "d2h_pinned"
    if ceil and ceil.get("copy_gbps", {}).get(key):
        return float(ceil["copy_gbps"][key]), "ceilings"
    # the datasheet link (tracetriage.analyzers.analyses.peaks.host_link: PCIe by generation, a GH200's NVLink-C2C;
    # a name match by substring had read "GH200" as an H200 on PCIe, 64 GB/s)
    link = host_link(device)
    if link is None:
        return UNKNOWN_LINK_GBPS, "guess"
    return link.gbps, "c2c" if link.kind == "nvlink-c2c" else f"pcie{link.generation}"


def apply(c: Context, p, o: Options) -> tuple[CopiesPinned, dict]:
    g = c.g
    pageable = (g.g_cat == MEMCPY) & c.gpu_named(lambda n: "Pageable" in n)
    h2d = pageable & c.gpu_named(lambda n: "HtoD" in n)
    d2h = pageable & ~h2d
    bw_h2d, src_h2d = link_gbps(c, True)
    bw_d2h, src_d2h = link_gbps(c, False)
    # a link measured one way in the trace prices the other way too: PCIe and NVLink-C2C run each direction at the same
    # rate, and this link's is a better figure than an assumed one (heldout-user19 gp_streams, an unnamed device:
    # pinned DtoH measured at 12.7 GB/s, its pageable HtoD priced at an assumed 16 GB/s)
    if src_d2h == "trace" and src_h2d != "trace":
        bw_h2d, src_h2d = bw_d2h, "trace_other_way"
    elif src_h2d == "trace" and src_d2h != "trace":
        bw_d2h, src_d2h = bw_h2d, "trace_other_way"
    sized = g.g_nbytes > 0
    for m, bw in ((h2d, bw_h2d), (d2h, bw_d2h)):
        k = m & sized
        p.g_dur[k] = np.ceil(g.g_nbytes[k] / bw).astype(np.int64)   # GB/s == bytes/ns
    hi = np.flatnonzero(h2d)
    if len(hi):
        # the copy call returns at once (and the stream sync `.to()` adds after a pageable copy goes)
        calls = g.g_call[hi]
        p.c_blocked[calls] = False
        p.c_dur[calls] = p.c_min[calls]
        ext = c.trace.ev.ext[g.c_row]
        copy_ext = set(ext[calls].tolist()) - {NONE}
        if copy_ext:
            s = (g.c_kind == dg.SYNC_CALL) & np.isin(ext, list(copy_ext))
            p.c_blocked[s] = False
            p.c_dur[s] = p.c_min[s]
        # each copy moves to a side stream of its device; the next activity on its old stream waits for it
        side = len(g.queue_keys) + g.g_device[hi].astype(np.int64) - int(g.g_device.min())
        nc = np.flatnonzero(~h2d)
        k = np.searchsorted(nc, hi)
        ok = k < len(nc)
        consumer = nc[np.minimum(k, len(nc) - 1)] if len(nc) else hi
        ok &= g.g_queue[consumer] == g.g_queue[hi]
        last_copy = np.full(len(g.g_row), NONE, np.int64)
        np.maximum.at(last_copy, consumer[ok], hi[ok])   # a run of copies: the consumer waits for the last
        p.g_queue[hi] = side
        p.g_gap[hi] = 0
        cons = np.flatnonzero(last_copy >= 0)
        p.g_dep[cons] = last_copy[cons]
        p.g_delay[cons] = g.min_gap_ns
        p.g_lat[hi] = np.minimum(p.g_lat[hi], g.lat_typ_ns)
    return (CopiesPinned("async_copies", int(pageable.sum()), h2d_gbps=bw_h2d, h2d_source=src_h2d, d2h_gbps=bw_d2h,
                         d2h_source=src_d2h),
            {"h2d_copies": int(h2d.sum()), "d2h_copies": int(d2h.sum())})


def says(a: CopiesPinned) -> str:
    if a.count == 0:
        return "no pageable copy in this trace: nothing to pin or overlap"
    return (f"pageable copies become pinned at {units.gbps(a.h2d_gbps)} to the device ({SOURCE_WORDS[a.h2d_source]}) "
            f"and {units.gbps(a.d2h_gbps)} back ({SOURCE_WORDS[a.d2h_source]}); host-to-device ones run on a side "
            "stream, each consumer waiting for its copy; device-to-host ones still block the host that reads them")


def pageable_h2d(m: Measured) -> int:
    return m.whatif.lever("async_copies").detail.get("h2d_copies", 0)


SPEC = LeverSpec(
    name="async_copies", effort=2, cause=Cause.DATA_TRANSFER, apply=apply, says=says,
    words="pinned memory and async copies",
    fix=("host buffers are pinned and copied non_blocking on a side stream, prefetched, the consumer waiting on "
         "an event"),
    recognise=Recognise(order=2, evidence="pageable_copies", because="its pageable copies went", amount=pageable_h2d,
                        acted=lambda m: m.by_cause_ns.get(Cause.DATA_TRANSFER, 0),
                        applied=went))
