"""sdpa: F.scaled_dot_product_attention in place of attention written by hand (softmax(q @ k^T * scale) @ v).

Attention written out (nanoGPT without its `flash` switch, Hugging Face's attn_implementation="eager", most
research code) materialises the score matrix: a GEMM writes B x H x T x S scores, the scale, the mask and the
softmax each read and write them again, and a second GEMM reads them back; in training their backward does it
all again. SDPA's flash or memory-efficient kernel keeps the scores on chip. The trace shows the hand-written
form as ops, in this order on one thread (found by `find`):
  1. a softmax (aten::softmax/_softmax/_safe_softmax) over a tensor of three dimensions or more, [..., T, S];
  2. before it, the GEMM that made its scores: aten::matmul/bmm/baddbmm of [..., T, d] by [..., d, S];
  3. after it, the GEMM that reads them: [..., T, S] by [..., S, dv];
  4. in between, a mask op (masked_fill, where, add) with a [T, S] input broadcast over the batch and heads:
     square (T = S) it is causal, and the flash kernel skips the masked half;
  and in the backward, autograd's SoftmaxBackward0 between the two GEMMs' BmmBackward0.
In the graph every kernel launched from those windows goes with its launch's dispatch, and the window's first
kernel runs the fused kernel instead: the attention's FLOPs (2 x B x H x T x S x (d + dv) forward, 2.5 times
that backward: flash recomputes the scores, then five GEMMs where the forward has two; about half where
causal) at the device's datasheet peak for the inputs' precision times the share of it PyTorch's fused attention
kernels reach (FLASH_SHARE, measured on the dev pairs). The datasheet's, not measured ceilings: a ceiling is what a
large GEMM reaches, not attention, and a user's trace seldom has one beside it; the price is then the same with
ceilings or without.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.groups import distinct
from tracetriage.analyzers.model.trace import thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.host_windows import calls_inside
from tracetriage.analyzers.whatif.levers.knob import (
    gpu_of_calls,
    mirror_queued,
    ops_named,
    outermost,
    peak_source,
    peaks_of,
    remove_gpu_work,
    rows_inside,
)
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

SOFTMAX = frozenset(("aten::softmax", "aten::_softmax", "aten::_safe_softmax"))
PRODUCT = frozenset(("aten::matmul", "aten::bmm", "aten::baddbmm"))
MASK = ("aten::masked_fill", "aten::where", "aten::add", "aten::add_")
FUSED = ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product", "aten::_flash_attention",
         "aten::_efficient_attention")
BACKWARD = "autograd::engine::evaluate_function: "
MATH_BACKEND = "aten::_scaled_dot_product_attention_math"
SOFTMAX_BACKWARD = ("SoftmaxBackward0", "SafeSoftmaxBackward0")
PRODUCT_BACKWARD = ("BmmBackward0", "MmBackward0", "BaddbmmBackward0")
MIN_KEYS = 16                    # a softmax over fewer keys is not attention worth a fused kernel (a decode step's
                                 # one query over a short cache still counts: S is the keys)
NS_PER_S = 1e9
BACKWARD_FLOPS = 2.5             # flash backward: scores recomputed, then dV, dP, dQ, dK (5 GEMMs to the forward's 2)
# The share of the device's datasheet peak PyTorch's fused attention kernels reach, forward and backward, read from
# the dev pairs' after traces (traces/fixes/knobs3, H200, torch 2.11: SDPA ran cuDNN's flash kernels,
# aten::_scaled_dot_product_cudnn_attention, head dim 64, bf16 at 989.5 TFLOP/s): each attention's FLOPs over its
# fused kernels' median time -- forward 0.279 (sdpa_gpt_train, B x H 96, T 1,024, causal: 46.7 us) and 0.297
# (sdpa_vit_infer, B x H 384, T 577: 111.6 us), 0.29 their mean; backward 0.220 (sdpa_gpt_train, the one training
# pair: cuDNN's dO.O, flash bprop and dQ-convert kernels, 148.4 us an attention, at BACKWARD_FLOPS x the forward's).
# Another device, head dim or SDPA backend reaches another share: a figure of this device and torch, not a law.
FLASH_SHARE = {"forward": 0.29, "backward": 0.22}
_PRECISION = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32"}


@dataclass(frozen=True)
class Attention:
    """One attention written by hand, as the trace shows it."""
    start: int                       # the window from the scores' GEMM to the values' GEMM, on one thread
    end: int
    thread: int                      # thread_key
    heads: int                       # B x H (the product of the scores' leading dimensions)
    queries: int                     # T
    keys: int                        # S
    dim: int                         # d
    value_dim: int                   # dv
    causal: bool
    precision: str                   # the inputs': bf16, fp16, fp32
    # nn.MultiheadAttention's need_weights=True (its default): the weights viewed [B, H, T, S] and averaged over the
    # heads by an aten::mean after the values' GEMM (its row; -1 for none), not attention written by hand
    weights_mean: int = -1

    @property
    def need_weights(self) -> bool:
        return self.weights_mean >= 0

    @property
    def flops(self) -> float:
        """The forward's FLOPs as a fused kernel computes them (causal: the kept triangle only)."""
        full = 2.0 * self.heads * self.queries * self.keys * (self.dim + self.value_dim)
        return full * (self.queries + 1) / (2 * self.queries) if self.causal else full


