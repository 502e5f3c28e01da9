"""Every word a user reads: sentences, number formats, cause names and advice.

The analyses return typed results (numbers, enums, names from the trace); this module
turns them into the report's five lines, the diff's and the multi-rank report's lines,
the caveats, and the phrases the drills' feedback and the dashboard show. No other module
composes a sentence for a user, and no module reads another's sentences.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from analyzers.model.evidence import Evidence, HostEvidence, LaunchEvidence, SyncEvidence, TransferEvidence
from analyzers.analyses.peaks import non_gpu_accelerator
from analyzers.model.trace import STREAM_OVERLAP_NS, Caveat
from analyzers.model.verdicts import Cause, Experiment, Regime


# --- numbers ---------------------------------------------------------------------------

def count(n: int, one: str, many: str | None = None) -> str:
    """'1 event', '1,024 events'."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


# --- the trace's own caveats ---------------------------------------------------------------

def caveat(c: Caveat) -> str:
    if c.kind == "dropped_events":
        return (f"{count(c.count, 'complete event')} had a missing, negative, non-numeric or out-of-range ts/dur and "
                f"{'was' if c.count == 1 else 'were'} dropped")
    if c.kind == "duplicate_events":
        return (f"{count(c.count, 'event')} repeated an earlier one exactly (same category, name, times, thread and "
                "ids) and counted once")
    if c.kind == "no_gpu_activity":
        return ("no GPU activity in the trace (no kernels, copies or memsets: a CPU-only capture, or CUDA activity was "
                "not recorded): there is no GPU span, idle time or regime to report")
    if c.kind == "unlinked_gpu":
        return (f"{c.count:,} of {count(c.total, 'GPU activity', 'GPU activities')} have no launch call in the trace "
                "(missing correlation, or launched before profiling started): the idle before them counts as other")
    if c.kind == "dangling_external_id":
        verb = "carries" if c.count == 1 else "carry"
        return (f"{count(c.count, 'launch call')} {verb} an External id that no cpu_op in the trace has: their GPU "
                "time is listed under the kernel's name, not the op's")
    if c.kind == "stream_overlap":
        verb = "starts" if c.count == 1 else "start"
        return (f"{count(c.count, 'GPU activity', 'GPU activities')} {verb} more than {STREAM_OVERLAP_NS / 1e3:.0f} µs "
                "before the previous one on their stream ends, though a stream runs in order (a merged or edited "
                "trace?): busy and idle time count the overlapped time once")
    raise ValueError(f"unknown caveat kind {c.kind!r}")


# --- durations, bytes, rates, shares ------------------------------------------------------

def duration_us(us: float) -> str:
    """One format for every duration: '89.3 µs', '6.52 ms', '52.2 ms', '3.21 s'."""
    us = abs(us)
    if us < 1000:
        return f"{us:.1f} µs"
    if us < 10_000:
        return f"{us / 1e3:.2f} ms"
    if us < 1_000_000:
        return f"{us / 1e3:.1f} ms"
    return f"{us / 1e6:.2f} s"


def duration_ns(ns: float) -> str:
    return duration_us(ns / 1e3)


def signed_us(us: float) -> str:
    return ("−" if us < 0 else "+") + duration_us(us)


def size(n: float) -> str:
    """Bytes: '1.07 GB', '4.2 MB', '16.0 kB'."""
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.1f} kB"


def share(x: float) -> str:
    """A fraction as a whole percentage: '19%'."""
    return f"{100 * x:.0f}%"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def pct_of(achieved: float, peak: float) -> str:
    """A share of a peak; measured copy ceilings can sit a hair under what kernels reach."""
    return "at the ceiling" if achieved >= peak else f"{100 * achieved / peak:.0f}%"


def ratio(r: float, same_tol: float) -> str:
    """A ratio before/after as 'N× fewer', 'N× more' or 'about the same'."""
    if abs(r - 1) <= same_tol:
        return "about the same"
    return f"{r:.2f}× fewer" if r >= 1 else f"{1 / r:.2f}× more"


def speed(s: float) -> str:
    return f"{s:.2f}× speedup" if s >= 1 else f"{1 / s:.2f}× slowdown"


# --- causes and their advice ----------------------------------------------------------------

CAUSE_WORDS = {Cause.LAUNCH_OVERHEAD: "launch overhead", Cause.HOST_WORK: "host work",
               Cause.SYNCHRONIZATION: "synchronization", Cause.DATA_TRANSFER: "data transfer", Cause.OTHER: "other"}


def cause_words(cause: Cause | None) -> str:
    return CAUSE_WORDS[cause] if cause is not None else "none"


def advice(cause: Cause, ev: Evidence | None = None, only: str | None = None) -> str:
    """The one advice text per cause: the evidence's first experiment and the Next line's lever.
    The sync advice names the op whose syncs to remove (`only`), else the ops (or calls) that synced."""
    if cause is Cause.SYNCHRONIZATION and (only or isinstance(ev, SyncEvidence) and (ev.called_from or ev.sync_calls)):
        src = only or ", ".join(x.name for x in (ev.called_from or ev.sync_calls)[:2])
        if isinstance(ev, SyncEvidence) and ev.waited_on and sum(w.us for w in ev.waited_on) >= 0.5 * ev.total_us:
            # queued work waited on a cross-stream dependency: nothing to remove on the host
            return (f"make the dependency ready sooner: the work waits on {ev.waited_on[0].name}; issue what it waits "
                    "for (the producing work, the event record) earlier, or drop the wait if the streams need not order")
        return ADVICE[cause].replace("the syncs:", f"the syncs ({src}):", 1)
    if cause is Cause.LAUNCH_OVERHEAD and isinstance(ev, LaunchEvidence) and ev.graph_launches:
        return ("cut the launches left outside the CUDA graphs the trace already replays "
                f"({ev.graph_launches} graph launches): capture more of the step in the graph, fuse what stays "
                "outside (torch.compile), or more work per launch")
    return ADVICE[cause]


ADVICE = {
    Cause.LAUNCH_OVERHEAD: "cut launches: torch.compile to fuse, then CUDA graphs (mode='reduce-overhead'), or more "
                           "work per launch (bigger batch)",
    Cause.HOST_WORK: "take the host work off the critical path: DataLoader workers / prefetch, or overlap it with "
                     "queued GPU work; profile the host (py-spy) to see what it is",
    Cause.SYNCHRONIZATION: "remove or defer the syncs: keep values and decisions on the device, read them once every "
                           "N steps",
    Cause.DATA_TRANSFER: "pin host memory, copy with non_blocking=True on a side stream so copies overlap compute, or "
                         "keep the data resident on the device",
    Cause.OTHER: "capture again with both CPU and CUDA activity recorded (ProfilerActivity.CPU and "
                 "ProfilerActivity.CUDA) so that every kernel links to the call that launched it",
}

WASTE = {
    Cause.LAUNCH_OVERHEAD: "tuning kernels: they already finish before the next launch arrives",
    Cause.HOST_WORK: "torch.compile, CUDA graphs or faster kernels: the device is waiting for the host, not on launches",
    Cause.SYNCHRONIZATION: "faster kernels: they make the drain come sooner, not the host's next launch",
    Cause.DATA_TRANSFER: "faster kernels or torch.compile: compute is not what the device waits on",
    Cause.OTHER: "acting on this trace's idle time: what caused it was not recorded",
}


def copy_phrase(ev: TransferEvidence) -> str:
    if not ev.copies:
        return "copies"
    c = ev.copies[0]
    rate = f" at {c.gbps:.1f} GB/s" if c.gbps else ""
    return f"{c.count}× {c.name}, {c.bytes / 1e9:.2f} GB{rate}"


def evidence_phrase(ev: Evidence) -> str:
    """What a cause's verdict rests on, in one clause: the Idle line's 'mostly ...'."""
    if isinstance(ev, LaunchEvidence):
        ops = ", ".join(o.name for o in ev.launching_ops[:3])
        cost = (f"a launch call takes {ev.launch_call_median_us:.1f} µs" if ev.launch_call_median_us is not None
                else "the trace has no launch call to measure what launching costs")
        return (f"{plural(ev.gaps, 'gap')} with a median of {ev.median_gap_us:.1f} µs between kernels whose median run "
                f"is {ev.kernel_median_us:.1f} µs; {cost}" + (f" (launched by {ops})" if ops else ""))
    if isinstance(ev, HostEvidence):
        traced = ", ".join(o.name for o in ev.host_events[:3])
        held = ", ".join(o.name for o in ev.python_functions[:2])
        what = []
        if held:   # recorded with stacks: the Python that held the host is in the trace
            what.append(f"in Python: {held}")
        elif ev.untraced_share >= 0.005:   # no Python frames recorded there: the host's time is untraced
            what.append(f"{100 * ev.untraced_share:.0f}% untraced: Python, numpy, sleeping")
        if traced:
            what.append(f"traced CPU ops: {traced}")
        return (f"{plural(ev.gaps, 'gap')} with a median of {duration_us(ev.median_gap_us)} in which the host issued "
                f"no GPU work" + (f" ({'; '.join(what)})" if what else ""))
    if isinstance(ev, SyncEvidence):
        calls = ", ".join(f"{c.name} ×{c.count}" for c in ev.sync_calls[:2])
        src = ", ".join(c.name for c in ev.called_from[:2])
        if ev.waited_on and sum(w.us for w in ev.waited_on) >= 0.5 * ev.total_us:
            return (f"queued work waited {duration_us(sum(w.us for w in ev.waited_on))} on "
                    f"{waited_phrase(ev.waited_on)}, not on its launch")
        return (f"{plural(ev.gaps, 'drain')}, a median of {ev.median_gap_us:.1f} µs each, after {calls or 'syncs'}"
                + (f" called from {src}" if src else ""))
    if isinstance(ev, TransferEvidence):
        waited = (f"; queued work waited {duration_us(sum(w.us for w in ev.waited_on))} while the host staged "
                  f"{waited_phrase(ev.waited_on)}") if ev.waited_on else ""
        return f"{ev.copy_count} copies, mostly {copy_phrase(ev)}{waited}"
    if getattr(ev, "waited_on", ()) or (ev.gaps and not ev.unlinked_gaps):
        return (f"{plural(ev.gaps, 'gap')} in which queued work waited on a dependency the trace does not record "
                "(no stream-wait, sync or copy call around it)")
    return f"{plural(ev.gaps, 'gap')} with no launch call in the trace"


