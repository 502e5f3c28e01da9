"""kernels_2x: every kernel takes half as long (the Amdahl check of faster kernels).

Not a claim that they can be: it is the headroom kernel work holds, stated beside the fixes a user
can make. diff replays it with kernels as much faster as the change measured.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.model.trace import KERNEL
from tracetriage.analyzers.whatif.levers.spec import Assumption, Context, LeverSpec, Measured, Options, Recognise


@dataclass(frozen=True)
class KernelsFaster(Assumption):
    kernel_scale: float = 0.5        # the share of its time each kernel keeps


def apply(c: Context, p, o: Options) -> tuple[KernelsFaster, dict]:
    """Every kernel takes `o.kernel_scale` of its time (half, by default)."""
    scale = o.kernel_scale
    k = c.g.g_cat == KERNEL
    p.g_dur[k] = np.round(p.g_dur[k] * scale).astype(p.g_dur.dtype) if scale != 0.5 else p.g_dur[k] // 2
    return KernelsFaster("kernels_2x", int(k.sum()), kernel_scale=scale), {"kernels": int(k.sum())}


def says(a: KernelsFaster) -> str:
    keeps = "half as long" if a.kernel_scale == 0.5 else f"{a.kernel_scale:.2f} of its time"
    return f"every kernel takes {keeps}; copies, memsets, launches and host time stay"


def kernel_busy(m: Measured) -> int:
    return m.kernel_busy_ns


SPEC = LeverSpec(
    name="kernels_2x", effort=3, cause=None, apply=apply, says=says, words="faster kernels",
    fix="every big kernel does half the FLOPs (half the K of a matmul, half the elements of an elementwise op)",
    recognise=Recognise(order=4, evidence="kernel_time", because="its kernel time fell", amount=kernel_busy,
                        acted=lambda m: m.kernel_busy_ns,
                        applied=lambda before, after: after <= 0.8 * before,
                        as_measured=lambda before, after: Options(kernel_scale=after / before),
                        given=" with kernels that much faster"),
    applied_words="faster kernels", prediction_words=" if every kernel took half as long", headroom=True)
