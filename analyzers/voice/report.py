"""The report's words: the five lines, its caveats, the Next line and what would waste the week,
and HTA's breakdown beside ours (`report --hta`).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from tracetriage.analyzers.model.constructs import Construct
from tracetriage.analyzers.model.evidence import Evidence
from tracetriage.analyzers.model.units import (
    a_or_an,
    count,
    duration_ns,
    duration_us,
    gbps,
    integer,
    num,
    pct_of,
    share,
    shares_of_a_whole,
    small_share,
    tflops,
)
from tracetriage.analyzers.model.verdicts import Cause, Experiment, Regime
from tracetriage.analyzers.voice import (
    amortise,
    cold_start,
    communication,
    ground,
    host_paced,
    named_bound,
    precision,
    roof,
    runtime_only,
)
from tracetriage.analyzers.voice import decode as decode_words
from tracetriage.analyzers.voice import execution as execution_words
from tracetriage.analyzers.voice import healthy as healthy_words
from tracetriage.analyzers.voice import library_syncs as lib_syncs
from tracetriage.analyzers.voice import pace as pace_words
from tracetriage.analyzers.voice import peaks as peak_words
from tracetriage.analyzers.voice import rework as rework_words
from tracetriage.analyzers.voice import steps as step_words
from tracetriage.analyzers.voice import then as then_words
from tracetriage.analyzers.voice import transfer_bound as transfer_words
from tracetriage.analyzers.voice.above_peak import above_peak_caveat
from tracetriage.analyzers.voice.analysis import Analysis, Caveated
from tracetriage.analyzers.voice.because import because
from tracetriage.analyzers.voice.because import bound_because as _bound_because
from tracetriage.analyzers.voice.because import latency_why as _latency_why
from tracetriage.analyzers.voice.call_sites import hotspot_sites
from tracetriage.analyzers.voice.claims import (
    COMPILED_IDLE_SHARE,
    INPUT_BOUND_IDLE_SHARE,
    saving,
    waste_prediction,
)
from tracetriage.analyzers.voice.cold_start import setup_held, steady_idle_share, steady_loop_idles
from tracetriage.analyzers.voice.common import (
    CAUSE_WORDS,
    COMPUTE_WASTE,
    REGIME_ADVICE,
    WASTE,
    advice,
    attends,
    caveat,
    cheaper_arithmetic,
    construct_phrase,
    copy_phrase,
    matrix_precision,
    mostly,
    named_why_phrase,
    op_words,
    pinning_pays,
    replayed_from_graphs,
    setup_holds_host_work,
    stream_waits_words,
    training_loop,
    trains,
    uncosted_phrase,
)
from tracetriage.analyzers.voice.construct_clause import construct_clause
from tracetriage.analyzers.voice.copies import copies_advice
from tracetriage.analyzers.voice.dominant import dominant_clause
from tracetriage.analyzers.voice.element_reads import element_reads_advice
from tracetriage.analyzers.voice.gaps import few_large_gaps
from tracetriage.analyzers.voice.graphs import (
    capture_caveat,
    capture_next,
    graphs_aside,
    inflated_launches,
    replay_gaps_mostly,
    replay_idle,
    replay_measured,
)
from tracetriage.analyzers.voice.headroom import headroom_needs
from tracetriage.analyzers.voice.health import cpu_only_measured, cpu_only_next, profiler_caveats, unprofiled_words
from tracetriage.analyzers.voice.knob_beside import knob_clause
from tracetriage.analyzers.voice.optimizer_advice import fused_optimizer_advice
from tracetriage.analyzers.voice.said import claim, kept_as
from tracetriage.analyzers.voice.sources import fused_words, range_clause, source_clause
from tracetriage.analyzers.voice.sparse import coalesce_advice
from tracetriage.analyzers.voice.unknown_bound import find_the_bound
from tracetriage.analyzers.voice.warm_up import (
    after_warm_up,
    first_compile_warmup,
    recurring_caveat,
    recurring_host_share,
    setup_caveat,
    warmup_advice,
    warmup_why,
)
from tracetriage.analyzers.voice.weight_streaming import weight_streaming_next
from tracetriage.analyzers.whatif.levers import (
    CUDA_GRAPHS,
    DATALOADER_WORKERS,
    FUSE,
    LEVERS,
    WEIGHT_ONLY_INT8,
)


def analysis_caveats(a: Caveated) -> list[str]:
    """The trace's caveats, then what the analysis found about the profile itself (an Analysis, or a diff's Side)."""
    found = a.trace_caveats if hasattr(a, "trace_caveats") else a.trace.caveats
    if getattr(a, "accelerator", None):   # not CPU-only: a device this tool does not read (a diff Side has none)
        found = [c for c in found if c.kind != "no_gpu_activity"]
    if _health_knows_why_no_gpu(a):         # the Health line says why there is no GPU activity
        found = [c for c in found if c.kind != "no_gpu_activity"]
    out = [caveat(c) for c in found]
    above = getattr(a, "above_peak", ())
    if above:   # never an achievement: an attribution error, or data a cache served
        out.append(above_peak_caveat(above))
    if getattr(a, "graph_capture", None) is not None:   # (a diff's Side has none)
        out.append(capture_caveat(a.graph_capture))
    if a.setup_worth_naming:
        out.append(setup_caveat(a, setup_share(a), cold_start.setup_span(a)))
    recurring = recurring_caveat(a)
    if recurring is not None:
        out.append(recurring)
    return out + profiler_caveats(getattr(a, "profiler", None))   # (a diff's Side has none)

def _health_knows_why_no_gpu(a: Caveated) -> bool:
    return cpu_only_next(getattr(a, "health", None)) is not None


CPU_ONLY_NEXT = (
    "capture on the GPU with CUDA activity recorded (tracetriage capture --device cuda WORKLOAD, or "
    "ProfilerActivity.CUDA in your own profiler)",
    "idle gaps and regimes live on the device timeline, which this trace does not have (0 GPU events)",
    "tuning from CPU op times alone: on a GPU most of those ops only launch work",
)


def baseline_words(a: Analysis) -> str:
    """The span a what-if prediction is a share of: the traced span (host and GPU: the Measured line's GPU
    span leaves out host work before the first and after the last GPU activity), or, for `--range`, the
    range's own span, the one the Measured line gives."""
    return f"the range's {duration_ns(a.span_ns)} span" if a.range_filter else "the traced span (host and GPU)"


def _headroom_fall(a: Analysis, h) -> str:
    """'the traced span (host and GPU) would fall 27%, 114.1 ms → 83.1 ms': the span the share is of, said."""
    fall = h.saving_ns / h.baseline_ns
    return (f"{baseline_words(a)} would fall {claim('next.headroom.saving', fall, share(fall))}, "
            f"{claim('next.headroom.baseline_us', h.baseline_ns / 1e3, duration_ns(h.baseline_ns))} → "
            f"{duration_ns(h.baseline_ns - h.saving_ns)}")