def waited_phrase(waited) -> str:
    return ", ".join(f"{w.name} ×{w.count}" for w in waited[:2])


def mostly(a) -> str:
    """'<cause words>: <its evidence>' for the dominant cause of an analysis; 'none' without idle."""
    dom = a.dominant
    if dom is None:
        return "none"
    return f"{CAUSE_WORDS[dom]}: {evidence_phrase(a.evidence[dom])}"


# --- the report --------------------------------------------------------------------------------

def analysis_caveats(a) -> list[str]:
    """The trace's caveats, then what the analysis found about the profile itself (an Analysis, or a diff's Side)."""
    found = a.trace_caveats if hasattr(a, "trace_caveats") else a.trace.caveats
    tr = getattr(a, "trace", None)   # an Analysis has its Trace; a diff Side only its path
    if hasattr(tr, "device_names") and non_gpu_accelerator(tr.device_names.values(), tr.names):
        found = [c for c in found if c.kind != "no_gpu_activity"]   # not CPU-only: a device this tool does not read
    out = [caveat(c) for c in found]
    if a.warmup_share >= 0.05:
        names = ", ".join(f"{w.name} {duration_us(w.first_call_us)} "
                          + (f"(later {duration_us(w.later_median_us)})" if w.later_median_us is not None else "(once)")
                          for w in a.warmup[:3])
        out.append(f"the profile includes one-time set-up: first calls of {names}, {share(a.warmup_share)} of the "
                   "span; warm up before profiling")
    return out


REGIME_ADVICE = {
    "compute": "do less arithmetic or cheaper arithmetic: lower precision on tensor cores (bf16/fp8), skip work "
               "(causal masks, smaller shapes)",
    "memory": "move fewer bytes: fuse elementwise chains, keep activations/weights in lower precision, avoid "
              "materialised copies",
}


CPU_ONLY_NEXT = (
    "capture on the GPU with CUDA activity recorded (tracetriage capture --device cuda WORKLOAD, or "
    "ProfilerActivity.CUDA in your own profiler)",
    "idle gaps and regimes live on the device timeline, which this trace does not have (0 GPU events)",
    "tuning from CPU op times alone: on a GPU most of those ops only launch work",
)


LEVER_WORDS = {"remove_syncs": "removing the syncs", "no_host_work": "taking host work off the critical path",
               "cuda_graphs": "CUDA graphs or fusion to cut launches", "async_copies": "pinned memory and async copies",
               "kernels_2x": "faster kernels"}


def predicted(c) -> str:
    """A what-if lever's prediction: '−24%, 31.8 ms → 24.1 ms'."""
    return f"{saving_pct(c.saving_ns, c.baseline_ns)}, {duration_ns(c.baseline_ns)} → {duration_ns(c.predicted_ns)}"


def next_experiment(a) -> dict[str, str]:
    """{"lever", "why", "waste"} for the analysis's next experiment."""
    nx = a.next_experiment
    if nx.kind is Experiment.CAPTURE_ON_GPU:
        return dict(zip(("lever", "why", "waste"), CPU_ONLY_NEXT))
    if nx.kind is Experiment.WARM_UP:
        return {"lever": "warm up first (run a few steps before the profiler starts), then profile and triage again",
                "why": f"{share(a.warmup_share)} of the span is one-time set-up in first calls "
                       f"({', '.join(w.name for w in a.warmup[:2])}), which the steady state never pays",
                "waste": "optimising what this profile shows: its biggest gaps do not recur"}
    if nx.cause is not None:
        ev = a.evidence[nx.cause]
        out = {"lever": advice(nx.cause, ev, nx.lever.only if nx.lever else None),
               "why": _idle_why(a, nx.cause, ev, nx.gain_share), "waste": WASTE[nx.cause]}
    else:
        out = _regime_next(a)
    if nx.lever is not None and nx.kind is not Experiment.FIND_THE_BOUND:   # no prediction rests on an unknown bound
        out["lever"] += f" (predicted {predicted(nx.lever)}" + (
            " if every kernel took half as long)" if nx.lever.lever == "kernels_2x" else ")")
    if nx.waste is not None:
        w = nx.waste
        idle_lever = a.levers.all.lever(w.lever).assumption
        why = f" ({assumption(idle_lever)})" if idle_lever.count == 0 and w.lever != "kernels_2x" else ""
        out["waste"] = f"{LEVER_WORDS[w.lever]}, predicted {saving_pct(w.saving_ns, w.baseline_ns)}{why}"
    return out


def _regime_next(a) -> dict[str, str]:
    v, pk = a.verdict, a.roof.peaks
    if a.next_experiment.kind is Experiment.FIND_THE_BOUND:
        return find_the_bound(v)
    if a.next_experiment.kind is Experiment.CHEAPER_ARITHMETIC:
        peak = f" of a {pk.flops(v.dtype) / 1e12:.0f} TFLOP/s peak" if pk and v.dtype else ""
        why = (f"kernel time is compute-bound at {v.achieved_tflops:.0f} TFLOP/s{peak}" if v.achieved_tflops
               else f"{100 * v.compute_us / max(v.kernel_us, 1e-9):.0f}% of kernel time is in compute-bound kernels")
        return {"lever": REGIME_ADVICE["compute"], "why": why,
                "waste": "fusing elementwise ops or CUDA graphs: launches and bytes are not the limit"}
    peak = f" of {pk.bytes_per_s / 1e9:.0f} GB/s" if pk else ""
    why = (f"kernel time is memory-bound at {v.achieved_gbps:.0f} GB/s{peak}" if v.achieved_gbps
           else f"{100 * v.memory_us / max(v.kernel_us, 1e-9):.0f}% of kernel time is in memory-bound kernels")
    return {"lever": REGIME_ADVICE["memory"], "why": why,
            "waste": "more FLOP-efficient kernels or tensor-core tuning: arithmetic is not the limit"}


UNCOSTED_WORDS = {
    "no_shapes": "their ops recorded no shapes (record_shapes was off)",
    "no_launching_op": "no recorded CPU op launched them (CUDA-graph replays, or CPU activity not captured)",
    "no_cost_model": "their ops have no cost model here (custom or library ops)",
    "graph_replay": "they are CUDA-graph replays (one launch call, no op of their own)",
}


def uncosted_phrase(v) -> str:
    """Why kernel time has no cost model: the largest reasons, in words."""
    tot = sum(v.uncosted_why_us.values()) or 1.0
    items = list(v.uncosted_why_us.items())[:2]
    parts = [UNCOSTED_WORDS[w] + (f" ({share(us / tot)})" if len(items) > 1 else "") for w, us in items]
    return "; ".join(parts) or "their kernels carry no cost"


def find_the_bound(v) -> dict[str, str]:
    """Next, when the regime is unknown: nothing rests on a bound that was not measured."""
    why = v.uncosted_why_us
    top = next(iter(why), "no_cost_model")
    lever = {
        "no_shapes": "capture again with record_shapes=True so each kernel's op carries its shapes, then triage again",
        "no_launching_op": "capture one eager step (no CUDA graphs) with ProfilerActivity.CPU and record_shapes=True "
                           "so each kernel links to the op that launched it",
        "graph_replay": "capture one eager step (no CUDA graphs) with record_shapes=True: its kernels carry the ops "
                        "and shapes the replays hide",
        "no_cost_model": "measure the top kernels' FLOP/s and bytes with Nsight Compute (ncu --set roofline) to "
                         "find which ceiling they are under",
    }[top]
    return {"lever": lever,
            "why": f"{share(v.uncosted_share)} of the kernel time has no cost model: {uncosted_phrase(v)}",
            "waste": "choosing between fewer bytes and cheaper arithmetic now: the trace does not say which "
                     "limits the kernels"}