def _dims(c: Context, op: int) -> list[list]:
    """The op's tensor inputs' shapes (scalars and None left out)."""
    return [d for d in (c.trace.shapes(op)[0] or []) if isinstance(d, list) and d]


def _types(c: Context, op: int) -> list:
    return list(c.trace.shapes(op)[1] or [])


def find(c: Context) -> list[Attention]:
    """The attentions written by hand in the trace's forward (steps 1-4 of the module's docstring)."""
    ev = c.trace.ev
    soft = outermost(c, ops_named(c, lambda n: n in SOFTMAX))
    # a softmax inside SDPA's math backend is not written by hand: sdpa_math names that (its fix is the backend)
    soft = soft[~rows_inside(c, soft, ops_named(c, lambda n: n.startswith(MATH_BACKEND)))]
    products = outermost(c, ops_named(c, lambda n: n in PRODUCT))
    masks = ops_named(c, lambda n: n in MASK)
    means = ops_named(c, lambda n: n == "aten::mean")
    out: list[Attention] = []
    if not len(soft) or len(products) < 2:
        return out
    p_key = thread_keys(ev, products)
    m_key = thread_keys(ev, masks)
    for s in soft.tolist():
        scores = next(iter(_dims(c, s)), [])
        if len(scores) < 3 or scores[-1] < MIN_KEYS:
            continue
        t, k = scores[-2], scores[-1]
        key = int(thread_keys(ev, s))
        mine = products[p_key == key]
        before = mine[ev.end[mine] <= ev.start[s]]
        after = mine[ev.start[mine] >= ev.end[s]]
        if not len(before) or not len(after):
            continue
        qk, pv = int(before[-1]), int(after[0])
        a = _dims(c, qk)
        b = _dims(c, pv)
        if len(a) < 2 or len(b) < 2 or min(len(x) for x in a[:2] + b[:2]) < 3:
            continue
        (q, kt), (p, v) = a[-2:], b[-2:]          # baddbmm's input comes first: its products are the last two
        if q[-2] != t or kt[-1] != k or q[-1] != kt[-2] or p[-2:] != [t, k] or v[-2] != k:
            continue
        inside = masks[(m_key == key) & (ev.start[masks] > ev.end[qk]) & (ev.end[masks] < ev.start[pv])]
        causal = t == k and any(_masks_scores(d, t, k, scores) for m in inside.tolist() for d in _dims(c, m))
        later = soft[(thread_keys(ev, soft) == key) & (ev.start[soft] > ev.end[pv])]
        upto = int(ev.start[later].min()) if len(later) else None
        out.append(Attention(start=int(ev.start[qk]), end=int(ev.end[pv]), thread=key,
                             heads=int(np.prod(scores[:-2])), queries=t, keys=k, dim=q[-1], value_dim=v[-1],
                             causal=causal, precision=_operand_precision(c, qk),
                             weights_mean=_heads_averaged(c, means, key, int(ev.end[pv]), upto, scores)))
    return out


def _operand_precision(c: Context, product: int) -> str:
    """The precision of the scores' GEMM's operands (the last two tensor inputs: baddbmm's first input is the mask
    it adds, often fp32 beside bf16 q and k under autocast: fresh10 sasrec_mha_need_weights, a float [1, 200, 200]
    mask beside c10::BFloat16 [8192, 200, 32] queries)."""
    raw, types = c.trace.shapes(product)[0] or [], _types(c, product)
    tensors = [i for i, d in enumerate(raw) if isinstance(d, list) and d and i < len(types)]
    return _PRECISION.get(types[tensors[-2]] if len(tensors) >= 2 else next(iter(types), ""), "fp32")


