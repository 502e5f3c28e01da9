"""Which cold start a trace's runtime calls show: CUDA's context created inside the window, or kernel modules
loaded lazily on their first launch with the context already up. CUDA_MODULE_LOADING=EAGER helps only the second: it
loads every module when the context is created, so where the context is created inside the profiled window it makes
that set-up longer, not shorter (heldout-user12 mm_a100_setup: a 168.5 ms first cudaDeviceGetStreamPriorityRange
creating the context, then a 16.2 ms first launch, advised "or CUDA_MODULE_LOADING=EAGER").

What any trace of it shows:
- the context created inside the window: the trace's first runtime call is no launch, copy or sync, and it holds the
  host CONTEXT_FLOOR_NS or more (cudaFree(0), cudaGetDeviceCount, cudaDeviceGetStreamPriorityRange, cudaSetDevice:
  whichever the process calls first pays cuInit and the context; a process whose context is up runs it in µs);
- lazy module loads: a launch (or cuModuleLoad*, cuLibraryLoad*, cudaGetFuncBySymbol, cuModuleGetFunction) that holds
  the host SETUP_FLOOR_NS past the trace's median launch.
What would make it fire falsely: a first call that is long for another reason (a host under memory pressure, a
driver that waits for a busy device in another process): read as context creation, EAGER is not advised, which costs
nothing but the alternative; a launch held by a full launch queue (the device far behind) reads as a lazy load.
"""
from __future__ import annotations

import numpy as np

from tracetriage.analyzers.model import runtime_calls as rc
from tracetriage.analyzers.model.groups import any_of, distinct
from tracetriage.analyzers.model.names import name_codes
from tracetriage.analyzers.model.trace import DRIVER, RUNTIME, Trace

CONTEXT_FLOOR_NS = 20_000_000   # context creation takes 50 ms to seconds; a warm first call runs in µs
# One floor for every one-time set-up the analyses name: a launch this far past the median loads its module, and a
# first op call at least this much longer than its later calls is set-up (analyses.setup, analyses.first_ops_before).
SETUP_FLOOR_NS = 500_000
MODULE_CALLS = ("cuModuleLoad", "cuLibraryLoad", "cudaGetFuncBySymbol", "cuModuleGetFunction", "cuLibraryGetKernel",
                "hipModuleLoad", "hipGetFuncBySymbol", "hipModuleGetFunction")


def _calls(trace: Trace) -> np.ndarray:
    """The runtime and driver calls' rows, in the trace's order (none of the questions below needs them sorted)."""
    return np.flatnonzero(any_of(trace.ev.cat, (RUNTIME, DRIVER)))


def context_call(trace: Trace) -> tuple[str, int] | None:
    """The call that created the context inside the window and how long it held the host (ns), else None (module
    docstring)."""
    calls = _calls(trace)
    if not len(calls):
        return None
    ev = trace.ev
    first = int(calls[np.argmin(ev.start[calls])])    # the earliest call (the first row of the earliest, on a tie)
    name = trace.names[int(ev.name[first])]
    if rc.is_launch(name) or rc.is_copy(name) or (rc.is_sync(name) and name not in rc.ALLOCATOR_SYNC_CALLS):
        return None
    held = int(ev.end[first] - ev.start[first])
    return (name, held) if held >= CONTEXT_FLOOR_NS else None


def context_created_inside(trace: Trace) -> bool:
    """The trace's first runtime call creates the CUDA context (module docstring)."""
    return context_call(trace) is not None


def lazy_module_loads(trace: Trace) -> bool:
    """Some launch or module call holds the host SETUP_FLOOR_NS past the median launch (module docstring)."""
    calls = _calls(trace)
    if not len(calls):
        return False
    ev = trace.ev
    # each distinct call name judged once (a large trace makes 10^5 launches of a few names)
    ids, inverse = name_codes(trace, calls)
    names = [trace.names[int(n)] for n in ids.tolist()]
    dur = ev.end[calls] - ev.start[calls]
    launch = np.array([rc.is_launch(n) and not rc.is_graph_launch(n) for n in names], bool)[inverse]
    module = np.array([n.startswith(MODULE_CALLS) for n in names], bool)[inverse]
    warm = float(np.median(dur[launch])) if launch.any() else 0.0
    return bool(((launch | module) & (dur - warm >= SETUP_FLOOR_NS)).any())


def eager_loading_knob(trace: Trace) -> str:
    """The environment variable that loads every kernel module when the context is created, in the trace's runtime:
    a ROCm/HIP trace (its runtime calls are hip*) defers code-object loading under HIP_ENABLE_DEFERRED_LOADING
    (on by default), CUDA under CUDA_MODULE_LOADING (LAZY by default since CUDA 11.7)."""
    calls = _calls(trace)
    hip = any(trace.names[int(n)].startswith("hip") for n in distinct(trace.ev.name[calls]).tolist())
    return "HIP_ENABLE_DEFERRED_LOADING=0" if hip else "CUDA_MODULE_LOADING=EAGER"


def eager_loading_helps(trace: Trace) -> bool:
    """CUDA_MODULE_LOADING=EAGER takes set-up out of this window: lazy module loads, the context already up."""
    return lazy_module_loads(trace) and not context_created_inside(trace)