def _idle_why(a, cause: Cause, ev: Evidence, gain: float) -> str:
    idle_pct = share(a.idle_share)
    if cause is Cause.LAUNCH_OVERHEAD:
        return (f"the GPU idles {idle_pct} between {ev.kernels} kernels that run {ev.kernel_median_us:.1f} µs "
                "(median) while each launch costs the host more")
    if cause is Cause.HOST_WORK:
        return (f"the GPU idles {idle_pct} while the host runs code that issues no GPU work "
                f"(median gap {ev.median_gap_us / 1e3:.2f} ms)")
    if cause is Cause.SYNCHRONIZATION:
        if gain < 0.05 and a.evidence[Cause.HOST_WORK].gaps:   # the syncs' cost is the overlap they prevent
            host = a.evidence[Cause.HOST_WORK]
            return (f"while the host waits in a sync it cannot run ahead, so its host work ({host.gaps} stretches, "
                    f"a median of {duration_us(host.median_gap_us)}, {share(a.by_cause_ns[Cause.HOST_WORK] / a.span_ns)} "
                    "of the span) leaves the GPU idle instead of overlapping its kernels")
        return (f"{ev.gaps} times the device drained while the host waited, costing {duration_us(ev.total_us)} of "
                f"idle ({share(gain)} of the span)")
    if cause is Cause.DATA_TRANSFER:
        return f"compute idles {idle_pct} while copies run ({copy_phrase(ev)})"
    return (f"{share(gain)} of the span is idle before GPU work whose launch call is not in the trace, so its "
            "cause cannot be read from it")


def five_lines(a) -> list[str]:
    if not a.devices:
        return _cpu_only_lines(a)
    tr = a.trace
    dev = tr.device_name() or "an unnamed device"
    scope = f" (range {a.range_filter})" if a.range_filter else ""
    busy = a.kernel_busy_ns / a.span_ns if a.span_ns else 0.0
    l1 = (f"Measured: {Path(tr.path).name}{scope} on {dev}: {tr.events_in_file:,} events, a {duration_ns(a.span_ns)} "
          f"GPU span, kernels busy {share(busy)} of it ({a.kernels:,} kernels, "
          + (f"{duration_ns(a.copy_ns)} of copies)." if a.copy_ns else "no copies)."))
    if a.phases:
        p = a.phases
        l1 = l1[:-1] + (f"; prefill (TTFT) {duration_us(p.ttft_us)}, decode {duration_us(p.per_token_us)} per token "
                        f"over {p.decode.count} steps.")
    hot = ", ".join(f"{h.name} {share(h.share)} ({h.calls} calls)" for h in a.hotspots[:3])
    l2 = f"Time: device time goes to {hot or 'nothing (no GPU activity)'}."
    named = [r for r in a.ranges if r.name != "ProfilerStep" and not r.name.startswith("## ") and r.kernel_busy_us > 0]
    if named and not a.range_filter:
        top = sorted(named, key=lambda r: -r.kernel_busy_us)[:2]
        l2 = l2[:-1] + "; by range, " + ", ".join(
            f"{r.name} {duration_us(r.kernel_busy_us)} busy over {r.count}×" for r in top) + "."
    if a.idle_ns > 0:
        parts = sorted(((c, ns) for c, ns in a.by_cause_ns.items() if ns > 0), key=lambda x: -x[1])
        split = ", ".join(f"{CAUSE_WORDS[c]} {share(ns / a.span_ns)}" for c, ns in parts[:4])
        if (a.dominant is Cause.DATA_TRANSFER or a.by_cause_ns.get(Cause.DATA_TRANSFER, 0) >= 0.05 * a.span_ns) \
                and a.copy_ns > 0:
            # compute idle is "no kernel runs": a copy on its own engine does not keep compute busy
            split += " (copies count as compute idle: no kernel runs while they do)"
        l3 = (f"Idle: the GPU is idle {share(a.idle_share)} of the span ({duration_ns(a.idle_ns)}): {split}; "
              f"mostly {mostly(a)}{_serialising_syncs(a)}.")
    else:
        l3 = "Idle: the GPU never idles inside its span."
    nx = next_experiment(a)
    l5 = f"Next: {nx['lever']}, because {nx['why']}. Would waste the week: {nx['waste']}."
    return [l1, l2, l3, _regime_line(a), l5]


def _serialising_syncs(a) -> str:
    """Syncs that serialise host work with GPU work, named with the overlap they prevent, whatever holds more
    of the idle: '; the syncs in aten::item serialise the host with the GPU: removing them overlaps ...'."""
    c = a.serialising_syncs
    if c is None:
        return ""
    return (f"; the syncs{f' ({c.only})' if c.only else ''} serialise the host with the GPU: removing them "
            f"overlaps {duration_ns(c.saving_ns)} ({share(c.saving_ns / c.baseline_ns)} of the traced span)")


def _regime_line(a) -> str:
    v, pk = a.verdict, a.roof.peaks
    tot = v.kernel_us
    mix = (f"of kernel time, {100 * v.compute_us / tot:.0f}% is compute-bound and {100 * v.memory_us / tot:.0f}% "
           f"memory-bound" + (f" ({100 * v.unknown_us / tot:.0f}% unknown)" if v.unknown_us > 0.05 * tot else "")
           + (f", {100 * v.comm_us / tot:.0f}% in collectives (waiting on peers counts as busy)" if v.comm_us else "")) \
        if tot else "no kernels ran"
    ridge = ""
    if v.intensity is not None and v.ridge:
        ridge = f"; its ops average {v.intensity:.1f} FLOP/byte against a {v.dtype} ridge of {v.ridge:.0f}"
    if v.regime is Regime.OVERHEAD:
        line = f"Regime: overhead-bound: the device idles {share(v.idle_share)} of the span; {mix}{ridge}."
    elif v.regime is Regime.UNKNOWN:
        known = [f"{share(x / tot)} {what}" for x, what in ((v.compute_us, "compute-bound"), (v.memory_us, "memory-bound"),
                                                            (v.comm_us, "in collectives")) if tot and x > 0.005 * tot]
        line = (f"Regime: unknown: {share(v.uncosted_share)} of kernel time (collectives aside) has no cost model, "
                f"because {uncosted_phrase(v)}; " + (f"the rest of kernel time is {' and '.join(known)}: too little "
                                                     "to decide" if known else "nothing else to decide by")
                + f"{ridge}.")
    elif v.regime is Regime.COMPUTE:
        if v.achieved_tflops:
            peak = (f" of {pk.flops(v.dtype) / 1e12:.0f} peak ({pct_of(v.achieved_tflops, pk.flops(v.dtype) / 1e12)})"
                    if pk and v.dtype else "")
            line = f"Regime: compute-bound: {mix}; compute-bound ops reach {v.achieved_tflops:.0f} TFLOP/s{peak}{ridge}."
        else:
            line = f"Regime: compute-bound: {mix} (their FLOPs are not in the trace: no shapes recorded){ridge}."
    else:
        if v.achieved_gbps:
            peak = f" of {pk.bytes_per_s / 1e9:.0f} peak ({pct_of(v.achieved_gbps, pk.bytes_per_s / 1e9)})" if pk else ""
            line = f"Regime: memory-bound: {mix}; memory-bound ops move {v.achieved_gbps:.0f} GB/s{peak}{ridge}."
        else:
            line = f"Regime: memory-bound: {mix} (their bytes are not in the trace: no shapes recorded){ridge}."
    if a.phases:
        line = line[:-1] + f"; prefill is {a.phases.prefill.regime}-bound, decode {a.phases.decode.regime}-bound."
    if pk is not None and pk.source != "datasheet":
        line = line[:-1] + " (peaks measured on this machine by tracetriage capture ceilings)."
    if pk is None:
        line = line[:-1] + (f" (no peak table entry for {a.trace.device_name() or 'this device'}: run tracetriage "
                            "capture ceilings).")
    return line


def _cpu_only_lines(a) -> list[str]:
    """A trace with no GPU activity (a CPU capture, or CUDA activity not recorded)."""
    tr, h = a.trace, a.host_only
    top = ", ".join(f"{x.name} {share(x.share)} ({x.calls} calls)" for x in h.hotspots)
    acc = non_gpu_accelerator(tr.device_names.values(), tr.names)
    if acc is not None:   # not a CPU-only trace: a device this tool does not read
        return [
            f"Measured: {Path(tr.path).name} was recorded on an {acc} accelerator, not a GPU: {tr.events_in_file:,} "
            f"events, {h.ops:,} CPU ops over a {duration_ns(h.span_ns)} host span.",
            f"Time: host time in top-level ops goes to {top or 'nothing (no CPU ops recorded)'}.",
            f"Idle: not attributed: tracetriage reads CUDA/ROCm kernel timelines, and the {acc}'s device events "
            "are not kernels it can place (0 gaps).",
            f"Regime: not decided: there is no peak table or cost model for {acc} devices.",
            f"Next: use the {acc} vendor's own profiler for the device timeline (HTA reads MTIA traces), because "
            "the verdicts here need GPU kernels. Would waste the week: reading the missing device timeline as an idle device: "
            "the device did run.",
        ]
    return [
        f"Measured: {Path(tr.path).name} has no GPU activity: {tr.events_in_file:,} events, {h.ops:,} CPU ops "
        f"over a {duration_ns(h.span_ns)} host span, ops running {share(h.busy_ns / h.span_ns if h.span_ns else 0)} "
        "of it.",
        f"Time: host time in top-level ops goes to {top or 'nothing (no CPU ops recorded)'}.",
        "Idle: there is no GPU timeline in this trace, so there are no idle gaps to attribute (0 gaps).",
        "Regime: not decidable from a CPU-only trace: compute, memory and overhead are judged on device "
        "activity (0 kernels).",
        f"Next: {CPU_ONLY_NEXT[0]}, because {CPU_ONLY_NEXT[1]}. Would waste the week: {CPU_ONLY_NEXT[2]}.",
    ]


