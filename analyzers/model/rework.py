"""Work the step re-does, as the op table's shapes show it (found by analyses.rework, weighed by
triage.rework_first, said by voice.rework)."""
from __future__ import annotations

from dataclasses import dataclass

GROWING_CAT = "growing_cat"
LOW_RANK = "low_rank"
WEIGHT_NORM = "weight_norm"      # weight norm recomputed from g and v every forward of a model that does not train
POWER_PER_TENSOR = "power_per_tensor"   # pow(x, 2) over many tensors of distinct shapes each step, with its backward
LAUNCH_KINDS = (WEIGHT_NORM, POWER_PER_TENSOR)   # re-done work whose cost is mostly its launches


@dataclass(frozen=True)
class Rework:
    kind: str                  # GROWING_CAT | LOW_RANK
    op: str                    # the op class that re-does the work ("aten::cat", "aten::mm")
    calls: int                 # the calls that re-do it (the chain's concatenations; the pairs' products)
    chains: int                # GROWING_CAT: the chains (loops) they form; LOW_RANK: the pairs
    kernel_ns: int             # the kernel time of those calls (and, LOW_RANK, of the scale and add after them)
    kernel_share: float        # ... its share of the span's kernel time
    bound_share: float         # a bound on the saving, share of kernel time (what the one-line change removes)
    first_shape: tuple         # GROWING_CAT: the first call's output; LOW_RANK: the full product's weight (K, N)
    last_shape: tuple          # GROWING_CAT: the longest chain's last output; LOW_RANK: the adapter's (K, r)
    rank: int = 0              # LOW_RANK: r
    trains: bool = False       # the trace has a backward pass (LOW_RANK: no merge advice then)
    ops: tuple = ()            # the op rows whose kernels re-do the work (not said)
    launches: int = 0          # LAUNCH_KINDS: the kernels launched inside the source's ops (forward and backward);
                               # LOW_RANK: the kernels the pairs', scales' and adds' ops launch
    launch_share: float = 0.0  # ... their share of the span's kernels
    shapes: int = 0            # POWER_PER_TENSOR: the distinct shapes the power ran on
    span_bound: float = 0.0    # the saving's bound on the span: bound_share x the busy share (triage.rework_first)
