"""Small synthetic traces, built in code, each showing one false sentence of issue 33 (the public traces that
showed them may not be committed here). Times in ns from the trace start."""
from __future__ import annotations

import dataclasses

from kineto_factory import Launch, annotation, call, document, events_for, gpu, op
from other_peoples_traces import MS, US, steady, with_device
from other_peoples_traces import op as host_event


def python_frame(name: str, start: int, end: int, *, tid: int) -> dict:
    """A python_function event (with_stack=True) on a thread."""
    return host_event(name, start, end, tid=tid, cat="python_function")


def context_created_by_cudafree() -> dict:
    """PARAM's linear benchmark on a 2080 Ti: two cudaFree calls create the CUDA context (500 ms) before the first
    kernel, then steady launches and one 0.19 ms cudaDeviceSynchronize. The syncs' removal saves nothing of the
    500 ms: it is set-up."""
    ev = [call("cudaFree", 1 * MS, 400 * MS), call("cudaFree", 401 * MS, 500 * MS)]
    launches = steady(60, 501 * MS)
    ev += events_for(launches)
    t = launches[-1].gpu_end
    ev.append(call("cudaDeviceSynchronize", t + 5 * US, t + 195 * US))
    return document(ev)


def long_kernels_behind_slow_dispatch() -> dict:
    """Kernels of 172 µs with a 7 µs launch call each, and 60 µs of host dispatch between them: the queue runs dry,
    but no launch costs the host more than a kernel runs."""
    return document(events_for(steady(40, 100 * US, kernel_ns=172 * US, call_ns=7 * US, gap=60 * US)))


def dataloader_with_workers(iterator: str = "_MultiProcessingDataLoaderIter") -> dict:
    """A training loop whose every step waits 5 ms in the DataLoader's __next__ (the host issues no GPU work), then
    launches 10 kernels. With `_MultiProcessingDataLoaderIter` the workers are on already."""
    ev, t = [], 100 * US
    for step in range(8):
        ev.append(annotation(f"enumerate(DataLoader)#{iterator}.__next__", t, t + 5 * MS))
        launches = steady(10, t + 5 * MS, first_id=step * 10)
        ev += events_for(launches, first_id=1 + step * 10)
        t = launches[-1].gpu_end + 10 * US
    return document(ev)


def runtime_only() -> dict:
    """TraceLens's MI210 GPU-only capture: kernels and their launch calls, no cpu_op at all."""
    ev = [e for e in events_for(steady(40, 100 * US)) if e.get("cat") != "cpu_op"]
    return document(ev)


def dataloader_ranges_as_ops() -> dict:
    """PyTorch's 2021 profiler-plugin ResNet-50 sample (torch 1.9): ProfilerStep#N and the DataLoader's __next__ are
    recorded as cpu_ops ("Operator"), and each step waits 5 ms in __next__ before its 10 kernels."""
    ev, t = [], 100 * US
    for step in range(8):
        launches = steady(10, t + 5 * MS, first_id=step * 10)
        end = launches[-1].gpu_end + 10 * US
        for name, s, e in ((f"ProfilerStep#{step}", t, end),
                           ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 1 * US, t + 5 * MS)):
            ev.append(op(name, s, e))
        ev += events_for(launches, first_id=1 + step * 10)
        t = end
    return document(ev)


AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def waiting_rank_launch_bound() -> dict:
    """PARAM's DLRM rank 1 (torchrec, 8 V100s): most of its kernel time is collectives waiting for slower peers, and
    between them its own timeline is launch-bound (hundreds of 3 µs kernels, a 20 µs gap before each). Here: 6
    steps of 60 tiny kernels, then an all-reduce of 128 MiB that takes 0.4 ms on the first step and 4 ms on the
    others (3.6 ms each waiting for a peer)."""
    from kineto_factory import call as launch_call
    from kineto_factory import gpu
    from kineto_factory import op as k_op

    ev, t, ext = [], 100 * US, 1
    for step in range(6):
        launches = steady(60, t, kernel_ns=3 * US, gap=20 * US, first_id=step * 100)
        ev += events_for(launches, first_id=ext)
        ext += len(launches)
        t = launches[-1].gpu_end + 5 * US
        end = t + (400 * US if step == 0 else 4 * MS)
        corr = 500_000 + step
        ev.append(k_op("record_param_comms", t - 4 * US, t + 4 * US, ext, dims=[[[64 << 20]]], types=["TensorList"]))
        ev.append(launch_call("cuLaunchKernelEx", t - 3 * US, t + 2 * US, corr, ext))
        ev.append(gpu(AR, t + 3 * US, end, corr, **{"Collective name": "allreduce", "In msg nelems": 64 << 20,
                                                     "Out msg nelems": 64 << 20, "Group size": 2,
                                                     "dtype": "BFloat16"}))
        ext += 1
        t = end + 5 * US
    return document(ev, rank=1)


