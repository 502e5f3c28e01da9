"""The warm-up Next's own words: what to warm up (first compilations: warm up and cache them; first calls and lazy
module loading otherwise), the early steps its replay scales, and the loop's fix after it where the steady steps
still idle most of each (graph breaks named where each step enters several compiled regions).
"""
from __future__ import annotations

from tracetriage.analyzers.model.health import Problem as HealthProblem
from tracetriage.analyzers.model.module_loading import (
    context_call,
    context_created_inside,
    eager_loading_helps,
    eager_loading_knob,
)
from tracetriage.analyzers.model.units import duration_ns, duration_us, integer, share
from tracetriage.analyzers.model.verdicts import Cause, Construct, Experiment
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.claims import INPUT_BOUND_IDLE_SHARE, saving
from tracetriage.analyzers.voice.cold_start import traced_span
from tracetriage.analyzers.voice.common import CAUSE_WORDS
from tracetriage.analyzers.voice.library_syncs import cudnn_trials_sync
from tracetriage.analyzers.voice.said import claim
from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, LEVERS

FIRST_COMPILE_WARMUP = ("warm up the compiled code first: call it a few times before the profiler starts "
                        "(torch.profiler.schedule(wait=1, warmup=2, active=3)), then profile and triage again; the "
                        "compilation itself shortens with Inductor's on-disk caches on a second run of the same code "
                        "(TORCHINDUCTOR_FX_GRAPH_CACHE=1, or torch.compiler.save_cache_artifacts() to carry them to "
                        "another machine)")


def first_compile_warmup(a: Analysis) -> str:
    """The warm-up of a first compilation, and what the caches can still take out: where a compile in the trace
    loaded its graph from Inductor's caches (analyses.compile_cache) they are on already, and Dynamo's tracing and
    guards are no cache's to remove (heldout-user17 compilecold: 'TORCHINDUCTOR_FX_GRAPH_CACHE=1' beside resnet18's
    67 ms cache hit and 530 ms of Dynamo tracing and guard building)."""
    c = getattr(a, "compile_cache", None)
    if c is None or not c.hits:
        return FIRST_COMPILE_WARMUP
    hit = claim("next.compile_cache.hit_us", c.hit_ns / 1e3, duration_ns(c.hit_ns))
    dynamo = claim("next.compile_cache.dynamo_us", c.dynamo_ns / 1e3, duration_ns(c.dynamo_ns))
    loaded = "a compile here" if c.hits == 1 else f"{integer(c.hits)} compiles here"
    return ("warm up the compiled code first: call it a few times before the profiler starts "
            "(torch.profiler.schedule(wait=1, warmup=2, active=3)), then profile and triage again; Inductor's on-disk "
            f"caches are on already ({loaded} loaded its graph from them: AOTAutogradCache.inductor_load, {hit}), so "
            "a second run saves only the compiles that missed them (torch.compiler.save_cache_artifacts() carries "
            f"them to another machine), never Dynamo's own bytecode tracing and guard building ({dynamo} here), "
            "which each new process pays again")


def warmup_advice(a: Analysis) -> str:
    """The warm-up in the words of the set-up it removes: torch.compile compiling most of the idle for the first time
    is warmed up and cached (loading kernel modules eagerly, 21.5 ms of 1.73 s on heldout-user6
    rtx4090d_compile_warmup, is beside the point there); first calls and lazy module loading otherwise."""
    fw = a.framework
    if fw is not None and fw.first_compilations and fw.idle_share(Construct.COMPILE) >= INPUT_BOUND_IDLE_SHARE:
        return first_compile_warmup(a)
    # eager loading only where the set-up is lazy module loads with the context already up: it loads every module
    # as the context is created, so a context created inside the window only grows (model.module_loading)
    # (not an equal of the warm-up: heldout-user16 resnet18_cold's cuDNN heuristics and allocator growth stay)
    eager = (f"; {eager_loading_knob(a.trace)} alone takes out only the lazy kernel loads, not the libraries' and "
             "the allocator's first-call set-up" if eager_loading_helps(a.trace) else
             ", or create the CUDA context and run each op once before profiling"
             if context_created_inside(a.trace) else "")
    return ("warm up first (run a few steps before the profiler starts: torch.profiler.schedule(wait=1, warmup=2, "
            f"active=3){eager}), then profile and triage again")


