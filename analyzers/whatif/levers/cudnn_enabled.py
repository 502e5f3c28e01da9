"""cudnn_enabled: torch.backends.cudnn.enabled = True (its default), where a script turned cuDNN off (a workaround
left in) and every convolution and recurrent layer runs ATen's fallback paths.

What any trace of it shows, on a CUDA or ROCm device: no cuDNN (or MIOpen) anywhere -- no op whose name holds
"cudnn" or "miopen" (aten::cudnn_convolution, aten::_cudnn_rnn), no kernel whose name holds "cudnn" (cuDNN's
attention aside: SDPA runs it whatever cudnn.enabled says) -- and the ops only the fallbacks run, launching work on
the device:
  1. convolutions through ATen's native im2col path: aten::_slow_conv2d_forward / _slow_conv2d_backward
     (slow_conv3d, slow_conv_dilated, slow_conv_transpose alike): per image of the batch an im2col (col2im) kernel
     and a GEMM, hundreds of small kernels a layer where cuDNN runs a few implicit-GEMM ones;
  2. recurrent layers (aten::lstm / gru / rnn_tanh / rnn_relu) without aten::_cudnn_rnn inside: per time step,
     layer and direction a GEMM and a fused cell (aten::_thnn_fused_lstm_cell), each dispatched from ATen's own loop,
     and in the backward one autograd node per step (ThnnFusedLstmCellBackward0 between the steps' MmBackward0).
A trace with cuDNN on shows none of these for the layers cuDNN supports.

The price, in the graph:
  - each fallback convolution (and each aten::convolution_backward holding no fallback op of its own, in a trace with
    fallbacks: slow_conv_dilated2d's backward) loses its host loop (ATen's per-image select, fill_ and copy_ ops and
    their launches: cuDNN's call launches a few kernels), and its GPU work becomes one kernel of its FLOPs (2 x N x
    C_out x the output's pixels x C_in x the kernel's taps, forward; the backward's, one such product per gradient its
    output_mask asks) at the rate this trace's own matrix products reach in the weights' precision
    (sdpa.trace_gemm_rate: a fair floor for cuDNN's implicit GEMM, which runs near cuBLAS's rate and fp32 in TF32 by
    default), its other launches gone with their dispatch;
  - each recurrent layer without cuDNN keeps its kernels (cuDNN runs the same per-step GEMM and cell, and a floor:
    in TF32 where the inputs are fp32), but the host time between their launches goes, each launch call keeping what
    a launch costs (cuDNN launches them back to back from its own loop): in the forward the aten::lstm op's window,
    in the backward each run of its cell-backward nodes (at most BETWEEN nodes apart) from the first to the last.
Convolutions whose arguments the trace does not record, or a precision no matrix product of the trace runs in, are
found but not priced (said so). A floor on the saving: cuDNN's RNN also computes the input projections and the weight
gradients of all time steps in one GEMM each (fresh11 crnn_ocr_cudnn_disabled: 21,014 kernels before, 2,604 after),
which the replay does not price (priced 0.196 of the span there, measured 0.099 profiled, 0.140 without the
profiler).

What would make it fire falsely: a lone convolution on the slow path with cuDNN on (a shape cuDNN rejects) in a
trace with no other cuDNN op; the lever counts it and the knob would change nothing. A trace on the host (no
kernels) is never this construct.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.opargs import Malformed, concrete_ints, parse_args
from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.host_windows import calls_inside, remove_host_windows
from tracetriage.analyzers.whatif.levers.knob import (
    gpu_of_calls,
    is_matrix_kernel,
    mirror_queued,
    ops_named,
    outermost,
)
from tracetriage.analyzers.whatif.levers.sdpa import fuse_windows, trace_gemm_rate
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

SLOW_CONV = ("aten::_slow_conv", "aten::slow_conv")       # ATen's native im2col convolutions, forward and backward
FORWARD = frozenset(("aten::_slow_conv2d_forward", "aten::slow_conv3d_forward"))   # (self, weight, kernel_size,
                                                                                   # bias, stride, padding)
BACKWARD = frozenset(("aten::_slow_conv2d_backward", "aten::slow_conv3d_backward"))  # (grad_output, self, weight,
                                                                                     # kernel_size, stride, padding,
                                                                                     # output_mask)
# the backward of a convolution whose fallback records no op of its own (slow_conv_dilated2d's backward runs inside
# aten::convolution_backward: pairs4 tcn_ecg_dilated_conv1d_cudnn_off, 8 of them, 1.2 ms of host each)
CONV_BACKWARD = "aten::convolution_backward"   # (grad_output, input, weight, bias_sizes, stride, padding, dilation,
                                               # transposed, output_padding, groups, output_mask)
RNNS = frozenset(("aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"))
CUDNN_RNN = ("aten::_cudnn_rnn", "aten::miopen_rnn")
CELL_BACKWARD = ("autograd::engine::evaluate_function: ThnnFusedLstmCellBackward0",
                 "autograd::engine::evaluate_function: ThnnFusedGruCellBackward0")
BETWEEN = 8            # outermost backward nodes between two steps' cell backwards of one layer (MmBackward0,
                       # TBackward0, the step's select and stack nodes): more apart, two layers' backward
NS_PER_S = 1e9
_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32", "fp64": "fp64"}


QUERIES = ("is_acceptable", "_use_cudnn", "_use_miopen")   # ops that ask whether cuDNN would take a case
                                                           # (aten::cudnn_is_acceptable, _use_cudnn_ctc_loss): asked
                                                           # with cuDNN off too


# cuDNN's attention (SDPA's cuDNN backend: aten::_scaled_dot_product_cudnn_attention, aten::_cudnn_attention_forward,
# kernels cudnn_generated_fort_native_sdpa_*) runs whatever torch.backends.cudnn.enabled says: SDPA picks its backend
# by torch.backends.cuda's flags (pairs4 bert_bigru_classifier_cudnn_off: cuDNN off, its BERT's attention on cuDNN)
ATTENTION = ("attention", "sdpa")


def _has_cudnn(c: Context) -> bool:
    """The trace ran cuDNN (or MIOpen) somewhere cudnn.enabled governs: an op or a kernel naming it, not one that only
    asks (QUERIES), nor cuDNN's attention (ATTENTION)."""
    return any(("cudnn" in (low := n.lower()) or "miopen" in low) and not any(q in low for q in QUERIES)
               and not any(a in low for a in ATTENTION) for n in c.trace.names)


