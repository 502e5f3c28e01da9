"""Small Kineto traces, one per class of issue 15 ("physically right on every trace"), each built from the
recipe a hand reading of public traces gave (/work/corpus/FINDINGS.md: the file that shows the class is
named in each builder's docstring). Times are integer ns from the trace start (tests/kineto_factory.py);
each builder returns the trace document (a dict).
"""
from __future__ import annotations

import copy

from kineto_factory import ORIGIN_NS, PID, TID, Launch, document, events_for
from other_peoples_traces import steady, with_device

US = 1_000
MS = 1_000_000


def _t(ns: int) -> float:
    return round((ORIGIN_NS + ns) / 1000, 3)


def _shapes(ev: list[dict], op: str, dims: list, types: list) -> None:
    for e in ev:
        if e.get("cat") == "cpu_op" and e.get("name") == op:
            e["args"].update({"Input Dims": dims, "Input type": types})


# --- class a: the launch's External id is its correlation id (torch 2.0/2.1) ----------------------

def external_id_is_correlation() -> dict:
    """PARAM's et_replay MLP on an RTX 2080 Ti (and the A100-PCIe linear of the issue): a cudaLaunchKernel
    inside aten::addmm (External id 5) carries External id = correlation = 2457, which is the id of an
    aten::clamp_min 5 ms later on the same thread. The 1 ms sgemm belongs to the addmm: a 2048^3 fp32 GEMM,
    17.2 TFLOP/s on an A100 PCIe (19.5 peak)."""
    addmm_dims = [[2048], [2048, 2048], [2048, 2048], [], []]
    addmm_types = ["float", "float", "float", "Scalar", "Scalar"]
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": PID, "tid": TID, "ts": _t(0), "dur": 100.0,
         "args": {"External id": 5, "Input Dims": addmm_dims, "Input type": addmm_types}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID, "tid": TID, "ts": _t(10 * US),
         "dur": 8.0, "args": {"External id": 2457, "correlation": 2457, "cbid": 211}},
        {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": _t(20 * US),
         "dur": 1000.0, "args": {"device": 0, "stream": 7, "correlation": 2457, "External id": 2457}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::clamp_min", "pid": PID, "tid": TID, "ts": _t(5 * MS),
         "dur": 20.0, "args": {"External id": 2457, "Input Dims": [[2048, 2048], []],
                               "Input type": ["float", "Scalar"]}},
    ]
    return with_device(document(ev), "NVIDIA A100-PCIE-40GB")


# --- class b: a point above the device's peak is an attribution error ----------------------------

def above_the_peak() -> dict:
    """TraceLens's compiled SD3.5 on an MI300X: an Inductor kernel whose launch op records a large input it
    only slices (triton_poi_fused__unsafe_view_clone_slice_transpose_13 at 1.67x the 5.3 TB/s peak). Here the
    op's Input Dims say 268 MB per call, in a 10 µs kernel: 27 TB/s, 5x the peak. Beside it a sound
    elementwise kernel (64M bf16 elements, 0.4 GB in 100 µs: 4 TB/s) that decides the regime."""
    sliced = "triton_poi_fused_clone_slice_0"
    good = "triton_poi_fused_add_1"
    a = steady(10, 100 * US, kernel=sliced, kernel_ns=10 * US, gap=20 * US, call_name="hipModuleLaunchKernel")
    b = steady(10, a[-1].gpu_end, kernel=good, kernel_ns=100 * US, gap=20 * US, call_name="hipModuleLaunchKernel")
    launches = ([Launch(**{**launch.__dict__, "op": sliced}) for launch in a]
                + [Launch(**{**launch.__dict__, "op": good}) for launch in b])
    ev = events_for(launches)
    _shapes(ev, sliced, [[134217728], [1048576]], ["c10::BFloat16", "c10::BFloat16"])
    _shapes(ev, good, [[67108864], [67108864], [67108864]], ["c10::BFloat16"] * 3)
    return with_device(document(ev), "AMD Instinct MI300X")


def fp32_gemm(kernel: str) -> dict:
    """An A100's fp32 linear at 68.7 TFLOP/s (10 calls of a 4096^3 GEMM, 2 ms each): possible only on TF32
    tensor cores (156 peak), which the kernel's name says; with a plain sgemm (19.5 peak) it is above the peak."""
    launches = steady(10, 100 * US, kernel=kernel, kernel_ns=2 * MS, gap=20 * US)
    ev = events_for([Launch(**{**launch.__dict__, "op": "aten::mm"}) for launch in launches])
    _shapes(ev, "aten::mm", [[4096, 4096], [4096, 4096]], ["float", "float"])
    return with_device(document(ev), "NVIDIA A100-SXM4-80GB")