def predicted(c, a: Analysis | None = None) -> str:
    """A what-if lever's prediction on its own baseline, named: '−24% of the traced span (host and GPU),
    31.8 ms → 24.1 ms' (claims next.saving, next.baseline_us, next.predicted_us)."""
    on = baseline_words(a) if a is not None else "the traced span (host and GPU)"
    return (f"{saving('next.saving', c.saving_ns, c.baseline_ns)} of {on}, "
            f"{claim('next.baseline_us', c.baseline_ns / 1e3, duration_ns(c.baseline_ns))} → "
            f"{claim('next.predicted_us', c.predicted_ns / 1e3, duration_ns(c.predicted_ns))}")


def next_experiment(a: Analysis) -> dict[str, str]:
    """{"lever", "why", "waste"} for the analysis's next experiment."""
    nx = a.next_experiment
    if nx.rework is not None:   # re-done work leads (triage.rework_first): the Next without it said after, if at all
        out = next_experiment(dataclasses.replace(a, next_experiment=dataclasses.replace(nx, rework=None,
                                                                                          knob_beside=None)))
        return rework_words.lead(out, nx.rework, a.kernel_busy_ns / a.span_ns, nx.healthy is not None,
                                 a.kernels, nx.knob_beside)
    if nx.healthy is not None:
        return healthy_words.next_words(nx.healthy)
    if nx.kind in (Experiment.CAPTURE_ON_GPU, Experiment.MOVE_TO_GPU):
        return dict(zip(("lever", "why", "waste"), cpu_only_next(a.health) or CPU_ONLY_NEXT))
    if nx.kind is Experiment.PROFILE_REPLAYS:
        return capture_next(a.graph_capture)
    if nx.kind is Experiment.WARM_UP:
        out = {"lever": warmup_advice(a),
               "why": warmup_why(a) + after_warm_up(a),
               # (where the steady steps idle most of each, they recur: the waste is a lever that saves least)
               "waste": "" if nx.waste is not None else claim(
                   "waste.nothing_recurs", 1, cold_start.nothing_recurs_words(a))}
    elif nx.lever is not None and nx.lever.lever == WEIGHT_ONLY_INT8 and a.weight_streaming is not None:
        # the weight-streaming words (fewer weight bytes, or more rows per read), then what the replay assumed
        out = weight_streaming_next(a.weight_streaming, a.roof.peaks, _memory_why(a))
        out["why"] += "; " + _lever_why(a)
    elif nx.kind in LEVER_ADVICE:
        out = {"lever": LEVER_ADVICE[nx.kind](a), "why": _lever_why(a), "waste": WASTE.get(nx.cause, "")}
    elif nx.cause is not None:
        ev = a.evidence[nx.cause]
        # the workers' knob is the DataLoader's advice wherever the rest of the host work sits (a whole script's
        # set-up may hold more of it than the batches)
        construct = Construct.DATALOADER if nx.lever and nx.lever.lever == DATALOADER_WORKERS else nx.construct
        copies = copies_advice(a) if nx.cause is Cause.DATA_TRANSFER else None
        copies = copies or (coalesce_advice(a) or lib_syncs.library_sync_advice(a) or decode_words.sync_advice(a)
                            or element_reads_advice(a) if nx.cause is Cause.SYNCHRONIZATION else None)
        out = {"lever": copies or advice(nx.cause, ev, nx.lever.only if nx.lever else None, construct,
                               workers_on=_dataloader_workers_on(a), compiled=_compiled_already(a),
                               pinned=_copies_pinned(a), pin_pays=pinning_pays(a), training=training_loop(a),
                               lever=nx.lever.assumption if nx.lever else None,
                               fuse_chains=_fuse_chains(a), fuse_found=_fuse_found(a), trains=trains(a)),
               "why": _idle_why(a, nx.cause, ev, nx.gain_share), "waste": WASTE[nx.cause]}
        if nx.cause is Cause.HOST_WORK and not copies and runtime_only.dispatch_between_launches(a):
            out["lever"], out["waste"] = runtime_only.host_work_advice(), runtime_only.WASTE
    else:
        out = _regime_next(a)
    # no prediction rests on an unknown bound (the headroom lever behind them prices faster kernels, not a change)
    if nx.lever is not None and nx.kind not in (Experiment.FIND_THE_BOUND, Experiment.MIXED_PRECISION):
        out["lever"] += f" (predicted {predicted(nx.lever, a)}" + (
            LEVERS[nx.lever.lever].prediction_words + runtime_only.prediction_note(a) + unprofiled_words(nx.lever)
            + cold_start.remainder_note(a)
            + cold_start.profile_not_workload(a)
            + inflated_launches(a.replay_gaps, nx.cause in (Cause.SYNCHRONIZATION, Cause.HOST_WORK)) + ")")
    if nx.dominant is not None and nx.dominant.lever == CUDA_GRAPHS and a.replay_gaps is not None:
        out["why"] += graphs_aside(nx.cause is Cause.SYNCHRONIZATION)   # (not CUDA graphs priced on graphed work)
    elif nx.dominant is not None and not (LEVERS[nx.dominant.lever].cause is Cause.DATA_TRANSFER
                                          and "pin_memory=True" in out["lever"]):   # (not "pinning saves 0%")
        out["why"] += dominant_clause(nx)
    if nx.close_call is not None:
        c = nx.close_call
        # a close call goes to the smaller change, or between equal ones to the fix of the dominant cause
        bigger = LEVERS[c.lever].effort > LEVERS[nx.lever.lever].effort
        out["why"] += (f"; {LEVERS[c.lever].words} predicts about as much "
                       f"({saving('next.close_call.saving', c.saving_ns, c.baseline_ns)}, "
                       "within the replay's error) but " + ("is a bigger change to the code" if bigger else
                                                            "does not act on the Idle line's dominant cause"))
    out["why"] += decode_words.batch_beside(a) if nx.cause is Cause.SYNCHRONIZATION else ""   # (an engine's batch)
    out["why"] += amortise.amortise_clause(a) if nx.kind is not Experiment.WARM_UP else ""   # (a tiny model's step)
    if nx.then is not None and nx.kind is not Experiment.WARM_UP:   # (a warm-up's loop fix: voice.warm_up)
        out["why"] += then_words.then_clause(nx)
    if nx.knob_beside is not None:   # (beside a source of re-done work named first, voice.rework says it)
        out["why"] += knob_clause(nx.knob_beside)
    unmeasured = nx.kind in (Experiment.FIND_THE_BOUND, Experiment.MIXED_PRECISION) or a.decode is not None
    if nx.headroom is not None and nx.lever is None and unmeasured:
        pass    # the bound is unmeasured (a decode's replays: no rate), or mixed precision changes more than by two
    elif nx.headroom is not None and nx.lever is None:    # the regime's advice: the headroom is its bound
        out["why"] += f"; a bound, not a prediction: if every kernel took half as long {_headroom_fall(a, nx.headroom)}"
    elif nx.headroom is not None:
        h = nx.headroom
        out["why"] += (f"; faster kernels are headroom beside it, not a change in hand: if every kernel took half as "
                       f"long {_headroom_fall(a, h)}, which needs {headroom_needs(a)}")
    out["lever"] += source_clause(a.next_source)   # with stacks: where in the user's code (voice/sources.py)
    if nx.waste is not None:
        w = nx.waste
        spec = LEVERS[w.lever]
        why = f" ({spec.says(w.assumption)})" if w.nothing_to_act_on else ""
        out["waste"] = (f"{claim(f'waste.lever.{w.lever}', 1, spec.words)}, "
                        f"{waste_prediction(w.saving_ns, w.baseline_ns)}"
                        f"{unprofiled_words(w, 'waste.unprofiled_saving')}{why}")
    if nx.own_fix is not None:   # the straggler is found from every rank; this rank's own fix needs no other trace
        with kept_as("next.own", drop=("waste.",)):   # its waste is not said: the straggler's is
            own = next_experiment(dataclasses.replace(a, next_experiment=nx.own_fix))
        out["lever"] += f"; meanwhile this rank's own fix, with its collectives as they ran: {own['lever']}"
        out["why"] += f"; on its own timeline, {own['why']}"
    return out


