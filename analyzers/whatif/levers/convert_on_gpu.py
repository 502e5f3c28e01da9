"""convert_on_gpu: copy the narrow tensor and convert it on the GPU (x.to(device).float().div_(255)), in place of
converting on the host and copying the wide one (x.float().div_(255).to(device)).

What the construct looks like in any trace: on one host thread, just before a host-to-device memcpy's op, the
outermost ops are a dtype conversion on the host -- aten::to/_to_copy (or aten::copy_) whose input tensor is a
narrow type (uint8/int8/int16/fp16/bf16) and whose target (its "Concrete Inputs" dtype code, or the copy_'s
destination type) is a wider float -- and, between it and the copy, host elementwise ops on a tensor of the same
number of elements (div_, mul_, sub_, ...) that launch nothing; views and 0-dim conversions (a Python number
wrapped into a tensor) pass. The copy moves exactly the widened tensor's bytes (numel x the wide type's size). The
conversion and the elementwise ops then run on the host's CPU cores, and the copy carries 2-4x the bytes it needs.

Fix and price (in the graph): the host time of those ops goes, but one op's dispatch each (the same ops then launch
on the GPU); the copy carries the narrow bytes (its time x narrow/wide), then the ops run on the device as kernels
that read and write their elements at this trace's memory-bound rate (else the datasheet bandwidth), added to the
copy's slot on its stream.

What would make it fire falsely: a conversion of another tensor before an unrelated copy -- the byte match (the
copy's bytes are the converted tensor's numel x the wide size) rules it out; a narrowing conversion (fp32 -> fp16
on the host) halves the bytes already and is not this construct (the target must be wider than the source); a
conversion that launches GPU work is on the device already. A host op that computes something else (a model's CPU
forward) between the conversion and the copy ends the walk back: only ops on the batch's element count pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.dtypes import DTYPE_BYTES, FLOAT_DTYPES, SCALAR_TYPE_CODES, normalise_dtype
from tracetriage.analyzers.model.trace import MEMCPY, NONE, thread_keys
from tracetriage.analyzers.model.verdicts import Cause, Experiment
from tracetriage.analyzers.whatif.levers.host_windows import remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import op_cost, peaks_of
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
from tracetriage.analyzers.whatif.levers.tensors_on_device import (
    ASSUMED_BYTES_PER_NS,
    PASS_THROUGH,
    RATE_WORDS,
    launches_inside,
    top_level_ops,
)

CONVERSIONS = ("aten::to", "aten::_to_copy", "aten::copy_", "aten::type_as")
NARROW = frozenset(("uint8", "int8", "int16", "fp16", "bf16", "bool"))
LOOK_BACK = 8          # outermost ops to look back over from a copy for the conversion that widened its tensor


@dataclass(frozen=True)
class ConvertOnGpu(Assumption):
    host_ns: int = 0                 # the conversion and elementwise ops' host time, before
    nbytes: int = 0                  # the copies' bytes, before
    narrow_bytes: int = 0            # ... and after (the narrow tensors)
    copy_ns: int = 0                 # the copies' time on the device, before
    from_dtype: str = ""             # the narrow type ("uint8") and the wide one ("fp32")
    to_dtype: str = ""
    ops: tuple[str, ...] = ()        # the host ops that go (aten::to, aten::div_), the longest first
    rate: str = "trace"              # where the device kernels' rate comes from (tensors_on_device.RATE_WORDS)
    release_ns: int = 0              # the untraced host time right after each copy's op: the wide tensor freed


def _tensors(tr, row: int) -> list[tuple[int, str]]:
    """(numel, dtype) of the op's tensor arguments with at least one dimension."""
    dims, types, _ = tr.shapes(row)
    out = []
    # (a trace's Input Dims / Input type may be any JSON value: only lists are read)
    for d, t in zip(dims if isinstance(dims, list) else [], types if isinstance(types, list) else []):
        if isinstance(d, list) and d and isinstance(t, str) and all(isinstance(x, int) for x in d):
            dt = normalise_dtype(t)
            if dt is not None:
                out.append((int(np.prod(d)), dt))
    return out


def widening(tr, row: int) -> tuple[int, str, str] | None:
    """(numel, narrow, wide) where this op converts a narrow tensor to a wider float type; else None."""
    name = tr.name_of(row)
    if not name.startswith(CONVERSIONS):
        return None
    ts = _tensors(tr, row)
    if name.startswith("aten::copy_"):       # copy_(dst, src): the destination's type is the target
        if len(ts) < 2 or ts[0][0] != ts[1][0]:
            return None
        (n, wide), (_, narrow) = ts[0], ts[1]
    else:
        if not ts:
            return None
        n, narrow = ts[0]
        _, _, concrete = tr.shapes(row)
        wide = next((SCALAR_TYPE_CODES.get(int(v)) for v in (concrete or [])[1:]
                     if isinstance(v, str) and v.isdigit() and SCALAR_TYPE_CODES.get(int(v)) in FLOAT_DTYPES), None)
    if narrow not in NARROW or wide not in FLOAT_DTYPES:
        return None
    if DTYPE_BYTES.get(wide, 0) <= DTYPE_BYTES.get(narrow, 0):
        return None
    return n, narrow, wide