# --- class c: latency-bound kernels -------------------------------------------------------------

def latency_bound_mm() -> dict:
    """TraceLens's OWLv2 inference on an MI300X VF: aten::mm [1,768]x[768,1] bf16, 0.3 GB/s (0.005% of 5.3
    TB/s). Here 50 such products of 5 µs each, queued back to back (no idle), on an MI300X."""
    launches = []
    for i in range(50):
        t = 100 * US + i * 6 * US
        launches.append(Launch(op_start=i * 4 * US, op_end=i * 4 * US + 3 * US, call_start=i * 4 * US + 1 * US,
                               call_end=i * 4 * US + 2 * US, gpu_start=t, gpu_end=t + 5 * US, op="aten::mm",
                               kernel="Cijk_Alik_Bljk_BBS_BH_MT16x16x16_MI16x16x16x1_SN_1LDSB0",
                               call="hipLaunchKernel"))
    ev = events_for(launches)
    _shapes(ev, "aten::mm", [[1, 768], [768, 1]], ["c10::BFloat16", "c10::BFloat16"])
    return with_device(document(ev), "AMD Instinct MI300X")


def tall_skinny_fp16_mm_on_an_unnamed_device() -> dict:
    """TraceLens's gemm_04: ten fp16 products [131072, 32] @ [32, 32] of 14 µs each (16 FLOP/byte: 268 MFLOP over
    16.8 MB) on a device the trace does not name, so no peak table places them."""
    launches = steady(10, 100 * US, kernel="Cijk_Ailk_Bljk_HHS_BH_MT64x128x32_MI16x16x16x1_SN_1LDSB0",
                      kernel_ns=14 * US, gap=9 * US)
    ev = events_for([Launch(**{**launch.__dict__, "op": "aten::mm", "call": "hipLaunchKernel"})
                     for launch in launches])
    _shapes(ev, "aten::mm", [[131072, 32], [32, 32]], ["c10::Half", "c10::Half"])
    doc = document(ev)
    del doc["deviceProperties"]
    return doc


# --- class e: several ranks merged into one file ------------------------------------------------

def merged_two_ranks() -> dict:
    """TraceLens TraceFusion's output (FINDINGS' derived PARAM DLRM 2-rank file): two copies of a one-device
    trace in one `{"traceEvents": [...]}`, the second with pids and correlation ids + 1e8 and every event
    tagged args.rank; no deviceProperties, no distributedInfo. Rank 1 runs 30 kernels, rank 0 20."""
    out = []
    for r, n in ((0, 20), (1, 30)):
        ev = events_for(steady(n, 100 * US + r * 37 * MS))
        for e in ev:
            e = copy.deepcopy(e)
            e.setdefault("args", {})["rank"] = r
            if isinstance(e.get("pid"), int):
                e["pid"] += r * 100_000_000
            if "correlation" in e["args"]:
                e["args"]["correlation"] += r * 100_000_000
            if "id" in e:
                e["id"] += r * 100_000_000
            out.append(e)
    return {"traceEvents": out}


# --- class f: a user's Triton kernel, wrapped in an op named after it ------------------------------

def user_triton_kernel() -> dict:
    """The course's fused chain written in Triton and wrapped by torch.compile: the launch op has the kernel's
    own name (not triton_*), `kernel_backend: triton` and the kernel's tensor arguments as Input Dims
    ([[67108864], [67108864], []]); 10 launches of 130 µs on an H200."""
    name = "_fused_chain_kernel"
    launches = steady(10, 100 * US, kernel=name, kernel_ns=130 * US, gap=8 * US, call_name="cuLaunchKernel")
    ev = events_for([Launch(**{**launch.__dict__, "op": name}) for launch in launches])
    for e in ev:
        if e.get("cat") == "cpu_op":
            e["args"].update({"Input Dims": [[67108864], [67108864], []], "Input type": ["float", "float", "Scalar"],
                              "Concrete Inputs": ["", "", "67108864"], "kernel_backend": "triton"})
        if e.get("name") == "cuLaunchKernel":
            e["cat"] = "cuda_driver"
    return document(ev)


# --- peaks: a device whose name says nothing --------------------------------------------------------

def unnamed_mi300x() -> dict:
    """vLLM's MI300X traces (TraceLens): deviceProperties name "" but record compute 9.4, 304 CUs, 192 GB."""
    doc = document(events_for(steady(10, 100 * US)))
    for p in doc["deviceProperties"]:
        p.update(name="", computeMajor=9, computeMinor=4, numSms=304, totalGlobalMem=206141652992)
    return doc
