"""Small Kineto traces, one per class of issue 12 ("other people's traces"), each built to show
the pattern a real public trace showed (the trace named in each builder's docstring; the corpus
readings are in analyzers/tools/corpus_readings.toml).

Times are integer ns from the trace start, written on a torch-2.x origin like
tests/kineto_factory.py; each builder returns the trace document (a dict).
"""
from __future__ import annotations

from kineto_factory import ORIGIN_NS, PID, TID, Launch, chain, document, events_for

US = 1_000
MS = 1_000_000


def _t(ns: int) -> float:
    return round((ORIGIN_NS + ns) / 1000, 3)


def call(name: str, start: int, end: int, *, tid: int = TID, **args) -> dict:
    """A runtime call that launches nothing (a sync, an allocation, a stream wait)."""
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": PID, "tid": tid, "ts": _t(start),
            "dur": round((end - start) / 1000, 3), "args": {"cbid": 1, "correlation": 900_000 + start % 99_991, **args}}


def op(name: str, start: int, end: int, *, tid: int = TID, cat: str = "cpu_op", **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": _t(start),
            "dur": round((end - start) / 1000, 3), "args": args}


def with_device(doc: dict, name: str) -> dict:
    for p in doc["deviceProperties"]:
        p["name"] = name
    return doc


def steady(n: int, t0: int, *, kernel: str = "void k<float>(float*)", call_name: str = "cudaLaunchKernel",
           gap: int = 20 * US, kernel_ns: int = 10 * US, call_ns: int = 4 * US, first_id: int = 0) -> list[Launch]:
    """n host-bound launches: each call starts as the previous kernel ends, the kernel follows it."""
    out, t = [], t0
    for i in range(n):
        cs = t + gap - call_ns - 1 * US
        gs = t + gap
        out.append(Launch(op_start=cs - 2 * US, op_end=cs + call_ns + 1 * US, call_start=cs, call_end=cs + call_ns,
                          gpu_start=gs, gpu_end=gs + kernel_ns, kernel=kernel, call=call_name))
        t = gs + kernel_ns
    return out


# --- class 1: one-time set-up ----------------------------------------------------------------

def setup_in_a_launch_call() -> dict:
    """HTA's AlexNet trace: the first conv2d holds the host for seconds inside cudaFree, a
    cudaLaunchKernel and stream creation; later launches take µs. Here: the first launch call
    takes 30 ms (module loading) and a cudaFree 20 ms before it, then 40 steady launches."""
    warm = steady(5, 100 * US)
    t = warm[-1].gpu_end
    first = Launch(op_start=t + 5 * US, op_end=t + 51 * MS, call_start=t + 21 * MS, call_end=t + 51 * MS - 2 * US,
                   gpu_start=t + 51 * MS, gpu_end=t + 51 * MS + 10 * US, op="aten::conv2d")
    rest = steady(40, first.gpu_end)
    ev = events_for(warm + [first] + rest)
    ev.append(call("cudaFree", t + 1 * MS, t + 21 * MS - 1 * US))
    return document(ev)


# --- class 2: a queued kernel that waits on a dependency -------------------------------------

def queued_behind_a_stream_wait() -> dict:
    """TraceLens/HTA-style multi-stream step: the next kernel was launched 38 µs into a 463 ms gap
    but sits behind a cudaStreamWaitEvent on an event another stream records only when the host
    gets to it. Launching it cost 4 µs; the device waited 463 ms on the dependency."""
    before = steady(10, 100 * US)
    t = before[-1].gpu_end
    waiter = Launch(op_start=t + 30 * US, op_end=t + 44 * US, call_start=t + 38 * US, call_end=t + 42 * US,
                    gpu_start=t + 463 * MS, gpu_end=t + 463 * MS + 10 * US, op="aten::add", stream=7)
    after = steady(10, waiter.gpu_end)
    ev = events_for(before + [waiter] + after)
    ev.append(call("cudaStreamWaitEvent", t + 20 * US, t + 23 * US))
    # the host records the event only 463 ms later, after Python work the trace does not show
    ev.append(call("cudaEventRecord", t + 463 * MS - 6 * US, t + 463 * MS - 3 * US))
    return document(ev)