def after_warm_up(a: Analysis) -> str:
    """The loop's own fix after a warm-up, where its steady steps still idle most of each: graph breaks named where
    each step enters several compiled regions (mode="reduce-overhead" replays a whole graph's launches only once the
    breaks are gone), else the lever for the steps' idle; its prediction from this trace."""
    t, warm = a.next_experiment.then, a.next_experiment.lever
    if t is None:
        return ""
    # its replay on this trace takes out the cold start's stretches too where it saves more than the warm-up leaves
    # (realworld script-toy-train: host work off the critical path −21% of 516 ms beside a warmed-up 63.6 ms)
    priced = (f"predicted {saving('next.then.saving', t.saving_ns, t.baseline_ns)} from this trace"
              if warm is not None and t.saving_ns <= warm.predicted_ns else
              "its replay on this trace takes out the cold start too: triage the warmed-up profile to price it")
    gb = getattr(a, "graph_breaks", None)
    if gb is not None and t.lever == CUDA_GRAPHS:
        return (f"; then the loop, whose steady steps still idle most of their time: each step enters {gb.per_step} "
                f"compiled regions ({gb.frames} compiled frames, Torch-Compiled Region N/0): graph breaks split the "
                "compiled code (or its functions are compiled apart), with eager Python, guards and launches between "
                "them; remove the breaks (torch._dynamo.graph_break(), prints, data-dependent branches: "
                "torch.compile(fullgraph=True) raises at each one), then compile with mode=\"reduce-overhead\" so CUDA "
                f"graphs replay the step's tiny kernels ({LEVERS[t.lever].words}: {priced})")
    return (f"; then the loop, whose steady steps still idle most of their time: {LEVERS[t.lever].words}, "
            f"{priced}")


def early_steps(n: int) -> str:
    """The early steps a warm-up's replay scales to a steady step's host time ("the first step's", "the first 2
    steps'")."""
    return "the first step's" if n == 1 else f"the first {n} steps'"


def cold_cause_why(a: Analysis) -> str:
    """A warm-up whose because is the first step's hold on the dominant idle cause (analyses.cold_cause): that share of
    the span, and what the later steps pay of the same cause. No prediction: no lever prices a warm start here."""
    c = a.next_experiment.cold
    held = a.next_experiment.gain_share
    later = c.steps_ns - c.first_ns
    return (f"{claim('next.because.setup_share', held, share(held))} of the span is the first step's "
            f"{CAUSE_WORDS[c.cause]} idle ({duration_ns(c.first_ns)}), while the {integer(c.steps - 1)} later steps "
            "pay "
            f"{duration_ns(later) if later else 'none'} of it together: a cold start the steady state never pays, so "
            "a fix for it changes nothing once the program runs warm")


WARMUP_SAYS_CRITICAL = 0.04   # first calls holding this much more of the span than the warm-up saves: said beside


