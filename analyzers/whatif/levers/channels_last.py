"""channels_last: convolution models in NHWC memory order (model.to(memory_format=torch.channels_last)).

cuDNN's tensor-core convolutions run in NHWC. Fed NCHW tensors (PyTorch's default order) they
transpose every input in and every output back: the trace shows it as cuDNN's own layout kernels
(`nchwToNhwcKernel`, `nhwcToNchwKernel`) around the convolutions, and ATen's batch norm and pooling
take their NCHW kernels (`batch_norm_*_kernel`, `*_nchw`) where a channels_last twin exists. In the graph:
  1. the layout kernels go, with their launches' dispatch on the host;
  2. each NCHW batch-norm kernel becomes its channels_last twin (BN_TWINS). Both read and write the same
     tensors (the passes over the activation below), but the NCHW kernels give one thread block to a channel
     (a grid of C blocks: 64 channels fill half of an H100's 132 SMs) and reach 0.12-0.24 of the rate this
     trace's elementwise kernels stream at, where the twins tile (N*H*W, C) and reach the shares below;
     a kernel whose op recorded no shapes (work queued before the window) is sped as its family's others are;
  3. NCHW pooling kernels, and a batch-norm kernel of no family below, move their bytes (as the roofline charges
     them) at the rate this trace's memory-bound kernels reach, where that is faster than it ran; a kernel with
     no bytes charged keeps its time.
It applies only where the format can reach the convolutions (levers/conv_layout.py): not to a model whose own
convolutions are 1-D (the 4-D tensors cuDNN transposes are its unsqueeze of them), nor where most convolutions feed
an InstanceNorm, which copies its input back to NCHW; there it predicts nothing and says why. The batch-norm kernels
InstanceNorm runs keep their NCHW form.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.dtypes import DTYPE_BYTES, normalise_dtype
from tracetriage.analyzers.model.trace import NONE
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.conv_layout import conv_layout, under_undoers
from tracetriage.analyzers.whatif.levers.knob import kernel_rows, ops_named, remove_gpu_work
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

LAYOUT = ("nchwToNhwc", "nhwcToNchw")


def is_layout_kernel(name: str) -> bool:
    return any(k in name for k in LAYOUT)


def is_nchw_kernel(name: str) -> bool:
    n = name.lower()
    return ("batch_norm" in n and "channels_last" not in n and "kernel<" in n and "elementwise" not in n) \
        or "_nchw<" in n


@dataclass(frozen=True)
class Twin:
    passes: int      # passes over the activation tensor (each a read or a write of N*C*H*W elements)
    share: float     # of the trace's elementwise streaming rate the channels_last twin reaches


# The NCHW kernel families of ATen's batch norm (Normalization.cuh) and what their twins do. Passes: statistics read
# x once; the transform reads x and writes y; the backward reads grad_out and x for its per-channel sums, then both
# again to write grad_in (the twins batch_norm_backward_reduce/elemt_channels_last make the same five passes).
# Shares: the twins' rate over the elementwise kernels' (3.15 TB/s) in fresh4 resnet50_channels_last-after (H100,
# bf16 training, batch 128): statistics 0.19 (a Welford reduction, not a stream), transform 0.68, backward 0.67.
# Checked on traces/fixes/knobs channels_last_resnet50 (H200, eval: the transform only).
BN_TWINS = {
    "batch_norm_collect_statistics_kernel": Twin(1, 0.19),
    "batch_norm_transform_input_kernel": Twin(2, 0.68),
    "batch_norm_backward_kernel": Twin(5, 0.67),
}
ELEMENTWISE = "vectorized_elementwise_kernel"


def _family(name: str) -> str | None:
    return next((f for f in BN_TWINS if f + "<" in name), None)


def activation_bytes(c: Context, op: int) -> int:
    """Bytes of one pass over the op's largest 4-D or 5-D input (the activation), from its recorded shapes."""
    dims, types, _ = c.trace.shapes(op)
    best = 0
    for d, t in zip(dims or [], types or []):
        if isinstance(d, list) and len(d) in (4, 5) and all(isinstance(x, int) for x in d):
            best = max(best, int(np.prod(d)) * DTYPE_BYTES.get(normalise_dtype(t) or "", 0))
    return best