def _dataloader_workers_on(a: Analysis) -> bool:
    """The trace's DataLoader iterates in worker processes (_MultiProcessingDataLoaderIter.__next__)."""
    x = a.framework.share_of(Construct.DATALOADER) if a.framework else None
    return x is not None and any("_MultiProcessingDataLoaderIter" in n for n in x.names)


def _copies_pinned(a: Analysis) -> bool:
    """Every host-to-device copy the trace shows is from pinned memory (`Memcpy HtoD (Pinned -> Device)`): a
    DataLoader with pin_memory=True, or tensors pinned by hand. Said so, pin_memory=True is not advised again."""
    ev = a.evidence.get(Cause.DATA_TRANSFER)
    h2d = [c.name for c in getattr(ev, "copies", ()) if "HtoD" in c.name]
    return bool(h2d) and all("Pinned" in n for n in h2d)


def _cause_words(a: Analysis, cause: Cause) -> str:
    """A cause as the Idle line's split names it: host work that is mostly one-time set-up (first calls) is said as
    set-up, as the set-up caveat on the same report says it (heldout-user3 andrewlala_resnet50_t4: a 1.46 ms gap, 92%
    of it the first cuBLAS call's cudaOccupancyMaxActiveBlocksPerMultiprocessor, read 'host work 7%')."""
    if cause is Cause.HOST_WORK and setup_holds_host_work(a.evidence.get(Cause.HOST_WORK)):
        return "one-time set-up (host work)"
    return (stream_waits_words(a.evidence.get(cause)) if cause is Cause.SYNCHRONIZATION else None) \
        or CAUSE_WORDS[cause]


def _copies(a: Analysis) -> str:
    """'22.0 µs of copies', memsets and device-to-device copies by their names: a memset fills memory on the device
    and a DtoD copy reads and writes it, neither moves anything over the link (heldout-user3 hpdl_vgg16_t4: six
    gpu_memset events, 22.0 µs, read '22.0 µs of copies'; fresh4 gpt2_manual_attention-before: 18 GB of DtoD copies
    from .contiguous() read as copies beside host transfers). Both are device work, counted busy."""
    on_device = [f"{duration_ns(ns)} of {what}" for ns, what in ((a.dtod_ns, "device-to-device copies"),
                                                                 (a.memset_ns, "memsets")) if ns]
    link = f"{duration_ns(a.copy_ns)} of copies" if a.copy_ns else ("no host copies" if a.dtod_ns else "no copies")
    return ", ".join([link] + on_device)


FUSE_WORTH_NAMING = 0.01   # fusing that saves under 1% of the span is not what the launches' Next asks for


def _fuse_chains(a: Analysis) -> int | None:
    """How many eager elementwise chains the what-if's fuse lever finds worth fusing (None: no replay): none where
    fusing them is the week's waste or saves under 1% (fresh4 gpt2_adamw_foreach_off: "torch.compile to fuse, then
    CUDA graphs" beside "Would waste the week: fusing the elementwise chains, predicted 0%")."""
    fuse = next((c for c in a.lever_choices if c.lever == FUSE), None)
    if fuse is None or fuse.assumption is None:
        return None
    waste = a.next_experiment.waste
    if (waste is not None and waste.lever == FUSE) or fuse.saving_ns < FUSE_WORTH_NAMING * fuse.baseline_ns:
        return 0
    return fuse.assumption.count


def _fuse_found(a: Analysis) -> int:
    """How many eager elementwise chains the fuse lever found, whatever they save."""
    fuse = next((c for c in a.lever_choices if c.lever == FUSE), None)
    return getattr(fuse.assumption, "found", 0) if fuse is not None and fuse.assumption is not None else 0


def _compiled_already(a: Analysis) -> bool:
    """The idle sits in torch.compile's code: compiled regions and compiled functions' backward hold at least
    COMPILED_IDLE_SHARE of it (output.claims checks the same on the JSON; a vLLM trace with one small compiled
    region and 89% of its idle in eager module forwards is not "compiled already")."""
    fw = a.framework
    if not fw or not fw.idle_ns:
        return False
    held = sum(x.idle_ns for x in fw.constructs
               if x.construct is Construct.COMPILED or any("CompiledFunction" in n for n in x.names))
    return held >= COMPILED_IDLE_SHARE * fw.idle_ns


def setup_share(a) -> float:
    """The one share of the span a report says is set-up: the first calls' (the idle evidence), or, where the
    Next is warming up, what its replay takes out (every first call of a cold pass, the early steps' host time) of
    the span the Next prices. The caveat said 61% where the Next said 73% on one cold
    inference (rtx3090_py4ai.json)."""
    lv = cold_start.setup_priced(a)
    if lv is not None:
        # the Next's own span (host and GPU), not the GPU span: heldout-user11 hateful_v100_infer's caveat said
        # 90% (5.87 s of a 6.50 s GPU span) beside a warm-up Next of -47% (the same 5.87 s of a 12.39 s span)
        return lv.saving_ns / lv.baseline_ns
    return a.warmup_share