def _on_batch(tr, row: int, numel: int) -> bool:
    """A host op on the batch: its first tensor has the batch's element count."""
    ts = _tensors(tr, row)
    return bool(ts) and ts[0][0] == numel


def _is_scalar_only(tr, row: int) -> bool:
    """An op with no tensor of a dimension or more (a Python number wrapped into a 0-dim tensor and converted)."""
    dims, _, _ = tr.shapes(row)
    return dims is not None and not _tensors(tr, row)


def _converted_for(c: Context, copy_op: int, tops: np.ndarray, keys: np.ndarray,
                   nbytes: int) -> tuple[list[int], tuple[int, str, str] | None]:
    """Walking back from the copy's outermost op on its thread: the host elementwise ops on the batch and the
    widening conversion before them, where the copy's bytes are the widened tensor's; else ([], None)."""
    ev, tr = c.trace.ev, c.trace
    k = thread_keys(ev, copy_op)
    mine = tops[keys == k]
    j = int(np.searchsorted(ev.start[mine], ev.start[copy_op], side="right")) - 1
    if j < 0 or not ev.start[mine[j]] <= ev.start[copy_op] < max(ev.end[mine[j]], ev.start[mine[j]] + 1):
        return [], None
    between: list[int] = []
    for row in mine[max(j - LOOK_BACK, 0):j][::-1].tolist():
        if launches_inside(c, row):
            return [], None                  # GPU work: the batch is on the device already, or another computation
        w = widening(tr, row)
        if w is not None:
            n, _, wide = w
            if n * DTYPE_BYTES[wide] != nbytes:
                return [], None
            if not all(_on_batch(tr, b, n) for b in between):
                return [], None              # a host op on another tensor: not the batch's own preparation
            return [row, *between], w
        name = tr.name_of(row)
        if _is_scalar_only(tr, row) or name.startswith(PASS_THROUGH) and not _tensors(tr, row):
            continue
        if name.startswith("aten::") and _tensors(tr, row):
            between.append(row)              # checked against the batch's numel once the conversion is found
            continue
        return [], None
    return [], None


def _release_after(c: Context, copy_op: int, tops: np.ndarray, keys: np.ndarray, cap: int) -> tuple[int, int]:
    """The host's untraced stretch right after the copy's outermost op, before the next op on its thread: the wide
    temporary the conversion made is freed there (its pages returned to the system: on an H100 host 2.6 ms for
    41 MB, 5.2 ms for 154 MB, against 0.04 ms once the narrow tensor is copied). Capped at the conversion's own host
    time (returning pages costs no more than faulting them in and writing them); (0, 0) where nothing follows."""
    ev = c.trace.ev
    mine = tops[keys == thread_keys(ev, copy_op)]
    j = int(np.searchsorted(ev.start[mine], ev.start[copy_op], side="right")) - 1
    if j < 0 or j + 1 >= len(mine):
        return 0, 0
    end, nxt = int(ev.end[mine[j]]), int(ev.start[mine[j + 1]])
    return (end, min(nxt, end + cap)) if nxt > end else (0, 0)


