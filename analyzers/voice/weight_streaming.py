"""The Next of a memory-bound span whose bytes are weights read once a step (a decode step: a few rows against big
weight matrices): fewer weight bytes, or more rows per read, not fusion."""
from __future__ import annotations

from tracetriage.analyzers.model.units import integer, share
from tracetriage.analyzers.voice.said import claim


def weight_streaming_next(w, pk, why: str) -> dict[str, str]:
    """Memory-bound time held by products of a few rows with a big weight matrix (a decode step): their bytes are the
    weights, read once a step, so fusing the elementwise ops moves little; fewer weight bytes or more rows per read
    do (fresh5 decode_mlp_compile_roof: 4 rows x [8192 x 28672] bf16 at 91% of HBM)."""
    fp8 = pk is not None and "fp8" in pk.flops_per_s and pk.flops("fp8") > 1.05 * pk.flops("bf16")
    formats = "int8 or fp8" if fp8 else "int8"
    lever = (f"read fewer weight bytes: store the weights in {formats} (weight-only quantization, e.g. torchao's "
             "int8_weight_only: half the bytes of bf16), or serve more sequences per step so each weight read feeds "
             "more rows")
    held = claim("next.weight_streaming_share", w.share, share(w.share))
    why += (f"; {held} of it is matrix products of {integer(w.rows)} row{'s' if w.rows != 1 else ''} against "
            f"{integer(w.k)}×{integer(w.n)} weights (the biggest: {integer(w.calls)} calls), whose bytes are the "
            "weights, read once a step")
    return {"lever": lever, "why": why,
            "waste": "fusing the elementwise ops or tensor-core tuning: the weights' bytes are the limit"}