def one_moe_forward(batch: int = 8, tokens: int = 1024) -> dict:
    """SwitchTransformers' example (one eager forward of a MoE model, A100): an embedding lookup of [8, 1024] token
    ids, then 20 segments (10 layers x 2 routers), each of matmuls over all 8 x 1024 = 8,192 tokens and one
    `.item()` sync (the router's `is_nonzero`). Every segment sees the prompt's full token count: one pass, no
    decode step."""
    from kineto_factory import Launch

    rows = batch * tokens
    ev, t, ext = [], 100 * US, 1
    emb = steady(1, t, kernel="void indexSelectLargeIndex<float>(float*)")
    emb = [Launch(**{**emb[0].__dict__, "op": "aten::embedding"})]
    ev += events_for(emb, first_id=ext)
    ev[-5]["args"].update({"Input Dims": [[32000, 1024], [batch, tokens]], "Input type": ["float", "long int"]})
    ext += 1
    t = emb[-1].gpu_end
    for seg in range(20):
        mm = [Launch(**{**x.__dict__, "op": "aten::addmm"})
              for x in steady(4, t, kernel="ampere_sgemm_128x64_tn", kernel_ns=900 * US)]
        evs = events_for(mm, first_id=ext)
        for e in evs:
            if e.get("cat") == "cpu_op":
                e["args"].update({"Input Dims": [[4096], [rows, 1024], [1024, 4096]],
                                  "Input type": ["float", "float", "float"]})
        ev += evs
        ext += len(mm)
        t = mm[-1].gpu_end
        ev.append(op("aten::is_nonzero", t + 2 * US, t + 30 * US, ext))
        ev.append(call("cudaMemcpyAsync", t + 5 * US, t + 25 * US, 900_000 + seg, ext))
        ev.append(call("cudaStreamSynchronize", t + 25 * US, t + 28 * US))
        ext += 1
        t += 40 * US
    return document(ev)


def fp32_gemms_on_a_t4() -> dict:
    """hpdl's ResNet-50 training on a T4 (heldout-user3 hpdl_resnet50_t4, public, not committed): fp32 GEMMs on CUDA
    cores (volta_sgemm) hold the kernel time at ~90% busy, no shapes recorded; every 40 kernels the host spends
    70 µs in Python that launches nothing (untraced). Taking that host work away wins it (~8%); fp16 on the T4's
    tensor cores wins at least half the GEMMs' time."""
    launches, t = [], 100 * US
    for i in range(10):
        chunk = steady(40, t, kernel="volta_sgemm_64x64_nt", kernel_ns=17 * US, gap=2 * US, call_ns=1 * US,
                       first_id=40 * i)
        launches += chunk
        t = chunk[-1].gpu_end + 70 * US
    ev = events_for(launches)
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"] = {"External id": e["args"]["External id"]}      # record_shapes off
    return with_device(document(ev), "Tesla T4")