def queued_behind_a_pageable_copy() -> dict:
    """HTA's A100-80GB training rank: the next kernel (a graph replay) was queued long before
    while the host sat 64 ms inside a pageable cudaMemcpyAsync (staging through host memory)."""
    before = steady(10, 100 * US)
    t = before[-1].gpu_end
    waiter = Launch(op_start=t - 5 * US, op_end=t - 1 * US, call_start=t - 4 * US, call_end=t - 2 * US,
                    gpu_start=t + 64 * MS + 20 * US, gpu_end=t + 64 * MS + 30 * US, op="aten::mm",
                    call="cudaGraphLaunch")
    copy = Launch(op_start=t + 1 * US, op_end=t + 64 * MS + 10 * US,
                  call_start=t + 2 * US, call_end=t + 64 * MS + 5 * US,
                  gpu_start=t + 64 * MS - 50 * US, gpu_end=t + 64 * MS + 1 * US, op="aten::copy_",
                  cat="gpu_memcpy", kernel="Memcpy HtoD (Pageable -> Device)", call="cudaMemcpyAsync", stream=9)
    after = steady(10, waiter.gpu_end)
    return document(events_for(before + [waiter, copy] + after))


# --- class 3: ROCm/HIP -----------------------------------------------------------------------

def rocm_chain(launch_call: str = "hipLaunchKernel", call_ns: int = 7 * US) -> dict:
    """A ROCm trace (HTA's MI250 toy, TraceLens's MI300X): the same host-bound chain launched
    through hip* calls that take 7 µs each, ending in a hipDeviceSynchronize."""
    launches = steady(30, 100 * US, call_name=launch_call, call_ns=call_ns,
                      kernel="void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>")
    ev = events_for(launches)
    end = launches[-1].gpu_end
    ev.append(call("hipDeviceSynchronize", end - 5 * US, end + 3 * US))
    return with_device(document(ev), "AMD Instinct MI300X")


# --- class 4: most kernel time has no cost model ----------------------------------------------

def uncosted_kernels() -> dict:
    """DeepSeek's H800 training step: kernels from custom ops with no shapes recorded and names
    that say neither GEMM nor elementwise; the device is busy throughout."""
    launches = [Launch(op_start=i * 100 * US, op_end=i * 100 * US + 8 * US, call_start=i * 100 * US + 2 * US,
                       call_end=i * 100 * US + 6 * US, gpu_start=i * 100 * US + 8 * US,
                       gpu_end=(i + 1) * 100 * US + 7 * US, op="myext::fused_block",
                       kernel="void myext::block_kernel<8>(int4*, float*)") for i in range(20)]
    ev = events_for(launches)
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"] = {"External id": e["args"]["External id"]}      # record_shapes off
    return document(ev)


# --- class 5: convolutions, Triton kernels, communication ------------------------------------

def conv_step() -> dict:
    """kineto's ResNet-50 sample on a V100 (torch 1.9 argument layout): back-to-back cudnn
    convolutions, forward and backward, plus one DeepEP combine kernel (communication). Each
    convolution does 118 GFLOP in 10 ms: 11.8 TFLOP/s, 75% of the V100's 15.7 fp32 peak."""
    fwd_dims = [[32, 256, 56, 56], [256, 256, 3, 3], [], [], [], [], [], [], []]
    fwd_types = ["float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool", "Bool", "Bool"]
    launches, t = [], 100 * US
    for i in range(10):
        launches.append(Launch(op_start=t - 10 * US, op_end=t - 2 * US, call_start=t - 8 * US, call_end=t - 4 * US,
                               gpu_start=t, gpu_end=t + 10 * MS, op="aten::cudnn_convolution",
                               kernel="volta_scudnn_128x64_relu_interior_nn_v1"))
        t += 10 * MS + 2 * US
    comm = Launch(op_start=t - 10 * US, op_end=t - 2 * US, call_start=t - 8 * US, call_end=t - 4 * US, gpu_start=t,
                  gpu_end=t + 30 * MS, op="deep_ep::combine",
                  kernel="void deep_ep::internode::combine<false, 8, __nv_bfloat16>(int4*, float*)")
    ev = events_for(launches + [comm])
    for e in ev:
        if e.get("name") == "aten::cudnn_convolution":
            e["args"].update({"Input Dims": fwd_dims, "Input type": fwd_types})
        elif e.get("name") == "deep_ep::combine":
            e["args"] = {"External id": e["args"]["External id"]}
    return with_device(document(ev), "Tesla V100-SXM2-32GB")


