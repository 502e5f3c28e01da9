"""fuse: each eager elementwise chain becomes one kernel (torch.compile, or a Triton kernel).

The fix: `torch.compile` the function that holds the chain (RMSNorm, SwiGLU, a hand-written
activation), or write it as one Triton kernel. In the graph each chain (tracetriage.analyzers.analyses.fusion)
keeps one kernel per pass (two where a reduction's result is used again, as Inductor emits them), which
together move the chain's fused bytes (external inputs read once a pass, the output written once) at
the rate its eager kernels reached, each no faster than its shortest eager kernel; the chain's other
kernels and their launches vanish, and its host dispatch (first op to last) becomes one compiled call,
which costs what a compiled call costs in this trace (torch.compile's guard lookup and its compiled
region), else COMPILED_CALL_OPS eager ops' dispatch as this trace's chains pay it (a slower host makes
both slower alike); the Python around the chain stays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.fusion import chains
from tracetriage.analyzers.model.units import count, duration_ns
from tracetriage.analyzers.model.verdicts import Construct, Experiment
from tracetriage.analyzers.whatif.levers.host_windows import calls_inside
from tracetriage.analyzers.whatif.levers.spec import Assumption, Context, LeverSpec, Measured, Options, Recognise, went

# A torch.compile'd call (its guard lookup and its compiled region, the wrapper and Triton launches) costs
# the host as much as about this many eager ops' dispatch, under torch.profiler: 99.9 µs against 17.1 µs an
# op in traces/chain-compile-large.json.gz against chain-eager-large (H200, torch 2.11; 4.9-6.6 on the
# real-library fusion pairs of traces/realworld at two host speeds; tests/test_whatif.py re-derives it).
# Used when the trace compiles nothing.
COMPILED_CALL_OPS = 5.8


@dataclass(frozen=True)
class ChainsFused(Assumption):
    kernels: int = 0                 # eager kernels the chains launch
    eager_bytes: float = 0.0
    fused_bytes: float = 0.0
    call_ns: int = 0                 # what one compiled call costs the host
    call_source: str = ""


def compiled_call_ns(trace, per_op_ns: float | None = None) -> tuple[int, str]:
    """What a compiled call costs the host: its guard lookup and its compiled region, measured on the trace's
    own, else COMPILED_CALL_OPS eager ops at `per_op_ns` each."""
    ev, names = trace.ev, trace.names

    def median_of(prefix: str) -> int | None:
        rows = np.flatnonzero(np.isin(ev.name, [i for i, n in enumerate(names) if n.startswith(prefix)]))
        return int(np.median(ev.end[rows] - ev.start[rows])) if len(rows) else None

    region = median_of("Torch-Compiled Region")
    if region is not None:
        return region + (median_of("TorchDynamo Cache Lookup") or 0), "trace"
    return int(COMPILED_CALL_OPS * (per_op_ns or 0)), "reference"


def per_op_dispatch_ns(trace, found) -> float:
    """What one eager op of a chain costs the host here: the median chain's wall from first op to last, per op."""
    ev = trace.ev
    return float(np.median([(ev.end[ch.ops[-1]] - ev.start[ch.ops[0]]) / len(ch.ops) for ch in found]))


def _optimizer_calls(c: Context) -> np.ndarray:
    """Per event, the launch calls made inside an optimizer step."""
    s, e, k, _ = c.construct_windows(Construct.OPTIMIZER)
    out = np.zeros(len(c.trace.ev), bool)
    out[c.g.c_row[calls_inside(c, s, e, k)]] = True
    return out