def cold_compiled_start_without_ops() -> dict:
    """CS521's induction-head notebook on an A10G (heldout-user3 cs521_induction_a10g, public, not committed): the
    profiler runs around a whole cold script with ops off. 1.1 s of start-up before the first GPU work (a few small
    copies), then 0.6 s of Inductor compiling before the compiled kernels' first launch (the first 7 ms: its module
    loaded), then an eager sgemm; ~60 µs of GPU work in all."""
    ev, corr, t = [], 1, 1_100 * MS
    ev.append(call("cudaStreamIsCapturing", 5 * MS, 5 * MS + 5 * US))
    for _ in range(10):                                        # weights and inputs to the device
        ev += [call("cudaMemcpyAsync", t, t + 30 * US, corr), gpu("Memcpy HtoD (Pageable -> Device)", t + 20 * US,
                                                                    t + 22 * US, corr, cat="gpu_memcpy"),
               call("cudaStreamSynchronize", t + 31 * US, t + 36 * US)]
        corr, t = corr + 1, t + 500 * US
    t += 600 * MS                                              # Inductor compiling the graph
    for i, name in enumerate(("triton_poi_fused_copy_zeros_0", "triton_poi_fused_copy_1", "triton_poi_fused_copy_1")):
        d = 7 * MS if i == 0 else 8 * US
        ev += [call("cuLaunchKernel", t, t + d, corr), gpu(name, t + d + 5 * US, t + d + 10 * US, corr)]
        ev[-2]["cat"] = "cuda_driver"
        corr, t = corr + 1, t + d + 20 * US
    ev += [call("cudaLaunchKernel", t, t + 25 * US, corr), gpu("ampere_sgemm_32x32_sliced1x4_tn", t + 30 * US,
                                                               t + 34 * US, corr),
           call("cudaDeviceSynchronize", t + 40 * US, t + 50 * US)]
    return with_device(document(ev), "NVIDIA A10G")


def allocator_every_step(frees: str = "python", steps: int = 6, mallocs: int = 4) -> dict:
    """A loop of `steps` ProfilerSteps, each 10 host-bound launches of 20 µs kernels. The first step grows the
    allocator's pool (`mallocs` cudaMalloc of 150 µs inside aten::empty ops); then, by `frees`:
      "python"  every step ends in torch.cuda.empty_cache() (`mallocs` cudaFree of 100 µs straight from Python) and
                every later step allocates again: the cache emptied every step;
      "retry"   the same calls, each cudaFree inside an aten::empty op (the allocator freeing its cache to retry);
      "growth"  nothing more: one-time growth in the first step, the cache kept;
      "no_free" every step allocates again and nothing is freed: a pool that grows.
    One launch before the loop (the model's initialisation) puts the first step's growth after the first launch."""
    first = steady(1, 100 * US, first_id=900)
    ev, t, ext = events_for(first, first_id=901), first[-1].gpu_end + 10 * US, 10_000
    for s in range(steps):
        start = t
        allocs = mallocs if s == 0 or frees != "growth" else 0
        for _ in range(allocs):
            ev.append(op("aten::empty", t, t + 160 * US, ext))
            ev.append(call("cudaMalloc", t + 5 * US, t + 155 * US))
            ext, t = ext + 1, t + 170 * US
        launches = steady(10, t, first_id=s * 10, kernel_ns=20 * US)
        ev += events_for(launches, first_id=1 + s * 10)
        t = launches[-1].gpu_end + 10 * US
        if frees in ("python", "retry") and s + 1 < steps:
            for _ in range(mallocs):
                if frees == "retry":
                    ev.append(op("aten::empty", t, t + 110 * US, ext))
                    ext += 1
                ev.append(call("cudaFree", t + 5 * US, t + 105 * US))
                t += 120 * US
        ev.append(annotation(f"ProfilerStep#{s + 3}", start, t))
        t += 10 * US
    return document(ev)