def _heads_averaged(c: Context, means: np.ndarray, key: int, after: int, before: int | None, scores: list) -> int:
    """The aten::mean on this thread, after the values' GEMM and before the thread's next attention, of the scores
    viewed [B, H, T, S] (B x H the scores' leading dimension): nn.MultiheadAttention's need_weights=True averaging
    its attention weights over the heads (average_attn_weights=True, the default). Its row, or -1."""
    ev = c.trace.ev
    mine = means[(thread_keys(ev, means) == key) & (ev.start[means] >= after)
                 & ((ev.start[means] < before) if before is not None else True)]
    return next((m for m in mine.tolist() if len(d := next(iter(_dims(c, m)), [])) == 4 and d[-2:] == scores[-2:]
                 and d[0] * d[1] == int(np.prod(scores[:-2]))), -1)


def _masks_scores(d: list, t: int, k: int, scores: list) -> bool:
    """An input of a mask op that is a [T, S] mask broadcast over the batch and heads (not the scores)."""
    return len(d) >= 2 and d[-2:] == [t, k] and int(np.prod(d)) < int(np.prod(scores))


def backward_windows(c: Context) -> list[tuple[int, int, int, list]]:
    """autograd's backward of each attention: (start, end, thread, the scores' shape), from the product's backward
    before SoftmaxBackward0 to the end of the first one after it, on the backward's thread."""
    ev = c.trace.ev
    nodes = outermost(c, ops_named(c, lambda n: n.startswith(BACKWARD)))
    if not len(nodes):
        return []
    names = [c.trace.name_of(int(r))[len(BACKWARD):] for r in nodes.tolist()]
    key = thread_keys(ev, nodes)
    inner = ops_named(c, lambda x: x in SOFTMAX_BACKWARD)
    out = []
    for i, n in enumerate(names):
        if n not in SOFTMAX_BACKWARD:
            continue
        prev = next((j for j in range(i - 1, -1, -1) if key[j] == key[i] and names[j] in PRODUCT_BACKWARD), None)
        nxt = next((j for j in range(i + 1, len(names)) if key[j] == key[i] and names[j] in PRODUCT_BACKWARD), None)
        if prev is None or nxt is None:
            continue
        shape = next((_dims(c, int(r))[0] for r in inner.tolist()
                      if ev.start[nodes[i]] <= ev.start[r] < ev.end[nodes[i]] and _dims(c, int(r))), [])
        out.append((int(ev.start[nodes[prev]]), int(ev.end[nodes[nxt]]), int(key[i]), shape))
    return out


@dataclass(frozen=True)
class Sdpa(Assumption):
    causal: int = 0                  # of them causal
    backward: int = 0                # their backward found in the trace (training)
    kernel_ns: int = 0               # the kernels the hand-written windows launched
    fused_ns: int = 0                # the fused kernels' predicted time
    tflops: float = 0.0              # the peak they are priced at
    precision: str = ""
    source: str = ""
    found: int = 0                   # hand-written attentions seen, priced or not
    need_weights: int = 0            # of them nn.MultiheadAttention's with need_weights=True (Attention.need_weights)
    device: str = ""                 # where found but not priced: a device the peak table does not know


