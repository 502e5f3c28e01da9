"""pinned_batches: a DataLoader's batches pinned and copied non_blocking (DataLoader(..., pin_memory=True) and
batch.to(device, non_blocking=True)), or the dataset kept on the GPU where it fits.

The trace shows it as pageable host-to-device copies (`Memcpy HtoD (Pageable -> Device)`) in a loop that iterates a
DataLoader (its `enumerate(DataLoader)#...__next__` ranges): each batch is staged through a pageable buffer, the
copy call holds the host until it is done, and the stream sync `.to()` adds after it waits too. In the graph:
  1. each such copy takes its bytes over the pinned link (async_copies.link_gbps: measured in the trace where it
     has big pinned copies, else measured ceilings, else the datasheet link; an unknown device PCIe Gen3's 16 GB/s);
  2. its call returns at once (non_blocking=True), and the stream syncs after the copies stop waiting: the host
     runs on into the step while the copy runs;
  3. the copy stays on its stream, ahead of the kernels that read it (no side stream, no prefetch: that is
     async_copies, a bigger change); the pin-memory thread's own copy into pinned memory runs beside the loop.
Copies holding under PIN_PAYS of the span price nothing worth a clause (voice/common.PIN_PAYS): the LEVER_FLOOR keeps
such a knob out of the Next.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, MEMCPY, NONE, USER_ANNOTATION
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif import depgraph as dg
from tracetriage.analyzers.whatif.levers.async_copies import link_gbps
from tracetriage.analyzers.whatif.levers.spec import (
    SOURCE_WORDS,
    Assumption,
    Context,
    Knob,
    LeverSpec,
    Measured,
    Options,
    Recognise,
    went,
)

LOADER_RANGE = "enumerate(DataLoader)#"   # the DataLoader's __next__ ranges (single- or multi-process iterator)


@dataclass(frozen=True)
class BatchesPinned(Assumption):
    nbytes: int = 0                  # the batches' bytes copied
    copy_ns: int = 0                 # the copies' time on the device, before
    blocked_ns: int = 0              # the host's time inside their copy calls, before
    gbps: float = 0.0                # the pinned link, and where it was measured (SOURCE_WORDS)
    source: str = ""


def _iterates_a_dataloader(c: Context) -> bool:
    ev = c.trace.ev
    rows = np.flatnonzero((ev.cat == USER_ANNOTATION) | (ev.cat == CPU_OP))   # (torch 1.x: a cpu_op)
    return bool(len(rows)) and bool(name_flags(c.trace, rows, lambda n: n.startswith(LOADER_RANGE)).any())


def apply(c: Context, p, o: Options) -> tuple[BatchesPinned, dict]:
    g = c.g
    rows = np.flatnonzero((g.g_cat == MEMCPY) & c.gpu_named(lambda n: "Pageable" in n and "HtoD" in n) & g.g_linked)
    if not len(rows) or not _iterates_a_dataloader(c):
        return BatchesPinned("pinned_batches", 0), {"pageable_batches": 0}
    bw, src = link_gbps(c, True)
    sized = rows[g.g_nbytes[rows] > 0]
    p.g_dur[sized] = np.ceil(g.g_nbytes[sized] / bw).astype(np.int64)   # GB/s == bytes/ns
    calls = g.g_call[rows]
    blocked = int((g.c_dur[calls] - p.c_min[calls]).clip(0).sum())
    p.c_blocked[calls] = False
    p.c_dur[calls] = p.c_min[calls]
    ext = c.trace.ev.ext[g.c_row]
    copy_ext = set(ext[calls].tolist()) - {NONE}
    if copy_ext:   # the stream sync `.to()` adds after a pageable copy returns at once too
        s = (g.c_kind == dg.SYNC_CALL) & np.isin(ext, list(copy_ext))
        p.c_blocked[s] = False
        p.c_dur[s] = p.c_min[s]
    a = BatchesPinned("pinned_batches", len(rows), nbytes=int(g.g_nbytes[sized].sum()),
                      copy_ns=int(g.g_dur[rows].sum()), blocked_ns=blocked, gbps=bw, source=src)
    return a, {"pageable_batches": len(rows)}


def says(a: BatchesPinned) -> str:
    if a.count == 0:
        return "no pageable host-to-device copy in a loop over a DataLoader"
    return (f"the {units.integer(a.count)} pageable copies of the batches ({units.size(a.nbytes)}, "
            f"{units.duration_ns(a.copy_ns)} on the device, {units.duration_ns(a.blocked_ns)} of the host held in "
            f"their calls) come from pinned memory at {units.gbps(a.gbps)} ({SOURCE_WORDS[a.source]}) and return at "
            "once: the host runs on into the step while each copies, and the kernels that read a batch still run "
            "after its copy")


def pageable_batches(m: Measured) -> int:
    return m.whatif.lever("pinned_batches").detail.get("pageable_batches", 0)


SPEC = LeverSpec(
    name="pinned_batches", effort=1, cause=Cause.DATA_TRANSFER, apply=apply, says=says,
    words="pinned batches copied non_blocking",
    fix="the DataLoader's batches pinned (pin_memory=True) and copied with .to(device, non_blocking=True)",
    recognise=Recognise(order=5, evidence="pageable_batch_copies", because="its batches' pageable copies went",
                        amount=pageable_batches, acted=lambda m: m.by_cause_ns.get(Cause.DATA_TRANSFER, 0),
                        applied=went),
    applied_words="pinned batches (pin_memory=True, non_blocking=True)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change="DataLoader(..., pin_memory=True) and x.to(device, non_blocking=True) for each batch; or, where "
                     "the dataset fits in GPU memory, keep it there (TensorDataset(X.to(device), y.to(device)), "
                     "num_workers=0) and copy nothing per step",
              evidence="pageable host-to-device memcpys (Memcpy HtoD (Pageable -> Device)) in a loop over a "
                       "DataLoader (enumerate(DataLoader)#...__next__ ranges)",
              applies="every GPU (a DataLoader whose batches are copied from pageable memory)",
              model="each batch's copy at the pinned link's rate (measured in the trace, else ceilings, else the "
                    "datasheet link), its call and the stream sync after it return at once; the copy stays ahead of "
                    "the kernels that read it on its stream",
              guide="Performance Tuning Guide: use pinned memory and non_blocking copies; torch.utils.data: memory "
                    "pinning",
              where=Cause.DATA_TRANSFER))
