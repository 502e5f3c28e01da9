"""Whether a trace's attention takes a mask: the one sign in a trace that its batches may hold padded positions.

"Skip the padded positions (variable-length attention in place of padded batches)" is advice for a batch of sequences
of uneven length, padded to one and masked: a text encoder's. A ViT's patches (dinov2: 257 a image, every image alike)
or a causal decoder fed equal lengths pad nothing, and their attention runs without a mask. The fused attention ops
take the mask as their fourth input (scaled_dot_product_attention's attn_mask, the efficient and cuDNN kernels'
attn_bias); with record_shapes it has dims where a mask was passed and none where it was not. A hand-written attention
(softmax between two GEMMs) masks with masked_fill. Without shapes nothing tells: no mask is claimed.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.names import name_flags
from tracetriage.analyzers.model.trace import CPU_OP

MASK_ARG = 3     # attn_mask / attn_bias: the fourth input of the fused attention ops
FUSED = frozenset({"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_efficient_attention",
                   "aten::_scaled_dot_product_cudnn_attention", "aten::_efficient_attention_forward",
                   "aten::_cudnn_attention_forward", "aten::_scaled_dot_product_flash_attention_for_cpu"})
MASKED_FILL = frozenset({"aten::masked_fill", "aten::masked_fill_"})


def attention_masked(trace) -> bool:
    """A fused attention op with a mask among its inputs, or a masked_fill in a trace that runs attention by hand."""
    ev = trace.ev
    ops = np.flatnonzero(ev.cat == CPU_OP)
    if not len(ops):
        return False
    fused = ops[name_flags(trace, ops, lambda n: n in FUSED)]
    for r in fused.tolist():
        dims = trace.shapes(r)[0]
        if dims and len(dims) > MASK_ARG and isinstance(dims[MASK_ARG], list) and dims[MASK_ARG]:
            return True
    return not len(fused) and bool(name_flags(trace, ops, lambda n: n in MASKED_FILL).any())