def hta_text(hta: dict, analysis) -> str:
    """HTA's per-stream idle breakdown beside ours (`report --hta`)."""
    if "error" in hta:
        return f"HTA: unavailable: {hta['error']}"
    lines = [f"HTA {hta.get('hta_version', '?')} beside ours (per stream; host_wait lumps every host cause together):"]
    for rank, r in hta.get("ranks", {}).items():
        lines.append(f"  rank {rank}: GPU activity {r.get('gpu_activity_us_total', r['kernel_time_us_total']) / 1e3:.2f} ms "
                     f"(HTA's own kernel-breakdown total: {r['kernel_time_us_total'] / 1e3:.2f} ms; it also counts "
                     "CPU events that carry a stream field)")
        for s, n in r.get("streams", {}).items():
            lines.append(f"    stream {s}: idle {n['idle_us'] / 1e3:.2f} ms = host_wait {n['host_wait_us'] / 1e3:.2f} + "
                         f"kernel_wait {n['kernel_wait_us'] / 1e3:.2f} + other {n['other_us'] / 1e3:.2f} ms")
        ls = r.get("launch", {})
        if ls:
            lines.append(f"    launches: {ls.get('count')} paired, median launch delay {ls.get('median_launch_delay_us')} µs, "
                         f"{ls.get('short_kernels')} short kernels, {ls.get('long_launch_delays')} long launch delays")
    ours = ", ".join(f"{k} {duration_ns(v)}" for k, v in analysis.by_cause_ns.items() if v)
    lines.append(f"  tracetriage, device idle: {ours or 'none'}")
    return "\n".join(lines)


# --- the diff ------------------------------------------------------------------------------------

def _times(r: float) -> str:
    from analyzers.triage.diff import SAME_TOL

    return ratio(r, SAME_TOL)


def diff_caveats(d) -> list[str]:
    from analyzers.triage.diff import STEP_RANGE

    out = []
    b, a = d.before, d.after
    if d.only_one_side_has_steps:
        has = b if b.steps else a
        out.append(f"only {has.name} has {STEP_RANGE} ranges ({has.steps}), so whole traces are compared; profile the "
                   "same number of steps for a fair comparison")
    if d.different_devices:
        out.append(f"the traces come from different devices ({b.device_name or 'unnamed'} vs "
                   f"{a.device_name or 'unnamed'}): the change mixes the hardware with the code")
    return out


def _idle_causes(d, k: int = 3) -> str:
    moved = sorted(((c, x) for c, x in d.idle_change_us.items() if abs(x) >= 0.5), key=lambda cx: -abs(cx[1]))
    return ", ".join(f"{CAUSE_WORDS[c]} {signed_us(x)}" for c, x in moved[:k])


def diff_lines(d) -> list[str]:
    """The diff's lines: Diff, Time, Launches and bytes, Explained (and its caveats)."""
    b, a = d.before, d.after
    db, da = d.divisors
    span_b, span_a = d.span_us
    busy_b, busy_a = b.kernel_busy_us / db, a.kernel_busy_us / da
    s = d.speedup
    dev = b.device_name if b.device_name == a.device_name else f"{b.device_name} / {a.device_name}"
    scope = f" per profiled step ({b.steps} vs {a.steps} steps)" if d.per_step else ""
    change = "the after trace has no GPU activity" if s is None else f"a {speed(s)}"
    l1 = (f"Diff: {b.name} → {a.name} on {dev}: the GPU span went from {duration_us(span_b)} to {duration_us(span_a)}{scope}, "
          f"{change}.")

    idle_b, idle_a = b.idle_us / db, a.idle_us / da
    causes = _idle_causes(d)
    top_b = b.top_ops[0] if b.top_ops else None
    top_a = a.top_ops[0] if a.top_ops else None
    tops = ""
    if top_b and top_a:
        tops = (f"; the top op was {top_b.name} ({100 * top_b.share:.0f}%) and is now "
                f"{top_a.name} ({100 * top_a.share:.0f}%)") if top_b.name != top_a.name else \
            f"; {top_a.name} stays the top op ({100 * top_b.share:.0f}% → {100 * top_a.share:.0f}%)"
    l2 = (f"Time: the span changed by {signed_us(-d.time_saved_us)} = kernel busy {signed_us(busy_a - busy_b)} "
          f"({duration_us(busy_b)} → {duration_us(busy_a)}) + idle {signed_us(idle_a - idle_b)} "
          f"({100 * b.idle_share:.0f}% → {100 * a.idle_share:.0f}% of the span"
          + (f": {causes}" if causes else "") + f"){tops}.")

    lr, br = d.launch_ratio, d.byte_ratio
    calls = f"{b.launch_calls / db:,.0f} → {a.launch_calls / da:,.0f} launch calls"
    if lr is not None:
        calls += f" ({_times(lr)})"
    calls += f" for {b.kernels / db:,.0f} → {a.kernels / da:,.0f} kernels"
    if a.graph_launches or b.graph_launches:
        calls += f", {b.graph_launches / db:,.0f} → {a.graph_launches / da:,.0f} of the calls CUDA-graph launches"
    if b.span_per_launch_us and a.span_per_launch_us:
        calls += f", {duration_us(b.span_per_launch_us)} → {duration_us(a.span_per_launch_us)} of span per launch call"
    if br is not None:
        src = [x.name for x in (b, a) if x.bytes_source == "sidecar"]
        note = (f"; {' and '.join(src)}: bytes declared by the capture sidecar, "
                "its kernels have no costed op in the trace") if src else ""
        byts = f"bytes {size(b.bytes / db)} → {size(a.bytes / da)} ({_times(br)}{note})"
    else:
        short = list({x.name: x for x in (b, a) if x.bytes is None}.values())
        byts = "bytes not comparable: " + "; ".join(
            f"only {100 * x.byte_coverage:.0f}% of {x.name}'s kernel time has a costed op ({uncosted_side(x)}) and "
            "no capture sidecar declares its bytes" for x in short)
    l3 = f"Launches and bytes: {calls}; {byts}; {b.regime}-bound → {a.regime}-bound."

    l4 = _explanation_line(d)
    lines = [l1, l2, l3, l4] + ([prediction_line(d.prediction)] if d.prediction else [])
    if diff_caveats(d):
        lines.append("Caveat: " + "; ".join(diff_caveats(d)) + ".")
    return lines


UNCOSTED_SIDE_WORDS = {**UNCOSTED_WORDS, "communication": "collectives carry no bytes of this device's work"}


def uncosted_side(x) -> str:
    """Why a diff side's kernel time has no bytes: the largest reasons with their shares."""
    tot = sum(x.uncosted_why_us.values()) or 1.0
    return "; ".join(f"{UNCOSTED_SIDE_WORDS[w]}: {share(us / tot)}" for w, us in list(x.uncosted_why_us.items())[:2]) \
        or "no op with a cost model launched its kernels"


APPLIED_BECAUSE = {"graph_launches": "CUDA-graph launches appeared", "pageable_copies": "its pageable copies went",
                   "sync_points": "its sync points went", "kernel_time": "its kernel time fell",
                   "host_stretches": "its long host stretches went"}
LEVER_APPLIED = {"kernels_2x": "faster kernels"}


def prediction_line(p) -> str:
    """How close the before trace's what-if came for the lever the change applied."""
    off = round(p.measured_ratio, 2) - round(p.predicted_ratio, 2)
    verdict = ("as predicted" if abs(off) < 0.005 else
               f"{abs(off):.2f} better than predicted" if off < 0 else f"{off:.2f} short of the prediction")
    how = (f"{APPLIED_BECAUSE[p.evidence]} {1 / p.kernel_scale:.2f}×" if p.lever == "kernels_2x"
           else APPLIED_BECAUSE[p.evidence])
    given = " with kernels that much faster" if p.lever == "kernels_2x" else ""
    return (f"Predicted: the change applied {LEVER_APPLIED.get(p.lever, p.lever)} ({how}); from the before trace "
            f"alone{given} tracetriage whatif predicted {p.predicted_ratio:.2f} of the traced span "
            f"({duration_ns(p.before_ns)} → "
            f"{duration_ns(p.predicted_ns)}), and the after trace measures {p.measured_ratio:.2f} "
            f"({duration_ns(p.after_ns)}): {verdict}.")