def _lever_why(a: Analysis) -> str:
    """Why a lever that is a construct's own fix (not an idle cause's) is the Next: what it acts on here."""
    nx = a.next_experiment
    # the lever's own statement of what its replay assumed, its figures the assumption's fields
    assume = claim("next.assumption", nx.lever.assumption.count, LEVERS[nx.lever.lever].says(nx.lever.assumption)) \
        if nx.lever and nx.lever.assumption else ""
    most = LEVERS[nx.lever.lever].most_saved if nx.lever and nx.lever.assumption else None
    if most is not None:   # no figure said: the bound the checker holds the saving to (the time its edit takes out)
        claim("next.bound.removed_us", most(nx.lever.assumption) / 1e3, "")
    where = ""
    x = a.framework.share_of(nx.construct) if a.framework and nx.construct else None
    if x is not None and a.framework.idle_ns:
        held = x.idle_ns / a.framework.idle_ns
        where = (f"{because('construct_idle_share', held, share(held))} of the idle is inside "
                 f"{construct_phrase(x, a.framework.optimizer)}; ")
    return where + assume


def _knob_advice(a: Analysis) -> str:
    """The knob as the user types it, for what this trace needs (TF32 for convolutions too, ...)."""
    lv = a.next_experiment.lever
    knob = LEVERS[lv.lever].knob if lv is not None else None
    return f"turn one knob: {knob.change_for(lv.assumption)}" if knob is not None else ""


def _compile_advice(a: Analysis) -> str:
    """Recompiles are stopped; a function's first compilation is warmed up (and cached), not made dynamic."""
    lv = a.next_experiment.lever
    if lv is not None and getattr(lv.assumption, "recompiles", None) == 0:
        return first_compile_warmup(a)
    return ("stop the recompiles: torch.compile(dynamic=True), or torch._dynamo.mark_dynamic(x, dim) on the dimension "
            "that changes, or pad the shapes to a few sizes; TORCH_LOGS=recompiles says what triggers each")


LEVER_ADVICE = {
    Experiment.TURN_KNOB: _knob_advice,
    Experiment.FUSE_OPTIMIZER: fused_optimizer_advice,
    Experiment.COMPILE_ONCE: lambda a: _compile_advice(a),
    Experiment.FUSE: lambda a: ("fuse the eager elementwise chains into one kernel each: torch.compile the function "
                                "that holds them (or a Triton kernel), so each element is read and written once"),
}


def _regime_next(a: Analysis) -> dict[str, str]:
    v, pk = a.verdict, a.roof.peaks
    if a.next_experiment.kind in (Experiment.OVERLAP_COMM, Experiment.FIND_STRAGGLER):
        return communication.next_words(a)
    if a.next_experiment.kind is Experiment.FIND_THE_BOUND:
        return find_the_bound(v, a.replay_clock, a.trace)
    if a.next_experiment.kind is Experiment.MIXED_PRECISION:
        return precision.next_words(a)
    if a.next_experiment.kind is Experiment.BETTER_KERNELS:
        return {"lever": REGIME_ADVICE["latency"], "why": _latency_why(v, pk),
                "waste": "moving fewer bytes or cheaper arithmetic: these kernels reach neither roof"}
    if a.next_experiment.kind is Experiment.CHEAPER_ARITHMETIC \
            and (reach := roof.at_the_roof(v, pk, roof.reachable_idle(a))) is not None:
        return roof.next_words(v, pk, reach, roof.reachable_idle(a))
    if a.next_experiment.kind is Experiment.CHEAPER_ARITHMETIC:
        top = pk.flops(v.dtype) / 1e12 if pk and v.dtype else None
        if v.achieved_tflops:
            peak = f" of {a_or_an(claim('next.peak_tflops', top, tflops(top)))} peak" if top else ""
            why = (f"kernel time is compute-bound at "
                   f"{claim('next.achieved_tflops', v.achieved_tflops, tflops(v.achieved_tflops))}{peak}")
        else:
            why = f"{_bound_because(v.compute_us / max(v.kernel_us, 1e-9))} of kernel time is in compute-bound kernels"
        if a.next_experiment.arithmetic_well is not None:   # the cores are fed (triage.arithmetic_left)
            return healthy_words.arithmetic_well_words(a, why)
        return {"lever": cheaper_arithmetic(pk, v.dtype, attention=attends(a), named=matrix_precision(a),
                                            replayed=replayed_from_graphs(a)), "why": why, "waste": COMPUTE_WASTE}
    if a.decode is not None and v.regime is Regime.UNKNOWN:   # the workload grounds the bytes (analyses.decode_steps)
        return decode_words.next_words(a)
    why = _memory_why(a)
    streaming = a.weight_streaming
    if streaming is not None:
        return weight_streaming_next(streaming, pk, why)
    waste = pace_words.memory_waste(a.pace)   # (a step that took every way fewer bytes names: triage.bytes_left)
    return {"lever": REGIME_ADVICE["memory"], "why": why, "waste": waste} if a.next_experiment.moved_well is None \
        else healthy_words.moved_well_words(a.next_experiment.moved_well, why, waste)


def _memory_why(a: Analysis) -> str:
    """The memory-bound kernel time: the rate its ops move bytes at, against the peak."""
    v, pk = a.verdict, a.roof.peaks
    if v.achieved_gbps:
        peak = f" of {claim('next.peak_gbps', pk.bytes_per_s / 1e9, gbps(pk.bytes_per_s / 1e9))}" if pk else ""
        moved = claim("next.achieved_gbps", v.achieved_gbps, gbps(v.achieved_gbps))
        why = f"kernel time is memory-bound at {moved}{peak}"
        return why + pace_words.slow_rate_because(a.pace)      # (analyses.slow_rates: no memory is that slow)
    return f"{_bound_because(v.memory_us / max(v.kernel_us, 1e-9))} of kernel time is in memory-bound kernels"


