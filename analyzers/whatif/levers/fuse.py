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
A trace with no shapes (record_shapes off) shows its chains by their ops' names (fusion's `shapeless`): their bytes
are unknown, so each keeps its eager kernel time (one kernel a pass moving what the chain moved) and only its
launches and dispatch go: a floor on what fusing saves, never "nothing to fuse".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracetriage.analyzers.analyses.fusion import ChainTable, chain_table
from tracetriage.analyzers.model.units import count, duration_ns
from tracetriage.analyzers.model.verdicts import Construct, Experiment
from tracetriage.analyzers.whatif.levers.host_windows import calls_inside
from tracetriage.analyzers.whatif.levers.knob import mirror_queued
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
    found: int = 0                   # the chains found, worth fusing or not (count: those fused)


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


def per_op_dispatch_ns(trace, found: ChainTable) -> float:
    """What one eager op of a chain costs the host here: the median chain's wall from first op to last, per op."""
    ev = trace.ev
    first, last = found.op_rows[found.op_at[:-1]], found.op_rows[found.op_at[1:] - 1]
    return float(np.median((ev.end[last] - ev.start[first]) / np.diff(found.op_at)))


def optimizer_calls(c: Context) -> np.ndarray:
    """Per event, the launch calls made inside an optimizer step."""
    s, e, k, _ = c.construct_windows(Construct.OPTIMIZER)
    out = np.zeros(len(c.trace.ev), bool)
    out[c.g.c_row[calls_inside(c, s, e, k)]] = True
    return out


def apply(c: Context, p, o: Options) -> tuple[ChainsFused, dict]:
    g = c.g
    # the optimizer step's per-parameter chains are fused_optimizer's ground: fuse acts on the model's own
    found = chain_table(c.trace, optimizer_calls(c), shapeless=True)
    if not len(found) or not g.n_calls:
        return ChainsFused("fuse"), {"chains": 0}
    call_ns, source = compiled_call_ns(c.trace, per_op_dispatch_ns(c.trace, found))
    n, n_kernels, eager_b, fused_b, wall_ns = fuse_chains(c, p, found, call_ns)
    return (ChainsFused("fuse", n, kernels=n_kernels, eager_bytes=eager_b, fused_bytes=fused_b, call_ns=call_ns,
                        call_source=source, found=len(found)),
            {"chains": n, "kernels": n_kernels, "eager_bytes": eager_b, "fused_bytes": fused_b, "chain_ns": wall_ns})


def fuse_chains(c: Context, p, found: ChainTable, call_ns: int) -> tuple[int, int, float, float, int]:
    """The module docstring's edit on these chains, each one compiled call of call_ns on the host: (chains fused,
    their eager kernels, eager bytes, fused bytes, their wall time first op to last kernel)."""
    g, ev = c.g, c.trace.ev
    ch = _in_graph(g, len(ev), found)
    # the chain's kernels in the order they ran; a kernel per pass, together moving the fused bytes at the chain's
    # own eager rate
    passes = np.minimum(found.passes, ch.n_kernels)
    first_op, last_op = found.op_rows[found.op_at[:-1]], found.op_rows[found.op_at[1:] - 1]
    dur_min, dur_sum = np.zeros(len(found), np.int64), np.zeros(len(found), np.int64)
    has = ch.n_kernels > 0
    if has.any():
        dur = g.g_dur[ch.kernels]
        dur_min[has] = np.minimum.reduceat(dur, ch.kernel_at[:-1][has])
        dur_sum[has] = np.add.reduceat(dur, ch.kernel_at[:-1][has])
    # a chain known by name only (no shapes, its bytes 0) keeps its kernel time: only its launches go
    ratio = np.divide(found.fused_bytes, found.eager_bytes, out=np.ones(len(found)), where=found.eager_bytes > 0)
    each = np.maximum(dur_min, np.rint(dur_sum.astype(np.float64) * ratio / np.maximum(passes, 1)).astype(np.int64))
    # a chain whose compiled call costs the host more than its dispatch and its bytes save stays eager
    # (a two-op tail on a slow-dispatch host: compile the module where it pays, not every chain)
    host_saving = ev.end[last_op] - ev.start[first_op] - call_ns
    fused = (ch.n_calls >= 2) & has & (host_saving + dur_sum - passes * each > 0)
    # host: the chain's dispatch, first op to last, becomes one compiled call; the Python before it stays
    call_fused = fused[ch.call_chain]
    first = ch.calls[ch.call_at[:-1][fused]]
    rest = ch.calls[call_fused & ~ch.first_call]
    before = np.maximum(ev.start[first_op[fused]] - (g.c_start[first] - g.c_gap[first]), 0)
    p.c_dur[rest] = 0
    p.c_gap[rest] = g.c_host[rest]
    p.c_gap[first] = np.minimum(before, g.c_gap[first]) + max(call_ns - g.launch_cost_ns, 0)
    p.c_dur[first] = np.minimum(g.c_dur[first], g.launch_cost_ns)
    # device: the chain's kernels vanish but one per pass
    kernel_chain = ch.kernel_chain
    gi = ch.kernels[fused[kernel_chain]]
    p.g_dur[gi] = 0
    p.g_gap[gi] = 0
    kept = fused[kernel_chain] & (ch.kernel_index < passes[kernel_chain])
    p.g_dur[ch.kernels[kept]] = each[kernel_chain[kept]]
    first_of = np.full(len(found), -1, np.int64)
    first_of[fused] = first
    p.g_call[ch.kernels[kept]] = first_of[kernel_chain[kept]]
    mirror_queued(c, p)                   # the window's first step, queued before it, fused alike
    # the chain's own wall time, first op to last kernel: what the fix acts on (its launches and its bytes)
    k_end = np.maximum.reduceat(ev.end[found.kernel_rows], found.kernel_at[:-1])
    o_end = np.maximum.reduceat(ev.end[found.op_rows], found.op_at[:-1])
    wall_ns = int(np.sum((np.maximum(k_end, o_end) - ev.start[first_op])[fused]))
    eager_b = fused_b = 0.0
    for e, f in zip(found.eager_bytes[fused].tolist(), found.fused_bytes[fused].tolist()):   # summed in chain order
        eager_b += e
        fused_b += f
    return int(fused.sum()), int(ch.n_kernels[fused].sum()), eager_b, fused_b, wall_ns


