"""Bounds guessed from kernels' names, said as guesses.

A trace whose ops recorded no shapes (record_shapes off, or a runtime-only capture with no CPU op at all) costs no
kernel: the roofline places them by their names alone (`sgemm` compute, `elementwise_kernel` memory, a few-µs kernel
latency). heldout-user18's captures read "of kernel time, 44% is compute-bound and 41% memory-bound" (swin_a4000_cold,
no CPU op recorded) as if measured, and dynavis_rtx6000, its kernels elementwise Gaussians on 131 M-element tensors,
withheld any bound ("nothing else to decide by") where its names say memory-bound plainly. The split is said with
where it comes from; a span whose kernel time is mostly memory-bound (or compute-bound: GEMM kernels with their
tiles) by names says that bound as a guess.

What would make it fire falsely: a name that misleads (a fused Triton kernel named for its first op); the names'
rules live in the roofline (analyses.roofline), and the words never give a rate for a guessed bound.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import share
from tracetriage.analyzers.voice.common import uncosted_phrase
from tracetriage.analyzers.voice.said import claim

GUESSED_SAID = 0.5   # this share of the split placed by names: the split is said to be a guess


def mix_source(v) -> str:
    """'by the kernels' names (a guess: no op's shapes cost them), ' before a split that rests mostly on names with
    no rate measured beside it (a split whose costed kernels give a rate says that rate: gpt-graphs' replays)."""
    guessed = v.guessed_share >= GUESSED_SAID and v.achieved_tflops is None and v.achieved_gbps is None
    return "by the kernels' names (a guess: no op's shapes cost them), " if guessed else ""


def _named_share(v, bound: int) -> float:
    """The share of the non-collective kernel time whose names read bound (0: compute, 1: memory)."""
    voting = v.kernel_us - v.comm_us
    return v.guessed_us[bound] / voting if voting > 0 else 0.0


def memory_line(v, trace=None) -> str:
    """The Regime line of a span without shapes whose kernel time is mostly memory-bound by the kernels' names."""
    x = _named_share(v, 1)
    return (f"Regime: memory-bound by the kernels' names, a guess: "
            f"{claim('regime.memory_by_names_share', x, share(x))} of kernel time is in kernels whose names read "
            f"memory-bound (elementwise, reductions, copies); no rate is "
            f"measured, because {uncosted_phrase(v, trace=trace)}.")


def compute_line(v, trace=None) -> str:
    """The Regime line of a span without shapes whose kernel time is mostly compute-bound by the kernels' names."""
    x = _named_share(v, 0)
    return (f"Regime: compute-bound by the kernels' names, a guess: "
            f"{claim('regime.compute_by_names_share', x, share(x))} of kernel time is in matrix kernels (GEMMs, "
            f"convolutions) whose tile sizes read compute-bound; no rate is measured, because "
            f"{uncosted_phrase(v, trace=trace)}.")


def split_line(v, trace=None) -> str:
    """The Regime line of a span without shapes whose kernel time the names place mostly, split between the bounds."""
    c, m = _named_share(v, 0), _named_share(v, 1)
    return (f"Regime: split by the kernels' names, a guess: "
            f"{claim('regime.compute_by_names_share', c, share(c))} of kernel time is in matrix kernels (GEMMs, "
            f"convolutions) whose tile sizes read compute-bound and "
            f"{claim('regime.memory_by_names_share', m, share(m))} in kernels whose names read memory-bound "
            f"(elementwise, dequantizes, copies); no rate is measured, because {uncosted_phrase(v, trace=trace)}.")