def _idle_why(a: Analysis, cause: Cause, ev: Evidence, gain: float) -> str:
    """Why an idle cause's fix is the Next, each figure claimed (`because`)."""
    def idle_pct() -> str:
        return because("idle_share", a.idle_share, share(a.idle_share))

    if cause is Cause.LAUNCH_OVERHEAD:
        held = a.by_cause_ns.get(Cause.LAUNCH_OVERHEAD, 0) / max(a.span_ns, 1)   # the whole idle where it is mostly
        idles = idle_pct() if held >= 0.5 * a.idle_share else \
            f"{idle_pct()} of the span, {because('cause_share', held, share(held))} in launch gaps,"
        kernels = (f"the GPU idles {idles} between {because('kernels', ev.kernels, count(ev.kernels, 'kernel'))}"
                   f" that run {because('kernel_median_us', ev.kernel_median_us, duration_us(ev.kernel_median_us))}"
                   " (median)")
        if ev.graph_launches and 0 < ev.graphed_kernels < ev.kernels:
            # the launches to cut are those outside the graphs: a replayed kernel costs no launch of its own
            # (generate-gpt2-b1-static counted its 1,581 replayed kernels among the launches to cut)
            eager = ev.kernels - ev.graphed_kernels
            kernels += (f", {because('eager_kernels', eager, integer(eager))} of them launched one by one outside "
                        f"the {count(ev.graph_launches, 'graph replay', 'graph replays')}")
        if ev.launch_call_median_us and ev.kernel_median_us < ev.launch_call_median_us:
            # the launch call's median is said on the Idle line; this phrase claims it outlasts the kernel
            return kernels + because("launch_outlasts_kernel_us", ev.launch_call_median_us,
                                     " while each launch costs the host more")
        # kernels outlast a launch call: what the host spends per kernel is the dispatch around the call too; the
        # gaps where the queue ran dry are counted apart from those queued already (the device's own spacing)
        dry = pace_words.because_dry(a.pace, ev.queued_gaps)
        return (kernels + f", in {because('gaps', ev.gaps, count(ev.gaps, 'gap'))} (median "
                f"{because('median_gap_us', ev.median_gap_us, duration_us(ev.median_gap_us))}){dry} where the queue "
                "ran dry while the host dispatched and launched the next")
    if cause is Cause.HOST_WORK:
        lv = a.next_experiment.lever
        if (waited := pace_words.because_loader_wait(a)):      # the wait a DataLoader Next rests on
            return waited
        if ev.gaps == 0 and lv is not None and lv.assumption is not None and lv.assumption.count:
            # no idle gap is long enough to be host work, yet the replay finds host stretches between launches
            # (each shorter than the host-work threshold of the idle split, longer than the lever's)
            long_ns = getattr(lv.assumption, "long_ns", 0)
            stretches = because("stretches", lv.assumption.count, count(lv.assumption.count, 'stretch', 'stretches'))
            longer = f" of {because('stretch_us', long_ns / 1e3, duration_ns(long_ns))} or more" if long_ns else ""
            return f"the host runs code that issues no GPU work in {stretches} between launches{longer}, and the " \
                   "GPU waits them out"
        # the share the host's own stretches hold, not the whole idle: beside an unexplained wait (hta-sampled-rank0:
        # idle 55%, host work 22%) "idles 55% while the host runs code" gave the host idle it does not hold
        return (f"the GPU idles {because('cause_share', gain, share(gain))} of the span while the host runs code "
                f"that issues no GPU work "
                f"(median gap {because('median_gap_us', ev.median_gap_us, duration_us(ev.median_gap_us))})")
    if cause is Cause.SYNCHRONIZATION:
        if a.sync_cost_is_lost_overlap:   # the syncs' cost is the overlap they prevent
            host = a.evidence[Cause.HOST_WORK]
            held, steady = recurring_host_share(a)   # (not the one-time set-up: deferring syncs leaves it)
            return (f"while the host waits in a sync it cannot run ahead, so its host work "
                    f"({because('stretches', host.gaps, count(host.gaps, 'stretch', 'stretches'))}, a median of "
                    f"{because('median_gap_us', host.median_gap_us, duration_us(host.median_gap_us))}, "
                    f"{because('host_share', held, share(held))} of the span{steady}) leaves the GPU idle instead "
                    "of overlapping its kernels")
        c = a.serialising_syncs or a.next_experiment.lever
        if ev.drains == 0 and c is not None:   # no drain: the syncs' cost is the overlap they prevent
            overlap = c.saving_ns / c.baseline_ns
            return (f"each sync holds the host until the GPU catches up, so host work and kernels run one after "
                    "the other: removing them overlaps "
                    f"{because('overlap_us', c.saving_ns / 1e3, duration_ns(c.saving_ns))} "
                    f"({because('overlap_share', overlap, share(overlap))} of {baseline_words(a)})")
        times = "time" if ev.drains == 1 else "times"
        return (f"{because('drains', ev.drains, integer(ev.drains))} {times} the device drained while the host waited, "
                f"costing {because('idle_us', ev.total_us, duration_us(ev.total_us))} of idle "
                f"({because('cause_share', gain, share(gain))} of the span)")
    if cause is Cause.DATA_TRANSFER:
        # the share the copies hold, not the whole idle (bert_pad_max_length-before: "compute idles 9% while copies
        # run" where the Idle line gave data transfer 1%, the rest launch overhead and host work)
        return (f"compute idles {because('cause_share', gain, share(gain))} of the span while copies run "
                f"({copy_phrase(ev)})")
    return (f"{because('cause_share', gain, share(gain))} of the span is idle before GPU work whose launch call is not "
            "in the trace, so its cause cannot be read from it")


def five_lines(a: Analysis) -> list[str]:
    if not a.devices:
        return _cpu_only_lines(a)
    tr = a.trace
    dev = tr.device_name() or "an unnamed device"
    if dev.startswith("unnamed device"):   # named by its recorded properties (tracetriage.analyzers.loading.decode)
        dev = "an " + dev
    scope = f" (range {a.range_filter})" if a.range_filter else ""
    busy = a.kernel_busy_ns / a.span_ns if a.span_ns else 0.0
    rc = a.replay_clock
    busy_words = replay_measured(rc) if rc is not None and rc.busy_unmeasured else f"kernels busy {share(busy)} of it"
    busy_words += communication.busy_wait_clause(a.verdict.communication, a.span_ns, a.kernel_busy_ns)
    l1 = (f"Measured: {Path(tr.path).name}{scope} on {dev}: {count(tr.events_in_file, 'event')}, "
          f"{a_or_an(duration_ns(a.span_ns))} GPU span, {busy_words} "
          f"({count(a.kernels, 'kernel')}, "
          + _copies(a) + ").")
    l1 = l1[:-1] + (step_words.phases_clause(a.phases, a.span_ns / 1e3) if a.phases
                    else step_words.steps_clause(a.steps, a.steps_apart)) + "."
    hot = ", ".join(f"{op_words(h.name, tr.device_name())} {share(h.share)} ({count(h.calls, 'call')}"
                    f"{_hotspot_more(a, h.name, i)})" for i, h in enumerate(a.hotspots[:3]))
    l2 = f"Time: device time goes to {hot or 'nothing (no GPU activity)'}{lib_syncs.trials_time(a)}."
    named = a.named_ranges
    if named and not a.range_filter:
        top = sorted(named, key=lambda r: -r.kernel_busy_us)[:2]
        l2 = l2[:-1] + "; by range, " + ", ".join(
            f"{r.name} {duration_us(r.kernel_busy_us)} busy over {integer(r.count)}×" for r in top) + "."
    if a.idle_ns > 0:
        parts = sorted(((c, ns) for c, ns in a.by_cause_ns.items() if ns > 0), key=lambda x: -x[1])
        # the causes as printed add up to the idle share printed
        idle_pct, cause_pcts = shares_of_a_whole(a.idle_share, [ns / a.span_ns for _, ns in parts])
        split = ", ".join(f"{_cause_words(a, c)} {claim(f'idle.cause.{c.value}', ns / a.span_ns, pct)}"
                          for (c, ns), pct in zip(parts[:4], cause_pcts))
        if a.copies_count_as_idle:
            # compute idle is "no kernel runs": a copy on its own engine does not keep compute busy
            split += " (copies count as compute idle: no kernel runs while they do)"
        idle_pct = claim("idle.share", a.idle_share, idle_pct)
        l3 = (f"Idle: the GPU is idle {idle_pct} of the span ({duration_ns(a.idle_ns)}): {split}; "
              f"mostly {_mostly(a)}{pace_words.idle_dry(a.pace, a.dominant is Cause.LAUNCH_OVERHEAD)}"
              f"{_serialising_syncs(a)}{construct_clause(a)}{_idle_source(a)}{pace_words.idle_window(a.pace)}"
              + (replay_idle(rc, True) if rc is not None else "") + ".")
    else:
        l3 = replay_idle(rc, False) if rc is not None else "Idle: the GPU never idles inside its span."
    nx = next_experiment(a)
    l5 = f"Next: {nx['lever']}, because {nx['why']}. Would waste the week: {nx['waste']}."
    return [l1, l2, l3, _regime_line(a), l5]


