"""Copies over the link that are asynchronous already: pinned, their calls returning before the copy ends.

Input: a trace. Output: CopiesAsync, or None where the trace copies nothing over the link (host to device or back).

What it looks like in any trace: each `Memcpy HtoD (Pinned -> Device)` / `Memcpy DtoH (Device -> Pinned)` activity
has a launching call (cudaMemcpyAsync, hipMemcpyAsync) whose end comes before the copy's end: the host went on while
the copy engine moved the bytes; copies on several streams run beside each other (a host-to-device copy beside a
device-to-host one, each engine its own direction). Then pinned memory, non_blocking=True and a side stream are
applied already, and advising them again is advice the user took (heldout-user7 a100copy_pinned: pinned copies on
two streams, 483 ms of copies in 307 ms, calls of 6 µs, told "copy with non_blocking=True on a side stream"). What
is left is the link's rate: fewer bytes (a smaller dtype, data kept on the device).

Copies pinned and async on the stream the kernels run on still serialise with compute (traces/smell-transfer-pinned-
serial: each pinned copy queued between kernels): a side stream and a prefetch are the fix there, so those copies
do not count as done. What would make it fire falsely: a pageable copy (its call blocks until the copy ends: not
async; the name says Pageable); a pinned copy made with a blocking cudaMemcpy (the call ends with the copy: not
async); a trace whose copies lack their calls (a runtime-only trace without linked calls counts none async). A copy
counts as async only where its call returned ASYNC_RETURN of the copy's time before the copy ended.

Beside it, the same upload every step (same_upload): a pageable host-to-device copy from an op of one input shape
and dtype (aten::to/copy_ of an [8388608] int64) launched the same number of times in every profiled step
(ProfilerStep# ranges, two or more), holding UPLOAD_SHARE of the host-to-device copy time or more, in a trace whose
steps draw no batch from a DataLoader (enumerate(DataLoader)# ranges: a batch is new data of the same shape each step).
A pinned source is left out: pinned host memory is a pipeline's staging buffer for new data each step
(DataLoader(pin_memory=True), a prefetcher: the public HTA A100 rank-0 trace's 45.8 MB float32 batch a step); so is an
upload whose outermost op is not a copy the program made (PLAIN_COPIES): a gradient uploaded by autograd's
ToCopyBackward0 or an op's host-made indices (aten::index) are new data each step. That is
the shape of a loop-invariant tensor (a lookup table, a mask, constants) uploaded again each step (fresh10
ctr_id_remap_table_not_buffer: a 64 MB id table, 6.5 ms a step at 10.3 GB/s, 1.0x its step's compute), whose fix
is to keep it on the device, not to pin it; the trace cannot see whether the values change, so the words say "if".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, MEMCPY, NONE, USER_ANNOTATION, Trace

ASYNC_RETURN = 0.5    # a copy is async where its call returned this share of the copy's time before the copy ended
ALL_ASYNC = 0.9       # ... and the copies are async already where this share of their time is such copies
UPLOAD_SHARE = 0.5    # the same upload every step holds this share of the host-to-device copy time or more
STEP = "ProfilerStep#"
BATCH = "enumerate(DataLoader)#"
# the upload's outermost op is a copy the program asked for (`t.to(device)`, `t.cuda()`, `buf.copy_(t)`): not one
# made inside another op from what it computed (aten::index's host indices) or by autograd (ToCopyBackward0's gradient)
PLAIN_COPIES = frozenset(("aten::to", "aten::_to_copy", "aten::copy_", "aten::cuda"))


@dataclass(frozen=True)
class SameUpload:
    """One host-to-device upload of the same shape and dtype, the same number of times in every profiled step."""
    shape: str               # "[8388608] int64"
    op: str                  # the op whose call launched it: aten::copy_, aten::to
    per_step: int            # copies a step
    steps: int               # profiled steps
    nbytes: int              # bytes a step
    copy_ns: int             # their time over the trace


@dataclass(frozen=True)
class CopiesAsync:
    copies: int              # copies over the link (host to device and back)
    copy_ns: int             # their summed time
    pinned_async_ns: int     # of it, pinned copies whose call returned before the copy ended
    call_median_ns: int      # the median launching call's time
    streams: int             # the streams they ran on
    overlap_ns: int          # their summed time less their union: copies running beside each other
    kernels: int             # kernels the trace runs (0: the copies are the workload)
    on_kernel_streams: bool = False   # some copy shares a stream with kernels: it waits for compute, and compute for it
    same_upload: SameUpload | None = None   # the module docstring's same upload every step, or None
    after_kernels_ns: int = 0   # the copies' union after the last kernel ends: the span ends in copies alone
    tail_ns: int = 0            # from the last kernel's end to the last copy's (0: no copy ends after the kernels)

    @property
    def already(self) -> bool:
        """Pinned, asynchronous and off the compute streams already (or nothing to compute): nothing left for
        pin_memory, non_blocking or a side stream to do."""
        return self.copy_ns > 0 and self.pinned_async_ns >= ALL_ASYNC * self.copy_ns and not self.on_kernel_streams


def copies_async(trace: Trace) -> CopiesAsync | None:
    ev = trace.ev
    cp = np.flatnonzero(ev.cat == MEMCPY)
    if not len(cp):
        return None
    link = cp[name_flags(trace, cp, lambda n: "HtoD" in n or "DtoH" in n)]
    if not len(link):
        return None
    dur = ev.end[link] - ev.start[link]
    call = trace.launch_of[link]
    has = call != NONE
    call_end = np.where(has, ev.end[np.where(has, call, 0)], ev.end[link])
    returned_early = has & (ev.end[link] - call_end >= ASYNC_RETURN * dur)
    pinned = name_flags(trace, link, lambda n: "Pinned" in n)
    call_dur = (ev.end[call[has]] - ev.start[call[has]]) if has.any() else np.zeros(1, np.int64)
    us, ue = iv.union(ev.start[link], ev.end[link])
    kernels = ev.cat == KERNEL
    last = int(ev.end[kernels].max()) if kernels.any() else None
    after = int(iv.total(np.maximum(us, last), np.maximum(ue, last))) if last is not None else 0
    tail = max(int(ue[-1]) - last, 0) if last is not None and len(ue) else 0
    return CopiesAsync(copies=len(link), copy_ns=int(dur.sum()),
                       pinned_async_ns=int(dur[pinned & returned_early].sum()),
                       call_median_ns=int(np.median(call_dur)), streams=len(distinct(ev.stream[link])),
                       overlap_ns=int(dur.sum()) - int(iv.total(us, ue)),
                       kernels=int((ev.cat == KERNEL).sum()),
                       on_kernel_streams=bool(np.isin(ev.stream[link], ev.stream[ev.cat == KERNEL]).any()),
                       same_upload=same_upload(trace, link[name_flags(trace, link, lambda n: "HtoD" in n)]),
                       after_kernels_ns=after, tail_ns=tail)


_DTYPES = {"long int": "int64", "long": "int64",
           "int": "int32", "float": "float32", "c10::BFloat16": "bfloat16", "c10::Half": "float16",
           "double": "float64", "bool": "bool", "unsigned char": "uint8", "signed char": "int8", "short int": "int16"}


def same_upload(trace: Trace, up: np.ndarray) -> SameUpload | None:
    """The module docstring's same upload every step, from these host-to-device copy rows (pinned ones count in the
    copy time it must hold a share of, never as the upload)."""
    ev = trace.ev
    ranges = np.flatnonzero(ev.cat == USER_ANNOTATION)
    names = [trace.name_of(int(r)) for r in ranges.tolist()]
    steps = ranges[[n.startswith(STEP) for n in names]]
    if len(steps) < 2 or not len(up) or any(n.startswith(BATCH) for n in names):
        return None
    call = trace.launch_of[up]
    op = np.where(call != NONE, trace.op_of[np.where(call != NONE, call, 0)], NONE)
    pageable = ~name_flags(trace, up, lambda n: "Pinned" in n)
    by: dict[tuple[str, str], list[int]] = {}
    for r, o, ok in zip(up.tolist(), op.tolist(), pageable.tolist()):
        if o == NONE or not ok:
            continue
        dims, types, _ = trace.shapes(o)
        # (a trace's Input Dims / Input type may be any JSON value: only lists are read)
        dims, types = (dims if isinstance(dims, list) else []), (types if isinstance(types, list) else [])
        first = next((i for i, d in enumerate(dims) if isinstance(d, list) and d), None)
        if first is None:
            continue
        dtype = types[first] if first < len(types) and isinstance(types[first], str) else ""
        shape = f"[{', '.join(str(x) for x in dims[first])}] {_DTYPES.get(dtype, dtype)}".strip()
        by.setdefault((trace.name_of(o), shape), []).append(r)
    total = int((ev.end[up] - ev.start[up]).sum())
    best = None
    for (name, shape), rows in by.items():
        at = ev.start[trace.launch_of[rows]]
        counts = [int(((at >= ev.start[s]) & (at < ev.end[s])).sum()) for s in steps.tolist()]
        dur = int((ev.end[rows] - ev.start[rows]).sum())
        recurs = counts[0] and len(set(counts)) == 1 and dur >= UPLOAD_SHARE * total
        if recurs and (best is None or dur > best.copy_ns) \
                and _outermost(trace, int(trace.launch_of[rows[0]])) in PLAIN_COPIES:
            per = counts[0]
            best = SameUpload(shape=shape, op=name, per_step=per, steps=len(steps),
                              nbytes=int(np.median(ev.nbytes[rows])) * per, copy_ns=dur)
    return best


def _outermost(trace: Trace, call: int) -> str:
    """The name of the outermost op on the call's thread around it: the Python-level call that made the copy."""
    ev = trace.ev
    ops = np.flatnonzero((ev.cat == CPU_OP) & (ev.pid == ev.pid[call]) & (ev.tid == ev.tid[call])
                         & (ev.start <= ev.start[call]) & (ev.end >= ev.end[call]))
    return trace.name_of(int(ops[np.argmin(ev.start[ops])])) if len(ops) else ""