def warmup_why(a: Analysis) -> str:
    """The warm-up's because: the share of the span its prediction takes out, as that same figure (issue 33: "−8%
    ..., because 52% of the span is one-time set-up"), and what the set-up is."""
    if a.next_experiment.cold is not None:
        return cold_cause_why(a)
    lv = a.next_experiment.lever
    names = ", ".join(w.name for w in listed_setup(a)[:2])
    names += context_words(a) if a.warmup else ""   # (without first calls, said beside the set-up's stretches)
    if lv is None:   # no replay prices it: the first calls' share, no prediction beside it
        return (f"{claim('next.because.setup_share', a.warmup_share, share(a.warmup_share))} of the span is "
                f"one-time set-up in first calls ({names}), which the steady state never pays")
    if getattr(lv.assumption, "idle_ns", 0):   # priced by the device's idle through the host's set-up
        return (f"{_setup_share(lv)} of {traced_span(a)} is the device idling while the host pays one-time set-up"
                + (f" (first calls of {names})" if names else "") + ", which the steady state never pays")
    if a.warmup and a.warmup_share * a.span_ns >= lv.saving_ns:
        x = lv.saving_ns / lv.baseline_ns if lv.baseline_ns else 0.0
        if x < a.warmup_share - WARMUP_SAYS_CRITICAL:
            # the first calls hold more than the replay takes out: the rest ran beside GPU work (no idle to close)
            return (f"{_setup_share(lv)} of {traced_span(a)} is one-time set-up on the critical path (first calls of "
                    f"{names}: {claim('next.because.first_calls_share', a.warmup_share, share(a.warmup_share))} of "
                    "the span in all, the rest the replay finds overlapped with GPU work or waited out anyway)")
        return (f"{_setup_share(lv)} of {traced_span(a)} is one-time set-up in first calls ({names}), which the "
                "steady state never pays")
    steps = getattr(lv.assumption, "early_steps", 0)
    if a.warmup:   # the replay removes more than the first calls: the set-up steps' host time
        more = (f", and {early_steps(steps)} host time above a steady step's" if steps else
                (", and every later call and untraced host stretch past its warm cost" if _ops_unrecorded(a) else
                 ", and every later first call past its warm cost") if getattr(lv.assumption, "cold_pass", False)
                else "")
        return (f"{_setup_share(lv)} of {traced_span(a)} is one-time set-up (first calls such as {names}{more}), "
                "which the steady state never pays")
    where = f"{early_steps(steps)} host time above a steady step's" if steps else "set-up stretches"
    where += f", {context_words(a)}" if context_call(a.trace) is not None else ""
    return (f"{_setup_share(lv)} of {traced_span(a)} is one-time set-up ({where}), "
            f"which the steady state never pays")


def context_words(a: Analysis) -> str:
    """The CUDA context created inside the window, named beside the first calls (model.module_loading)."""
    ctx = context_call(a.trace)
    if ctx is None:
        return ""
    return (f"{', ' if a.warmup else ''}the CUDA context created by the window's first runtime call ({ctx[0]}, "
            f"{claim('next.because.context_us', ctx[1] / 1e3, duration_ns(ctx[1]))})")


def _ops_unrecorded(a: Analysis) -> bool:
    """A runtime-only capture: its cold pass's set-up includes the untraced stretches between calls (analyses.setup)."""
    h = getattr(a, "health", None)
    return h is not None and h.has(HealthProblem.OPS_NOT_RECORDED)


def _setup_share(lv) -> str:
    """The set-up a warm-up's replay takes out, as a share of the span (its because)."""
    return claim("next.because.setup_share", lv.saving_ns / lv.baseline_ns, share(lv.saving_ns / lv.baseline_ns))


def listed_setup(a: Analysis) -> list:
    """The three longest first calls the set-up share counts: those in the GPU span's gaps, and the set-up windows
    outside it (a first launch before the first kernel: heldout-user15 switch_moe_8k's 419.6 ms cudaLaunchKernel in
    aten::embedding, 82% of the set-up, went unnamed beside three calls of 10-27 ms)."""
    found = list(a.warmup) + list(getattr(a, "setup_outside", ()))
    return sorted(found, key=lambda w: -w.first_call_us)[:3]


def setup_caveat(a: Analysis, x: float, span: str) -> str:
    """The Caveat on one-time set-up: its first calls, and the context the window creates, which the share `x` (of
    `span`) counts too: named, or the calls listed would seem to make up the share alone (mm_a100_setup: 29 ms of
    first calls beside "98% of the traced span", 168.5 ms of it the context)."""
    names = ", ".join(f"{w.name} {duration_us(w.first_call_us)} "
                      + (f"(later {duration_us(w.later_median_us)})" if w.later_median_us is not None else "(once)")
                      for w in listed_setup(a))
    ctx = context_call(a.trace) if getattr(a, "trace", None) is not None else None   # (a diff's Side has none)
    if ctx is not None:
        names += f", the CUDA context created by the window's first runtime call ({ctx[0]}) {duration_ns(ctx[1])}"
    in_all = ctx is not None or len(a.warmup) + len(getattr(a, "setup_outside", ())) > 3 or _listed_short(a, x)
    return (f"the profile includes one-time set-up: first calls of {names}, {share(x)} of {span}"
            f"{' in all' if in_all else ''}; warm up before profiling")