def triton_step() -> dict:
    """HTA's triton example, scaled to the issue's fused chain: Inductor's kernel launched from
    a CPU op of the same name whose Input Dims are the kernel's tensor arguments."""
    name = "triton_poi_fused_mul_sin_0"
    launches = steady(10, 100 * US, kernel=name, kernel_ns=400 * US, gap=8 * US, call_name="cuLaunchKernel")
    launches = [Launch(**{**launch.__dict__, "op": name}) for launch in launches]
    ev = events_for(launches)
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"].update({"Input Dims": [[67108864], [67108864], []], "Input type": ["float", "float", "Scalar"],
                              "Concrete Inputs": ["", "", "67108864"]})
        if e.get("name") == "cuLaunchKernel":
            e["cat"] = "cuda_driver"
    return document(ev)


# --- class 7: a range that repeats -----------------------------------------------------------

def repeating_range() -> dict:
    """DeepSeek's step: a range (mlp) around 2 of every 6 kernels, 3 times, in a 60-kernel trace."""
    launches = steady(60, 100 * US, kernel_ns=50 * US)
    ev = events_for(launches)
    for k in (5, 25, 45):
        a, b = launches[k], launches[k + 1]
        ev.append(op("mlp", a.op_start - 1 * US, b.op_end + 1 * US, cat="user_annotation"))
    return document(ev)


# --- class 8: folders of ranks ---------------------------------------------------------------

def rank(r: int, world_size: int, *, device: str = "NVIDIA H200", gpu: bool = True) -> dict:
    launches = chain(10, device=0) if gpu else []
    ev = events_for(launches)
    if not gpu:
        ev.append(op("aten::add", 0, 5 * US))
    doc = with_device(document(ev, rank=r), device)
    doc["distributedInfo"]["world_size"] = world_size
    if not gpu:
        doc["deviceProperties"] = []
    return doc


# --- class 9: wording ------------------------------------------------------------------------

def host_gap_with_python_stack() -> dict:
    """TraceLens's B200 vLLM trace, recorded with stacks: during the long host gaps the trace has
    python_function events that name what held the host (here data_prep in train.py)."""
    before = steady(10, 100 * US)
    t = before[-1].gpu_end
    after = steady(10, t + 5 * MS)
    ev = events_for(before + after)
    ev.append(op("train.py(42): data_prep", t + 10 * US, t + 5 * MS - 40 * US, cat="python_function"))
    return document(ev)


def copy_while_compute_idles() -> dict:
    """HTA's V100 trace: copies occupy the device while no kernel runs (a copy over the link: a device-to-device copy
    is device work since fresh4's gpt2_manual_attention, tests/test_memsets.py)."""
    before = steady(10, 100 * US)
    t = before[-1].gpu_end
    copy = Launch(op_start=t - 6 * US, op_end=t - 1 * US, call_start=t - 5 * US, call_end=t - 2 * US,
                  gpu_start=t + 1 * US, gpu_end=t + 3 * MS, op="aten::copy_", cat="gpu_memcpy",
                  kernel="Memcpy HtoD (Pinned -> Device)", call="cudaMemcpyAsync")
    after = steady(10, copy.gpu_end)
    return document(events_for(before + [copy] + after))


# --- class 6: diff attributes a change to what changed ----------------------------------------

def kernels_slowed(n: int, kernel_ns: int) -> dict:
    """HTA's trace_diff pair in miniature: both sides overhead-bound, the after side launches a few
    more kernels, but its kernels run 15x longer: the span grew because the kernels did."""
    return document(events_for(steady(n, 100 * US, gap=200 * US, kernel_ns=kernel_ns)))


# --- class 3: a non-GPU accelerator ---------------------------------------------------------

def mtia_trace() -> dict:
    """HTA's MTIA inference trace: deviceProperties name an ARTEMIS device, whose work is in
    mtia_* categories, not GPU kernels."""
    ev = [op("aten::mul", i * 100 * US, i * 100 * US + 20 * US) for i in range(10)]
    ev += [{"ph": "X", "cat": "mtia_ccp_events", "name": "pe_exe", "pid": 17, "tid": 3910, "ts": _t(i * 100 * US),
            "dur": 50.0, "args": {"stream": 112}} for i in range(10)]
    doc = document(ev)
    doc["deviceProperties"] = [{"id": 17, "name": "ARTEMIS", "runtimeMajorVersion": 1}]
    return doc