def _mostly(a: Analysis) -> str:
    most = mostly(a)
    if pace_words.queued_bubbles(a.pace, a.dominant is Cause.LAUNCH_OVERHEAD):
        return pace_words.mostly_queued(most)
    if a.replay_gaps is not None and a.dominant is Cause.LAUNCH_OVERHEAD:
        return replay_gaps_mostly(a.replay_gaps)
    return most + few_large_gaps(a)


def _hotspot_more(a: Analysis, name: str, index: int = -1) -> str:
    """After a hotspot's calls: the ops an Inductor kernel fused, and the user's frames that launched it (`index`:
    its place among the device hotspots, whose call sites are said each; -1, a host hotspot: its largest)."""
    fk = a.fused_kernels.get(name)
    return (f"; {fused_words(fk)}" if fk else "") + hotspot_sites(a, name, index)


def _idle_source(a: Analysis) -> str:
    """With stacks: where in the user's code the dominant cause's gaps come from."""
    if a.idle_by_range:
        return range_clause(a.idle_by_range)
    found = a.source_lines.idle.get(a.dominant, ()) if a.source_lines and a.dominant else ()
    return source_clause(found[0] if found else None)


def _serialising_syncs(a: Analysis) -> str:
    """Syncs that serialise host work with GPU work, named with the overlap they prevent, whatever holds more
    of the idle: '; the syncs in aten::item serialise the host with the GPU: removing them overlaps ...'."""
    c = a.serialising_syncs
    if c is None:
        return ""
    overlap = c.saving_ns / c.baseline_ns
    # a library's syncs are named for what they are (cuDNN's benchmark trials), not by the op that made them
    named = lib_syncs.sync_name(a) or f"the syncs{f' ({c.only})' if c.only else ''}"
    return (f"; {named} serialise the host with the GPU: removing them "
            f"overlaps {claim('idle.syncs.overlap_us', c.saving_ns / 1e3, duration_ns(c.saving_ns))} "
            f"({claim('idle.syncs.overlap_share', overlap, share(overlap))} of {baseline_words(a)})")


def regime_bound(a: Analysis) -> str | None:
    """What the Regime line names as the bound, as `--json`'s `regime_detail.bound`: the regime's own value, or for an
    idle-bound span what it waits on (`set_up`, `input`, `compile`, `transfer`, `host`, `sync`; else `overhead`), and
    `fp32_cuda_cores` where kernels with no cost model are read by their names as fp32 math on CUDA cores. (The
    `regime` field keeps its six values; heldout-user3: the text said transfer-bound, set-up-bound or "GPU-bound in
    fp32 math" where the JSON said only overhead or unknown.)"""
    v = a.verdict
    if not a.devices:
        return None
    if lib_syncs.trials_lead(a):   # cuDNN's benchmark trials hold most of the kernel time: the knob's set-up
        return "cudnn_trials"
    if v.regime is Regime.OVERHEAD:
        return _idle_bound_kind(a)[0]
    if transfer_words.transfer_bound(a):
        return "transfer"
    if v.regime is Regime.UNKNOWN and v.mostly_fp32_cuda_core:
        return "fp32_cuda_cores"
    if v.regime is Regime.UNKNOWN and a.decode is not None:
        return "decode_memory"
    if v.regime is Regime.UNKNOWN and v.memory_by_names:
        return "memory_by_names"
    if v.regime is Regime.UNKNOWN and v.compute_by_names:
        return "compute_by_names"
    if v.regime is Regime.UNKNOWN and v.split_by_names:
        return "split_by_names"
    return v.regime.value


def _idle_bound_kind(a: Analysis) -> tuple[str, float]:
    """What an idle-bound span waits on, and the share that says so: a cold start (the Next warms up or profiles the
    replays) is set-up, a device waiting for the DataLoader's batches input, one whose idle is mostly torch.compile
    compiling compile, one idling while copies run transfer; else launches and dispatch, overhead."""
    nx = a.next_experiment
    # a cold start is the bound only where the loop after it is not idle-bound itself and the Idle line's own
    # dominant cause is not launch overhead ('set-up-bound ..., not launch overhead' beside 'launch overhead 42%')
    if nx.kind is Experiment.PROFILE_REPLAYS or (nx.kind is Experiment.WARM_UP and not steady_loop_idles(a)
                                                 and a.dominant is not Cause.LAUNCH_OVERHEAD):
        return "set_up", nx.gain_share if nx.kind is Experiment.PROFILE_REPLAYS else setup_held(a)
    loader = a.framework.idle_share(Construct.DATALOADER) if a.framework else 0.0
    if loader >= INPUT_BOUND_IDLE_SHARE:
        return "input", loader
    compiling = a.framework.idle_share(Construct.COMPILE) if a.framework else 0.0
    if compiling >= INPUT_BOUND_IDLE_SHARE:   # (recompile_gpt2: 99% of its idle in dynamo and Inductor)
        return "compile", compiling
    # a device that idles while copies run waits on the copies, not on launches (heldout-user3 abenich_ariel: one
    # 21 MB pageable copy, 96% of the span, read "overhead-bound" beside its own "data transfer 96%")
    copying = a.by_cause_ns.get(Cause.DATA_TRANSFER, 0) / a.idle_ns if a.idle_ns else 0.0
    if a.dominant is Cause.DATA_TRANSFER and copying >= INPUT_BOUND_IDLE_SHARE:
        return "transfer", copying
    # a device that idles while the host runs work that issues none (CPU ops, Python, the batch's own handling) waits
    # on the host, not on launches: a public RTX 3080 trace, 654 ms of CPU aten::randn a step, 83% of its span, was
    # called "overhead-bound", which says torch.compile and CUDA graphs to a PyTorch engineer (unless launch overhead
    # holds half as much of the idle: realworld/recompile's after trace, 46% host work beside 45% launches)
    hosting = a.by_cause_ns.get(Cause.HOST_WORK, 0) / a.idle_ns if a.idle_ns else 0.0
    launching = a.by_cause_ns.get(Cause.LAUNCH_OVERHEAD, 0) / a.idle_ns if a.idle_ns else 0.0
    if a.dominant is Cause.HOST_WORK and hosting >= INPUT_BOUND_IDLE_SHARE and launching < hosting / 2 \
            and not setup_holds_host_work(a.evidence.get(Cause.HOST_WORK)):
        return "host", hosting
    # a device that idles while the host waits in syncs waits on the round trip, not on launches: the fix removes or
    # defers the syncs (heldout-user9 neuralpde: 'overhead-bound' beside its own 'synchronization 78%, launch 1%')
    syncing = a.by_cause_ns.get(Cause.SYNCHRONIZATION, 0) / a.idle_ns if a.idle_ns else 0.0
    if a.dominant is Cause.SYNCHRONIZATION and syncing >= INPUT_BOUND_IDLE_SHARE and launching < syncing / 2:
        return "sync", syncing
    return "overhead", 0.0


