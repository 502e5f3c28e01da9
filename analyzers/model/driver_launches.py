"""GPU work launched through an API the capture does not record: the driver's cuLaunchKernel, as Triton and Inductor
launch their kernels.

torch.profiler records the runtime API (cudaLaunchKernel); a kernel launched by cuLaunchKernel gets a correlation id
from CUPTI like any other, but no record of its call where the driver API is not recorded. Such a kernel is no
dropped record and no work launched before profiling began: its correlation id falls between those of calls the
trace does record (it was launched in the window, in order with them), and no kernel of its name links to a call
anywhere in the trace (the API that launches it is never recorded; a dropped record leaves others of its name linked).
heldout-user19 gp_fusion: 19 Triton kernels of a torch.compile'd function read as 'dropped records, activity buffer
filled' and 'capture again with CPU and CUDA', in a trace that had both, while the host frames in their gaps showed
the compiled call's wrappers.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.last_trace import last_trace
from tracetriage.analyzers.model.trace import GPU_CATS, HOST_CALL_CATS, NONE, Events, Trace


def unrecorded_launches(ev: Events, gpu: np.ndarray, calls: np.ndarray, launch_of: np.ndarray) -> np.ndarray:
    """Per row of `gpu` (GPU activities), whether it was launched by a call of an API the capture does not record
    (`calls`: the host calls it records; `launch_of`: each row's linked call, NONE if none)."""
    unlinked = launch_of[gpu] == NONE
    corr = ev.corr[calls]
    corr = corr[corr != NONE]
    if not unlinked.any() or not len(corr):
        return np.zeros(len(gpu), bool)
    g_corr = ev.corr[gpu]
    # launched in the window, in order with recorded calls: its id lies strictly between two of theirs
    interleaved = (g_corr != NONE) & (g_corr > corr.min()) & (g_corr < corr.max())
    # ... and of a name no recorded call ever launched
    linked_names = distinct(ev.name[gpu[~unlinked]])
    return unlinked & interleaved & ~np.isin(ev.name[gpu], linked_names)


@last_trace
def unrecorded(trace: Trace) -> np.ndarray:
    """Per event row of the trace: a GPU activity launched by a call of an API the capture does not record."""
    ev = trace.ev
    gpu = np.flatnonzero(any_of(ev.cat, GPU_CATS))
    calls = np.flatnonzero(any_of(ev.cat, HOST_CALL_CATS) & (ev.corr != NONE))
    out = np.zeros(len(ev), bool)
    out[gpu] = unrecorded_launches(ev, gpu, calls, trace.launch_of)
    return out