def _explanation_line(d) -> str:
    from analyzers.triage.diff import BYTES_TOL, SAME_TOL, cause_share

    b, a = d.before, d.after
    s, br, lr, how = d.speedup, d.byte_ratio, d.launch_ratio, d.explained_by
    saved = d.time_saved_us
    if how == "unchanged":
        return f"Explained: nothing to explain, the spans agree within {100 * SAME_TOL:.0f}% ({s:.2f}×)."
    if how == "bytes":
        gap = 100 * abs(s / br - 1)
        moved = f"{100 / br:.0f}% of the bytes" if br >= 1 else f"{1 / br:.2f}× the bytes"
        busy = b.kernel_busy_us / max(a.kernel_busy_us, 1e-9)
        kt = (f"kernel time fell {busy:.2f}× against the bytes' {br:.2f}×" if br >= 1 else
              f"kernel time grew {1 / busy:.2f}× against the bytes' {1 / br:.2f}×")
        rate = (f" at {b.achieved_gbps:.0f} → {a.achieved_gbps:.0f} GB/s"
                if b.achieved_gbps and a.achieved_gbps else "")
        causes = _idle_causes(d, 2)
        rest = f"; the rest is the idle change ({causes})" if causes and gap >= 0.5 else ""
        return (f"Explained by bytes: it moves {moved} and the {speed(s)} matches that within {gap:.0f}%: "
                f"{kt}, both memory-bound{rate}{rest}.")
    if how == "kernels":
        ch = d.busy_change_us
        verb = "shrank" if ch < 0 else "grew"
        sense = "saved" if saved > 0 else "lost"
        tops = ""
        if b.top_ops and a.top_ops:
            tb, ta = b.top_ops[0], a.top_ops[0]
            tops = (f"; the top op was {tb.name} and is now {ta.name}" if tb.name != ta.name
                    else f"; {ta.name} stays the top op")
        launches = f" (launch calls {_times(lr)}: not the lever)" if lr is not None and abs(lr - 1) > SAME_TOL else ""
        return (f"Explained by kernel time: kernel busy time {verb} by {duration_us(ch)}, {100 * ch / -saved:.0f}% of the "
                f"{duration_us(saved)} {sense}{launches}{tops}; regime {b.regime} → {a.regime}.")
    if how == "launches":
        pb, pa = b.span_per_launch_us, a.span_per_launch_us
        cost = ""
        if pb and pa and abs(pa / pb - 1) > BYTES_TOL:
            cost = (f"; each launch call costs {duration_us(pa)} of span instead of {duration_us(pb)}, hence {s:.2f}× and not "
                    f"{lr:.2f}×")
        bytes_note = (f"; bytes are no lever here ({_times(br)} bytes, while kernels are busy only "
                      f"{100 * b.kernel_busy_us / b.span_us:.0f}% → {100 * a.kernel_busy_us / a.span_us:.0f}% "
                      "of the span)") if br is not None else ""
        return (f"Explained by launches: both are overhead-bound (the GPU idles {100 * b.idle_share:.0f}% and "
                f"{100 * a.idle_share:.0f}% of the span), so time follows launch calls: {_times(lr)} of them"
                f"{cost}{bytes_note}.")
    if how in {c.value for c in Cause}:
        how = Cause(how)
        ch = d.idle_change_us[how]
        part = -ch / saved
        extra = ""
        if how is Cause.LAUNCH_OVERHEAD and lr is not None:
            same = d.kernel_ratio is not None and abs(d.kernel_ratio - 1) <= 0.1
            extra = (f"; {_times(lr)} launch calls" + (" for the same kernels" if same else "")
                     + (" (CUDA-graph replays)" if a.graph_launches > b.graph_launches else ""))
        verb = "shrank" if ch < 0 else "grew"
        sense = "saved" if saved > 0 else "lost"
        return (f"Explained by {CAUSE_WORDS[how]}: its idle {verb} by {duration_us(ch)}, {100 * part:.0f}% of the "
                f"{duration_us(saved)} {sense}{extra}; regime {b.regime} → {a.regime}.")
    cause, part = cause_share(d.time_saved_us, d.idle_change_us)
    parts = []
    if br is not None:
        parts.append(f"bytes {_times(br)} against a {speed(s)}")
    if lr is not None:
        parts.append(f"launch calls {_times(lr)}")
    if cause is not None:
        parts.append(f"{CAUSE_WORDS[cause]} idle moved by {100 * part:.0f}% of the time {'saved' if saved > 0 else 'lost'}")
    parts.append(f"kernel busy time {signed_us(d.busy_change_us)}")
    return (f"Explained by a mix: no single lever accounts for it ({'; '.join(parts)}; regime "
            f"{b.regime} → {a.regime}).")


# --- a directory of ranks -----------------------------------------------------------------------------