def first_compiled_calls() -> dict:
    """Wings236/model_inference's compile warm-up on an RTX 4090 D (heldout-user6 rtx4090d_compile_warmup, public, not
    committed): the profiler records a model's first torch.compile calls. Two functions compile for the first time
    (compile ids 0/0 and 1/0): dynamo and Inductor hold the host 500 ms and 300 ms in their `(dynamo_timed)` spans,
    each followed by the compiled region's first run (10 launches of Triton kernels); the device idles through both."""
    ev, t, first = [], 100 * US, 0
    warm = steady(5, t)
    ev += events_for(warm, first_id=1)
    t, first = warm[-1].gpu_end + 50 * US, 5
    compiles = ((500 * MS, "triton_poi_fused_relu_0"), (300 * MS, "triton_poi_fused_cos_1"))
    for frame, (held, kernel) in enumerate(compiles):
        ev += [annotation("_compile.compile_inner (dynamo_timed)", t, t + held),
               annotation("compile_attempt_0 (dynamo_timed)", t + 10 * US, t + held - 10 * US),
               annotation("compile_fx_inner (dynamo_timed)", t + held // 2, t + held - 20 * US)]
        run = steady(10, t + held + 100 * US, kernel=kernel, first_id=first)
        ev.append(annotation(f"Torch-Compiled Region: {frame}/0", t + held + 50 * US, run[-1].gpu_end + 5 * US))
        ev += events_for(run, first_id=1 + first)
        t, first = run[-1].gpu_end + 50 * US, first + 10
    return with_device(document(ev), "NVIDIA GeForce RTX 4090 D")


ACCUMULATE_GRAD = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"


def graph_broken_steps(steps: int = 4, regions: int = 4) -> dict:
    """Wings236/model_inference's compiled 128x128 MLP with explicit torch._dynamo.graph_break() calls on an RTX 4090 D
    (heldout-user6 rtx4090d_graphbreaks, public, not committed): each step enters `regions` compiled regions
    (Torch-Compiled Region: 0/0 ... N/0), each launching 4 kernels of 2 µs 60 µs apart (the host's guards, eager Python
    and autograd between them), then one gradient accumulation; the first step's accumulation launch holds the host
    5 ms (its kernel's module loaded lazily), one-time set-up."""
    ev, t, first = [], 100 * US, 0
    for step in range(steps):
        for k in range(regions):
            run = [dataclasses.replace(x, op_start=x.op_start - 50 * US)     # dispatch in the op: launch-bound
                   for x in steady(4, t + 10 * US, kernel=f"triton_poi_fused_relu_{k}", kernel_ns=2 * US, gap=60 * US,
                                   first_id=first)]
            ev.append(annotation(f"Torch-Compiled Region: {k}/0", t, run[-1].gpu_end + 5 * US))
            ev += events_for(run, first_id=1 + first)
            t, first = run[-1].gpu_end + 10 * US, first + 4
        hold = 5 * MS if step == 0 else 5 * US
        cs = t + 20 * US
        acc = Launch(op_start=cs - 2 * US, op_end=cs + hold + 2 * US, call_start=cs, call_end=cs + hold,
                     gpu_start=cs + hold + 5 * US, gpu_end=cs + hold + 7 * US,
                     kernel="void at::native::vectorized_elementwise_kernel<4, add>", op=ACCUMULATE_GRAD)
        ev += events_for([acc], first_id=1 + first)
        t, first = acc.gpu_end + 30 * US, first + 1
    return with_device(document(ev), "NVIDIA GeForce RTX 4090 D")


def cold_first_compiled_step(steps: int = 3) -> dict:
    """Wings236/model_inference's compiled resnet18 training step on an RTX 4090 D (heldout-user6
    rtx4090d_resnet_compiled, public, not committed): one warm-up call ran before the profiler, then `steps` profiled
    steps, each a TorchDynamo cache lookup, one entry of Torch-Compiled Region: 0/0 (cpu_ops) launching the forward's
    15 kernels of 30 µs, then the compiled backward's 15; no ProfilerStep. The first step pays first-call set-up the
    warm-up call did not: 24 ms of untraced host time between its forward and its backward (a backward path never
    exercised, modules loaded lazily), then the same launches as every later step."""
    ev, t, first = [], 100 * US, 0
    for step in range(steps):
        ev.append(op("TorchDynamo Cache Lookup", t, t + 20 * US))
        fwd = steady(15, t + 35 * US, kernel_ns=30 * US, first_id=first)
        ev.append(op("Torch-Compiled Region: 0/0", t + 30 * US, fwd[-1].gpu_end + 5 * US))
        t0 = fwd[-1].gpu_end + 10 * US + (24 * MS if step == 0 else 0)
        bwd = steady(15, t0 + 5 * US, kernel_ns=30 * US, first_id=first + 15)
        ev.append(op("autograd::engine::evaluate_function: CompiledFunctionBackward", t0, bwd[-1].gpu_end + 5 * US))
        ev += events_for(fwd + bwd, first_id=1 + first)
        t, first = bwd[-1].gpu_end + 50 * US, first + 30
    return with_device(document(ev), "NVIDIA GeForce RTX 4090 D")


def host_randn_then_copy(steps: int = 3) -> dict:
    """A public RTX 3080 demo (heldout-user6 rtx3080_randn_h2d): each step `torch.square(torch.randn(N, N).cuda())`,
    no shapes recorded: 60 ms of CPU aten::randn (its aten::normal_ inside) that starts while the last step's
    kernel still runs, a 40 MB pageable copy holding the host 7 ms, its stream sync, 2 ms of untraced Python, then
    one 1 ms kernel."""
    ev, t, ext, corr = [], 100 * US, 1, 1000
    for _ in range(steps):
        ev += [op("aten::randn", t, t + 60 * MS, ext), op("aten::empty", t + 5 * US, t + 8 * US, ext + 1),
               op("aten::normal_", t + 10 * US, t + 60 * MS - 5 * US, ext + 2)]
        c0 = t + 60 * MS + 20 * US
        ev += [op("aten::to", c0, c0 + 7 * MS + 40 * US, ext + 3),
               op("aten::_to_copy", c0 + 2 * US, c0 + 7 * MS + 38 * US, ext + 4),
               op("aten::copy_", c0 + 5 * US, c0 + 7 * MS + 35 * US, ext + 5),
               call("cudaMemcpyAsync", c0 + 8 * US, c0 + 7 * MS + 30 * US, corr, ext + 5),
               gpu("Memcpy HtoD (Pageable -> Device)", c0 + 20 * US, c0 + 7 * MS + 25 * US, corr, cat="gpu_memcpy",
                   bytes=40_000_000),
               call("cudaStreamSynchronize", c0 + 7 * MS + 31 * US, c0 + 7 * MS + 33 * US, corr + 1, ext + 5)]
        s0 = c0 + 9 * MS + 60 * US                          # 2 ms of untraced Python before the square
        ev += [op("aten::pow", s0, s0 + 20 * US, ext + 6),
               call("cudaLaunchKernel", s0 + 5 * US, s0 + 12 * US, corr + 2, ext + 6),
               gpu("void at::native::vectorized_elementwise_kernel<4, pow>(float*)", s0 + 15 * US, s0 + 1 * MS,
                   corr + 2)]
        t, ext, corr = s0 + 30 * US, ext + 7, corr + 3     # the next randn starts while the kernel runs
    return with_device(document(ev), "NVIDIA GeForce RTX 3080")


def pageable_batches_with_a_feeder_thread(steps: int = 4) -> dict:
    """A public RTX 3080 training loop (heldout-user6 rtx3080_mlp_h2d_bs2056): each step a DataLoader batch (workers
    on) copied with X.to(device) from pageable memory (a 16 MB copy holding the host 1.6 ms), 2 ms of untraced
    main-thread time, then 20 kernels; beside it the multiprocessing queue's feeder thread waits on its lock the
    whole time (python frames on a thread that launches nothing)."""
    ev, t, ext, corr = [], 100 * US, 1, 1000
    feeder = 777
    for step in range(steps):
        ev.append(annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t, t + 60 * US))
        c0 = t + 80 * US
        ev += [op("aten::to", c0, c0 + 1600 * US, ext), op("aten::copy_", c0 + 5 * US, c0 + 1595 * US, ext + 1),
               call("cudaMemcpyAsync", c0 + 8 * US, c0 + 1590 * US, corr, ext + 1),
               gpu("Memcpy HtoD (Pageable -> Device)", c0 + 30 * US, c0 + 1580 * US, corr, cat="gpu_memcpy",
                   bytes=16_900_000)]
        launches = steady(20, c0 + 1600 * US + 2 * MS, first_id=step * 100)
        ev += events_for(launches, first_id=10_000 + step * 100)
        ext, corr = ext + 2, corr + 1
        t = launches[-1].gpu_end + 10 * US
    ev.append(python_frame("threading.py(327): wait", 50 * US, t, tid=feeder))
    ev.append(python_frame("<built-in method acquire of _thread.lock object at 0x7358>", 60 * US, t - 10 * US,
                           tid=feeder))
    return with_device(document(ev), "NVIDIA GeForce RTX 3080")


def tiny_training_steps_at_a_small_batch(steps: int = 6, LOADER_NS: int = 300 * US) -> dict:
    """A public RTX 3080 MLP at batch 16 (heldout-user6 rtx3080_mlp_nw0_bs16): each step a single-process DataLoader
    batch (300 µs of host work), two 3.5 µs pageable copies of it, then 36 kernels of 2 µs behind 3 µs launch calls
    with 10 µs of dispatch between them (forward, backward, an Adam step): launch overhead holds most of the idle."""
    from kineto_factory import Launch

    ev, t, ext = [], 100 * US, 1
    for step in range(steps):
        ev.append(annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, t + LOADER_NS))
        t += LOADER_NS + 10 * US
        copies = [Launch(op_start=c, op_end=c + 15 * US, call_start=c + 2 * US, call_end=c + 12 * US,
                         gpu_start=c + 5 * US, gpu_end=c + 8 * US + 500, op="aten::copy_", cat="gpu_memcpy",
                         kernel="Memcpy HtoD (Pageable -> Device)", call="cudaMemcpyAsync")
                  for c in (t, t + 20 * US)]                    # two 3.5 µs copies (the batch and its labels)
        ev += events_for(copies, first_id=ext)
        ext += 2
        launches = steady(36, t + 45 * US, kernel_ns=2 * US, call_ns=3 * US, gap=13 * US, first_id=ext)
        ev += events_for(launches, first_id=ext)
        ext += 36
        opt = launches[24].op_start
        ev.append(annotation("Optimizer.step#Adam.step", opt - 1 * US, launches[-1].op_end + 1 * US))
        t = launches[-1].gpu_end + 5 * US
    return with_device(document(ev), "NVIDIA GeForce RTX 3080")


