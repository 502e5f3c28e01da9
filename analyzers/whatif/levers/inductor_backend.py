"""inductor_backend: a torch.compile whose backend generates no code (backend="aot_eager" or "eager", a debugging
setting left in) run with its default backend, Inductor, which fuses.

What the construct looks like in any trace: torch.compile's compiled ranges (CompiledFunction and, in training,
CompiledFunctionBackward: AOTAutograd's wrapper, which every backend but a plain "eager" runs) hold the kernels of
stock ATen ops (aten::native_layer_norm, gelu, _to_copy ...) launched one by one, and the trace holds no generated
code: no Triton kernel (a name holding "triton") and no Inductor wrapper range ("## Call CompiledFxGraph ... ##").
Under torch.no_grad (inference) AOTAutograd makes no autograd.Function and the trace has no CompiledFunction range:
dynamo's "Torch-Compiled Region: N/M" around each compiled call is then the compiled range (pairs3 mixer scoring).
Inductor would emit Triton kernels for those ops' elementwise chains. Found where the compiled ranges launch
MIN_KERNELS kernels or more.

What would make it fire falsely: a compiled model with nothing to fuse (the products alone: aten::mm runs as cuBLAS
under Inductor too); the price is then ~0 (no chains), and the lever is not named. A model compiled with
Inductor but mode="max-autotune-no-cudagraphs" and Triton GEMMs off still shows Triton for its pointwise ops, so it
is not this construct.

The price: the fuse lever's edit (analyses.fusion's chains, each one kernel a pass moving its fused bytes at its own
eager rate) on the chains inside the compiled ranges only, each chain's launches one launch (the compiled region
is one call already: no compiled call's cost is added, unlike fuse's for eager code); and the host side of generated
code (no_dispatch): Inductor's wrapper launches the kernels it generates itself, so the ATen dispatch and the FX
interpreter's glue before each such launch go, the launch call and any host work stay; products, convolutions and
attention stay extern ATen calls, dispatched as now. fresh10 gpt_compile_debug_backend: 0.95 predicted with the
chains alone, 0.71 measured (the rest is kernels: the casts and copies Inductor folds into its kernels).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.fusion import chain_table
from tracetriage.analyzers.model import units
from tracetriage.analyzers.model.trace import KERNEL, thread_keys
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.whatif.levers.fuse import fuse_chains, optimizer_calls
from tracetriage.analyzers.whatif.levers.host_windows import calls_inside
from tracetriage.analyzers.whatif.levers.knob import gpu_of_calls, is_matrix_kernel, ops_named
from tracetriage.analyzers.whatif.levers.spec import Assumption, Context, Knob, LeverSpec, Options, Recognise, went

COMPILED = ("CompiledFunction", "CompiledFunctionBackward")
# dynamo's range around each compiled call, whatever the backend: under torch.no_grad (inference) AOTAutograd builds
# no autograd.Function, so no CompiledFunction range marks the compiled code, only this one (pairs3 mixer scoring)
DYNAMO_REGION = "Torch-Compiled Region"
GENERATED = ("## Call CompiledFxGraph", "triton")
MIN_KERNELS = 20       # kernels launched inside the compiled ranges: a compiled model, not a two-op helper


@dataclass(frozen=True)
class NoFusionBackend(Assumption):
    regions: int = 0             # compiled ranges (forward and backward calls)
    kernels: int = 0             # eager kernels they launched
    chains: int = 0              # count: their elementwise chains fused
    chain_kernels: int = 0       # the chains' eager kernels
    eager_bytes: float = 0.0
    fused_bytes: float = 0.0
    generated_launches: int = 0  # launches Inductor's wrapper would make without ATen's dispatch
    dispatch_ns: int = 0         # the dispatch before them that goes


def _generated(c: Context) -> bool:
    """The trace shows code the backend generated: an Inductor wrapper range or a Triton kernel."""
    return any(n.startswith(GENERATED[0]) or GENERATED[1] in n for n in c.trace.names)


def regions(c: Context) -> np.ndarray:
    """The compiled ranges where no code was generated; empty elsewhere. AOTAutograd's (COMPILED, by exact name)
    where the trace has them (training: its forward and backward calls); else dynamo's (Torch-Compiled Region: N/M),
    the only mark of a compiled call run under torch.no_grad, which encloses the same kernels (an Inductor run shows
    its generated code there too: Triton kernels, ## Call CompiledFxGraph)."""
    if _generated(c):
        return np.zeros(0, np.int64)
    rows = ops_named(c, lambda n: n in COMPILED)
    return rows if len(rows) else ops_named(c, lambda n: n.startswith(DYNAMO_REGION))


def apply(c: Context, p, o: Options) -> tuple[NoFusionBackend, dict]:
    rows = regions(c)
    g, ev = c.g, c.trace.ev
    if not len(rows) or not g.n_calls:
        return NoFusionBackend("inductor_backend", 0), {"regions": 0}
    inside = calls_inside(c, ev.start[rows], ev.end[rows], thread_keys(ev, rows))
    kernels = int(np.isin(g.g_call[g.g_cat == KERNEL], np.flatnonzero(inside)).sum())
    if kernels < MIN_KERNELS:
        return NoFusionBackend("inductor_backend", 0, regions=len(rows), kernels=kernels), {"regions": len(rows)}
    # chains break at every launch call outside the compiled ranges (and the optimizer's: fused_optimizer's ground)
    breaks = optimizer_calls(c)
    outside = np.zeros(len(ev), bool)
    outside[g.c_row[~inside]] = True
    found = chain_table(c.trace, breaks | outside, shapeless=True)
    if not len(found):
        return NoFusionBackend("inductor_backend", 0, regions=len(rows), kernels=kernels), {"regions": len(rows)}
    n, n_kernels, eager_b, fused_b, wall_ns = fuse_chains(c, p, found, int(g.launch_cost_ns))
    generated, dispatch_ns = no_dispatch(c, p, inside)
    return (NoFusionBackend("inductor_backend", n, regions=len(rows), kernels=kernels, chains=n,
                            chain_kernels=n_kernels, eager_bytes=eager_b, fused_bytes=fused_b,
                            generated_launches=generated, dispatch_ns=dispatch_ns),
            {"regions": len(rows), "chains": n, "chain_ns": wall_ns})


def no_dispatch(c: Context, p, inside: np.ndarray) -> tuple[int, int]:
    """Generated code launches its kernels from Inductor's wrapper, not through ATen's dispatcher: each launch inside
    the compiled ranges of a kernel Inductor would generate (not a product, a convolution or attention: those stay
    extern ATen calls, dispatched as now) keeps its host work and its launch call and loses the dispatch and the FX
    interpreter's glue before it (the gap before the call that is not host work). Returns (launches, ns removed)."""
    g = c.g
    issued = np.flatnonzero(inside & g.c_issues)
    if not len(issued):
        return 0, 0
    k = gpu_of_calls(c, issued)
    k = k[g.g_cat[k] == KERNEL]
    extern = np.zeros(g.n_calls, bool)
    extern[g.g_call[k[c.gpu_named(lambda n: is_matrix_kernel(n) or is_attention_kernel(n), k)]]] = True
    calls = issued[~extern[issued]]
    before = int(p.c_gap[calls].sum())
    p.c_gap[calls] = np.minimum(p.c_gap[calls], g.c_host[calls])
    return len(calls), before - int(p.c_gap[calls].sum())


def is_attention_kernel(name: str) -> bool:
    n = name.lower()
    return any(a in n for a in ("fmha", "flash", "attention", "sdpa"))


def says(a: NoFusionBackend) -> str:
    if not a.regions:
        return "no torch.compile region without generated code (Triton kernels) in this trace"
    if a.count == 0:
        return (f"{units.integer(a.regions)} compiled ranges launch {units.integer(a.kernels)} ATen kernels and no "
                "generated code, but hold no elementwise chain to fuse")
    share = f" moving {100 * a.fused_bytes / a.eager_bytes:.0f}% of their bytes" if a.eager_bytes else ""
    return (f"the compiled ranges ({units.integer(a.regions)} calls) launch "
            f"{units.integer(a.kernels)} stock ATen kernels and no Triton kernel: the backend generates no code "
            f"(aot_eager or eager); with Inductor their {units.integer(a.chains)} elementwise chains "
            f"({units.integer(a.chain_kernels)} kernels) become one kernel a pass{share}, priced as the fuse lever "
            f"prices fusion, and the {units.integer(a.generated_launches)} launches of kernels it would generate lose "
            f"ATen's dispatch before them ({units.duration_ns(a.dispatch_ns)} of host time over the trace), the "
            "compiled call's cost unchanged "
            "(a floor: only those chains and that dispatch are priced)")


def change_for(a: Assumption) -> str:
    return ('torch.compile(model) with its default backend, backend="inductor" (not "aot_eager" or "eager": they '
            "trace the graph but run the same ATen kernels one by one, fusing nothing)")


SPEC = LeverSpec(
    name="inductor_backend", effort=1, cause=None, apply=apply, says=says, words="the Inductor backend",
    fix='torch.compile(model) (backend="inductor", the default) in place of torch.compile(model, backend="aot_eager")',
    recognise=Recognise(order=4, evidence="regions", because="its compiled code now runs generated kernels",
                        amount=lambda m: m.whatif.lever("inductor_backend").detail.get("regions", 0),
                        acted=lambda m: m.whatif.lever("inductor_backend").detail.get("chain_ns", 0), applied=went),
    applied_words='the Inductor backend (backend="inductor")', weighed_only_if_found=True,
    experiment=Experiment.TURN_KNOB,
    knob=Knob(change='torch.compile(model) with backend="inductor" (the default), in place of backend="aot_eager"',
              evidence="CompiledFunction / CompiledFunctionBackward ranges (under torch.no_grad, where AOTAutograd "
                       "makes none, dynamo's Torch-Compiled Region ranges) launching 20 or more kernels, and no "
                       "Triton kernel nor Inductor wrapper (## Call CompiledFxGraph) anywhere in the trace",
              applies="every CUDA device Triton supports; PyTorch 2.0 and later",
              model="the fuse lever's edit on the elementwise chains inside the compiled ranges (one kernel a pass "
                    "moving the fused bytes at the chain's eager rate), each chain one launch, no compiled call added; "
                    "the launches of kernels Inductor generates lose ATen's dispatch before them",
              guide="torch.compile's documentation: backends (inductor is the default; aot_eager is for debugging)",
              line=change_for))
