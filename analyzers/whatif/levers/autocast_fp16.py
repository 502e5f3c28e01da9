"""autocast_fp16: the forward under torch.autocast(device_type, dtype=torch.float16), with a GradScaler in training,
on a device whose tensor cores run fp16 but not bf16 (Volta and Turing: V100, T4, the RTX 20 series).

What the construct looks like in any trace: the same as autocast_bf16's -- fp32 or TF32 GEMM/convolution kernels
(cuBLAS/cuDNN names with sgemm, f32f32_f32f32_f32, ...) -- on a device whose peak table row gives fp16 a rate above
fp32's and bf16 none (Turing and Volta compute bf16 in fp32: the datasheet table gives bf16 the fp32 rate). There
autocast_bf16 rightly prices nothing ("no faster than fp32"), and a user of such a card turns the fp16 knob instead.

Fix and price: autocast_bf16's replay (autocast_bf16.replay) at the fp16 peak: each fp32/TF32 GEMM/convolution
kernel at its precision's peak over the fp16 peak; the casts autocast makes, 2 bytes an element as in bf16, and their
host time. In training fp16 also needs loss scaling (torch.amp.GradScaler: scale, unscale_, a found-inf check a
step): not priced (a few small kernels a step), named in the knob.

What would make it fire falsely: a device with fast bf16 (Ampere and later, MI200/MI300) -- there bf16 is the knob
(no loss scaling, fp32's range) and this lever counts nothing, so the two never both advise; a device without a peak
table entry (unknown rates) -- counts nothing, autocast_bf16 says why; a model already in fp16 (no fp32 GEMM kernel).
"""
from __future__ import annotations

import dataclasses

from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers import autocast_bf16
from tracetriage.analyzers.whatif.levers.autocast_bf16 import BACKWARD, Autocast, cast_words, fp32_matrix_rows, replay
from tracetriage.analyzers.whatif.levers.knob import has_fast, kernel_rows, ops_named, peaks_of
from tracetriage.analyzers.whatif.levers.spec import (
    SOURCE_WORDS,
    Context,
    Knob,
    LeverSpec,
    Options,
    Recognise,
    replay_figure,
    replay_figure_grew,
    went,
)

NAME = "autocast_fp16"
CHANGE = "with torch.autocast(\"cuda\", dtype=torch.float16): around the forward and the loss"
SCALER = (", and a torch.amp.GradScaler for the backward (scaler.scale(loss).backward(); scaler.step(opt); "
          "scaler.update())")


SCALER_UNPRICED = "; the GradScaler's few kernels a step are not counted"


def change_line(a: Autocast) -> str:
    """The knob as this trace needs it: loss scaling only where a backward runs."""
    return CHANGE + (SCALER if a.trains else "")


def trains(c: Context) -> bool:
    """A backward runs: autograd's nodes recorded, or (ops recorded without them) cuDNN's weight- and data-gradient
    kernels (wgrad, dgrad) or ATen's *_backward kernels. fp16 without loss scaling underflows small gradients."""
    if len(ops_named(c, lambda n: n.startswith(BACKWARD))):
        return True
    return bool(len(kernel_rows(c, lambda n: any(k in n.lower() for k in ("wgrad", "dgrad", "backward")))))


def apply(c: Context, p, o: Options) -> tuple[Autocast, dict]:
    peaks = peaks_of(c)
    if peaks is None or has_fast(peaks, "bf16") or not has_fast(peaks, "fp16"):
        # bf16 is the knob here (or the rates are unknown): autocast_bf16 prices it or says why not
        return Autocast(NAME, 0, device=c.trace.device_name() or ""), {"fp32_kernels": len(fp32_matrix_rows(c))}
    a, detail = replay(c, p, "fp16", NAME)
    return dataclasses.replace(a, trains=trains(c)), detail


def says(a: Autocast) -> str:
    if a.count == 0:
        return ("not weighed: no fp32 GEMM or convolution on a device with fp16 tensor cores and no bf16 ones "
                "(where bf16 runs fast, autocast to bf16 is the knob)")
    what = "GEMM, convolution and attention" if a.attention else "GEMM/convolution"
    return (f"the {units.integer(a.count)} fp32/TF32 {what} kernels ({units.duration_ns(a.kernel_ns)}) run "
            f"in fp16 at the {units.tflops(a.bf16_tflops)} peak ({SOURCE_WORDS[a.source]}), each keeping its share "
            f"of its precision's peak, {cast_words(a)}{SCALER_UNPRICED if a.trains else ''}; other kernels "
            "keep their time")


SPEC = LeverSpec(
    name=NAME, effort=1, cause=None, apply=apply, says=says, words="autocast to fp16",
    fix="the forward and loss under torch.autocast('cuda', dtype=torch.float16), a GradScaler in training",
    recognise=Recognise(order=0, evidence="fp32_matrix_kernels", because="its fp32 GEMM kernels became fp16 ones",
                        amount=replay_figure(NAME, "fp32_kernels"),
                        acted=lambda m: m.kernel_busy_ns, applied=went,
                        also=replay_figure_grew(NAME, "bf16_kernels")),
    applied_words="autocast to fp16", weighed_only_if_found=True, experiment=Experiment.TURN_KNOB,
    knob=Knob(change=CHANGE + ", and in training a torch.amp.GradScaler",
              evidence="fp32 or TF32 GEMM/convolution kernels on a device whose tensor cores run fp16 but not bf16 "
                       "(Volta, Turing)",
              applies="fp32 models on V100, T4 and the RTX 20 series; where bf16 runs fast (Ampere and later), "
                      "autocast to bf16 instead",
              model=autocast_bf16.SPEC.knob.model.replace("the bf16 peak", "the fp16 peak").replace(
                  "bf16 ones into", "fp16 ones into") + "; the GradScaler's kernels not counted",
              guide="Performance Tuning Guide: use mixed precision and AMP; torch.amp (GradScaler)", needs="fp16",
              line=change_line))
