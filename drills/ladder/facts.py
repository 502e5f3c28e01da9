"""The one adapter between the ladder's drills and the analyzers (as tracetriage.drills.evidence is for the others).

Every number the six rungs' keys, grades and `drill show` use is read here from an analysis, and turned into
plain data: the byte ledger per named range (analyses.storage), kernels' launch shapes and occupancy
(analyses.occupancy), operands read against their layout (analyses.strided), the roofline's points and the
peak table (analyses.roofline, analyses.peaks), and the matmuls of a decode step. Besides the trace, a ladder
trace has what its capture knew without it (traces/ladder/RUNG/measured.json): the code each line or op ran and,
for kernels no op records shapes for (a Triton kernel launched from Python), the bytes and FLOPs the capture
counted. Only those are read from it, never its storage-sharing truth, which the tests hold the analysis to.
Nothing here re-derives a number the analyzers compute.
"""
from __future__ import annotations

import json
import statistics
from functools import lru_cache
from pathlib import Path

from tracetriage.drills.evidence import EvidenceError


def _analysis(path: str | Path):
    """The report's analysis of a trace (read once per version of the file in a process)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        raise EvidenceError(f"no such trace: {path}") from None
    return _analysis_cached(str(p), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=16)
def _analysis_cached(path: str, mtime_ns: int, size: int):
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.model.trace import TraceError
    from tracetriage.analyzers.triage.report import analyze_trace

    try:
        return analyze_trace(load(path))
    except TraceError as e:
        raise EvidenceError(str(e)) from None


def _args(path: str | Path):
    from tracetriage.analyzers.loading.launch_args import read_launch_args
    from tracetriage.analyzers.model.trace import TraceError

    try:
        return read_launch_args(path)
    except TraceError as e:
        raise EvidenceError(str(e)) from None


# --- what the capture knew (traces/ladder/RUNG/measured.json) --------------------------------------------------

def capture_facts(repo_trace: str | Path) -> dict:
    """The capture's facts of the variant a bank trace is (its file's stem), from measured.json beside it: the code,
    the sizes, the bytes and FLOPs it counted. {} for a trace with no measured.json."""
    from tracetriage.analyzers.loading.formats import trace_stem

    p = _in_repo(repo_trace)
    m = _measured(str(p.parent / "measured.json"))
    return m.get("variants", {}).get(trace_stem(p.name) or p.name, {}).get("facts", {})


def capture_device(repo_trace: str | Path) -> dict:
    return _measured(str(_in_repo(repo_trace).parent / "measured.json")).get("device", {})


def _in_repo(repo_trace: str | Path) -> Path:
    """A bank trace is named from the repository's root (Drill.trace), not from wherever `drill show` or `drill
    grade` runs: read its measured.json there, or a student outside the checkout sees no code and gets other keys."""
    from tracetriage.drills.bank import REPO_ROOT

    p = Path(repo_trace)
    return p if p.is_absolute() else REPO_ROOT / p


@lru_cache(maxsize=16)
def _measured(path: str) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


# --- M01.01 and M01.02: the byte ledger of each named range -----------------------------------------------------

def range_ledgers(path: str | Path) -> list[dict]:
    """Each named range (line_N, op_NN) in the order it ran: the storage it keeps, its temporaries, its copies, its
    device time and wall, and whether it is a view (tracetriage.analyzers.analyses.storage)."""
    from tracetriage.analyzers.analyses.storage import ledger

    a = _analysis(path)
    rows = ledger(a.trace, list(a.ranges), _args(path).memory)
    return [{"name": r.name, "view": r.view, "kept_bytes": r.kept_bytes, "kept_host_bytes": r.kept_host_bytes,
             "temp_bytes": r.temp_bytes, "allocations": r.allocations, "kernels": r.kernels, "copies": r.copies,
             "copy_bytes": r.copy_bytes, "kernel_us": round(r.kernel_us, 1), "copy_us": round(r.copy_us, 1),
             "host_us": round(r.host_us, 1), "wall_us": round(r.wall_us, 1),
             "memory_recorded": r.memory_recorded} for r in rows]


# --- M03.01: launch shapes and occupancy ------------------------------------------------------------------------

def kernel_launch(path: str | Path, repo_trace: str | Path) -> dict:
    """The trace's kernel with the most device time: its launch shape and occupancy (analyses.occupancy), its bytes
    and FLOPs per launch (the roofline's where an op records shapes, else the capture's count), what it reaches,
    the device's peaks, and the verdict on raising its occupancy."""
    from tracetriage.analyzers.analyses.occupancy import launch_shapes, verdict

    shapes = launch_shapes(_args(path))
    if not shapes:
        raise EvidenceError(f"{Path(path).name}: no kernel with launch arguments (grid, block, registers)")
    s = shapes[0]
    a = _analysis(path)
    flops, nbytes, source, dtype = _costs(a, s.kernel, capture_facts(repo_trace))
    gbps = nbytes / (s.median_us * 1e3) if nbytes and s.median_us else None
    tflops = flops / (s.median_us * 1e6) if flops and s.median_us else None
    pk = a.roof.peaks
    if pk is not None and source == "capture":   # a rate the report cannot see (the capture counted the bytes):
        # a ceiling it passes rises as the report's would (the report states no rate of this kernel)
        pk = pk.judged_by((gbps or 0.0) * 1e9, {dtype: tflops * 1e12} if dtype and tflops else {})
    peak_gbps = pk.bytes_per_s / 1e9 if pk else None
    peak_tflops = pk.flops(dtype) / 1e12 if pk and dtype else None
    v = verdict(s, gbps, tflops, peak_gbps or 0.0, peak_tflops)
    dev = _args(path).device(s.device)
    return {"kernel": s.kernel, "launches": s.launches, "median_us": round(s.median_us, 2),
            "grid": list(s.grid), "block": list(s.block), "blocks": s.blocks, "threads_per_block": s.threads_per_block,
            "warps_per_block": s.warps_per_block, "regs": s.regs, "shared": s.shared,
            "blocks_per_sm": round(s.blocks_per_sm, 3), "resident_blocks": s.resident_blocks, "limiter": s.limiter,
            "theoretical_pct": round(s.theoretical_pct, 2), "occupancy_pct": round(s.achieved_pct, 2),
            "kineto_pct": s.kineto_pct, "flops": flops, "bytes": nbytes, "cost_source": source, "dtype": dtype,
            "gbps": _r(gbps, 1), "tflops": _r(tflops, 1), "peak_gbps": _r(peak_gbps, 1),
            "peak_tflops": _r(peak_tflops, 1), "peaks_source": _peaks_source(pk),
            "roof": v.roof, "roof_share": round(v.roof_share, 4), "verdict": v.verdict.value,
            "device": None if dev is None else {"name": dev.name, "sms": dev.sms,
                                                "max_threads_per_sm": dev.max_threads_per_sm,
                                                "regs_per_sm": dev.regs_per_sm, "shared_per_sm": dev.shared_per_sm,
                                                "warp_size": dev.warp_size, "capability": f"{dev.major}.{dev.minor}"}}


def _costs(a, kernel: str, captured: dict) -> tuple[float | None, float | None, str, str | None]:
    """FLOPs and bytes per launch of a kernel: the roofline's (an op with shapes launched it), else the capture's."""
    import numpy as np

    from tracetriage.analyzers.model.trace import KERNEL

    ev, tr = a.trace.ev, a.trace
    rows = np.flatnonzero(ev.cat == KERNEL)
    mine = rows[np.array([tr.names[i] == kernel for i in ev.name[rows]], dtype=bool)] if len(rows) else rows
    if len(mine) and a.roof is not None and float(a.roof.kernel_bytes[mine].sum()) > 0:
        n = len(mine)
        pts = [p for p in a.roof.points if p.kind == "matmul"] or a.roof.points
        dtype = pts[0].dtype if pts else None
        return (float(a.roof.kernel_flops[mine].sum()) / n, float(a.roof.kernel_bytes[mine].sum()) / n, "shapes",
                dtype)
    b, f = captured.get("bytes_per_kernel"), captured.get("flops_per_kernel")
    return (float(f) if f else None), (float(b) if b else None), "capture", _captured_dtype(captured)


def _captured_dtype(c: dict) -> str | None:
    """The dtype of a kernel the capture counted, from its bytes per element: a matmul's three matrices, or a
    streaming kernel's elements read and written once."""
    b = c.get("bytes_per_kernel")
    if not b:
        return None
    if c.get("mnk"):
        m, n, k = c["mnk"]
        elem = b / (m * k + k * n + m * n)
    elif c.get("elements"):
        elem = b / (2 * c["elements"])
    else:
        return None
    return {2: "bf16", 4: "fp32", 8: "fp64"}.get(round(elem))


def _peaks_source(pk) -> str:
    if pk is None:
        return ""
    from tracetriage.analyzers.voice.peaks import passed

    said = passed(pk)
    if pk.source == "datasheet":
        return pk.sheet + (f"; {said}" if said else "")
    return "measured on the capture's machine (tracetriage capture ceilings)" + (
        f"; the rest from the {pk.sheet}" if pk.sheet else "") + (f"; {said}" if said else "")


def _r(x, nd):
    return None if x is None else round(float(x), nd)


# --- M03.02: operands read against their layout -----------------------------------------------------------------

def layout_facts(path: str | Path) -> dict:
    """The ops that read tensors, each operand's walk and the sectors it asks for (analyses.strided), the copies made
    to feed a coalesced consumer costed both ways, and the trace's kernel time."""
    from tracetriage.analyzers.analyses.strided import copy_costings, layouts

    a = _analysis(path)
    found = layouts(a.trace, _args(path).ops)
    ops = [{"op": o.op, "kind": o.kind, "kernel_us": round(o.kernel_us, 1), "bytes": o.bytes,
            "sector_bytes": o.sector_bytes, "transposed_free": o.transposed_free,
            "reads": [{"arg": r.arg, "dims": list(r.dims), "strides": list(r.strides), "dtype": r.dtype,
                       "inner_stride": r.inner_stride, "useful_bytes": r.useful_bytes,
                       "sector_bytes": r.sector_bytes} for r in o.reads]} for o in found]
    costed = [{"copy_us": round(c.copy_us, 1), "consumer_us": round(c.consumer_us, 1), "copy_bytes": c.copy_bytes,
               "consumer_bytes": c.consumer_bytes, "strided_consumer_bytes": c.strided_consumer_bytes,
               "with_copy_us": round(c.with_copy_us, 1), "through_view_us": round(c.through_view_us, 1),
               "consumers": c.consumers}
              for c in copy_costings(found)]
    return {"ops": ops, "copies_costed": costed, "kernel_busy_us": round(a.kernel_busy_ns / 1e3, 1),
            "span_us": round(a.span_ns / 1e3, 1)}


# --- M00.02 and M01.06: the roofline's points and the peak table ------------------------------------------------

def costed_ops(path: str | Path) -> list[dict]:
    """The roofline's points in the order the ops first ran: name, shapes, dtype, calls, FLOPs and bytes per call,
    device time."""
    import numpy as np

    from tracetriage.analyzers.model.trace import CPU_OP

    a = _analysis(path)
    if a.roof is None:
        return []
    ev, tr = a.trace.ev, a.trace
    first: dict[tuple[str, str], int] = {}
    from tracetriage.analyzers.analyses.roofline import shape_str

    for r in np.flatnonzero(ev.cat == CPU_OP).tolist():
        key = (tr.names[ev.name[r]], shape_str(tr.shapes(r)[0]))
        first.setdefault(key, int(ev.start[r]))
    pts = sorted(a.roof.points, key=lambda p: first.get((p.name, p.shapes), 1 << 62))
    return [{"name": p.name, "shapes": p.shapes, "dtype": p.dtype, "kind": p.kind, "calls": int(p.calls),
             "flops": float(p.flops) / p.calls, "bytes": float(p.bytes) / p.calls, "intensity": float(p.intensity),
             "device_us": round(float(p.device_us), 1)} for p in pts]


def cards(keys: list[str], device_name: str | None) -> list[dict]:
    """The trace's own device first, then the named cards of the peak table: each with its datasheet peaks and the
    document they come from."""
    from tracetriage.analyzers.analyses.peaks import datasheet, table

    out, seen = [], set()
    own = datasheet(device_name)
    rows = ([own] if own else []) + [table()[k] for k in keys]
    for pk in rows:
        if pk.name in seen:
            continue
        seen.add(pk.name)
        out.append({"name": pk.name, "sheet": pk.sheet, "gbps": pk.bytes_per_s / 1e9,
                    "tflops": {d: pk.flops(d) / 1e12 for d in ("bf16", "fp16", "fp32", "tf32")}})
    return out


def ridge(card: dict, dtype: str) -> float:
    """A card's ridge point for a dtype: its peak FLOP/s over its peak bytes/s (analyses.peaks.DevicePeaks.ridge)."""
    from tracetriage.analyzers.analyses.peaks import table

    pk = next(p for p in table().values() if p.name == card["name"])
    return pk.ridge(dtype)


def report_ridge(path: str | Path, dtype: str) -> float | None:
    """The ridge the report prints for the trace ("against a bf16 ridge of 189"): from the peaks measured on the
    machine where it has them, so not the datasheet's; None when its dtype is not `dtype`."""
    v = _analysis(path).verdict
    return v.ridge if v.ridge and v.dtype == dtype else None


def device_name(path: str | Path) -> str | None:
    return _analysis(path).trace.device_name()


# --- M01.06: the matmuls of a decode step ------------------------------------------------------------------------

def decode_matmuls(path: str | Path) -> dict:
    """The decode's matmuls (the ops that launched them): their FLOPs, the weights they read (each matmul's second
    operand) and their other bytes, the rows each multiplies (the batch), the weights' dtype, and the weight
    elements one step reads (the largest weight, the output head, runs once per step)."""
    import numpy as np

    from tracetriage.analyzers.analyses.opcost import op_cost, tensor_args

    a = _analysis(path)
    tr = a.trace
    gpu = np.flatnonzero(tr.launch_of != -1)
    ops = np.unique(tr.launching_op(gpu))
    flops = weight = other = 0.0
    rows, dtypes, weights = [], [], []
    for r in ops.tolist():
        if r < 0:
            continue
        name = tr.names[tr.ev.name[r]]
        if name.split("::")[-1] not in ("mm", "addmm", "matmul", "linear"):
            continue
        dims, types, concrete = tr.shapes(r)
        cost = op_cost(name, dims, types, concrete)
        ts = tensor_args(dims, types, concrete)
        mats = [t for t in ts if len(t[0]) == 2]
        if cost is None or len(mats) < 2:
            continue
        w = mats[1] if name.endswith("mm") else mats[1]
        flops += cost.flops
        weight += w[2]
        other += cost.bytes - w[2]
        rows.append(mats[0][0][0])
        dtypes.append(w[1])
        weights.append(w[0][0] * w[0][1])
    if not weights:
        raise EvidenceError(f"{Path(path).name}: no matmul with recorded shapes")
    head = max(weights)
    steps = sum(1 for x in weights if x == head)
    return {"flops": flops, "weight_bytes": weight, "other_bytes": other, "matmuls": len(weights),
            "steps": steps, "params_per_step": sum(weights) / steps, "batch": int(statistics.median(rows)),
            "dtype": statistics.mode(dtypes), "bytes_per_param": weight / sum(weights)}
