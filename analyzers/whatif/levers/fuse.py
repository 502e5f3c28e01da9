"""fuse: each eager elementwise chain becomes one kernel (torch.compile, or a Triton kernel).

The fix: `torch.compile` the function that holds the chain (RMSNorm, SwiGLU, a hand-written
activation), or write it as one Triton kernel. In the graph each chain (analyzers.analyses.fusion)
keeps one kernel, which moves the chain's fused bytes (external inputs read once, the output written
once) at the rate its eager kernels reached, never faster than its shortest eager kernel; the chain's
other kernels and their launches vanish, and its host dispatch becomes one compiled call, which costs
what a compiled call costs in this trace (torch.compile's guards and wrapper), else the reference below.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzers.analyses.fusion import chains
from analyzers.model.units import count, duration_ns
from analyzers.model.verdicts import Experiment
from analyzers.whatif.levers.spec import Assumption, Context, LeverSpec, Measured, Options, Recognise, went

# A torch.compile'd call of one fused kernel costs the host about this much under torch.profiler: the
# median `Torch-Compiled Region` in traces/chain-compile-large.json.gz (H200, torch 2.11; guards, the
# wrapper and the Triton launch; tests/test_whatif.py re-derives it). Used when the trace compiles nothing.
COMPILED_CALL_NS = 94_000


@dataclass(frozen=True)
class ChainsFused(Assumption):
    kernels: int = 0                 # eager kernels the chains launch
    eager_bytes: float = 0.0
    fused_bytes: float = 0.0
    call_ns: int = 0                 # what one compiled call costs the host
    call_source: str = ""


def compiled_call_ns(c: Context) -> tuple[int, str]:
    """What a compiled call costs the host: measured on the trace's own compiled regions, else the reference."""
    names = c.trace.names
    ids = [i for i, n in enumerate(names) if n.startswith("Torch-Compiled Region")]
    if ids:
        ev = c.trace.ev
        rows = np.flatnonzero(np.isin(ev.name, ids))
        if len(rows):
            return int(np.median(ev.end[rows] - ev.start[rows])), "trace"
    return COMPILED_CALL_NS, "reference"


def apply(c: Context, p, o: Options) -> tuple[ChainsFused, dict]:
    g, ev = c.g, c.trace.ev
    found = chains(c.trace)
    if not found or not g.n_calls:
        return ChainsFused("fuse"), {"chains": 0}
    call_ns, source = compiled_call_ns(c)
    call_index = {int(r): i for i, r in enumerate(g.c_row.tolist())}
    gpu_index = {int(r): i for i, r in enumerate(g.g_row.tolist())}
    n_kernels, eager_b, fused_b, wall_ns = 0, 0.0, 0.0, 0
    for ch in found:
        ci = [call_index[r] for r in ch.calls if r in call_index]
        gi = [gpu_index[r] for r in ch.kernels if r in gpu_index]
        if len(ci) < 2 or not gi:
            continue
        first, rest = ci[0], np.array(ci[1:], np.int64)
        # host: the chain's dispatch becomes one compiled call (its own Python, if any, stays)
        p.c_dur[rest] = 0
        p.c_gap[rest] = g.c_host[rest]
        p.c_gap[first] = g.c_host[first] + max(call_ns - g.launch_cost_ns, 0)
        p.c_dur[first] = min(g.c_dur[first], g.launch_cost_ns)
        # device: one kernel moving the fused bytes at the chain's own eager rate
        gi = np.array(gi, np.int64)
        dur = g.g_dur[gi]
        fused = max(int(dur.min()), int(round(float(dur.sum()) * ch.byte_ratio)))
        head = gi[np.argmin(g.g_start[gi])]
        p.g_dur[gi] = 0
        p.g_gap[gi] = 0
        p.g_dur[head] = fused
        p.g_call[head] = first
        n_kernels += len(gi)
        # the chain's own wall time, first op to last kernel: what the fix acts on (its launches and its bytes)
        wall_ns += int(max(ev.end[list(ch.kernels)].max(), ev.end[list(ch.ops)].max()) - ev.start[ch.ops[0]])
        eager_b += ch.eager_bytes
        fused_b += ch.fused_bytes
    n = sum(1 for ch in found if len(ch.calls) >= 2)
    return (ChainsFused("fuse", n, kernels=n_kernels, eager_bytes=eager_b, fused_bytes=fused_b, call_ns=call_ns,
                        call_source=source),
            {"chains": n, "kernels": n_kernels, "eager_bytes": eager_b, "fused_bytes": fused_b, "chain_ns": wall_ns})


def says(a: ChainsFused) -> str:
    if a.count == 0:
        return "no eager chain of elementwise ops in this trace: nothing to fuse"
    where = "measured in this trace" if a.call_source == "trace" else "measured on an H200 under torch.profiler"
    return (f"each of {count(a.count, 'eager chain')} ({a.kernels:,} kernels) becomes one kernel moving "
            f"{100 * a.fused_bytes / a.eager_bytes:.0f}% of its bytes (inputs read once, the output written once) at "
            f"its own eager rate; its dispatch becomes one compiled call of {duration_ns(a.call_ns)} ({where})")


def chains_found(m: Measured) -> int:
    return m.whatif.lever("fuse").assumption.count


SPEC = LeverSpec(
    name="fuse", cause=None, apply=apply, says=says, words="fusing the elementwise chains",
    fix="the same function under torch.compile (compiled in warm-up), against eager",
    recognise=Recognise(order=4, evidence="chains", because="its eager elementwise chains went", amount=chains_found,
                        acted=lambda m: m.whatif.lever("fuse").detail.get("chain_ns", 0),
                        applied=went),
    experiment=Experiment.FUSE, applied_words="fusion")