def _idle_bound(a: Analysis) -> tuple[str, str]:
    """What an idle-bound span waits on, in the words a PyTorch engineer reads it by, and the clause that says why:
    "overhead-bound" says launches and dispatch (torch.compile, CUDA graphs), so a cold start is set-up-bound, a
    device waiting for batches input-bound, one compiling compile-bound, one waiting on copies transfer-bound (each
    share claimed)."""
    kind, x = _idle_bound_kind(a)
    if kind == "set_up":
        on = cold_start.setup_span(a)
        on = "it" if a.next_experiment.kind is Experiment.PROFILE_REPLAYS or on == "the span" else on
        return (cold_start.setup_bound_head(a, steady_idle_share(a)),
                f", and one-time set-up holds {claim('regime.setup_share', x, share(x))} of {on}, which the "
                "steady state never pays" + cold_start.steady_after(a, steady_idle_share(a)))
    lead = cold_start.cold_start_lead_in(a)
    if kind == "input":
        return ("input-bound, not launch overhead",
                f", {claim('regime.input_share', x, share(x))} of the idle inside the DataLoader waiting for batches"
                + lead)
    if kind == "compile":
        return ("compile-bound, not launch overhead",
                f", {claim('regime.compile_share', x, share(x))} of the idle inside torch.compile compiling" + lead)
    if kind == "transfer":
        return ("transfer-bound, not launch overhead",
                f", {claim('regime.transfer_share', x, share(x))} of the idle waiting on copies" + lead)
    if kind == "host":
        return ("host-bound, not launch overhead",
                f", {claim('regime.host_share', x, share(x))} of the idle the host running work that issues no GPU "
                "work" + lead)
    if kind == "sync":
        return ("sync-bound, not launch overhead",
                f", {claim('regime.sync_share', x, share(x))} of the idle the host waiting in syncs" + lead)
    return "overhead-bound", lead


def _regime_line(a: Analysis) -> str:
    v, pk = a.verdict, a.roof.peaks
    tot = v.kernel_us
    if v.regime is Regime.OVERHEAD:
        bound, why = _idle_bound(a)
        line = (f"Regime: {bound}: the device idles {share(v.idle_share)} of the span{why}; "
                f"{_mix(v, pk is not None)}{_ridge(v)}.")
    elif v.regime is Regime.COMMUNICATION:
        line = communication.regime_line(v)
    elif v.regime is Regime.UNKNOWN and v.mostly_fp32_cuda_core:   # the names say what the shapes cannot
        line = precision.regime_line(v, a.trace)
    elif v.regime is Regime.UNKNOWN and a.decode is not None:   # ... and a decode engine's steps what they cannot
        line = decode_words.regime_line(a)
    elif v.regime is Regime.UNKNOWN and v.memory_by_names:   # (elementwise kernels' names, no shapes)
        line = named_bound.memory_line(v, a.trace)
    elif v.regime is Regime.UNKNOWN and v.compute_by_names:  # (GEMM kernels' names and tiles, no shapes)
        line = named_bound.compute_line(v, a.trace)
    elif v.regime is Regime.UNKNOWN and v.split_by_names:    # (both bounds by names, neither a majority)
        line = named_bound.split_line(v, a.trace)
    elif v.regime is Regime.UNKNOWN:
        known = [f"{claim(f'regime.{key}_share', x / tot, share(x / tot)) if key else share(x / tot)} {what}"
                 for x, key, what in ((v.compute_us, "compute", "compute-bound"),
                                      (v.memory_us, "memory", "memory-bound"), (v.comm_us, None, "in collectives"))
                 if tot and x > 0.005 * tot]
        # (GPU-bound is decidable without a cost model, triage.pace; said, and its claim made, only where nothing
        # else is: claim() records what the line says)
        gpu_bound = "" if known else pace_words.gpu_bound(a.pace)
        rest = (f"the rest of kernel time is {' and '.join(known)}: too little to decide" if known
                else gpu_bound or "nothing else to decide by")
        line = (f"Regime: unknown: {share(v.uncosted_share)} of kernel time (collectives aside) has no cost model, "
                f"because {uncosted_phrase(v, trace=a.trace)}; {rest}{_ridge(v)}.")
    elif v.regime is Regime.LATENCY:
        rate = (f" and reach {claim('regime.achieved_tflops', v.achieved_tflops, tflops(v.achieved_tflops))}"
                if v.achieved_tflops else "")   # no FLOPs: no '0 TFLOP/s'
        reach = (f"; latency-bound ops move {claim('regime.achieved_gbps', v.achieved_gbps, gbps(v.achieved_gbps))}"
                 f"{rate}, {small_share(v.latency_peak_share)} of the nearer peak"
                 if v.latency_peak_share is not None else "")
        mix = _mix(v, pk is not None)
        line = (f"Regime: latency-bound: {mix}{reach}: neither bytes nor arithmetic limit them (occupancy, tiny "
                f"grids, the library's algorithm choice){_ridge(v)}.")
    elif v.regime is Regime.COMPUTE:
        mix, hd = _mix(v, pk is not None), ground.headline(v, "compute-bound", pk is not None)
        if v.achieved_tflops:
            top = pk.flops(v.dtype) / 1e12 if pk and v.dtype else None
            reach = claim("regime.achieved_tflops", v.achieved_tflops, tflops(v.achieved_tflops))
            peak = (f" of the {claim('regime.peak_tflops', top, tflops(top))} peak "
                    f"({pct_of(v.achieved_tflops, top)}){precision.tensor_core_roof(v, pk)}" if top else "")
            line = f"Regime: {hd}: {mix}; {'compute-bound' if pk else 'dense'} ops reach {reach}{peak}{_ridge(v)}."
        else:   # the verdict rests on kernels' names: the costed ops' intensity is other ops', not theirs (fresh4
            # mlp_gemm_roof-after: compiled bf16 GEMMs said 'compute-bound ... average 0.2 FLOP/byte against a fp32
            # ridge of 20', the intensity of its fp32 casts)
            line = f"Regime: {hd}: {mix} (their FLOPs are not in the trace: {named_why_phrase(v, a.trace)})."
    else:
        mix = _mix(v, pk is not None)
        if v.achieved_gbps:
            top = pk.bytes_per_s / 1e9 if pk else None
            moved = claim("regime.achieved_gbps", v.achieved_gbps, gbps(v.achieved_gbps))
            peak = (f" of the {claim('regime.peak_gbps', top, gbps(top))} peak ({pct_of(v.achieved_gbps, top)})"
                    if top else "")
            line = (f"Regime: {ground.headline(v, 'memory-bound', True)}: {mix}; memory-bound ops move {moved}{peak}"
                    f"{pace_words.slow_rate_regime(a.pace)}{_ridge(v)}.")
        else:   # likewise: the verdict rests on kernels' names
            line = f"Regime: {ground.headline(v, 'memory-bound', True)}: {mix} (their bytes are not in the trace: " \
                   f"{named_why_phrase(v, a.trace)})."
    if v.regime in (Regime.COMPUTE, Regime.MEMORY, Regime.LATENCY):
        line = host_paced.lead(a, line[:-1] + execution_words.regime_clauses(a.execution) + ".")
    line = transfer_words.lead(a, line)   # (copies holding the device longer than the kernels: transfer-bound first)
    if a.phases:
        line = line[:-1] + f"; {step_words.phases_regime(a.phases)}."
    if pk is not None and peak_words.source(pk):
        line = line[:-1] + f" ({peak_words.source(pk)})."
    if pk is None:
        line = line[:-1] + (f" (no peak table entry for {a.trace.device_name() or 'this device'}: run tracetriage "
                            "capture ceilings).")
    if v.regime is not Regime.OVERHEAD:   # (an idle-bound span says what it waits on already)
        line = line[:-1] + pace_words.regime_window(a.pace) + "."
    line = lib_syncs.trials_regime(a, line)
    return line[:-1] + cold_start.recurring_qualifier(a) + "."