def apply(c: Context, p, o: Options) -> tuple[ConvertOnGpu, dict]:
    g, ev, tr = c.g, c.trace.ev, c.trace
    h2d = np.flatnonzero((g.g_cat == MEMCPY) & c.gpu_named(lambda n: "HtoD" in n) & g.g_linked & (g.g_nbytes > 0))
    if not len(h2d):
        return ConvertOnGpu("convert_on_gpu", 0), {"host_conversions": 0}
    tops, keys = top_level_ops(c)
    peaks = peaks_of(c)
    rate = c.memory_rate or (peaks.bytes_per_s / 1e9 if peaks is not None else ASSUMED_BYTES_PER_NS)
    rate_from = "trace" if c.memory_rate else "sheet" if peaks is not None else "assumed"
    starts, ends, wkeys = [], [], []
    freed: list[tuple[int, int, int]] = []            # (start, end, thread) of each wide tensor's release
    names: dict[str, int] = {}
    hit = host_ns = nbytes = narrow_bytes = copy_ns = 0
    kinds = ("", "")
    for row in h2d.tolist():
        op = int(tr.op_of[g.c_row[g.g_call[row]]])
        if op == NONE:
            continue
        found, w = _converted_for(c, op, tops, keys, int(g.g_nbytes[row]))
        if w is None:
            continue
        n, narrow, wide = w
        ratio = DTYPE_BYTES[narrow] / DTYPE_BYTES[wide]
        converted_ns = 0
        for f in found:
            starts.append(int(ev.start[f]))
            ends.append(int(ev.end[f]))
            wkeys.append(int(thread_keys(ev, f)))
            took = int(ev.end[f] - ev.start[f])
            names[tr.name_of(f)] = names.get(tr.name_of(f), 0) + took
            converted_ns += took
        host_ns += converted_ns
        rs, re_ = _release_after(c, op, tops, keys, converted_ns)
        if re_ > rs:
            freed.append((rs, re_, int(thread_keys(ev, op))))
        # on the device: the conversion reads narrow and writes wide, each elementwise op reads and writes wide
        device_bytes = n * (DTYPE_BYTES[narrow] + DTYPE_BYTES[wide]) + (len(found) - 1) * 2 * n * DTYPE_BYTES[wide]
        p.g_dur[row] = int(np.ceil(g.g_dur[row] * ratio + device_bytes / rate))
        copy_ns += int(g.g_dur[row])
        nbytes += int(g.g_nbytes[row])
        narrow_bytes += int(g.g_nbytes[row] * ratio)
        kinds = (narrow, wide)
        hit += 1
    if not hit:
        return ConvertOnGpu("convert_on_gpu", 0), {"host_conversions": 0}
    # each op keeps one dispatch (the same op is then called on the device tensor): its window ends that much early
    dispatch = int(op_cost(c).launching_ns)
    s, e = np.array(starts, np.int64), np.array(ends, np.int64)
    remove_host_windows(c, p, s, np.maximum(e - dispatch, s), np.array(wkeys, np.int64))
    host_ns = int(np.maximum(e - dispatch - s, 0).sum())
    release_ns = 0
    if freed:
        fs, fe, fk = (np.array(x, np.int64) for x in zip(*freed))
        remove_host_windows(c, p, fs, fe, fk)
        release_ns = int((fe - fs).sum())
    made = tuple(sorted(names, key=lambda x: -names[x]))
    return (ConvertOnGpu("convert_on_gpu", hit, host_ns=host_ns, nbytes=nbytes, narrow_bytes=narrow_bytes,
                         copy_ns=copy_ns, from_dtype=kinds[0], to_dtype=kinds[1], ops=made, rate=rate_from,
                         release_ns=release_ns),
            {"host_conversions": hit})


def says(a: ConvertOnGpu) -> str:
    if a.count == 0:
        return "no host dtype conversion right before a host-to-device copy of its result"
    return (f"{units.integer(a.count)} batches converted {a.from_dtype} → {a.to_dtype} on the host "
            f"({', '.join(a.ops[:3])}: {units.duration_ns(a.host_ns)} of host work"
            f"{release_words(a)}) are copied as {a.from_dtype} "
            f"({units.size(a.nbytes)} → {units.size(a.narrow_bytes)}, {units.duration_ns(a.copy_ns)} of copies "
            f"before) and converted on the GPU at {RATE_WORDS[a.rate]}")


def release_words(a: ConvertOnGpu) -> str:
    return (f", and {units.duration_ns(a.release_ns)} untraced right after the copies, where the wide tensors are "
            "freed") if a.release_ns else ""


def change(a: ConvertOnGpu) -> str:
    return ("copy the batch as it is and convert it on the GPU: x = batch.to(device).float() (then the scaling, e.g. "
            ".div_(255)) in place of batch.float()....to(device)" +
            (f": {a.from_dtype} crosses the link, not {a.to_dtype}" if a.from_dtype else ""))


def conversions(m: Measured) -> int:
    return m.whatif.lever("convert_on_gpu").detail.get("host_conversions", 0)


def most_saved(a: ConvertOnGpu) -> int:
    return a.host_ns + a.release_ns + a.copy_ns if a.count else 0


SPEC = LeverSpec(
    name="convert_on_gpu", effort=1, cause=None, apply=apply, says=says, words="converting on the GPU after the copy",
    fix="x = batch.to(device).float().div_(255) in place of batch.float().div_(255).to(device)",
    recognise=Recognise(order=2, evidence="host_conversions", because="its host dtype conversions before the copies "
                        "went", amount=conversions,
                        acted=lambda m: float(m.by_cause_ns.get(Cause.HOST_WORK, 0)
                                              + m.by_cause_ns.get(Cause.DATA_TRANSFER, 0)), applied=went),
    applied_words="the batch converted on the GPU", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    most_saved=most_saved,
    knob=Knob(change="copy the batch as it is and convert it on the GPU: x = batch.to(device).float() (then the "
                     "scaling) in place of converting on the host before .to(device)",
              evidence="a host aten::to/_to_copy/copy_ widening a uint8/int8/fp16/bf16 tensor to a wider float, "
                       "launching nothing, with only elementwise ops on the same tensor between it and a "
                       "host-to-device memcpy of exactly the widened bytes",
              applies="every GPU: the narrow tensor crosses the link, the conversion runs at the device's memory rate",
              model="the host ops' time goes (one dispatch each kept), and the untraced release of the wide tensor "
                    "right after its copy (at most the conversion's own time); the copy moves narrow/wide of its "
                    "bytes, then "
                    "the ops run as kernels reading and writing their elements at this trace's memory rate",
              guide="Performance Tuning Guide: move data to the device before converting it",
              line=change, where=Cause.DATA_TRANSFER))