@dataclass(frozen=True)
class _InGraph:
    """Each chain's launch calls and kernels as indices into the graph (those the graph holds), chain by chain:
    its calls in the order launched, its kernels in the order they ran."""
    calls: np.ndarray
    call_at: np.ndarray          # chain i's calls: calls[call_at[i]:call_at[i + 1]]
    call_chain: np.ndarray
    first_call: np.ndarray       # bool: the first of its chain
    kernels: np.ndarray
    kernel_at: np.ndarray
    kernel_chain: np.ndarray
    kernel_index: np.ndarray     # its place among its chain's kernels, by start

    @property
    def n_calls(self) -> np.ndarray:
        return np.diff(self.call_at)

    @property
    def n_kernels(self) -> np.ndarray:
        return np.diff(self.kernel_at)


def _in_graph(g, n_events: int, found: ChainTable) -> _InGraph:
    n = len(found)
    call_pos = np.full(n_events, -1, np.int64)
    call_pos[g.c_row] = np.arange(len(g.c_row))
    gpu_pos = np.full(n_events, -1, np.int64)
    gpu_pos[g.g_row] = np.arange(len(g.g_row))
    ci = call_pos[found.call_rows]
    call_chain = np.repeat(np.arange(n), np.diff(found.call_at))
    held = ci >= 0
    ci, call_chain = ci[held], call_chain[held]
    call_at = _offsets(np.bincount(call_chain, minlength=n))
    first_call = np.zeros(len(ci), bool)
    first_call[call_at[:-1][np.diff(call_at) > 0]] = True
    gi = gpu_pos[found.kernel_rows]
    kernel_chain = np.repeat(np.arange(n), np.diff(found.kernel_at))
    held = gi >= 0
    gi, kernel_chain = gi[held], kernel_chain[held]
    by_start = np.lexsort((g.g_start[gi], kernel_chain))     # stable: equal starts keep the chain's order
    gi, kernel_chain = gi[by_start], kernel_chain[by_start]
    kernel_at = _offsets(np.bincount(kernel_chain, minlength=n))
    return _InGraph(ci, call_at, call_chain, first_call, gi, kernel_at, kernel_chain,
                    np.arange(len(gi)) - kernel_at[kernel_chain])


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def says(a: ChainsFused) -> str:
    where = "measured in this trace" if a.call_source == "trace" else \
        f"{COMPILED_CALL_OPS:.1f} eager ops' dispatch here, as measured on an H200 under torch.profiler"
    if a.count == 0 and a.found:
        return (f"{count(a.found, 'eager chain')} of elementwise ops found, none worth fusing on its own: one compiled "
                f"call each ({duration_ns(a.call_ns)}, {where}) costs the host more than its launches and bytes save")
    if a.count == 0:
        return "no eager chain of elementwise ops in this trace: nothing to fuse"
    call = f"its dispatch becomes one compiled call of {duration_ns(a.call_ns)} ({where})"
    if not a.eager_bytes:
        return (f"each of {count(a.count, 'eager chain')} ({a.kernels:,} kernels) becomes one kernel a pass taking "
                f"the chain's own kernel time (no shapes recorded: its bytes are unknown, so only its launches go); "
                + call)
    return (f"each of {count(a.count, 'eager chain')} ({a.kernels:,} kernels) becomes one kernel moving "
            f"{100 * a.fused_bytes / a.eager_bytes:.0f}% of its bytes (inputs read once, the output written once) at "
            f"its own eager rate; " + call)


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