def _mix(v, roofs: bool = True) -> str:
    """'of kernel time, 54% is compute-bound and 5% memory-bound, ...', its split claimed (regime.*_share); without
    the device's peaks (`roofs` False) latency-bound kernels are those of a few µs, not those far below the roofs."""
    tot = v.kernel_us
    if not tot:
        return "no kernels ran"
    if not (v.compute_us + v.memory_us + v.latency_us > 0 or not v.unknown_us):
        return f"no kernel time has a bound: {uncosted_phrase(v)}"
    return (f"of kernel time, {named_bound.mix_source(v)}{_bound_share('compute', v.compute_us / tot)} is "
            f"{ground.compute_words(roofs)} and "
            f"{_bound_share('memory', v.memory_us / tot)} memory-bound"
            + (f", {100 * v.latency_us / tot:.0f}% latency-bound "
               + ("(far below both roofs)" if roofs else "(kernels of a few µs: launch and ramp, no roof)")
               if v.latency_worth_naming else "")
            + (f" ({100 * v.unknown_us / tot:.0f}% unknown)" if v.unknown_worth_naming else "")
            + (f", {100 * v.comm_us / tot:.0f}% in collectives (waiting on peers counts as busy)" if v.comm_us else ""))


def _ridge(v) -> str:
    """'; its ops average 69.7 FLOP/byte against a fp32 ridge of 14' (the intensity claimed), or ''."""
    if not (v.intensity and v.ridge):
        return ""
    whose = {Regime.COMPUTE: "its compute-bound ops", Regime.MEMORY: "its memory-bound ops"}.get(v.regime, "its ops")
    if v.other_precisions:   # one precision's ops against its own ridge, each
        whose = whose.replace("its ", f"its {v.dtype} ", 1)
    return (f"; {whose} average {claim('regime.intensity', v.intensity, num(v.intensity))} FLOP/byte against a "
            f"{v.dtype} ridge of {num(v.ridge)}" + "".join(precision.other_ridge(x, i)
                                                           for i, x in enumerate(v.other_precisions)))


def _bound_share(bound: str, x: float) -> str:
    """A bound's share of kernel time on the Regime line ('77%'), claimed as regime.<bound>_share: a split the health
    check withholds (no shapes) is given nowhere."""
    return claim(f"regime.{bound}_share", x, f"{100 * x:.0f}%")


def _cpu_only_lines(a: Analysis) -> list[str]:
    """A trace with no GPU activity (a CPU capture, or CUDA activity not recorded)."""
    tr, h = a.trace, a.host_only
    top = ", ".join(f"{x.name} {share(x.share)} ({count(x.calls, 'call')}{_hotspot_more(a, x.name)})"
                    for x in h.hotspots)
    acc = a.accelerator
    if acc is not None:   # not a CPU-only trace: a device this tool does not read
        return [
            f"Measured: {Path(tr.path).name} was recorded on an {acc} accelerator, not a GPU: "
            f"{count(tr.events_in_file, 'event')}, {count(h.ops, 'CPU op')} over "
            f"{a_or_an(duration_ns(h.span_ns))} host span.",
            f"Time: host time in top-level ops goes to {top or 'nothing (no CPU ops recorded)'}.",
            f"Idle: not attributed: tracetriage reads CUDA/ROCm kernel timelines, and the {acc}'s device events "
            "are not kernels it can place (0 gaps).",
            f"Regime: not decided: there is no peak table or cost model for {acc} devices.",
            f"Next: use the {acc} vendor's own profiler for the device timeline (HTA reads MTIA traces), because "
            "the verdicts here need GPU kernels. Would waste the week: reading the missing device timeline as an "
            "idle device: the device did run.",
        ]
    nx = cpu_only_next(a.health) or CPU_ONLY_NEXT
    return [
        f"Measured: {Path(tr.path).name} {cpu_only_measured(a.health)}: {count(tr.events_in_file, 'event')}, "
        f"{count(h.ops, 'CPU op')} over {a_or_an(duration_ns(h.span_ns))} host span, "
        f"ops running {share(h.busy_ns / h.span_ns if h.span_ns else 0)} of it{step_words.steps_clause(a.steps)}.",
        f"Time: host time in top-level ops goes to {top or 'nothing (no CPU ops recorded)'}.",
        "Idle: there is no GPU timeline in this trace, so there are no idle gaps to attribute (0 gaps).",
        "Regime: not decidable from a CPU-only trace: compute, memory and overhead are judged on device "
        "activity (0 kernels).",
        f"Next: {nx[0]}, because {nx[1]}. Would waste the week: {nx[2]}.",
    ]
