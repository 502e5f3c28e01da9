"""Layers of one pass told from a loop's iterations in a trace with no CPU ops (steps.find's kernel sequence).

A runtime-only capture has no marks of a step (no DataLoader, optimizer or ProfilerStep range): its steps are found
in the kernel sequence, where a model's layers repeat as well as a loop does. A loop's iterations are alike: each
runs the whole model, so its units hold the same kernels in the same count, bar the first (set-up) and the last. A
pass's layers are not: stages of different widths, a patch merging or a downsampling between them, the stem and the
head once each, so the kernel counts between one occurrence of the anchor kernel and the next vary (heldout-user7
swin_warm: one Swin forward cut at its sgemm into 12 "steps" of 8 to 101 kernels, 5 of them alike). A cut is a
loop's only where ALIKE_INSIDE of its units between the first and the last are alike; otherwise the units are layers
of one pass (steps.NoSteps.ONE_PASS). It would fire falsely on a loop whose iterations differ more often than not
(alternating train and eval steps with no op recorded): those read as one pass, never as steps of the wrong length.
"""
from __future__ import annotations

import numpy as np

ALIKE_INSIDE = 0.8   # this share of the units between the first and the last alike (a loop logging every 5th step: 4/5)


def alike_inside(regular: np.ndarray) -> bool:
    """Whether a cut's units (`regular`: each alike the most common one) are a loop's, not layers of one pass."""
    return bool(regular[1:-1].mean() >= ALIKE_INSIDE) if len(regular) > 2 else bool(regular.all())
