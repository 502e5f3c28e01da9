"""Where in the user's code each verdict points, and which ATen ops each Inductor kernel fused.

With stacks recorded (tracetriage.analyzers.analyses.frames), every hotspot is charged to the user frames that
launched its device time, every idle cause to the frames the host was in around its gaps (the sync
call, the launch, the blocking copy; for host work, the frame that held the host through the gap),
and the Next line names the frame of the lever it chose. Without stacks there are none, and the report
says nothing of source lines. Inductor kernels (tracetriage.analyzers.analyses.inductor) are named after the ops
they fused, from the kernel's name, or from the generated wrapper's comments when the file is present.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tracetriage.analyzers.analyses import frames as fr
from tracetriage.analyzers.analyses import hotspots as hs
from tracetriage.analyzers.analyses import inductor
from tracetriage.analyzers.analyses.frames import SourceLine
from tracetriage.analyzers.analyses.hotspots import Hotspot
from tracetriage.analyzers.analyses.idle import DeviceIdle
from tracetriage.analyzers.analyses.inductor import FusedKernel
from tracetriage.analyzers.loading.generated_code import read_wrappers
from tracetriage.analyzers.loading.source_files import read_sources
from tracetriage.analyzers.model import intervals as iv
from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.trace import CPU_OP, KERNEL, NONE, Trace
from tracetriage.analyzers.model.verdicts import CAUSES, Cause, Experiment
from tracetriage.analyzers.whatif.levers import LEVERS

# The ops whose user frames a knob's Next names (levers/spec.py Knob.ops): their frames are kept beside the hotspots'.
KNOB_OPS = frozenset(op for spec in LEVERS.values() if spec.knob is not None for op in spec.knob.ops)


KEPT_SITES = 3        # the frames kept per hotspot (the JSON lists them); the rest are only counted
ALL_SITES = 10_000    # (every frame behind an op: a few dozen at most)
SOURCE_MIN_IDLE_SHARE = 0.10   # a frame named for an idle cause holds this share of the cause's idle, set-up counted
SOURCE_MOST_STEADY = 0.5       # ... and this share of its idle outside the set-up: most of it. A pointer names a line
# whose calls hold the idle it is said for; where the idle is spread over the step no one call does (leimao's MLP
# step: the `MLPModel(...)` call named for 12% of the launch idle beside optimizer.step's 11% and backward's 6%, a
# record_function's `__exit__()` for 27% of the host work)


@dataclass(frozen=True)
class SourceLines:
    """The user's own frames behind the report's hotspots and idle causes (a trace with stacks only)."""
    hotspots: dict[str, tuple[SourceLine, ...]]   # hotspot (op) name -> the frames that launched its time, most first
    kernels: dict[str, tuple[SourceLine, ...]]    # top kernel name -> the same
    idle: dict[Cause, tuple[SourceLine, ...]]     # cause -> where the host was in its gaps, most idle first
    python_events: int                            # the python_function events they were read from
    # hotspot (op) name -> its frames past the KEPT_SITES in `hotspots`: not listed, but counted when the Time line
    # says how many call sites it leaves unnamed (switch_moe_8k's addmm came from five, 'and 1 more' was said)
    hotspots_more: dict = field(default_factory=dict, metadata={"json": False})


def source_lines(trace: Trace, gpu_rows: np.ndarray, hot: tuple[Hotspot, ...], kernels: tuple[Hotspot, ...],
                 devices: tuple[DeviceIdle, ...], host_only: bool) -> SourceLines | None:
    st = fr.index(trace)
    if st is None:
        return None
    ev = trace.ev
    if host_only:
        ops = np.flatnonzero(ev.cat == CPU_OP)
        top_s, _ = iv.union(ev.start[ops], ev.end[ops])
        outer = ops[np.searchsorted(ev.start[ops], top_s)] if len(ops) else ops
        by_hot = fr.grouped(trace, st, outer, ev.name[outer].astype(np.int64), ev.dur[outer],
                            lambda k: trace.names[k], {h.name for h in hot})
        return _with_call_lines(trace, SourceLines(by_hot, {}, {}, len(st.start)))
    launch = trace.launch_of[gpu_rows]
    dur = ev.dur[gpu_rows]
    keys, op = hs.op_keys(trace, gpu_rows)
    # a site counts the op's calls it made, as the hotspot does (its GEMMs and their workspace memsets, one call)
    every = fr.grouped(trace, st, launch, keys, dur, lambda k: hs.op_label(trace, k),
                       {h.name for h in hot} | KNOB_OPS, k=ALL_SITES, counts=hs.call_shares(trace, gpu_rows, keys, op))
    by_hot = {name: lines[:KEPT_SITES] for name, lines in every.items()}
    more = {name: lines[KEPT_SITES:] for name, lines in every.items() if len(lines) > KEPT_SITES}
    by_kernel = fr.grouped(trace, st, launch, ev.name[gpu_rows].astype(np.int64), dur,
                           lambda k: hs.op_label(trace, -1 - k), {k.name for k in kernels})
    idle = _idle_lines(trace, st, max(devices, key=lambda d: d.idle_ns)) if devices else {}
    return _with_call_lines(trace, SourceLines(by_hot, by_kernel, idle, len(st.start), more))


def _with_call_lines(trace: Trace, src: SourceLines) -> SourceLines:
    """Each line's call_line, read from the user's source file where it is present."""
    groups = (src.hotspots, src.kernels, src.idle)
    files = sorted({x.file for g in groups for lines in g.values() for x in lines})
    texts = read_sources(trace.path, files)
    if not texts:
        return src

    def done(g: dict) -> dict:
        return {k: tuple(fr.refine(x, texts.get(x.file)) for x in lines) for k, lines in g.items()}

    return SourceLines(done(src.hotspots), done(src.kernels), done(src.idle), src.python_events, src.hotspots_more)


def _idle_lines(trace: Trace, st: fr.Stacks, dev: DeviceIdle) -> dict[Cause, tuple[SourceLine, ...]]:
    """Each cause's frames weighted by its gaps' idle outside the one-time set-up: a code change does not act on a
    first call's allocator growth or module load, and the steady state never pays it (heldout-user15 switch_moe_8k:
    'in your code: the `Linear(...)` in `forward` (multiquery_attention.py:770)', a 27.6 ms gap that was the first
    Linear's cudaFree and cudaMalloc). A cause whose gaps are all set-up names no frame."""
    ev, g = trace.ev, dev.gaps
    steady = _outside_setup_ns(g, dev)
    out = {}
    for i, cause in enumerate(CAUSES):
        m = (g.cause == i) & (steady > 0)
        if not m.any():
            continue
        dur = steady[m]
        if cause is Cause.HOST_WORK:
            # no host call explains host work: the frame that held the launching thread through the gap
            nxt = g.next_row[m]
            call = np.where(nxt != NONE, trace.launch_of[np.maximum(nxt, 0)], NONE)
            tid = np.where(call != NONE, ev.tid[np.maximum(call, 0)], _main_thread(st))
            frame, callee = fr.user_frames_over(st, tid, g.start[m], g.end[m])
        else:
            host = g.host_row[m]
            ok = host != NONE
            frame = np.full(int(m.sum()), NONE, np.int64)
            callee = frame.copy()
            if ok.any():
                frame[ok], callee[ok] = fr.user_frames_at(st, ev.tid[host[ok]], ev.start[host[ok]])
        # the frame named for a cause (the first) holds most of its idle (set-up counted in the whole): the steady
        # sliver of a cold start's host work is not where its idle is, nor one of many calls that share it
        whole = float(g.dur[g.cause == i].sum()) / 1e3
        found = fr.lines(trace, st, frame, callee, dur)
        if found and found[0].us >= SOURCE_MIN_IDLE_SHARE * whole and \
                found[0].us >= SOURCE_MOST_STEADY * float(dur.sum()) / 1e3:
            out[cause] = found
    return out