def _rank_list(ranks) -> str:
    ranks = list(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def own_idle(r) -> str:
    """A rank's own idle, for the straggler line: 'idle 12% of its span, mostly <cause>: <evidence>'."""
    return f"idle {share(r.idle_share)} of its span, mostly {r.mostly}"


def outlier_phrase(n) -> str:
    s = (f"rank {n.rank}'s collective #{n.call} ran {duration_ns(n.dur_ns)} (median {duration_ns(n.median_ns)})")
    if n.peer is not None:
        s += (f", {duration_ns(n.before_ns)} of it before rank {n.peer}'s trace began, "
              f"{duration_ns(n.peer_late_ns)} after rank {n.rank}'s (profiler start skew)")
    return s


def straggler_reason(s) -> str:
    """Why no rank is the straggler."""
    from analyzers.analyses.ranks import COLLECTIVE_MARK, SPREAD_OF_STEP

    why = {
        "one_rank": "one rank: nobody to wait for",
        "no_ranks": "no ranks",
        "one_usable": "only one usable rank: nobody to compare it with",
        "no_collectives": f"no collective kernels ({COLLECTIVE_MARK}*) in "
                          + ("any rank" if not s.ranks_with_collectives else "all but one rank"),
    }.get(s.why)
    if why is None:
        why = (f"none: collective time per step is within {duration_ns(s.spread_ns)} across ranks (threshold "
               f"{duration_ns(s.threshold_ns)}, {100 * SPREAD_OF_STEP:.0f}% of the {duration_ns(s.step_ns)} step) "
               "and no rank's host is slower than the GPU step")
        if s.outliers:
            why += "; " + "; ".join(outlier_phrase(n) for n in s.outliers)
    return why


def straggler_line(s) -> str:
    from analyzers.analyses.ranks import NoStraggler

    if isinstance(s, NoStraggler):
        return f"Straggler: {straggler_reason(s)}."
    me = next(x for x in s.stats if x.row.rank == s.rank)
    per_step = ", ".join(f"rank {x.row.rank} {duration_ns(x.per_step_med)}" for x in s.stats)
    if s.basis == "collective_wait":
        line = (f"Straggler: rank {s.rank}: the others wait for it inside the collectives, which take per step "
                f"(median) {per_step}: {duration_ns(s.wait_per_step_ns)} of waiting per step, "
                f"{share(s.wait_per_step_ns / s.step_ns)} of the {duration_ns(s.step_ns)} step")
        if me.host_step is not None:
            line += f"; its host needs {duration_ns(me.host_step)} to issue a step"
        return line + f". Its own report: {own_idle(me.row.r)}."
    others = ", ".join(f"{duration_ns(x.host_step)} on rank {x.row.rank}" for x in s.stats
                       if x.host_step is not None and x is not me)
    line = (f"Straggler: rank {s.rank}, by its host: it takes {duration_ns(me.host_step)} to issue a step (median "
            f"interval between its collective launches) against {others}, while a step runs "
            f"{duration_ns(s.gpu_step_ns)} on the GPU, so in steady state the others wait about "
            f"{duration_ns(s.wait_per_step_ns)} per step for it in the collective. The GPUs do not show it yet "
            f"(collectives per step, median: {per_step})")
    skew = [n for n in s.outliers if n.rank == s.rank]
    if skew:
        line += (f": {outlier_phrase(skew[0])}, and meanwhile its host queued all "
                 f"{len(me.row.r.collectives.per_step_ns)} steps")
    return line + f". Its own report: {own_idle(me.row.r)}."


def ranks_caveats(rr) -> list[str]:
    out = [f"{name}: {msg} (skipped)" for name, msg in rr.errors.items()]
    out += [f"rank {k} appears in {len(v)} files ({', '.join(v)}): two runs in one directory?"
            for k, v in rr.duplicates.items()]
    if rr.missing:
        of = f" of the run's {rr.world_size}" if rr.world_size else ""
        out.append(f"no usable trace for {_rank_list(rr.missing)}{of}")
    if rr.cpu_only and len(rr.cpu_only) < len(rr.rows):
        out.append(f"{_rank_list(rr.cpu_only)} {'has' if len(rr.cpu_only) == 1 else 'have'} no GPU activity "
                   "(CPU-only): not compared with the others")
    by_msg: dict[str, list[int]] = {}
    for r in rr.rows:
        for msg in r.r.caveats:
            by_msg.setdefault(msg, []).append(r.rank)
    return out + [f"{_rank_list(ks)}: {msg}" for msg, ks in by_msg.items()]


def mixed_runs(path, what: str, groups: dict) -> str:
    """The error for a folder whose traces cannot be ranks of one run."""
    listing = " and ".join(f"{v} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
                           for v, names in sorted(groups.items(), key=lambda kv: str(kv[0])))
    return f"{path} mixes traces of different runs: {what} {listing}; put each run's ranks in a folder of its own"


def ranks_lines(rr) -> list[str]:
    from analyzers.analyses.ranks import collective_kind

    rows = rr.rows
    devs: dict[str, int] = {}
    for r in rows:
        d = r.r.device_name or "an unnamed device"
        devs[d] = devs.get(d, 0) + 1
    on = " and ".join((f"{n}× {d}" if len(devs) > 1 else d) for d, n in devs.items())
    calls = sorted({r.r.collectives.calls for r in rows})
    kinds = sorted({collective_kind(k) for r in rows for k in r.r.collectives.kernels[:1]})
    what = "/".join(kinds) or "collective"
    coll = f"{calls[0]} {what} kernels each" if len(calls) == 1 else f"{calls[0]}-{calls[-1]} {what} kernels per rank"
    if calls == [0]:
        coll = "no collective kernels"
    steps = sorted({r.r.collectives.steps_from for r in rows if r.r.collectives.calls})
    step_src = ("steps from ProfilerStep ranges" if steps == ["ProfilerStep"] else
                "one step per collective call (no ProfilerStep ranges)" if steps else "")
    how = sorted({r.how for r in rows})
    n = len(rows)
    bad = f" ({rr.files - n} of {rr.files} files unusable)" if rr.files > n else ""
    lines = [f"Ranks: {n} rank{'s' if n != 1 else ''} on {on}{bad}, {coll}" + (f", {step_src}" if step_src else "")
             + f"; ranks from {', '.join(how)}; analysed in {rr.workers} process{'es' if rr.workers != 1 else ''}."]
    for r in rows:
        c = r.r.collectives
        med = float(np.median(c.per_step_ns)) if c.per_step_ns else 0.0
        coll = f"collectives {duration_ns(c.total_ns)} ({duration_ns(med)} per step, median)" if c.calls else \
            "no collectives"
        lines.append(f"  rank {r.rank}: idle {share(r.r.idle_share)} ({cause_words(r.r.dominant)}), kernels busy "
                     f"{duration_us(r.r.kernel_busy_us)}, {coll}.")
    lines.append(straggler_line(rr.straggler))
    compared = [r for r in rows if r.r.has_gpu] or rows   # a CPU-only rank is never the one shown
    worst = max(compared, key=lambda r: (r.r.idle_share, -r.rank))
    lines.append(f"Rank {worst.rank} ({'largest idle share, ' if n > 1 else ''}{share(worst.r.idle_share)} of its "
                 "span idle):")
    lines += ["  " + s for s in worst.r.lines]
    return lines + [f"Caveat: {c}." for c in ranks_caveats(rr)]


# --- the drills' feedback and the prediction log -----------------------------------------------------

REGIME = {"compute": "compute-bound", "memory": "memory-bound", "overhead": "overhead-bound", "unknown": "unknown"}

PATTERN = {
    "launch_overhead": "many short gaps between short kernels: each kernel ends before the next launch arrives",
    "host_work": "long gaps in which the host launches nothing",
    "synchronization": "a drain after each sync: the queue runs dry while the host waits, then refills",
    "data_transfer": "compute idles while copies occupy the device",
}
# The drills' expected first experiment: the causes' one advice text, and the regimes' levers.
EXPERIMENT = {**{c.value: ADVICE[c] for c in Cause if c is not Cause.OTHER}, **REGIME_ADVICE,
              "overhead": ADVICE[Cause.LAUNCH_OVERHEAD]}
EXPLAIN = {"launches": "launches: both sides are overhead-bound, so time follows the launch count, not the bytes",
           "bytes": "bytes: both sides are memory-bound, so time follows the bytes moved",
           "mixed": "neither launches nor bytes alone"}


def num(x: float | None) -> str:
    if x is None:
        return "none"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


# --- the trace's own evidence ---------------------------------------------------------------------

def evidence(cause: str, e: dict, part: float) -> str:
    """What the trace shows for one idle cause: counts, medians, the calls and copies behind it."""
    head = f"{CAUSE_WORDS[cause]} is {share(part)} of the span"
    if cause == "launch_overhead":
        ops = ", ".join(e.get("launching_ops", []))
        return (f"{head}: {e['gaps']:,} gaps with a median of {duration_us(e['median_gap_us'])} between {e['kernels']:,} kernels "
                f"whose median run is {duration_us(e['kernel_median_us'])}, while a launch call takes "
                f"{duration_us(e['launch_call_median_us'])}" + (f" (launched by {ops})" if ops else ""))
    if cause == "host_work":
        traced = ", ".join(e.get("host_events", []))
        return (f"{head}: {e['gaps']:,} gaps with a median of {duration_us(e['median_gap_us'])} in which the host launched "
                f"nothing, {share(e.get('untraced_share', 0))} of it untraced (Python, numpy, sleeping)"
                + (f"; traced host ops: {traced}" if traced else ""))
    if cause == "synchronization":
        calls = ", ".join(f"{c['name']} ×{c['count']}" for c in e.get("sync_calls", []))
        src = ", ".join(e.get("called_from", []))
        return (f"{head}: {e['gaps']:,} drains with a median of {duration_us(e['median_gap_us'])}, after {calls or 'syncs'}"
                + (f" called from {src}" if src else ""))
    if cause == "data_transfer":
        copies = e.get("copies") or []
        if copies:
            c = copies[0]
            rate = f" at {c['gbps']:.1f} GB/s" if c.get("gbps") else ""
            what = f"mostly {c['name']} ×{c['count']}, {c['bytes'] / 1e9:.2f} GB{rate}"
        else:
            what = "copies"
        return f"{head}: {e.get('copy_count', 0):,} copies, {what}"
    return f"{head}: {e['gaps']:,} gaps with no launch call in the trace"


def evidence_short(cause: str, e: dict) -> str:
    """The shape of the gaps alone: what the pattern part is about."""
    if cause == "synchronization":
        return f"{e['gaps']:,} drains with a median of {duration_us(e['median_gap_us'])}"
    if cause == "data_transfer":
        copies = e.get("copies") or []
        rate = f" at {copies[0]['gbps']:.1f} GB/s" if copies and copies[0].get("gbps") else ""
        return f"{e.get('copy_count', 0):,} copies{rate} while no kernel runs"
    if cause == "launch_overhead":
        return (f"{e['gaps']:,} gaps with a median of {duration_us(e['median_gap_us'])} between kernels whose median run is "
                f"{duration_us(e.get('kernel_median_us', 0))}")
    return f"{e['gaps']:,} gaps with a median of {duration_us(e['median_gap_us'])}"


# --- per-part feedback ------------------------------------------------------------------------------

def blank(part: str) -> str:
    return f"No answer for {part}."


def cause_right(cause: str, ev: str) -> str:
    return f"Right: {CAUSE_WORDS[cause]}. The trace: {ev}."


def cause_wrong(said: set, cause: str, ev: str) -> str:
    heard = " and ".join(CAUSE_WORDS.get(c, REGIME.get(c, c)) for c in sorted(said)) if said else "none of the four causes"
    return f"You named {heard}; the trace says {CAUSE_WORDS[cause]}: {ev}."


def hedge(what: str, said: set) -> str:
    return f"Half credit: you named {what} but also {', '.join(sorted(said))}; commit to one."


def pattern_right(cause: str) -> str:
    return f"Yes: {PATTERN[cause]}."


def pattern_wrong(cause: str, ev: str) -> str:
    return f"The GPU lane shows {PATTERN[cause]} ({ev})."


def experiment_right(cls: str) -> str:
    return f"Yes: {EXPERIMENT[cls]}."


def experiment_wrong(cls: str) -> str:
    return f"The first experiment here is to {EXPERIMENT[cls]}."


def suspects_feedback(found: list[str], missed: list[str], table: str) -> str:
    if not missed:
        return f"Right: {', '.join(found)}. The table: {table}."
    return (f"Missed {', '.join(missed)}" + (f" (found {', '.join(found)})" if found else "") +
            f". The table: {table}.")


def hotspot_table(rows: list[dict]) -> str:
    return ", ".join(f"{r['name']} {share(r['share'])} ({r['calls']} calls)" for r in rows[:3])


def label(cls: str) -> str:
    return CAUSE_WORDS.get(cls) or REGIME.get(cls) or cls


def bound_right(cls: str, why: str) -> str:
    return f"Right: {label(cls)}; {why}."


def bound_wrong(said: set, cls: str, why: str) -> str:
    heard = " and ".join(label(c) for c in sorted(said)) if said else "nothing the course's vocabulary names"
    return f"You named {heard}; the answer is {label(cls)}: {why}."


def explained_right(why: str) -> str:
    return f"Right: {why}."


def regime_why(regime: str, f_compute: float, f_memory: float, idle_share: float, tflops, gbps, intensity, ridge,
               dtype) -> str:
    if regime == "overhead":
        return f"the device idles {share(idle_share)} of the span, so neither arithmetic nor bytes bound it"
    rate = (f"{num(tflops)} TFLOP/s" if regime == "compute" else f"{num(gbps)} GB/s") if (tflops or gbps) else ""
    ai = f"; its ops average {num(intensity)} FLOP/byte against a {dtype} ridge of {num(ridge)}" \
        if intensity is not None and ridge else ""
    part = f_compute if regime == "compute" else f_memory
    return f"{share(part)} of kernel time is {REGIME[regime]}" + (f" at {rate}" if rate else "") + ai


def evidence_score(numbers_hit: list[float], named: bool) -> str:
    parts = []
    if numbers_hit:
        parts.append(f"it quotes {', '.join(num(n) for n in numbers_hit)} from the trace")
    if named:
        parts.append("it names the bound")
    return ("Supported: " + " and ".join(parts) + ".") if parts else \
        "Quote a number from the trace (a share, a gap median, a rate) and name what it shows."


def evidence_missing(numbers: list[float]) -> str:
    return f"No number from the trace; it has, for example: {', '.join(num(n) for n in numbers[:4])}."


def number_feedback(part: str, said: float, key: float, unit: str, score: float) -> str:
    if score >= 1.0:
        return f"Right: {num(said)} {unit} (the trace: {num(key)} {unit})."
    if score > 0:
        return f"Close: {num(said)} {unit} against {num(key)} {unit} in the trace (within 2×, not within 15%)."
    return f"{num(said)} {unit} is off: the trace says {num(key)} {unit}."


def ranges_feedback(found: list[str], missed: list[str], names: tuple[str, str]) -> str:
    if not missed:
        return f"Right: the trace's ranges are {names[0]} and {names[1]}."
    return f"Missing {' and '.join(missed)}: the trace separates {names[0]} (TTFT) from {names[1]} (per token)."


def decode_regime_why(regime: str, per_token_ms: float, steps: int, prefill_regime: str) -> str:
    return (f"decode takes {duration_us(1e3 * per_token_ms)} per token over {steps} steps and is {REGIME[regime]}, while prefill is "
            f"{REGIME[prefill_regime]}")


def explained_why(how: str, speedup, launch_ratio, byte_ratio, b_regime, a_regime) -> str:
    return (f"the span fell {num(speedup)}× with {num(launch_ratio)}× fewer launch calls and {num(byte_ratio)}× fewer "
            f"bytes, {REGIME.get(b_regime, b_regime)} before and {REGIME.get(a_regime, a_regime)} after: "
            f"{EXPLAIN.get(how, how)}")


def capped(part: str, cap: float) -> str:
    return f"The {part} is wrong, and the rest follows from it: the score is capped at {cap:.1f}."


def summary(drill_id: str, score: float) -> str:
    return f"{drill_id}: {100 * score:.0f}/100"


# --- drill list / show ----------------------------------------------------------------------------

def toy_source(smell: str, level: str, seed: int, mix: dict) -> str:
    shares = ", ".join(f"{k} {v:.0%}" for k, v in mix.items())
    return f"toy timeline: {smell}, {level}, seed {seed}" + (f", mix {shares}" if shares else "")


def span_line(span_ms: float, kernel_busy_ms: float, idle_share: float) -> str:
    busy = kernel_busy_ms / span_ms if span_ms else 0
    return f"GPU span {duration_us(1e3 * span_ms)}: kernels busy {duration_us(1e3 * kernel_busy_ms)} ({share(busy)}), the GPU idles {share(idle_share)} of it"


def operator_row(h: dict) -> str:
    return f"  {h['name'][:60]:60s} {100 * h['share']:5.1f}%  {h['device_us'] / 1e3:9.2f} ms  {h['calls']:6d} calls"


def range_row(r: dict) -> str:
    return (f"  {r['name'][:32]:32s} ×{r['count']:<5d} median wall {r['median_wall_us'] / 1e3:9.2f} ms   "
            f"all instances {r['wall_us'] / 1e3:9.2f} ms   kernels busy {r['kernel_busy_us'] / 1e3:9.2f} ms")


def grade_row(part: str, score: float, weight: float) -> str:
    return f"  {part:14s} {score:4.2f} × {weight:.2f}  "


def rubric_line(rubric: dict, decisive: str, cap: float) -> str:
    return ("rubric: " + ", ".join(f"{k} {v:.2f}" for k, v in rubric.items()) +
            f"; a wrong {decisive} caps the score at {cap:.1f}")


def sweep_header() -> str:
    return "the captured size sweep (traces/measurements.json, one call, median):"


def sweep_row(r: dict) -> str:
    return (f"  {r['n']:>11,} elements  eager {duration_us(r['eager_us']):>10}  fused Triton {duration_us(r['triton_us']):>10} "
            f"({r['speedup_triton']:.2f}×)  torch.compile {duration_us(r['compile_us']):>10} ({r['speedup_compile']:.2f}×)")


def answer_keys_help(parts: dict) -> list[str]:
    return [f'  {name} = ...   # {doc}' for name, (_, doc) in parts.items()]


# --- predictions --------------------------------------------------------------------------------

def prediction_recorded(pid: int, quantity: str, value: float, unit: str, trace: str | None) -> str:
    where = f"; `tracetriage predictions` measures it from {trace} (once that trace exists)" if trace else \
        f"; attach the measurement with: tracetriage predictions --measure {pid} TRACE"
    return f"prediction {pid} recorded: {quantity} = {num(value)} {unit}{where}"


def calibration(n: int, median_ratio: float | None, within_2x: float | None) -> str:
    if not n:
        return "Calibration: no measured predictions yet."
    return (f"Calibration over {n} measured prediction{'s' if n != 1 else ''}: median measured/predicted "
            f"{median_ratio:.2f}×, {share(within_2x)} within 2×.")


def attempts_line(n: int, mean: float | None) -> str:
    return f"Drill attempts: {n}" + (f", mean score {100 * mean:.0f}/100." if n else ".")


# --- what-if ---------------------------------------------------------------------------------------------

WHATIF_SOURCE = {"trace": "measured in this trace", "ceilings": "measured ceilings (tracetriage capture ceilings)",
                 "datasheet": "datasheet PCIe x16 link", "guess": "assumed (no measurement, unknown device)",
                 "reference": "measured on an H200 under torch.profiler (traces/gpt-graphs.json.gz)"}


def assumption(a) -> str:
    """A lever's assumptions in one line (whatif.Assumption)."""
    if a.lever == "remove_syncs":
        where = f"syncs called from {a.only}" if a.only else "syncs"
        if a.count == 0:
            return f"no blocking {where} in this trace: nothing to remove"
        return (f"the host no longer waits in {where}: sync calls vanish (with the Python that called them "
                f"directly), copies to the host return after one call's cost ({duration_ns(a.call_ns)}, the median "
                "launch call here); the GPU work stays")
    if a.lever == "no_host_work":
        if a.count == 0:
            return (f"no host stretch of {duration_ns(a.long_ns)} or more (10 launch calls) that issues no GPU work: "
                    "nothing to remove")
        return (f"host stretches that issue no GPU work and last {duration_ns(a.long_ns)} or more (10 launch calls) "
                "vanish; dispatch of the ops stays")
    if a.lever == "cuda_graphs":
        gap = "the minimum gap between queued kernels in this trace" if a.gap_measured else \
            "assumed; no queued kernels here"
        return (f"one graph launch per sync-free stretch at {duration_ns(a.per_kernel_ns)} per kernel "
                f"({WHATIF_SOURCE[a.source]}); dispatch and launch calls vanish; kernels run back to back "
                f"{duration_ns(a.min_gap_ns)} apart ({gap})")
    if a.lever == "async_copies":
        if a.count == 0:
            return "no pageable copy in this trace: nothing to pin or overlap"
        return (f"pageable copies become pinned at {a.h2d_gbps:.0f} GB/s to the device ({WHATIF_SOURCE[a.h2d_source]}) "
                f"and {a.d2h_gbps:.0f} GB/s back ({WHATIF_SOURCE[a.d2h_source]}); host-to-device ones run on a side "
                "stream, each consumer waiting for its copy; device-to-host ones still block the host that reads them")
    keeps = "half as long" if a.kernel_scale == 0.5 else f"{a.kernel_scale:.2f} of its time"
    return f"every kernel takes {keeps}; copies, memsets, launches and host time stay"


def saving_pct(saving_ns: float, baseline_ns: float) -> str:
    """A predicted change of the span: '−24%' for a saving, '+3%' for a loss, '0%'."""
    pct = round(saving_ns / baseline_ns * 100) if baseline_ns else 0
    return "0%" if pct == 0 else (f"−{pct}%" if pct > 0 else f"+{-pct}%")


def whatif_table(w) -> str:
    """`tracetriage whatif`: one row per lever, best first, and each lever's assumption below it."""
    err = (w.replay_ns - w.baseline_ns) / w.baseline_ns * 100 if w.baseline_ns else 0.0
    lines = [f"{w.path}: traced span {duration_ns(w.baseline_ns)} (the unchanged replay gives "
             f"{duration_ns(w.replay_ns)}, {err:+.1f}%)", "",
             f"  {'lever':<14}{'predicted':>11}{'ratio':>8}{'saving':>9}"]
    for p in w.levers:
        lines.append(f"  {p.lever:<14}{duration_ns(p.predicted_ns):>11}{p.predicted_ratio:>8.2f}"
                     f"{saving_pct(p.saving_ns, w.baseline_ns):>9}")
    lines.append("")
    lines += [f"  {p.lever}: {assumption(p.assumption)}" for p in w.levers]
    return "\n".join(lines)


def timeline_legend(marks: list[tuple[str, str]] | None) -> str:
    """The terminal timeline's legend: each cause's mark, or (causes hidden) what the shading means."""
    if marks is None:
        return "░ the GPU idles most of the slice, · some of it"
    return "  ".join(f"{m} {c}" for m, c in marks) + "  (lower case: under a third of the slice)"


# --- the dashboard ----------------------------------------------------------------------------------------

_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&:])")