def first_step_copy_wait(steps: int = 4, every_step: bool = False) -> dict:
    """A decode loop of `steps` ProfilerSteps, each a pageable input copy then 20 kernels of 400 µs; the first step's
    copy holds the host 200 ms (a cold start: the allocator growing, a first staging buffer), the later ones 10 µs.
    The public SGLang decode on an MI300X (one 463 ms copy wait in the first of four steps) shows the same.
    `every_step`: each step's copy takes the 200 ms (the copies recur: no cold start)."""
    ev, t, ext, corr = [], 100 * US, 1, 1000
    for s in range(steps):
        start = t
        hold = 200 * MS if (s == 0 or every_step) else 10 * US
        ev += [op("aten::copy_", t, t + hold + 20 * US, ext),
               call("cudaMemcpyAsync", t + 5 * US, t + hold + 15 * US, corr, ext),
               gpu("Memcpy HtoD (Pageable -> Device)", t + 10 * US, t + hold + 10 * US, corr, cat="gpu_memcpy",
                   bytes=4_000)]
        launches = steady(20, t + hold + 30 * US, kernel_ns=400 * US, gap=20 * US, first_id=s * 100)
        ev += events_for(launches, first_id=20_000 + s * 100)
        t = launches[-1].gpu_end + 20 * US
        ev.append(annotation(f"ProfilerStep#{s}", start, t))
        ext, corr = ext + 1, corr + 1
    return with_device(document(ev), "NVIDIA H100 80GB HBM3")