def recurring_caveat(a: Analysis) -> str | None:
    """First calls that look like one-time set-up but that later profiled steps pay again: a per-shape cost, which a
    warm-up does not remove (analyses.first_calls: fresh9 wav2letter_benchmark_dynamic_lengths, new padded lengths
    every step under cudnn.benchmark, read as "one-time set-up ...; warm up before profiling")."""
    found = getattr(a, "recurring_setup", ())
    if not found:
        return None
    # (a warm call of the op with other shapes says nothing of a call the same shapes repeat: not given there)
    names = ", ".join(f"{r.name} {duration_us(r.first_call_us)} in its first call and up to "
                      f"{duration_us(r.again_us)} in a later step"
                      + (f" ({duration_us(r.warm_us)} warm)" if r.warm_us is not None and not r.same_shapes else "")
                      for r in found[:3])
    top = found[0]
    benchmark = cudnn_trials_sync(a)
    one = len(found[:3]) == 1
    paid = (f"{'a cost that looks' if one else 'costs that look'} like one-time set-up "
            f"{'recurs' if one else 'recur'}: {names}; "
            f"{claim('caveat.recurring_steps', top.steps, integer(top.steps))} of the "
            f"{claim('caveat.recurring_of_steps', top.of_steps, integer(top.of_steps))} profiled steps pay "
            f"{'it' if one else 'them'}")
    if all(r.same_shapes for r in found[:3]):
        # the same input shapes each step: no new shape brings it, so no padding or bucketing removes it (fresh10
        # ctr_id_remap_table_not_buffer: a 64 MB table's pageable upload, aten::to [8388608] every step, was called
        # "a per-shape cost ... pad or bucket the inputs")
        return (paid + " with the same input shapes: work each step does again, not set-up, and warming up does not "
                "remove it")
    return (paid + ": a per-shape cost (each new input shape pays its set-up again: "
            + ("cuDNN's benchmark trials" if benchmark else "cuDNN's benchmark, a plan or a compile per shape")
            + "), not one-time set-up, and warming up does not remove it; shapes that repeat do (pad or bucket the "
            "inputs to a few sizes)" + (", or torch.backends.cudnn.benchmark = False while they keep changing"
                                        if benchmark else ""))


LISTED_COVERS = 0.9     # first calls listed that hold this much of the set-up's time stand for all of it


def _listed_short(a: Analysis, x: float) -> bool:
    """The first calls listed hold less than LISTED_COVERS of the set-up the share `x` counts: a warm-up priced by
    its replay takes out every first call of a cold pass and the early steps' host time, not only the calls named
    (heldout-user13 rocm-conv1-backward: 'first calls of hipLaunchKernel 24.0 ms ..., 93% of the traced span' where
    93% is 35.6 ms of a 38.3 ms span)."""
    nx = getattr(a, "next_experiment", None)
    lv = nx.lever if nx is not None and nx.kind is Experiment.WARM_UP else None
    if lv is None or not lv.baseline_ns:
        return False
    listed_ns = sum(w.first_call_us for w in listed_setup(a)) * 1e3
    return listed_ns < LISTED_COVERS * x * lv.baseline_ns


SETUP_SAID = 0.01   # one-time set-up in the host-work idle this share of the span: the recurring share says so


def recurring_host_share(a: Analysis) -> tuple[float, str]:
    """The host-work idle's share of the span without its one-time set-up (first calls, which a warm-up takes out and
    deferring the syncs does not), and ", outside the one-time set-up" where that set-up is worth the words
    (heldout-user17 gptoss3090a: '15% of the span', the Idle line's one-time set-up share, credited to vLLM's per-step
    sync)."""
    host = a.by_cause_ns.get(Cause.HOST_WORK, 0)
    once = min(sum(w.idle_us for w in a.warmup) * 1e3, host)
    return ((host - once) / a.span_ns if a.span_ns else 0.0,
            ", outside the one-time set-up" if once >= SETUP_SAID * a.span_ns else "")