def plain(text: str) -> str:
    """Text shown through st.markdown as the characters it holds: no markup, no HTML, no links."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", str(text))


def dashboard_cause(c: str | None) -> str:
    """A cause's words from its value ('launch_overhead'), 'none' for no cause."""
    return CAUSE_WORDS.get(c, c) if c else "none"


cause = dashboard_cause   # (the dashboard's tables map cause values to words with it)


# the library ------------------------------------------------------------------------------

def upload_too_large(name: str, size_bytes: int, cap_mb: int) -> str:
    return (f"{name} is {size_bytes / 1e6:.0f} MB, over the {cap_mb} MB upload limit; start the dashboard with "
            f"TRACETRIAGE_UPLOAD_MB set higher, or pass the file on the command line")


def trace_error(message: str) -> str:
    return f"error: {message}"


def loaded(name: str, events: int, device: str) -> str:
    return f"Loaded {name}: {events:,} events on {device}."


def sample_about(about: str, cause_label: str | None, regime: str | None) -> str:
    built = ", ".join(x for x in (f"idle: {dashboard_cause(cause_label)}" if cause_label else "",
                                  f"regime: {regime}" if regime else "") if x)
    return f"{about} ({built})" if built else about


# --- report -------------------------------------------------------------------------------

def cause_evidence(c: str, gaps: int, median_gap_us: float, max_gap_us: float, names: list[str]) -> str:
    if gaps == 0:
        return "no gaps"
    s = f"{gaps:,} gap{'s' if gaps != 1 else ''}, median {duration_us(median_gap_us)}, longest {duration_us(max_gap_us)}"
    return s + (f"; {', '.join(names)}" if names else "")


