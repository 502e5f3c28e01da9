"""Which framework construct an event belongs to, by its name, from what torch.profiler records by default.

    DataLoader   user_annotation  enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__
                                  (and _MultiProcessingDataLoaderIter)
    optimizer    user_annotation  Optimizer.step#AdamW.step, Optimizer.zero_grad#AdamW.zero_grad
    backward     cpu_op           autograd::engine::evaluate_function: AddmmBackward0
    compile      cpu_op / annot.  dynamo, `... (dynamo_timed)`, entire_frame_compile..., compile_fx...,
                                  Inductor's autotuning (torch.compile compiling, recompiling)
    compiled     cpu_op / annot.  Torch-Compiled Region: 0/0, CompiledFunction, ## Call CompiledFxGraph ...
    allocator    cuda_runtime     cudaMalloc, cudaFree (and hip twins): the caching allocator growing or
                                  emptying (torch.cuda.empty_cache())
    collective   cpu_op / annot.  c10d::allreduce_, nccl:all_reduce, record_param_comms
    module       python_function  nn.Module: Linear_0 (with_modules=True)
One name test per construct, each asked once per distinct name (tracetriage.analyzers.model.names).
"""
from __future__ import annotations

import re

from tracetriage.analyzers.model.trace import CPU_OP, DRIVER, PYTHON, RUNTIME, USER_ANNOTATION
from tracetriage.analyzers.model.verdicts import Construct

_TESTS: dict[Construct, re.Pattern] = {
    Construct.COMPILE: re.compile(r"^dynamo$|\(dynamo_timed\)$|^entire_frame_compile|^compile_fx|^_compile\.|"
                                  r"^inductor_|autotune|^bytecode_tracing|^OutputGraph\.|^aot_|^GraphLowering"),
    Construct.ALLOCATOR: re.compile(r"^(cuda|hip)(Malloc|Free)(Host|Async)?$|^cuMem(Alloc|Free)"),
    Construct.DATALOADER: re.compile(r"^enumerate\(DataLoader\)#"),
    Construct.OPTIMIZER: re.compile(r"^Optimizer\.(step|zero_grad)#"),
    Construct.COLLECTIVE: re.compile(r"^c10d::|^nccl:|^record_param_comms$|^gloo:"),
    Construct.BACKWARD: re.compile(r"^autograd::engine::evaluate_function: "),
    # (not TorchDynamo Cache Lookup: the guards run before each call, beside the region, and would count
    # every call twice; their few µs stay the user's)
    Construct.COMPILED: re.compile(r"^Torch-Compiled Region|^CompiledFunction|^## Call CompiledFxGraph"),
    Construct.MODULE: re.compile(r"^nn\.Module: "),
}


def construct_of(name: str) -> Construct | None:
    """The construct an event of this name marks, or None (most events mark none)."""
    for c, pat in _TESTS.items():
        if pat.search(name):
            return c
    return None


# dynamo's compile id "frame/attempt": "Torch-Compiled Region: 0/1" runs frame 0's second compilation (a recompile
# for new shapes or failed guards); torch writes it on the compiled region and on entire_frame_compile's data
# the host events that mark a construct (its ops, ranges, Python frames and runtime calls)
MARKING_CATS = (CPU_OP, USER_ANNOTATION, PYTHON, RUNTIME, DRIVER)
_COMPILE_ID = re.compile(r"(?:^Torch-Compiled Region: |compile_id=)(\d+)/(\d+)")


_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)$")


def compiled_region_frame(name: str) -> int | None:
    """'Torch-Compiled Region: 3/0' -> 3, the compiled frame it enters; None for any other name."""
    m = _REGION.match(name)
    return int(m.group(1)) if m else None


def compile_ids(names) -> set[tuple[int, int]]:
    """The (frame, attempt) compile ids the names carry; empty where the trace names none (torch before 2.1)."""
    out = set()
    for n in names:
        m = _COMPILE_ID.search(n)
        if m:
            out.add((int(m.group(1)), int(m.group(2))))
    return out


OPTIMIZER_STEP = re.compile(r"^Optimizer\.step#(\w+)\.step")


def optimizer_class(name: str) -> str | None:
    """'Optimizer.step#AdamW.step' -> 'AdamW'."""
    m = OPTIMIZER_STEP.match(name)
    return m.group(1) if m else None


# record_function ranges that torch 1.x recorded as cpu_ops ("Operator"): a range around work, never an op that
# does any (the profiler's step, the DataLoader's __next__, the optimizer's step)
_RANGE_AS_OP = re.compile(r"^ProfilerStep#|^enumerate\(DataLoader\)#|^Optimizer\.(step|zero_grad)#")


def is_range_name(name: str) -> bool:
    """A record_function range's name, whatever category the trace gives it."""
    return bool(_RANGE_AS_OP.search(name))
