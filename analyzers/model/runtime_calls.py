"""What a host runtime call does, by its name, for CUDA and ROCm/HIP alike.

Kineto records the GPU runtime and driver calls of both vendors under the same categories
(cuda_runtime / cuda_driver): on ROCm they are hip* calls, twins of the CUDA ones.

    launch    cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel(Ex), cudaGraphLaunch;
              hipLaunchKernel, hipModuleLaunchKernel, hipExtModuleLaunchKernel,
              hipExtLaunchKernel, hipLaunchCooperativeKernel, hipGraphLaunch
    copy      cudaMemcpy*, cuMemcpy*, cudaMemset*, cuMemset*; hipMemcpy*, hipMemset*
    sync      a call that returns only when the device (or a stream, or an event) has drained:
              cuda/hip DeviceSynchronize, StreamSynchronize, EventSynchronize, cudaFree/hipFree
              (implicitly synchronous), the synchronous memcpy calls, cuCtxSynchronize
    stream wait   cudaStreamWaitEvent / hipStreamWaitEvent: queues a device-side wait for an
              event another stream records; the host returns at once, the stream waits
    capture   cudaStreamBeginCapture ... cudaStreamEndCapture (hip twins): the launches between them
              record a graph instead of running; cudaGraphInstantiate makes it launchable
"""
from __future__ import annotations

LAUNCH_PREFIXES = ("cudaLaunch", "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch",
                   "hipLaunch", "hipModuleLaunch", "hipExtModuleLaunch", "hipExtLaunch", "hipGraphLaunch",
                   "hipLaunchCooperative", "hipModuleLaunchCooperative")
COPY_PREFIXES = ("cudaMemcpy", "cuMemcpy", "cudaMemset", "cuMemset", "hipMemcpy", "hipMemset")
SYNC_CALLS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cudaFree", "cudaFreeHost",
    "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpyFromSymbol", "cudaMemcpyToSymbol", "cuMemcpyDtoH_v2",
    "cuMemcpyHtoD_v2", "cudaStreamQuery",
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipCtxSynchronize",
    "hipFree", "hipHostFree", "hipFreeHost", "hipMemcpy", "hipMemcpy2D", "hipMemcpyFromSymbol",
    "hipMemcpyToSymbol", "hipMemcpyDtoH", "hipMemcpyHtoD", "hipMemcpyWithStream", "hipStreamQuery",
})
# The allocator's frees sync implicitly; the ones before the first launch create the CUDA context, set-up that no
# sync removal touches (issue 33: "removing the syncs overlaps 981 ms" where all but 0.19 ms was that cudaFree)
ALLOCATOR_SYNC_CALLS = frozenset({"cudaFree", "cudaFreeHost", "hipFree", "hipHostFree", "hipFreeHost"})

STREAM_WAIT_CALLS = frozenset({"cudaStreamWaitEvent", "cuStreamWaitEvent", "hipStreamWaitEvent"})
# What a launch call costs when the trace has none to measure: for thresholds only, never reported.
UNMEASURED_LAUNCH_NS = 5_000


def median_launch_ns(durations, graph_launch) -> int | None:
    """What one kernel launch costs the host: the median launch call that launches one kernel. A graph launch
    replays many kernels for one call and costs several times a kernel launch (the generate-gpt2 static traces'
    cudaGraphLaunch): it is the launch cost only where the trace launches nothing else. None: no launch call."""
    import numpy as np

    durations, graph_launch = np.asarray(durations), np.asarray(graph_launch, bool)
    if not len(durations):
        return None
    own = durations[~graph_launch]
    return int(np.median(own if len(own) else durations))


CAPTURE_BEGIN_CALLS = frozenset({"cudaStreamBeginCapture", "cudaStreamBeginCapture_v2", "cuStreamBeginCapture",
                                 "cuStreamBeginCapture_v2", "hipStreamBeginCapture"})
CAPTURE_END_CALLS = frozenset({"cudaStreamEndCapture", "cuStreamEndCapture", "hipStreamEndCapture"})


def is_launch(name: str) -> bool:
    return name.startswith(LAUNCH_PREFIXES)


def is_copy(name: str) -> bool:
    return name.startswith(COPY_PREFIXES)


def is_sync(name: str) -> bool:
    return name in SYNC_CALLS


def is_stream_wait(name: str) -> bool:
    return name in STREAM_WAIT_CALLS


def is_graph_launch(name: str) -> bool:
    return "GraphLaunch" in name


def is_capture_begin(name: str) -> bool:
    return name in CAPTURE_BEGIN_CALLS


def is_capture_end(name: str) -> bool:
    return name in CAPTURE_END_CALLS