def _outside_setup_ns(g, dev: DeviceIdle) -> np.ndarray:
    """Each gap's idle (ns) outside the device's one-time set-up windows (first calls, compiles; any thread)."""
    dur = g.dur.astype(np.int64)
    up = dev.setup
    if up is None or not len(up.start) or not len(dur):
        return dur
    ws, we = iv.union(up.start, up.end)
    return dur - np.asarray(iv.covered(ws, we, g.start, g.end), np.int64)


def _main_thread(st: fr.Stacks) -> int:
    return max(st.by_tid, key=lambda t: len(st.by_tid[t]))


def fused_kernels(trace: Trace) -> dict[str, FusedKernel]:
    """Every Inductor kernel in the trace (by its GPU name, or the CPU op Inductor records under that name),
    with the ATen ops it fused."""
    ev = trace.ev
    ids = np.flatnonzero(np.bincount(ev.name[any_of(ev.cat, (KERNEL, CPU_OP))], minlength=len(trace.names)))
    names = [trace.names[i] for i in ids.tolist() if inductor.is_inductor_kernel(trace.names[i])]
    if not names:
        return {}
    texts = read_wrappers(trace.path, inductor.wrapper_paths(trace.names))
    return inductor.fused_kernels(sorted(names), texts)


def next_line(kind: Experiment, cause: Cause | None, src: SourceLines | None,
              hot: tuple[Hotspot, ...], ops: tuple[str, ...] = (), by_range: bool = False) -> SourceLine | None:
    """The frame the Next line names: a knob's evidence op's frame (`ops`: the hand-written softmax SDPA
    replaces), else the chosen idle cause's frame, unless the user's named ranges split the idle (`by_range`: the
    Idle line names them; one frame's call would point at a minority of it); for faster kernels, the top hotspot's;
    none for a warm-up or a recapture, whose change is not a line of code."""
    if src is None or kind in (Experiment.CAPTURE_ON_GPU, Experiment.MOVE_TO_GPU, Experiment.WARM_UP,
                                  Experiment.RECAPTURE):
        return None
    for op in ops:
        found = src.hotspots.get(op, ())
        if found:
            return found[0]
    if cause is not None:
        found = src.idle.get(cause, ()) if not by_range else ()
        return found[0] if found else None
    for h in hot:
        found = src.hotspots.get(h.name, ())
        if found:
            return found[0]
    return None
