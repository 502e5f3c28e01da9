"""What a knob is, and the graph edits the knobs share.

A knob is a lever that is one line of the user's code (a flag, an argument, a context manager) from
PyTorch's own tuning guides. Its spec (spec.LeverSpec, `knob=`) says, beside the lever's replay:

    change     the one line, in the user's terms (the API call and its argument)
    evidence   what in the trace shows it applies (kernel and op names, dtypes, constructs, counts)
    applies    the devices and dtypes where it applies (a device without the precision gets no advice)
    model      how its saving is predicted (the graph edit and the figure it rests on)
    guide      the page of PyTorch's documentation that names it

The edits here read kernel names the way cuBLAS, cuDNN and ATen write them: the math a GEMM or a
convolution kernel runs is in its name (`f32f32_f32f32_f32` or `sgemm`: fp32 on CUDA cores;
`tf32`: TF32 tensor cores; `bf16`, `f16`, `h` tiles: half precision).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.setup import top_level_ops
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, NONE, USER_ANNOTATION, thread_keys
from tracetriage.analyzers.whatif.levers.spec import Context, Knob

__all__ = ["Knob"]


# --- what a kernel computes, from its name ------------------------------------------------------

# cuDNN's own convolution kernels on Volta/Turing name their math, not "conv": volta_scudnn_128x128_relu_* (fp32 on
# CUDA cores), volta_h884cudnn_* / turing_h1688cudnn_* (fp16 on tensor cores), ampere_s1688cudnn_* (TF32)
_MATRIX = ("gemm", "xmma", "cutlass", "nvjet", "fprop", "dgrad", "wgrad", "conv", "cublas", "sm90_", "sm80_", "scudnn",
           "884cudnn", "1688cudnn")
_FP32_MATH = ("f32f32_f32f32_f32", "sgemm", "simt_s", "_fp32_", "scudnn")
_TF32_MATH = ("tf32", "s1688", "tensorop_s")
_HALF = ("bf16", "bfloat16", "half", "f16", "fp16", "h884", "h1688")


def is_matrix_kernel(name: str) -> bool:
    n = name.lower()
    return any(k in n for k in _MATRIX) and "elementwise" not in n and "reduce_kernel" not in n


def matrix_precision(name: str) -> str | None:
    """The math a GEMM/convolution kernel runs, read from its name: "fp32", "tf32", or None (half precision,
    or a kernel that is not a GEMM or a convolution)."""
    if not is_matrix_kernel(name):
        return None
    n = name.lower()
    if any(k in n for k in _HALF):       # cuDNN's implicit_convolve_sgemm<__nv_bfloat16, ...> is bf16, not fp32
        return None
    if any(k in n for k in _TF32_MATH):
        return "tf32"
    if any(k in n for k in _FP32_MATH):
        return "fp32"
    return None


_ATTENTION = ("fmha", "attention", "flash")
_FP32_ATTENTION = ("_f32_", "<float", "float,")


def is_fp32_attention_kernel(name: str) -> bool:
    """A fused attention kernel in fp32 (PyTorch's memory-efficient fmha_cutlass*_f32, AttentionKernel<float ...>):
    its two products run on CUDA cores; under autocast SDPA picks a bf16 kernel (flash, cuDNN) whose products run on
    tensor cores. Not a TF32 candidate: the fp32 attention kernels ignore allow_tf32."""
    n = name.lower()
    return any(k in n for k in _ATTENTION) and any(k in n for k in _FP32_ATTENTION) and not any(k in n for k in _HALF)


def is_half_matrix_kernel(name: str) -> bool:
    """A GEMM/convolution kernel in half precision (bf16/fp16: cuBLAS's nvjet `_h_` tiles, `bf16`, `f16`)."""
    return is_matrix_kernel(name) and matrix_precision(name) is None


def kernel_rows(c: Context, test) -> np.ndarray:
    """Indices into the graph's GPU activities: the kernels whose name passes test."""
    k = np.flatnonzero(c.g.g_cat == KERNEL)
    return k[c.gpu_named(test, k)] if len(k) else k


def peaks_of(c: Context):
    """The device's peaks as the report judges the trace against them (measured ceilings beside the trace first,
    raised where a kernel passes one): one trace, one peak, in the what-if as in the report; None unknown."""
    return c.roof.peaks


def has_fast(peaks, precision: str) -> bool:
    """The device runs `precision` on tensor cores faster than fp32 on CUDA cores (no TF32 or bf16 before
    Ampere, no fp8 before Hopper/Ada/MI300: the datasheet table gives those the rate they fall back to)."""
    return peaks is not None and precision in peaks.flops_per_s and peaks.flops(precision) > peaks.flops("fp32")


def unpriced(peaks, precision: str) -> str:
    """Why a precision knob that found its kernels prices nothing: "unknown_device" (no peak table entry and no
    measured ceilings: the rate it would switch to is unknown), "no_tensor_cores" (the device runs `precision`
    no faster than fp32), or "" (it can be priced)."""
    if peaks is None:
        return "unknown_device"
    return "" if has_fast(peaks, precision) else "no_tensor_cores"


def unpriced_words(found: int, what: str, device: str, reason: str, cores: str, rate: float = 0.0) -> str:
    """The true reason a precision knob priced nothing, for its says(): the kernels it found and why. A device
    whose `cores` rate is no faster than fp32 either has no such tensor cores (a T4: the table gives it the fp32
    rate) or runs them at the fp32 rate (GeForce Ampere/Ada TF32): said as the rates, true of both."""
    on = device or "this device"
    if reason == "unknown_device":
        return (f"{found} {what} in this trace, but no peak table entry for {on}: what {cores} would buy is unknown "
                "(tracetriage capture ceilings measures the device's rates)")
    at = f" ({rate:,.1f} TFLOP/s both, the device's datasheet)" if rate else ""
    return f"{found} {what} in this trace, but {on} runs {cores} no faster than fp32{at}: nothing to gain"


def peak_source(peaks) -> str:
    """Where a FLOP peak comes from, as SOURCE_WORDS says it."""
    return "ceilings" if peaks is not None and peaks.source.startswith("measured") else "sheet"


def datasheet_peak(peaks, precisions: list[str]) -> tuple[str, object, float]:
    """The precision most of the found constructs run in, the datasheet row (else the measured one) and its FLOP
    peak there; a peak of 0.0 where the row gives that precision none (the construct is then left unpriced)."""
    precision = max(precisions, key=precisions.count)
    sheet = peaks.datasheet or peaks
    return precision, sheet, sheet.flops(precision) if precision in sheet.flops_per_s else 0.0


def scale(p, rows: np.ndarray, factor: np.ndarray | float) -> None:
    p.g_dur[rows] = np.round(p.g_dur[rows] * factor).astype(p.g_dur.dtype)


def remove_gpu_work(c: Context, p, rows: np.ndarray, dispatch: str = "all") -> None:
    """These GPU activities go, and with them their launch calls' time on the host and the dispatch before
    the call: "all" of it (what the host did before the call that is not dispatch stays), or only "op"'s,
    the op that launches (from its start to the call: the frameworks around it still run)."""
    g = c.g
    p.g_dur[rows] = 0
    p.g_gap[rows] = 0
    calls = g.g_call[rows]
    calls = calls[(calls >= 0) & g.g_linked[rows]]
    p.c_dur[calls] = setup_kept(c, calls)
    if dispatch == "all":
        p.c_gap[calls] = g.c_host[calls]
        return
    ev = c.trace.ev
    op = c.trace.op_of[g.c_row[calls]]
    has = op != NONE
    own = np.where(has, g.c_start[calls] - ev.start[np.maximum(op, 0)], 0)
    p.c_gap[calls] = np.maximum(p.c_gap[calls] - np.clip(own, 0, None), g.c_host[calls])


def setup_kept(c: Context, calls: np.ndarray) -> np.ndarray:
    """What each of these calls keeps when its GPU work goes: the one-time set-up inside it (a first launch that
    loads its kernel's module: analyses.setup's windows), which a warm run never pays and a fix of the steady state
    does not buy; else nothing. channels_last on a cold ResNet pass (rtx3090_py4ai.json) counted 15 ms of lazy
    module loading in two transposes' first launches as its saving."""
    from tracetriage.analyzers.whatif.levers.host_windows import calls_inside as in_windows

    g = c.g
    kept = np.zeros(len(calls), g.c_dur.dtype)
    s, e, k = c.setup_excess
    if not len(s) or not len(calls):
        return kept
    inside = in_windows(c, s, e, k)[calls]
    kept[inside] = np.maximum(g.c_dur[calls[inside]] - g.launch_cost_ns, 0)
    return kept


def ops_named(c: Context, test) -> np.ndarray:
    """Rows of the cpu_ops whose name passes test."""
    ops = c.name_index("cpu_ops", lambda: np.flatnonzero(c.trace.ev.cat == CPU_OP))
    return ops.rows[ops.flags(test)]


def ranges_named(c: Context, test) -> np.ndarray:
    """Rows of the user annotations (record_function ranges: ProfilerStep#N, Optimizer.step#...) whose name passes
    test, in row order."""
    ranges = c.name_index("ranges", lambda: np.flatnonzero(c.trace.ev.cat == USER_ANNOTATION))
    return ranges.rows[ranges.flags(test)]


def calls_inside(c: Context, windows: np.ndarray) -> np.ndarray:
    """The graph's host calls that start inside one of these cpu_op rows, on its thread."""
    g, ev = c.g, c.trace.ev
    inside = np.zeros(g.n_calls, bool)
    if not len(windows) or not g.n_calls:
        return np.flatnonzero(inside)
    w_key = thread_keys(ev, windows)
    c_key = c.call_keys
    for key in distinct(w_key).tolist():
        w = windows[w_key == key]
        w = w[np.argsort(ev.start[w])]
        s, e = ev.start[w], np.maximum.accumulate(ev.end[w])
        m = np.flatnonzero(c_key == key)
        j = np.searchsorted(s, g.c_start[m], side="right") - 1
        inside[m] = (j >= 0) & (g.c_start[m] < e[np.maximum(j, 0)])
    return np.flatnonzero(inside)


def gpu_of_calls(c: Context, calls: np.ndarray) -> np.ndarray:
    """The GPU activities these launch calls launched."""
    g = c.g
    mark = np.zeros(g.n_calls, bool)
    mark[calls] = True
    ok = (g.g_call >= 0) & g.g_linked
    return np.flatnonzero(ok & mark[np.maximum(g.g_call, 0)])


def launching_op_names(c: Context, rows: np.ndarray) -> list[str]:
    ops = c.trace.op_of[c.g.c_row[c.g.g_call[rows]]]
    return [c.trace.name_of(int(o)) if o != NONE else "" for o in ops]


def outermost(c: Context, rows: np.ndarray) -> np.ndarray:
    """Of these cpu_op rows, the ones not nested inside another of them on the same thread (in time order)."""
    ev = c.trace.ev
    rows = rows[np.argsort(ev.start[rows], kind="stable")]
    key = thread_keys(ev, rows)
    out = []
    for k in distinct(key).tolist():
        r = rows[key == k]
        ends = np.maximum.accumulate(ev.end[r])
        top = np.ones(len(r), bool)
        top[1:] = ev.start[r][1:] >= ends[:-1]
        out.append(r[top])
    t = np.concatenate(out) if out else rows[:0]
    return t[np.argsort(ev.start[t], kind="stable")]


def outermost_ops(c: Context) -> np.ndarray:
    """Every cpu_op not nested inside another on its thread (in time order): found once for the levers that read the
    ops as a sequence (slice_loops, batch_passes, value_checks)."""
    return c.once("outermost cpu_ops", lambda: _in_outermost_order(c, top_level_ops(c.trace)))


def _in_outermost_order(c: Context, top: np.ndarray) -> np.ndarray:
    """The top-level cpu_ops (in row order, which sorts by start) in outermost()'s order: by start, then thread
    key, then row. Only starts shared by two of them reorder anything (none in most traces: no sort then)."""
    ev = c.trace.ev
    start = ev.start[top]
    if not len(top) or not (start[1:] == start[:-1]).any():
        return top
    return top[np.lexsort((top, thread_keys(ev, top), start))]


def window_of_calls(c: Context, windows: np.ndarray) -> np.ndarray:
    """For each of the graph's host calls: the index into `windows` (cpu_op rows that do not nest one another
    on a thread) of the one it starts inside, on its thread; -1 for none."""
    g, ev = c.g, c.trace.ev
    out = np.full(g.n_calls, -1, np.int64)
    if not len(windows) or not g.n_calls:
        return out
    w_key = thread_keys(ev, windows)
    c_key = c.call_keys
    for key in distinct(w_key).tolist():
        wi = np.flatnonzero(w_key == key)
        wi = wi[np.argsort(ev.start[windows[wi]], kind="stable")]
        s, e = ev.start[windows[wi]], ev.end[windows[wi]]
        m = np.flatnonzero(c_key == key)
        j = np.searchsorted(s, g.c_start[m], side="right") - 1
        ok = (j >= 0) & (g.c_start[m] < e[np.maximum(j, 0)])
        out[m[ok]] = wi[j[ok]]
    return out


@dataclass(frozen=True)
class OpCost:
    """What an op costs the host in this trace, the profiler's share included: the median innermost op that
    launches nothing (aten::empty, aten::to of a no-op, autograd's node records) and the median innermost op that
    launches one kernel (its dispatch and the launch call)."""
    plain_ns: float
    launching_ns: float


def op_cost(c: Context) -> OpCost:
    ev, g = c.trace.ev, c.g
    ops = ops_named(c, lambda n: True)
    if not len(ops):
        return OpCost(0.0, float(g.launch_cost_ns))
    ops = ops[np.argsort(ev.start[ops], kind="stable")]
    key = thread_keys(ev, ops)
    issued = np.flatnonzero(g.c_issues)
    c_key = thread_keys(ev, g.c_row[issued])
    plain, launching = [], []
    for k in distinct(key).tolist():
        r = ops[key == k]
        s, e = ev.start[r], ev.end[r]
        inner = np.ones(len(r), bool)
        inner[:-1] = s[1:] >= e[:-1]               # no op starts inside it
        starts = np.sort(g.c_start[issued[c_key == k]])
        n = np.searchsorted(starts, e) - np.searchsorted(starts, s)
        plain.append((e - s)[inner & (n == 0)])
        launching.append((e - s)[inner & (n == 1)])
    pl, la = np.concatenate(plain), np.concatenate(launching)
    return OpCost(float(np.median(pl)) if len(pl) else 0.0,
                  float(np.median(la)) if len(la) else float(g.launch_cost_ns))


def rows_inside(c: Context, rows: np.ndarray, windows: np.ndarray) -> np.ndarray:
    """For each of these event rows: does it start inside one of the `windows` (cpu_op rows), on its thread."""
    ev = c.trace.ev
    inside = np.zeros(len(rows), bool)
    if not len(rows) or not len(windows):
        return inside
    w_key = thread_keys(ev, windows)
    r_key = thread_keys(ev, rows)
    for key in distinct(w_key).tolist():
        w = windows[w_key == key]
        w = w[np.argsort(ev.start[w])]
        s, e = ev.start[w], np.maximum.accumulate(ev.end[w])
        m = np.flatnonzero(r_key == key)
        j = np.searchsorted(s, ev.start[rows[m]], side="right") - 1
        inside[m] = (j >= 0) & (ev.start[rows[m]] < e[np.maximum(j, 0)])
    return inside


# --- work queued before the window ----------------------------------------------------------------

MIRROR_MIN = 8                       # queued kernels fewer than this are not worth aligning (nor reliably aligned)


def queued_counterparts(c: Context) -> tuple[np.ndarray, np.ndarray]:
    """The GPU activities queued before the profiled window (no launch call in the trace, ahead of the first launched
    one on their stream) and, for each, the launched activity it repeats: the queued run is the tail of a step like
    the recorded ones, so its names match a run of the stream's launched names; the first such run is taken, the
    queue's first activities dropped until one matches (the first may be a kernel cut by the window's start).
    Returns (queued rows, their counterparts), both indices into the graph's GPU activities."""
    if "queued" in c._windows:
        return c._windows["queued"]
    from numpy.lib.stride_tricks import sliding_window_view

    g = c.g
    names = c.trace.ev.name[g.g_row]
    q_out, l_out = [], []
    for q in distinct(g.g_queue).tolist():
        rows = np.flatnonzero(g.g_queue == q)
        rows = rows[np.argsort(g.g_start[rows], kind="stable")]
        linked = g.g_linked[rows]
        if not linked.any():
            continue
        head = rows[:int(np.argmax(linked))]
        launched = rows[linked]
        for drop in range(0, max(len(head) // 10, 1)):
            u = head[drop:]
            if len(u) < MIRROR_MIN or len(u) > len(launched):
                break
            hit = np.flatnonzero((sliding_window_view(names[launched], len(u)) == names[u]).all(axis=1))
            if len(hit):
                q_out.append(u)
                l_out.append(launched[hit[0]:hit[0] + len(u)])
                break
    out = (np.concatenate(q_out) if q_out else np.zeros(0, np.int64),
           np.concatenate(l_out) if l_out else np.zeros(0, np.int64))
    c._windows["queued"] = out
    return out


def mirror_queued(c: Context, p) -> int:
    """Give the work queued before the window the change a lever made to its launched counterparts (a kernel removed,
    sped up or replaced by a fused one: the same factor on its own time); returns how many queued activities changed.
    Without it a lever that edits kernels through their launches (their ops, their windows on the host) leaves the
    window's first, queued step as it ran: sdpa on fresh4 gpt2_manual_attention-before missed 12 of 48 attentions."""
    queued, like = queued_counterparts(c)
    if not len(queued):
        return 0
    g = c.g
    changed = (p.g_dur[like] != g.g_dur[like]) & (p.g_dur[queued] == g.g_dur[queued])
    q, lk = queued[changed], like[changed]
    factor = p.g_dur[lk] / np.maximum(g.g_dur[lk], 1)
    p.g_dur[q] = np.round(g.g_dur[q] * factor).astype(p.g_dur.dtype)
    p.g_gap[q[p.g_dur[q] == 0]] = 0
    return int(changed.sum())
