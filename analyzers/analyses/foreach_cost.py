"""FLOPs and bytes of torch's multi-tensor ops (aten::_foreach_*, aten::_fused_adam_/_fused_adamw_/_fused_sgd_).

An optimizer step with foreach=True (torch.optim's default on CUDA) runs each line of its update as one
aten::_foreach_<op> over every parameter: Adam's lerp_, mul_, addcmul_, sqrt, div_, add_, addcdiv_ are seven
passes over the parameter list, each reading its tensor lists and writing one. With fused=True the whole update is
one aten::_fused_adam_ pass: param, grad, exp_avg, exp_avg_sq read, param, exp_avg, exp_avg_sq written.

Any trace shows these as ops whose "Input type" holds "TensorList" entries; torch records each list's shapes
as a list of lists where it records them at all (some versions write [] per list: then nothing is costed here and
the kernel's name, multi_tensor_apply_kernel, places it as memory-bound). The cost is the minimum work:
every tensor list read once, the first list written once (in place, or an output list of the same shapes), a
FLOP or two per element. A TensorList records no dtype: fp32 is assumed (optimizer state is fp32 even under
mixed precision), which errs high by 2x for a 16-bit model's own lists.

What would make it wrong: a list argument that is not read whole (none of torch's foreach ops slices), or a
foreach op over tiny lists (step counters), whose cost is right but whose kernels are launch-bound.
"""
from __future__ import annotations

import math

from tracetriage.analyzers.analyses.opargs import Arg, Malformed, bytes_of

FOREACH = "_foreach_"
FUSED_OPTIMIZER_OPS = ("_fused_adam", "_fused_adamw", "_fused_sgd", "_fused_adagrad")
ASSUMED_DTYPE = "fp32"
FOREACH_KIND = "foreach"   # the OpCost kind: no fusion ledger chains it, and its rate never raises a peak
# FLOPs per element of the first list: an update line does one or two arithmetic operations per element
_TWO_FLOPS = ("addcmul", "addcdiv", "lerp", "sqrt", "exp", "pow")
FUSED_FLOPS = 12          # Adam's whole update per element (two lerps, a square, a root, a divide, the step)


def is_multi_tensor(base: str) -> bool:
    """An op that walks tensor lists: `base` is the op's name without "aten::"."""
    return base.startswith(FOREACH) or base.startswith(FUSED_OPTIMIZER_OPS)


def foreach_cost(base: str, args: list[Arg]) -> tuple[float, float, str, str]:
    """The op's (flops, bytes, dtype, kind 'foreach': no fusion ledger chains it); Malformed without shapes."""
    lists = [a for a in args if a.kind == "tensorlist"]
    sizes = [sum(math.prod(d) for d in a.dims) for a in lists]
    if not lists or not sizes[0]:
        raise Malformed
    elem_bytes = bytes_of(ASSUMED_DTYPE)
    if base.startswith(FUSED_OPTIMIZER_OPS):
        # the step's state lists (param, grad, exp_avg, exp_avg_sq, ...) are read and all but the grads written
        reads = sum(sizes)
        writes = reads - (sizes[1] if len(sizes) > 1 else 0)
        return float(FUSED_FLOPS * sizes[0]), float((reads + writes) * elem_bytes), ASSUMED_DTYPE, FOREACH_KIND
    stem = base[len(FOREACH):].rstrip("_")
    flops = (2 if stem.startswith(_TWO_FLOPS) else 1) * sizes[0]
    # every list read once, the first list's shapes written once (in place or into a new list)
    return float(flops), float((sum(sizes) + sizes[0]) * elem_bytes), ASSUMED_DTYPE, FOREACH_KIND