def apply(c: Context, p, o: Options) -> tuple[ChainsFused, dict]:
    g, ev = c.g, c.trace.ev
    # the optimizer step's per-parameter chains are fused_optimizer's ground: fuse acts on the model's own
    found = chains(c.trace, _optimizer_calls(c))
    if not found or not g.n_calls:
        return ChainsFused("fuse"), {"chains": 0}
    call_ns, source = compiled_call_ns(c.trace, per_op_dispatch_ns(c.trace, found))
    call_index = {int(r): i for i, r in enumerate(g.c_row.tolist())}
    gpu_index = {int(r): i for i, r in enumerate(g.g_row.tolist())}
    n, n_kernels, eager_b, fused_b, wall_ns = 0, 0, 0.0, 0.0, 0
    for ch in found:
        ci = [call_index[r] for r in ch.calls if r in call_index]
        gi = [gpu_index[r] for r in ch.kernels if r in gpu_index]
        if len(ci) < 2 or not gi:
            continue
        first, rest = ci[0], np.array(ci[1:], np.int64)
        gi = np.array(sorted(gi, key=lambda i: g.g_start[i]), np.int64)
        dur = g.g_dur[gi]
        passes = min(ch.passes, len(gi))
        each = max(int(dur.min()), int(round(float(dur.sum()) * ch.byte_ratio / passes)))
        # a chain whose compiled call costs the host more than its dispatch and its bytes save stays eager
        # (a two-op tail on a slow-dispatch host: compile the module where it pays, not every chain)
        host_saving = int(ev.end[ch.ops[-1]] - ev.start[ch.ops[0]]) - call_ns
        if host_saving + int(dur.sum()) - passes * each <= 0:
            continue
        # host: the chain's dispatch, first op to last, becomes one compiled call; the Python before it stays
        before = max(int(ev.start[ch.ops[0]]) - int(g.c_start[first] - g.c_gap[first]), 0)
        p.c_dur[rest] = 0
        p.c_gap[rest] = g.c_host[rest]
        p.c_gap[first] = min(before, g.c_gap[first]) + max(call_ns - g.launch_cost_ns, 0)
        p.c_dur[first] = min(g.c_dur[first], g.launch_cost_ns)
        # device: a kernel per pass, together moving the fused bytes at the chain's own eager rate
        p.g_dur[gi] = 0
        p.g_gap[gi] = 0
        p.g_dur[gi[:passes]] = each
        p.g_call[gi[:passes]] = first
        n += 1
        n_kernels += len(gi)
        # the chain's own wall time, first op to last kernel: what the fix acts on (its launches and its bytes)
        wall_ns += int(max(ev.end[list(ch.kernels)].max(), ev.end[list(ch.ops)].max()) - ev.start[ch.ops[0]])
        eager_b += ch.eager_bytes
        fused_b += ch.fused_bytes
    return (ChainsFused("fuse", n, kernels=n_kernels, eager_bytes=eager_b, fused_bytes=fused_b, call_ns=call_ns,
                        call_source=source),
            {"chains": n, "kernels": n_kernels, "eager_bytes": eager_b, "fused_bytes": fused_b, "chain_ns": wall_ns})


def says(a: ChainsFused) -> str:
    if a.count == 0:
        return "no eager chain of elementwise ops in this trace: nothing to fuse"
    where = "measured in this trace" if a.call_source == "trace" else \
        f"{COMPILED_CALL_OPS:.1f} eager ops' dispatch here, as measured on an H200 under torch.profiler"
    return (f"each of {count(a.count, 'eager chain')} ({a.kernels:,} kernels) becomes one kernel moving "
            f"{100 * a.fused_bytes / a.eager_bytes:.0f}% of its bytes (inputs read once, the output written once) at "
            f"its own eager rate; its dispatch becomes one compiled call of {duration_ns(a.call_ns)} ({where})")


def chains_found(m: Measured) -> int:
    return m.whatif.lever("fuse").assumption.count


SPEC = LeverSpec(
    name="fuse", effort=2, cause=None, apply=apply, says=says, words="fusing the elementwise chains",
    fix="the same function under torch.compile (compiled in warm-up), against eager",
    recognise=Recognise(order=4, evidence="chains", because="its eager elementwise chains went", amount=chains_found,
                        also=lambda before, after: after.kernels < 0.9 * before.kernels,
                        acted=lambda m: m.whatif.lever("fuse").detail.get("chain_ns", 0),
                        applied=went),
    experiment=Experiment.FUSE, applied_words="fusion")