def copy_benchmark(steps: int = 4, pinned: bool = True) -> dict:
    """A copy micro-benchmark with no kernel (heldout-user7 a100copy_pinned / a100copy_pageable): each ProfilerStep
    copies 154 MB to the device on one stream and 154 MB back on another. `pinned`: cudaMemcpyAsync returns in 6 µs
    and the two copies overlap (30 ms and 17 ms), the host then waits in cudaDeviceSynchronize; else each call holds
    the host for its whole copy (32 ms, then 34 ms), one after the other."""
    ev, t, ext, corr = [], 100 * US, 1, 1000
    src, dst = ("Pinned -> Device", "Device -> Pinned") if pinned else ("Pageable -> Device", "Device -> Pageable")
    for s in range(steps):
        start = t
        up, down = (30 * MS, 17 * MS) if pinned else (32 * MS, 34 * MS)
        c1 = t + 10 * US
        e1 = c1 + (6 * US if pinned else up + 20 * US)
        ev += [op("aten::copy_", c1 - 5 * US, e1 + 5 * US, ext), call("cudaMemcpyAsync", c1, e1, corr, ext),
               gpu(f"Memcpy HtoD ({src})", c1 + 5 * US, c1 + 5 * US + up, corr, stream=22, cat="gpu_memcpy",
                   bytes=154_140_672)]
        c2 = e1 + 20 * US
        e2 = c2 + (6 * US if pinned else down + 20 * US)
        ev += [op("aten::copy_", c2 - 5 * US, e2 + 5 * US, ext + 1), call("cudaMemcpyAsync", c2, e2, corr + 1, ext + 1),
               gpu(f"Memcpy DtoH ({dst})", c2 + 5 * US, c2 + 5 * US + down, corr + 1, stream=20, cat="gpu_memcpy",
                   bytes=154_140_672)]
        done = max(c1 + 5 * US + up, c2 + 5 * US + down)
        if pinned:
            ev.append(call("cudaDeviceSynchronize", e2 + 30 * US, done + 10 * US, corr + 2))
        t = done + 100 * US
        ev.append(annotation(f"ProfilerStep#{s}", start, t))
        ext, corr = ext + 2, corr + 3
    return with_device(document(ev), "NVIDIA A100-SXM4-40GB")