def apply(c: Context, p, o: Options) -> tuple[Sdpa, dict]:
    found = find(c)
    fused_now = len(ops_named(c, lambda n: n.startswith(FUSED)))
    detail = {"hand_written": len(found), "fused_attention_ops": fused_now, "queued_kernels": 0}
    peaks = peaks_of(c)
    if not found:
        return Sdpa("sdpa", 0, device=c.trace.device_name() or "this device"), detail
    precision = max((a.precision for a in found), key=[a.precision for a in found].count)
    sheet = (peaks.datasheet or peaks) if peaks is not None else None   # (measured only where no datasheet knows it)
    if sheet is not None and precision in sheet.flops_per_s:
        peak, share, source = sheet.flops(precision), FLASH_SHARE, peak_source(sheet)
    else:
        # no peak for this device or precision: the fused kernel at the rate this trace's own GEMMs reach (the
        # attention's two products run at it now; the fused kernel does their FLOPs without the score traffic)
        peak, share, source = trace_gemm_rate(c, precision), {"forward": 1.0, "backward": 1.0}, "trace"
        if not peak:
            return Sdpa("sdpa", 0, found=len(found), device=c.trace.device_name() or "this device",
                        precision=precision if peaks is not None else ""), detail
    forward = [(a.start, a.end, a.thread, NS_PER_S * a.flops / (peak * share["forward"])) for a in found]
    by_shape = {(a.heads, a.queries, a.keys): a for a in found}
    backward = []
    for s, e, k, shape in backward_windows(c):
        a = by_shape.get((int(np.prod(shape[:-2])), shape[-2], shape[-1])) if len(shape) >= 3 else None
        a = a or found[0]
        backward.append((s, e, k, NS_PER_S * BACKWARD_FLOPS * a.flops / (peak * share["backward"])))
    kernel_ns, fused_ns = fuse_windows(c, p, forward, backward)
    # need_weights=False: the module no longer averages the weights over the heads; the mean's kernels go too (fresh10
    # sasrec_mha_need_weights: a [2048, 4, 200, 200] fp32 mean, 1.3 GB read, each attention)
    means = np.array([a.weights_mean for a in found if a.need_weights], np.int64)
    if len(means):
        ev = c.trace.ev
        rows = gpu_of_calls(c, np.flatnonzero(calls_inside(c, ev.start[means], ev.end[means], thread_keys(ev, means))))
        kernel_ns += int(c.g.g_dur[rows].sum())
        remove_gpu_work(c, p, rows)
    queued = mirror_queued(c, p)          # the window's first step, queued before it: its attentions go too
    return (Sdpa("sdpa", len(found), causal=sum(a.causal for a in found), backward=len(backward),
                 device=c.trace.device_name() or "this device",
                 kernel_ns=kernel_ns, fused_ns=fused_ns, tflops=peak / 1e12, precision=precision,
                 source=source, need_weights=sum(a.need_weights for a in found)),
            detail | {"queued_kernels": queued})


def trace_gemm_rate(c: Context, precision: str) -> float:
    """FLOP/s the trace's costed matrix products in this precision reach together (their FLOPs over their time);
    0.0 where none is costed."""
    pts = [p for p in c.roof.points if p.kind == "matmul" and p.dtype == precision and p.device_us > 0]
    secs = sum(p.device_us for p in pts) / 1e6
    return sum(p.flops for p in pts) / secs if secs > 0 else 0.0


def fuse_windows(c: Context, p, *window_sets: list) -> tuple[int, int]:
    """Each host window's GPU work becomes one kernel of the window's given time (its first kernel keeps the slot,
    the rest go with their launches): (the kernels' time before, the fused kernels' time). Windows are
    (start, end, thread key, fused ns); the sets (a forward's, a backward's) are placed one after the other."""
    g = c.g
    kernel_ns = fused_ns = 0
    for windows in window_sets:
        if not windows:
            continue
        rows, first, times = _window_kernels(c, windows)
        kernel_ns += int(g.g_dur[rows].sum())
        remove_gpu_work(c, p, rows[~np.isin(rows, first)])
        p.g_dur[first] = np.round(times).astype(p.g_dur.dtype)
        fused_ns += int(times.sum())
    return kernel_ns, fused_ns