def conv_flops(c: Context, op: int) -> tuple[float, str] | None:
    """A fallback convolution's FLOPs as cuDNN would compute them, and its weights' precision; None where its
    arguments are not recorded (module docstring)."""
    name = c.trace.name_of(op)
    try:
        args = parse_args(*c.trace.shapes(op))
    except Malformed:
        return None
    if name in FORWARD and len(args) >= 6:
        x, w = args[0], args[1]
        stride, padding = concrete_ints(args, 4), concrete_ints(args, 5)
        if x.kind != "tensor" or w.kind != "tensor" or len(w.dims) < 3 or len(x.dims) != len(w.dims):
            return None
        taps = w.dims[2:]
        nsp = len(taps)
        stride = stride * nsp if stride and len(stride) == 1 else stride
        padding = padding * nsp if padding and len(padding) == 1 else padding
        if not stride or not padding or len(stride) != nsp or len(padding) != nsp:
            return None
        out = [(x.dims[2 + i] + 2 * padding[i] - taps[i]) // stride[i] + 1 for i in range(nsp)]
        flops = 2.0 * x.dims[0] * w.dims[0] * float(np.prod(out)) * w.dims[1] * float(np.prod(taps))
        return flops, _PRECISION.get(w.dtype or "", "fp32")
    if (name in BACKWARD or name == CONV_BACKWARD) and len(args) >= 3:
        go, x, w = args[0], args[1], args[2]
        if go.kind != "tensor" or x.kind != "tensor" or w.kind != "tensor" or len(w.dims) < 3:
            return None
        grads = sum(1 for m in _mask(args, 10 if name == CONV_BACKWARD else 6)[:2] if m)
        one = 2.0 * float(np.prod(go.dims)) * x.dims[1] * float(np.prod(w.dims[2:]))
        return one * grads, _PRECISION.get(w.dtype or "", "fp32")
    return None


def _mask(args, at: int = 6) -> list[bool]:
    """The backward's output_mask ("[True, True, True]": grad_input, grad_weight, grad_bias), argument `at`; all asked
    where it is not recorded."""
    raw = args[at].concrete.strip() if len(args) > at else ""
    if raw.startswith("[") and raw.endswith("]"):
        parts = [p.strip() for p in raw[1:-1].split(",")]
        if all(p in ("True", "False") for p in parts):
            return [p == "True" for p in parts]
    return [True, True, True]


def slow_convs(c: Context) -> np.ndarray:
    """The outermost fallback convolution ops (SLOW_CONV) in a trace with no cuDNN, and the convolution backwards
    holding none of them (a fallback whose backward records no op of its own: CONV_BACKWARD); empty elsewhere."""
    rows = outermost(c, ops_named(c, lambda n: n.startswith(SLOW_CONV)))
    if not len(rows) or _has_cudnn(c):
        return rows[:0]
    ev = c.trace.ev
    back = outermost(c, ops_named(c, lambda n: n == CONV_BACKWARD))
    bare = [r for r in back.tolist() if not ((ev.start[rows] >= ev.start[r]) & (ev.end[rows] <= ev.end[r])
                                             & (ev.tid[rows] == ev.tid[r])).any()]
    return np.sort(np.concatenate((rows, np.array(bare, np.int64))))


def slow_rnns(c: Context) -> np.ndarray:
    """The outermost recurrent-layer ops (RNNS) that ran no cuDNN RNN inside, in a trace with no cuDNN."""
    rows = outermost(c, ops_named(c, lambda n: n in RNNS))
    if not len(rows) or _has_cudnn(c):
        return rows[:0]
    ev = c.trace.ev
    fast = ops_named(c, lambda n: n.startswith(CUDNN_RNN))
    keep = [r for r in rows.tolist() if not ((ev.start[fast] >= ev.start[r]) & (ev.end[fast] <= ev.end[r])).any()]
    keep = np.array(keep, np.int64)
    if not len(keep):
        return keep
    # ... launching work on the device (an LSTM on the host is no cuDNN case)
    launched = calls_inside(c, ev.start[keep], ev.end[keep], thread_keys(ev, keep))
    issued = np.flatnonzero(launched & c.g.c_issues)
    return keep[[bool(((c.g.c_start[issued] >= ev.start[r]) & (c.g.c_start[issued] < ev.end[r])).any())
                 for r in keep.tolist()]]


def cell_backward_runs(c: Context) -> list[tuple[int, int, int]]:
    """(start, end, thread key) of each run of the recurrent cells' backward nodes: consecutive cell-backward nodes of
    one thread at most BETWEEN outermost nodes apart."""
    ev = c.trace.ev
    nodes = outermost(c, ops_named(c, lambda n: n.startswith("autograd::engine::evaluate_function: ")))
    if not len(nodes):
        return []
    key = thread_keys(ev, nodes)
    cell = np.array([c.trace.name_of(int(r)) in CELL_BACKWARD for r in nodes.tolist()], bool)
    out = []
    for k in distinct(key[cell]).tolist():
        idx = np.flatnonzero(key == k)
        pos = np.flatnonzero(cell[idx])
        first = prev = pos[0]
        for i in pos[1:].tolist() + [None]:
            if i is None or i - prev > BETWEEN + 1:
                out.append((int(ev.start[nodes[idx[first]]]), int(ev.end[nodes[idx[prev]]]), int(k)))
                if i is not None:
                    first = i
            if i is not None:
                prev = i
    return out


@dataclass(frozen=True)
class CudnnOff(Assumption):
    convs: int = 0             # fallback convolution ops (forward and backward)
    priced_convs: int = 0      # of them priced (their arguments recorded, a GEMM rate in their precision)
    conv_kernels: int = 0      # GPU activities they launched
    conv_ns: int = 0           # their time on the device
    cudnn_ns: int = 0          # the predicted cuDNN kernels' time
    tflops: float = 0.0        # the rate priced at (this trace's GEMMs)
    precision: str = ""
    rnns: int = 0              # recurrent-layer ops without cuDNN
    rnn_backward: int = 0      # runs of their cells' backward nodes
    host_ns: int = 0           # host time taken out between the recurrent layers' launches
    rnn_op: str = ""           # their op (aten::lstm ...), the most common


def apply(c: Context, p, o: Options) -> tuple[CudnnOff, dict]:
    convs, rnns = slow_convs(c), slow_rnns(c)
    if not len(convs) and not len(rnns):
        return CudnnOff("cudnn_enabled", 0), {"fallbacks": 0}
    ev = c.trace.ev
    windows, kernels, precisions = [], 0, []
    rates: dict[str, float] = {}
    own_flops = own_ns = 0.0
    for r, key in zip(convs.tolist(), thread_keys(ev, convs).tolist() if len(convs) else []):
        inside = calls_inside(c, ev.start[[r]], ev.end[[r]], np.array([key]))
        rows = gpu_of_calls(c, np.flatnonzero(inside))
        if not len(rows):
            continue                                # a convolution on the host (a CPU tensor): not cuDNN's
        gemm = rows[c.gpu_named(is_matrix_kernel, rows)]
        gemm_ns = float(c.g.g_dur[gemm].sum())      # the fallback's own products: the conv's FLOPs, image by image
        got = conv_flops(c, r)
        flops, precision = got if got is not None else (0.0, "")
        rate = rates.setdefault(precision, trace_gemm_rate(c, precision)) if precision else 0.0
        priced = [t for t in (NS_PER_S * flops / rate if rate and flops else 0.0, gemm_ns) if t > 0]
        if not priced:
            continue
        if flops and gemm_ns:
            own_flops, own_ns = own_flops + flops, own_ns + gemm_ns
        kernels += len(rows)
        windows.append((int(ev.start[r]), int(ev.end[r]), int(key), min(priced)))
        precisions.append(precision)
    conv_ns, cudnn_ns = fuse_windows(c, p, windows) if windows else (0, 0)
    # ... and the fallback's host loop goes with its kernels: per image and per tap, ATen's select, fill_ and copy_
    # ops that launch nothing or a small kernel (pairs4 tcn_ecg_dilated_conv1d_cudnn_off: slow_conv_dilated2d held
    # 8,736 selects, 4,134 fills and 4,186 copies over two steps, 80 ms of host); cuDNN's call keeps one launch
    conv_host_ns = remove_host_windows(c, p, np.array([w[0] for w in windows], np.int64),
                                       np.array([w[1] for w in windows], np.int64),
                                       np.array([w[2] for w in windows], np.int64))[1] if windows else 0
    runs = cell_backward_runs(c) if len(rnns) else []
    starts = np.array([int(ev.start[r]) for r in rnns.tolist()] + [s for s, _, _ in runs], np.int64)
    ends = np.array([int(ev.end[r]) for r in rnns.tolist()] + [e for _, e, _ in runs], np.int64)
    keys = np.concatenate([thread_keys(ev, rnns) if len(rnns) else np.zeros(0, np.int64),
                           np.array([k for _, _, k in runs], np.int64)])
    _, host_ns = remove_host_windows(c, p, starts, ends, keys) if len(starts) else (0, 0)
    mirror_queued(c, p)
    precision = max(precisions, key=precisions.count) if precisions else ""
    count = len(windows) + len(rnns)
    return (CudnnOff("cudnn_enabled", count, convs=len(convs), priced_convs=len(windows), conv_kernels=kernels,
                     conv_ns=conv_ns, cudnn_ns=cudnn_ns,
                     tflops=max(rates.get(precision, 0.0), own_flops / own_ns * NS_PER_S if own_ns else 0.0) / 1e12,
                     precision=precision, rnns=len(rnns), rnn_backward=len(runs), host_ns=host_ns,
                     rnn_op=_most_common([c.trace.name_of(int(r)) for r in rnns.tolist()])),
            {"fallbacks": len(convs) + len(rnns), "fallback_ns": conv_ns + host_ns + conv_host_ns})


def _most_common(names: list[str]) -> str:
    return max(names, key=names.count) if names else ""


def says(a: CudnnOff) -> str:
    if not a.convs and not a.rnns:
        return ("no convolution or recurrent layer on ATen's fallback path (aten::_slow_conv2d_*, an aten::lstm "
                "without _cudnn_rnn) in a trace without cuDNN")
    parts = []
    if a.convs:
        unpriced = (f" ({units.integer(a.convs - a.priced_convs)} not priced: their arguments or a GEMM rate in "
                    "their precision are not in the trace)" if a.priced_convs < a.convs else "")
        rate = (f" at the {units.tflops(a.tflops)} this trace's {a.precision} matrix products reach (the fallback's "
                "own, image by image, among them: a floor for cuDNN's)" if a.tflops else "")
        parts.append(f"{units.integer(a.convs)} convolution calls (forward and backward) run ATen's im2col fallback "
                     f"(aten::_slow_conv2d_*: "
                     f"{units.integer(a.conv_kernels)} GPU activities, {units.duration_ns(a.conv_ns)}); cuDNN runs "
                     f"each as a few implicit-GEMM kernels, priced at their FLOPs{rate}: "
                     f"{units.duration_ns(a.cudnn_ns)}{unpriced}")
    if a.rnns:
        back = f" and {units.integer(a.rnn_backward)} runs of their cells' backward" if a.rnn_backward else ""
        parts.append(f"{units.integer(a.rnns)} calls of recurrent layers ({a.rnn_op}) without cuDNN's RNN (a GEMM "
                     f"and a fused cell dispatched per time step){back}: cuDNN launches the same kernels back to back, "
                     f"{units.duration_ns(a.host_ns)} of host time between them gone")
    return ("no cuDNN outside attention in this trace (torch.backends.cudnn.enabled = False): "
            + "; ".join(parts))


def fallbacks(m: Measured) -> int:
    return m.whatif.lever(SPEC.name).detail.get("fallbacks", 0)


SPEC = LeverSpec(
    name="cudnn_enabled", effort=1, cause=None, apply=apply, says=says, words="cuDNN turned back on",
    fix="torch.backends.cudnn.enabled = True (the default) in place of torch.backends.cudnn.enabled = False",
    recognise=Recognise(order=4, evidence="fallback_layers", because="its convolutions and recurrent layers run "
                        "cuDNN's kernels, not ATen's fallbacks", amount=fallbacks,
                        acted=lambda m: m.whatif.lever("cudnn_enabled").detail.get("fallback_ns", 0), applied=went),
    applied_words="cuDNN turned back on (torch.backends.cudnn.enabled = True)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change="torch.backends.cudnn.enabled = True (the default): drop the line that sets it False",
              evidence="no op or kernel naming cuDNN (or MIOpen) anywhere but cuDNN's attention (SDPA's backend, "
                       "run whatever cudnn.enabled says), and ATen's fallbacks launching GPU work: "
                       "aten::_slow_conv2d_forward/backward (im2col), or an aten::lstm/gru without aten::_cudnn_rnn "
                       "(_thnn_fused_lstm_cell per time step)",
              applies="every NVIDIA GPU with cuDNN (MIOpen on ROCm); PyTorch's default",
              model="each fallback convolution's kernels become one of its FLOPs at this trace's GEMM rate in its "
                    "precision, its host loop gone; each recurrent layer keeps its kernels, the host time between "
                    "their launches gone",
              guide="torch.backends.cudnn (enabled controls whether cuDNN is used; the Performance Tuning Guide's "
                    "cuDNN auto-tuner assumes it on)"))
