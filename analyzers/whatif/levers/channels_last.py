"""channels_last: convolution models in NHWC memory order (model.to(memory_format=torch.channels_last)).

cuDNN's tensor-core convolutions run in NHWC. Fed NCHW tensors (PyTorch's default order) they
transpose every input in and every output back: the trace shows it as cuDNN's own layout kernels
(`nchwToNhwcKernel`, `nhwcToNchwKernel`) around the convolutions, and ATen's batch norm and pooling
take their NCHW kernels (`batch_norm_*_kernel`, `*_nchw`) where a channels_last twin exists. In the graph:
  1. the layout kernels go, with their launches' dispatch on the host;
  2. each NCHW batch-norm/pooling kernel moves its bytes (as the roofline charges them) at the rate
     this trace's memory-bound kernels reach, where that is faster than it ran (its channels_last twin
     streams the tensor); a kernel with no bytes charged keeps its time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.verdicts import Experiment
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
class ChannelsLast(Assumption):
    layout_ns: int = 0               # the layout kernels' time
    nchw_kernels: int = 0            # NCHW batch-norm/pooling kernels sped to the memory rate
    nchw_ns: int = 0
    volumetric: bool = False         # 3-D convolutions (5-D inputs): the format is channels_last_3d


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
    remove_gpu_work(c, p, layout)
    nchw = kernel_rows(c, is_nchw_kernel)
    kb, rate = c.kernel_bytes, c.memory_rate
    sped = np.zeros(0, np.int64)
    if len(nchw) and kb is not None and rate:
        b = kb[g.g_row[nchw]]
        at_rate = np.ceil(b / rate).astype(np.int64)
        faster = (b > 0) & (at_rate < g.g_dur[nchw])
        sped = nchw[faster]
        p.g_dur[sped] = at_rate[faster]
    return (ChannelsLast("channels_last", len(layout), layout_ns=layout_ns, nchw_kernels=len(sped),
                         nchw_ns=int(g.g_dur[sped].sum()), volumetric=_volumetric(c)),
            {"layout_kernels": len(layout), "nchw_kernels": len(nchw)})


def says(a: ChannelsLast) -> str:
    if a.count == 0:
        return "no cuDNN layout transposes (nchwToNhwc/nhwcToNchw) in this trace: the convolutions already run NHWC"
    nchw = (f"; {units.integer(a.nchw_kernels)} NCHW batch-norm/pooling kernels ({units.duration_ns(a.nchw_ns)}) "
            "stream their bytes at this trace's memory rate" if a.nchw_kernels else "")
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