def _window_kernels(c: Context, windows: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The GPU activities launched inside these host windows, the first of each window's, and each first's
    fused-kernel time."""
    g = c.g
    s = np.array([w[0] for w in windows], np.int64)
    e = np.array([w[1] for w in windows], np.int64)
    k = np.array([w[2] for w in windows], np.int64)
    ns = np.array([w[3] for w in windows], np.float64)
    c_key = thread_keys(c.trace.ev, g.c_row)
    win = np.full(g.n_calls, -1, np.int64)
    for key in distinct(k).tolist():
        wi = np.flatnonzero(k == key)
        wi = wi[np.argsort(s[wi])]
        m = np.flatnonzero(c_key == key)
        j = np.searchsorted(s[wi], g.c_start[m], side="right") - 1
        ok = (j >= 0) & (g.c_start[m] < e[wi][np.maximum(j, 0)])
        win[m[ok]] = wi[j[ok]]
    rows = gpu_of_calls(c, np.flatnonzero(win >= 0))
    w_of = win[g.g_call[rows]]
    first_w, at = np.unique(w_of, return_index=True)
    return rows, rows[at], ns[first_w]


def says(a: Sdpa) -> str:
    if a.count == 0 and a.found and a.precision:
        return (f"{a.found} attentions written by hand in this trace, in {a.precision}, a precision whose peak the "
                f"table does not give for {a.device}: what a fused kernel would take is unknown")
    if a.count == 0 and a.found:
        return (f"{a.found} attentions written by hand in this trace, but no peak table entry for {a.device}: what "
                "a fused kernel would take is unknown (tracetriage capture ceilings measures the device's rates)")
    if a.count == 0:
        return ("no attention written by hand in this trace (softmax between two GEMMs over [..., T, S] scores) "
                "that a fused kernel could replace")
    causal = " causal" if a.causal == a.count else ""
    some = f" ({units.integer(a.causal)} of them causal)" if 0 < a.causal < a.count else ""
    back = f" and their {units.integer(a.backward)} backward passes" if a.backward else ""
    shares = (f"{units.share(FLASH_SHARE['forward'])} (forward) and {units.share(FLASH_SHARE['backward'])} "
              "(backward)" if a.backward else units.share(FLASH_SHARE["forward"]))
    rate = (f"the {units.tflops(a.tflops)} this trace's {a.precision} matrix products reach (no peak table entry "
            f"for {a.device})" if a.source == "trace" else
            f"{shares} of the {units.tflops(a.tflops)} {a.precision} peak ({SOURCE_WORDS[a.source]})")
    mha = a.need_weights * 2 > a.count
    what = (f"{causal} attentions of nn.MultiheadAttention called with need_weights=True" if mha
            else f" hand-written{causal} attentions")
    mean = ", their weights' mean over the heads (aten::mean) included: it goes" if mha else ""
    return (f"the {units.integer(a.count)}{what}{some}{back} "
            f"({units.duration_ns(a.kernel_ns)} of kernels{mean}) become fused kernels priced at their FLOPs at "
            f"{rate}, the scores never written: {units.duration_ns(a.fused_ns)}")


def hand_written(m: Measured) -> int:
    return m.whatif.lever("sdpa").detail.get("hand_written", 0)


def fused_grew(before: Measured, after: Measured) -> bool:
    return after.whatif.lever("sdpa").detail.get("fused_attention_ops", 0) > \
        before.whatif.lever("sdpa").detail.get("fused_attention_ops", 0)


def change(a: Sdpa) -> str:
    if getattr(a, "need_weights", 0) * 2 > a.count:
        # the module's own path: with need_weights=False nn.MultiheadAttention calls SDPA itself (fresh10
        # sasrec_mha_need_weights: [8192, 200, 200] scores and an aten::mean over the 4 heads, 1.87x measured)
        return ("attn(q, k, v, need_weights=False) on the nn.MultiheadAttention call (need_weights=True, the "
                "default, writes the [B, H, T, S] weights and averages them over the heads): the module then runs "
                "F.scaled_dot_product_attention's fused kernel itself")
    causal = ", is_causal=True" if a.causal else ""
    return (f"y = torch.nn.functional.scaled_dot_product_attention(q, k, v{causal}) in place of "
            "softmax(q @ k.transpose(-2, -1) * scale) @ v (Hugging Face: attn_implementation=\"sdpa\")")


SPEC = LeverSpec(
    name="sdpa", effort=1, cause=None, apply=apply, says=says, words="fused attention (SDPA)",
    fix="F.scaled_dot_product_attention in place of softmax(q @ k^T * scale) @ v written by hand",
    recognise=Recognise(order=1, evidence="hand_written_attention", because="its hand-written softmax(q @ k^T) @ v "
                        "became aten::scaled_dot_product_attention", amount=hand_written,
                        acted=lambda m: m.kernel_busy_ns, applied=went, also=fused_grew),
    applied_words="scaled_dot_product_attention (sdpa)", weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change="y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) in place of "
                     "softmax(q @ k.transpose(-2, -1) * scale) @ v (Hugging Face: attn_implementation=\"sdpa\")",
              evidence="a softmax over [..., T, S] scores between the GEMM that makes them (aten::matmul/bmm of "
                       "[..., T, d] by [..., d, S]) and the GEMM that reads them ([..., T, S] by [..., S, dv]), a "
                       "square [T, S] mask in between for causal; SoftmaxBackward0 between BmmBackward0s in training",
              applies="every device (flash kernels for fp16/bf16 on Ampere and later, memory-efficient kernels "
                      "elsewhere, fp32 included); PyTorch 2.0 and later",
              model="the windows' kernels go; one fused kernel each: the attention FLOPs (2.5x backward, about "
                    "half where causal) at the inputs' precision's datasheet peak x the share PyTorch's fused kernels "
                    "reach (0.29 forward, 0.22 backward: measured on an H200)",
              guide="past the guides: torch.nn.functional.scaled_dot_product_attention (PyTorch 2.0); the "
                    "Transformer tutorials' SDPA recipe", line=change, ops=("aten::_softmax", "aten::softmax")))