def stream_rate(c: Context) -> float | None:
    """Bytes per ns that this trace's vectorized elementwise kernels (ATen's contiguous loop, >= 1 MB charged) reach,
    their median: the rate a well-tiled kernel streams at on this GPU, in this trace (the unrolled loop, ATen's
    fallback for strided or casting inputs, is left out: it is one of the slow kernels, not the yardstick)."""
    kb = c.kernel_bytes
    if kb is None:
        return None
    rows = kernel_rows(c, lambda n: ELEMENTWISE in n)
    b = kb[c.g.g_row[rows]]
    d = c.g.g_dur[rows].astype(np.float64)
    ok = (b >= (1 << 20)) & (d > 0)
    return float(np.median(b[ok] / d[ok])) if ok.any() else None


def _bn_twins(c: Context, p, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Speed the NCHW batch-norm kernels of a known family to their twins' time; returns (sped rows, rows left)."""
    g = c.g
    rate = stream_rate(c)
    fam = np.array([_family(c.trace.names[c.trace.ev.name[g.g_row[r]]]) or "" for r in rows.tolist()], dtype=object)
    known = fam != ""
    if rate is None or not known.any():
        return rows[:0], rows
    new = g.g_dur[rows].astype(np.float64)
    priced = np.zeros(len(rows), bool)
    linked = (g.g_call[rows] >= 0) & g.g_linked[rows]
    ops = np.where(linked, c.trace.op_of[g.c_row[np.maximum(g.g_call[rows], 0)]], NONE)
    for i in np.flatnonzero(known & (ops != NONE)).tolist():
        b = activation_bytes(c, int(ops[i]))
        if b:
            tw = BN_TWINS[fam[i]]
            new[i] = min(new[i], tw.passes * b / (tw.share * rate))
            priced[i] = True
    for f in BN_TWINS:                      # no shapes: the family's median speed-up
        own = fam == f
        done = own & priced
        if done.any():
            ratio = float(np.median(new[done] / np.maximum(g.g_dur[rows][done], 1)))
            rest = own & ~priced
            new[rest] = g.g_dur[rows][rest] * ratio
            priced |= rest
    sped = rows[priced]
    p.g_dur[sped] = np.ceil(new[priced]).astype(p.g_dur.dtype)
    return sped, rows[~priced]


@dataclass(frozen=True)
class ChannelsLast(Assumption):
    layout_ns: int = 0               # the layout kernels' time
    nchw_kernels: int = 0            # NCHW batch-norm/pooling kernels sped (to their twins' rate or the memory rate)
    nchw_ns: int = 0
    twin_ns: int = 0                 # their predicted time
    volumetric: bool = False         # 3-D convolutions (5-D inputs): the format is channels_last_3d
    one_d: bool = False              # the model's convolutions are 1-D (3-D inputs): no memory format applies
    convs: int = 0                   # the model's forward convolutions (conv_layout)
    undone: int = 0                  # of them, followed by an op that lays the activation out in NCHW again


CONV_OPS = ("aten::cudnn_convolution", "aten::convolution", "aten::_convolution", "aten::conv3d")
SHAPES_READ = 32                     # convolution ops whose Input Dims are read: the model's layers repeat


def _volumetric(c: Context) -> bool:
    """The convolutions take 5-D inputs (Conv3d): `torch.channels_last` raises on them ("required rank 4 tensor";
    fresh4 r3d_cudnn_benchmark was told it), `torch.channels_last_3d` is their format."""
    rows = ops_named(c, CONV_OPS.__contains__)[:SHAPES_READ]
    dims = [c.trace.shapes(int(r))[0] for r in rows.tolist()]
    first = [d[0] for d in dims if d and isinstance(d[0], list) and d[0]]
    return bool(first) and sum(len(x) == 5 for x in first) > len(first) / 2


def apply(c: Context, p, o: Options) -> tuple[ChannelsLast, dict]:
    g = c.g
    layout = kernel_rows(c, is_layout_kernel)
    if not len(layout):
        return ChannelsLast("channels_last", 0), {"layout_kernels": 0}
    layout_ns = int(g.g_dur[layout].sum())
    lay = conv_layout(c)
    if lay.one_d or lay.mostly_undone:   # no format to set, or one the ops between the convolutions undo
        return (ChannelsLast("channels_last", 0, layout_ns=layout_ns, one_d=lay.one_d, convs=lay.convs,
                             undone=lay.undone, volumetric=lay.rank == 5),
                {"layout_kernels": 0, "transposes_seen": len(layout)})
    remove_gpu_work(c, p, layout)
    nchw = kernel_rows(c, is_nchw_kernel)
    nchw = nchw[~under_undoers(c, nchw)]     # InstanceNorm's batch-norm kernels run on its NCHW view whatever
    twins, rest = _bn_twins(c, p, nchw)
    kb, rate = c.kernel_bytes, c.memory_rate
    sped = rest[:0]
    if len(rest) and kb is not None and rate:
        b = kb[g.g_row[rest]]
        at_rate = np.ceil(b / rate).astype(np.int64)
        faster = (b > 0) & (at_rate < g.g_dur[rest])
        sped = rest[faster]
        p.g_dur[sped] = at_rate[faster]
    sped = np.concatenate([twins, sped])
    return (ChannelsLast("channels_last", len(layout), layout_ns=layout_ns, nchw_kernels=len(sped),
                         nchw_ns=int(g.g_dur[sped].sum()), twin_ns=int(p.g_dur[sped].sum()), volumetric=_volumetric(c)),
            {"layout_kernels": len(layout), "nchw_kernels": len(nchw)})


def says(a: ChannelsLast) -> str:
    if a.count == 0 and a.one_d:
        return (f"the model's {units.integer(a.convs)} convolutions are 1-D (3-D inputs and weights): "
                "torch.channels_last takes 4-D tensors only; cuDNN's layout transposes "
                f"({units.duration_ns(a.layout_ns)}) come from its own unsqueeze of them to 2-D")
    if a.count == 0 and a.convs and 2 * a.undone > a.convs:
        fmt = "channels_last_3d" if a.volumetric else "channels_last"
        return (f"{units.integer(a.undone)} of the model's {units.integer(a.convs)} convolutions feed an InstanceNorm, "
                f"which copies its input back to NCHW (input.contiguous()): with torch.{fmt} cuDNN's layout "
                f"transposes ({units.duration_ns(a.layout_ns)}) would move into those copies, not go")
    if a.count == 0:
        return "no cuDNN layout transposes (nchwToNhwc/nhwcToNchw) in this trace: the convolutions already run NHWC"
    nchw = (f"; {units.integer(a.nchw_kernels)} NCHW batch-norm/pooling kernels ({units.duration_ns(a.nchw_ns)}, "
            "one thread block a channel) run as their channels_last twins "
            f"({units.duration_ns(a.twin_ns)})" if a.nchw_kernels else "")
    return (f"cuDNN's {units.integer(a.count)} layout transposes ({units.duration_ns(a.layout_ns)}) go, the "
            f"convolutions reading and writing NHWC directly{nchw}")


CHANGE_2D = "model = model.to(memory_format=torch.channels_last) and x = x.to(memory_format=torch.channels_last)"
CHANGE_3D = ("model = model.to(memory_format=torch.channels_last_3d) and x = x.to(memory_format="
             "torch.channels_last_3d) (3-D convolutions: torch.channels_last takes 4-D tensors only)")


def layout_kernels(m: Measured) -> int:
    return m.whatif.lever("channels_last").detail.get("layout_kernels", 0)


SPEC = LeverSpec(
    name="channels_last", effort=1, cause=None, apply=apply, says=says, words="channels_last memory format",
    fix="model and input .to(memory_format=torch.channels_last)",
    recognise=Recognise(order=1, evidence="layout_kernels", because="cuDNN's NCHW<->NHWC transposes went",
                        amount=layout_kernels, acted=lambda m: m.kernel_busy_ns, applied=went),
    applied_words="channels_last", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE_2D,
              line=lambda a: CHANGE_3D if getattr(a, "volumetric", False) else CHANGE_2D,
              evidence="cuDNN layout kernels nchwToNhwcKernel / nhwcToNchwKernel around the convolutions; ATen's "
                       "NCHW batch-norm (batch_norm_*_kernel without channels_last) and *_nchw pooling kernels",
              applies="4-D convolution models on GPUs with tensor cores (fp16/bf16 on Volta and later, TF32 on "
                      "Ampere and later)",
              model="the layout kernels and their launches go; NCHW batch-norm/pooling kernels move their "
                    "bytes at this trace's memory-bound rate",
              guide="Performance Tuning Guide: use channels_last memory format for computer vision models; "
                    "(beta) Channels Last Memory Format in PyTorch"))