def kernels_only(names: list[str], t0: int = 100 * US, first_launch_ns: int = 0) -> dict:
    """A runtime-only capture (no cpu_op) launching `names` in order, each kernel 10 µs behind a 20 µs host gap;
    `first_launch_ns`: each kernel name's first launch holds the host that long (its module loaded lazily)."""
    launches, t, seen = [], t0, set()
    for n in names:
        hold = first_launch_ns if first_launch_ns and n not in seen else 4 * US
        seen.add(n)
        cs = t + 15 * US
        launches.append(Launch(op_start=cs, op_end=cs + hold, call_start=cs, call_end=cs + hold,
                               gpu_start=cs + hold + 5 * US, gpu_end=cs + hold + 15 * US, kernel=n))
        t = cs + hold + 15 * US
    return document([e for e in events_for(launches) if e.get("cat") != "cpu_op"])


BLOCK = ["sgemm_qkv", "softmax", "sgemm_proj", "layer_norm", "sgemm_mlp1", "gelu", "sgemm_mlp2"]


def one_windowed_forward() -> dict:
    """One forward of a hierarchical vision transformer recorded without ops (heldout-user7 swin_warm): a stem, four
    stages of 2, 2, 6 and 2 blocks, shifted blocks adding a roll and a mask, a patch merging between stages, a head:
    the blocks repeat (each starting at its qkv GEMM), but their kernel counts between repeats differ."""
    names = ["conv_stem", "layer_norm"]
    for stage, blocks in enumerate((2, 2, 6, 2)):
        for b in range(blocks):
            names += (["roll", "mask_fill"] if b % 2 else []) + BLOCK + (["roll"] * (stage + 1) if b % 2 else [])
        if stage < 3:
            names += ["cat", "layer_norm", "sgemm_merge", "copy", "copy"][: 2 + stage + 1]
    return kernels_only(names + ["layer_norm", "avgpool", "sgemm_head"])


def a_small_models_loop(iterations: int = 6) -> dict:
    """A loop of `iterations` forwards of a three-block model recorded without ops: each iteration the same kernels."""
    one = ["conv_stem"] + BLOCK * 3 + ["sgemm_head", "loss"]
    return kernels_only(one * iterations)


def a_loop_after_its_workers_start(iterator: str = "_MultiProcessingDataLoaderIter", steps: int = 8) -> dict:
    """A small model's training loop profiled from its start (heldout-user7 mlp4090L_bf16): 40 ms of untraced host
    time while the DataLoader's workers start, a first fetch of 15 ms, then each step a 300 µs fetch, 20 host-bound
    launches of 10 µs kernels and an optimizer step."""
    ev = [op("aten::empty", 100 * US, 110 * US)]
    t = 40 * MS
    ev.append(annotation(f"enumerate(DataLoader)#{iterator}.__next__", t, t + 15 * MS))
    t += 15 * MS + 10 * US
    for step in range(steps):
        if step:
            ev.append(annotation(f"enumerate(DataLoader)#{iterator}.__next__", t, t + 300 * US))
            t += 310 * US
        launches = steady(20, t, first_id=step * 100)
        ev += events_for(launches, first_id=1 + step * 100)
        ev.append(annotation("Optimizer.step#AdamW.step", launches[15].op_start - 1 * US, launches[-1].op_end + 1 * US))
        t = launches[-1].gpu_end + 10 * US
    return document(ev)