def phase_summary(ttft_us: float, per_token_us: float, steps: int, tokens_per_prefill: int) -> str:
    return (f"Time to first token {duration_us(ttft_us)}; {duration_us(per_token_us)} per token over {steps} decode steps "
            f"({tokens_per_prefill} per prefill).")


def phase_detail(label: str, regime: str, idle_share: float, idle_dominant: str | None, median_wall_us: float) -> str:
    idle = f"idle {100 * idle_share:.0f}%" + (f", mostly {dashboard_cause(idle_dominant)}" if idle_dominant else "")
    return f"{label}: {regime}-bound, {idle}, median {duration_us(median_wall_us)} per instance"


# --- timeline -----------------------------------------------------------------------------

def window_caption(events: int, lo_us: float, hi_us: float, limit: int, bins: int | None) -> str:
    span = f"{duration_us(lo_us)} to {duration_us(hi_us)}"
    if bins is not None:
        return (f"{events:,} events from {span}: shown as busy shares in {bins} bins. Drag across the chart to zoom; "
                f"each event is drawn once the window holds {limit:,} or fewer.")
    return f"{events:,} events from {span}, each drawn. Drag across the chart to zoom further."


def bin_tooltip(lane: str, busy: float) -> str:
    return f"{lane}: busy {100 * busy:.0f}% of the bin"


def idle_bin_tooltip(idle: float, shares: dict[str, float]) -> str:
    parts = ", ".join(f"{dashboard_cause(c)} {100 * v:.0f}%" for c, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v > 0)
    return f"idle {100 * idle:.0f}% of the bin: {parts}"


def gap_evidence(c: str, dur_us: float, host_call: str, called_from: str, next_name: str) -> str:
    s = f"{dashboard_cause(c)} gap of {duration_us(dur_us)}"
    if host_call:
        s += f"; the host was in {host_call}" + (f" (from {called_from})" if called_from else "")
    if next_name:
        s += f"; ended by {next_name}"
    return s


# --- roofline -----------------------------------------------------------------------------

def ceilings_caption(device: str, source: str, dtype: str, tflops: float, gbps: float, ridge: float) -> str:
    where = "measured on this machine (tracetriage capture ceilings)" if source != "datasheet" else "from the datasheet"
    return (f"{device}, {dtype}: {tflops:,.0f} TFLOP/s and {gbps:,.0f} GB/s, ridge at {ridge:,.0f} FLOP/byte; "
            f"ceilings {where}.")


def ridge_label(ridge: float) -> str:
    return f"ridge {ridge:,.0f} FLOP/byte"


def no_ceilings(device: str) -> str:
    return f"No peak table entry for {device}: the roofline has no ceilings (run tracetriage capture ceilings)."


def points_caption(shown: int, total: int, dtype: str) -> str:
    hidden = total - shown
    s = f"{shown:,} op{'s' if shown != 1 else ''} in {dtype}, sized by device time, coloured by bound"
    return s + (f"; {hidden:,} with no FLOPs (copies, fills) are off the log axes." if hidden else ".")


def no_points() -> str:
    return "No op in this trace has a cost model (no shapes recorded): nothing to place on the roofline."


# --- diff ---------------------------------------------------------------------------------

def diff_headline(before: str, after: str, speedup: float | None, explained_by: str) -> str:
    sp = f"{speedup:.2f}× speedup" if speedup else "no speedup figure"
    return f"{before} → {after}: {sp}, explained by {explained_by or 'nothing single'}."


# --- perfetto -----------------------------------------------------------------------------

def annotated_caption(gaps: int) -> str:
    return (f"The trace with an added track of its {gaps:,} idle gaps, named by cause with their evidence, "
            "for ui.perfetto.dev or chrome://tracing.")


# --- what-if ------------------------------------------------------------------------------

def whatif_caption(baseline_ns: float, replay_ns: float) -> str:
    err = (replay_ns - baseline_ns) / baseline_ns * 100 if baseline_ns else 0.0
    return (f"Traced GPU span {duration_ns(baseline_ns)}; replaying the unchanged dependency graph gives "
            f"{duration_ns(replay_ns)} ({err:+.1f}%), which is how far to trust the predictions.")


def lever_line(lever: str, predicted_ns: float, ratio: float, saving_ns: float, baseline_ns: float) -> str:
    return (f"{lever}: {duration_ns(predicted_ns)} predicted, {ratio:.2f} of the traced span "
            f"({saving_pct(saving_ns, baseline_ns)})")


def traced_span_label(baseline_ns: float) -> str:
    return f"traced {duration_ns(baseline_ns)}"


def measured_timeline_title(baseline_ns: float) -> str:
    return f"measured: GPU activities as traced (span {duration_ns(baseline_ns)})"


def predicted_timeline_title(lever: str, predicted_ns: float) -> str:
    return f"predicted under {lever} (span {duration_ns(predicted_ns)})"


def whatif_timeline_caption(activities: int, binned: bool, bins: int, limit: int) -> str:
    how = (f"shown as busy shares in {bins} bins (more than {limit:,})" if binned else "each drawn")
    return (f"{activities:,} GPU activities, {how}; the predicted times are the replay's own, on the same time axis "
            "as the measured ones.")


def no_whatif() -> str:
    return "No GPU timeline in this trace: the what-if replay needs GPU activity (ProfilerActivity.CUDA)."


# --- drills and predictions ---------------------------------------------------------------

def drill_label(drill_id: str, title: str) -> str:
    return f"{drill_id}  {title}"


def drill_about(lesson: str, kind: str, source: str) -> str:
    return f"Lesson: {lesson}. Kind: {kind.replace('_', ' ')}. Trace: {source}."


def drill_timeline_caption(name: str) -> str:
    return (f"{name}: the lanes as traced, the idle gaps left unmarked (their causes are what the drill may ask; "
            "the grade quotes the evidence).")


def answer_not_a_number(part: str, text: str) -> str:
    return f"{part} must be a number, got {text!r}"


def part_feedback(part: str, score: float, weight: float, feedback: str) -> str:
    return f"{part}: {score:.2f} × {weight:.2f}. {feedback}"


def attempt_recorded(attempt: int, path) -> str:
    return f"Attempt {attempt} recorded in {path}."


def no_predictions(path) -> str:
    return (f"No predictions in {path} yet: record one with tracetriage predict QUANTITY VALUE --why TEXT "
            "--trace PATH.")


def calibration_caption(plotted: int, total: int) -> str:
    return (f"{plotted} of {total} predictions measured and plotted: predicted against measured, log-log; "
            "the dashed line is a perfect prediction, the grey band within 2× of it. Quantities have their own units.")
