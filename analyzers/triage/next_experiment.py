"""The Next line's experiment: of the fixes the trace calls for (the levers' replays, weighed), the one that
would help most, as a change the user can make, with what is said beside it (the waste, the headroom, the
dominant cause's own lever, the knob in hand). triage.report runs it on the analyses it has found."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tracetriage.analyzers.analyses import decode_steps as decode_mod
from tracetriage.analyzers.analyses import framework as framework_mod
from tracetriage.analyzers.analyses import loader_start
from tracetriage.analyzers.analyses import roofline as roof_mod
from tracetriage.analyzers.analyses import steps as steps_mod
from tracetriage.analyzers.analyses.cold_cause import ColdCause, cold_causes
from tracetriage.analyzers.analyses.graph_capture import GraphCapture
from tracetriage.analyzers.analyses.idle import dominant_cause
from tracetriage.analyzers.analyses.roofline import RegimeVerdict, Roofline
from tracetriage.analyzers.analyses.steps import Steps
from tracetriage.analyzers.model.health import Health
from tracetriage.analyzers.model.health import Problem as HealthProblem
from tracetriage.analyzers.model.rework import Rework
from tracetriage.analyzers.model.trace import Trace
from tracetriage.analyzers.model.verdicts import (
    CAUSES,
    EXPERIMENT_FOR_CAUSE,
    LOOP_IDLES_TOO,
    Cause,
    Construct,
    Experiment,
    Regime,
)
from tracetriage.analyzers.triage import healthy as healthy_mod
from tracetriage.analyzers.triage import recurring
from tracetriage.analyzers.triage.arithmetic_left import ArithmeticWell
from tracetriage.analyzers.triage.bounds import kernel_headroom as _kernel_headroom
from tracetriage.analyzers.triage.bounds import mixed_precision_floor as _mixed_precision_floor
from tracetriage.analyzers.triage.bounds import unknown_bound_next as _unknown_bound_next
from tracetriage.analyzers.triage.bytes_left import BytesMovedWell
from tracetriage.analyzers.triage.launch_queue import DryQueue
from tracetriage.analyzers.triage.lever_choice import (
    KNOB_BEFORE_REWRITE,
    LEVER_FLOOR,
    LeverChoice,
    removal_first,
    steady_state_readable,
)
from tracetriage.analyzers.triage.warm_price import priced_by_setup_idle
from tracetriage.analyzers.triage.waste import waste_beside_words, weeks_waste
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import CUDA_GRAPHS, HEADROOM, LEVERS, blocks_graphs

IDLE_LEVER_FLOOR = 0.05   # an idle cause worth less than 5% of the span is never "the" lever
WARMUP_IS_THE_LEVER = 0.25  # one-time set-up this large a share of the span: warm up first
REWRITE = 3               # a lever of this effort is a restructure of the user's code (CUDA graphs, moving host work)
TIE = 0.01                # two predictions this close (share of the span) tie: the dominant cause's fix is picked
OFF_CAUSE_KNOB_GIVES_WAY = 1   # a knob on a cause that is not the dominant one gives way to a dominant-cause rewrite
                               # saving more (this many times as much)
KNOB_BESIDE_IDLE = 5      # a knob saving under CLOSE_CALL gives way to an idle cause holding 5x its share of the span
CLOSE_CALL = 0.05         # predictions this close (share of the span) are one: the replay is checked to 0.05, so
                          # within it the smaller change to the user's code is the Next
IDLE_SLACK = 1.1          # a host-side fix's saving may pass the idle it removes by the replay's error, no more
LEVER_FLOOR_NS = 100_000  # ... and by 0.1 ms (a launch's worth of dispatch a few hundred times over)


@dataclass(frozen=True)
class NextExperiment:
    kind: Experiment
    cause: Cause | None          # the idle cause it removes, when it is an idle lever
    gain_share: float            # the share of the span that cause (or the set-up) holds
    lever: LeverChoice | None = None   # the fix the replay predicts saves most, among those the trace calls for
    waste: LeverChoice | None = None   # the lever, acting on something here, that predicts the least
    headroom: LeverChoice | None = None   # kernels_2x, said beside the fix when faster kernels would buy more
    dominant: LeverChoice | None = None   # the dominant cause's own lever, when another beats it
    construct: Construct | None = None    # where the fix's idle sits (the DataLoader, Optimizer.step, ...)
    close_call: LeverChoice | None = None  # a fix predicted within CLOSE_CALL of it, for another cause
    then: LeverChoice | None = None       # the bigger change that would save more, said after the knob in hand
    knob_beside: LeverChoice | None = None  # the knob in hand, said beside a rewrite that saves far more
    own_fix: "NextExperiment | None" = None   # FIND_STRAGGLER: what this rank's own timeline calls for (its peers
                                              # set the pace, but the user gets a fix before the multi-rank run)
    cold: ColdCause | None = None   # WARM_UP: the dominant idle cause, held by the first of the loop's steps
    healthy: healthy_mod.Healthy | None = None   # no lever saves LEVER_FLOOR without the profiler (triage.healthy)
    moved_well: BytesMovedWell | None = None     # FEWER_BYTES: every way it names is taken already (bytes_left)
    arithmetic_well: ArithmeticWell | None = None   # CHEAPER_ARITHMETIC: the cores are fed already (arithmetic_left)
    then_joint_ratio: float | None = None   # the Next's fix and `then` made together, replayed (whatif.joint_ratio)
    rework: Rework | None = None   # re-done work in the op table that leads the Next (triage.rework_first)



# --- the next experiment -----------------------------------------------------------

# The Next kinds a rank waiting for its peers is given as its own fix beside the straggler: changes in its own code
# with a replayed prediction (never faster kernels, which the straggler's waste rules out).
OWN_FIX_KINDS = frozenset({Experiment.CUT_LAUNCHES, Experiment.MOVE_HOST_WORK, Experiment.REMOVE_SYNCS,
                           Experiment.OVERLAP_COPIES, Experiment.FUSE_OPTIMIZER, Experiment.FUSE,
                           Experiment.COMPILE_ONCE, Experiment.TURN_KNOB})


def choose_next(devs, by_cause: dict[Cause, int], span_ns: int, busy_ns: int, idle_ns: int, v: RegimeVerdict,
                roof: Roofline, levers: whatif.Levers | None = None,
                choices: tuple[LeverChoice, ...] = (), fw: framework_mod.Framework | None = None,
                capture: GraphCapture | None = None, health: Health | None = None,
                collectives: bool = True, steps: Steps | None = None, dry: DryQueue | None = None,
                loader_start_ns: int = 0, tail_ns: int = 0, steady_read: bool = False,
                decode: decode_mod.DecodeSteps | None = None) -> NextExperiment:
    """The one experiment that would help most, as a fix the user can make.

    Warm-up first when one-time set-up holds a quarter of the span (the steady state never pays it), or
    profile the replays when a CUDA-graph capture is what the profile holds. A communication-bound span's
    experiment is about its collectives (communication_next). Then, among the fixes the trace calls for
    (a lever acting on something here; an idle lever only when its cause holds a tenth of the idle), the
    one the replay predicts saves most; faster kernels (kernels_2x) are headroom, said beside it when they
    would buy more, never the fix. The dominant cause's own lever is named beside a fix that beats it.
    Would waste the week: the lever that acts on something here and predicts least. Without a fix worth
    naming: the idle cause, then the regime.
    """
    if not devs:
        on_cpu = health is not None and health.has(HealthProblem.WORKLOAD_ON_CPU)
        return NextExperiment(Experiment.MOVE_TO_GPU if on_cpu else Experiment.CAPTURE_ON_GPU, None, 0.0)
    warm = 0.0 if steady_read else recurring.warmup_share(devs, span_ns)
    by_name = {c.lever: c for c in choices}
    warm_priced = next((c for c in choices if LEVERS[c.lever].experiment is Experiment.WARM_UP and c.baseline_ns), None)
    cold_share = max(warm, warm_priced.saving_ns / warm_priced.baseline_ns if warm_priced is not None else 0.0)
    if not steady_read and cold_share >= WARMUP_IS_THE_LEVER \
            and steady_state_readable(choices, busy_ns, span_ns, warm, cold_share):
        # the set-up is a caveat there, not the experiment: the work without it still shows its bound, and a knob
        # on it (heldout-user15 switch_moe_8k: 43% of the span cold start, the rest 91% busy in fp32 SGEMMs on an
        # A100, TF32 -40%, was told to warm up and profile again, which speeds up nothing)
        steady = tuple(c for c in choices if LEVERS[c.lever].experiment is not Experiment.WARM_UP)
        return choose_next(devs, by_cause, span_ns, busy_ns, idle_ns, v, roof, levers, steady, fw, capture, health,
                           collectives=collectives, steps=steps, dry=dry, loader_start_ns=loader_start_ns,
                           tail_ns=tail_ns, steady_read=True)
    if warm >= WARMUP_IS_THE_LEVER:
        # its prediction, where its replay finds the set-up to take out
        lever = next((c for c in choices if LEVERS[c.lever].experiment is Experiment.WARM_UP), None)
        lever = priced_by_setup_idle(lever if lever is not None and lever.assumption.count > 0 else None, devs)
        loop = _steady_loop_fix(steps, choices, by_cause, idle_ns)
        # where the steps after the cold start idle LOOP_IDLES_TOO of each, their gaps recur: the waste is a lever,
        # not "what this profile shows"
        waste = weeks_waste(choices, loop or lever, _replays_graphs(devs)) if _loop_gaps_recur(steps) else None
        return NextExperiment(Experiment.WARM_UP, None, warm, construct=Construct.SETUP, lever=lever, then=loop,
                              waste=waste)
    if capture is not None and capture.is_the_profile:   # a graph capture is set-up too: profile the replays
        return NextExperiment(Experiment.PROFILE_REPLAYS, None, capture.share)
    comm = communication_next(v, span_ns, choices) if collectives else None
    if comm is not None and comm.kind is Experiment.FIND_STRAGGLER:
        # the peers set the pace, but this rank's own timeline has its fix: said beside, the straggler first
        own = choose_next(devs, by_cause, span_ns, busy_ns, idle_ns, v, roof, levers, choices, fw, capture, health,
                          collectives=False, steps=steps, dry=dry, loader_start_ns=loader_start_ns, tail_ns=tail_ns)
        return dataclasses.replace(comm, own_fix=own if own.lever is not None and own.kind in OWN_FIX_KINDS else None)
    if comm is not None:
        return comm
    dom = dominant_cause(by_cause, idle_ns)
    launch_bound = dom is Cause.LAUNCH_OVERHEAD and v.regime is Regime.OVERHEAD   # (fusion is no week's waste there)
    cold = cold_causes(steps)
    warm_lever = next((c for c in choices if LEVERS[c.lever].experiment is Experiment.WARM_UP
                       and calls_for(c, by_cause, idle_ns, tail_ns)
                       and loader_start_ns < loader_start.START_HOLDS * c.saving_ns), None)
    if dom in cold and cold[dom].first_ns >= IDLE_LEVER_FLOOR * span_ns and warm_lever is None:
        return NextExperiment(Experiment.WARM_UP, None, cold[dom].first_ns / span_ns, construct=Construct.SETUP,
                              cold=cold[dom])
    if levers is not None and choices:
        # (a warm-up that mostly takes out a DataLoader's workers starting is no fix: each epoch starts them again;
        # no launch cut where the queue ran dry in too little of the span to fill: triage.launch_queue)
        full = dry is not None and dry.fills_little
        fixes = [c for c in choices if (c is warm_lever or LEVERS[c.lever].experiment is not Experiment.WARM_UP)
                 and calls_for(c, by_cause, idle_ns, tail_ns) and LEVERS[c.lever].cause not in cold
                 and not (full and LEVERS[c.lever].experiment is None
                          and LEVERS[c.lever].cause is Cause.LAUNCH_OVERHEAD)]
        # a check per layer read on the host, a distribution's argument check, or a round trip through the host for a
        # reduction or another op, splits the step: no CUDA graph replays it as one until they are off
        graphs_blocked = any(blocks_graphs(c.lever, c.assumption) for c in choices)
        if graphs_blocked:
            fixes = [c for c in fixes if c.lever != CUDA_GRAPHS]
        best = fixes[0] if fixes and fixes[0].saving_ns >= LEVER_FLOOR * fixes[0].baseline_ns else None
        head = by_name.get(HEADROOM)
        if best is not None and head is not None and best.saving_ns < CLOSE_CALL * best.baseline_ns \
                and head.saving_ns >= 2 * best.saving_ns:
            best = None      # a fix within the replay's error of nothing, beside kernel time that is the span
        dom_share = by_cause.get(dom, 0) / span_ns if dom is not None and span_ns else 0.0
        if best is not None and LEVERS[best.lever].knob is not None and best.saving_ns < CLOSE_CALL * best.baseline_ns \
                and dom_share >= KNOB_BESIDE_IDLE * best.saving_ns / best.baseline_ns:
            best = None      # a knob within the replay's error of nothing, beside an idle cause that holds the span
        runner_up = None
        if best is not None:
            # within the replay's error, the smaller change to the user's code (a call or a flag before a restructure)
            close = [c for c in fixes if best.saving_ns - c.saving_ns < CLOSE_CALL * best.baseline_ns
                     and c.saving_ns >= LEVER_FLOOR * c.baseline_ns]
            # ... and of two changes that tie (within TIE of the span), the one on the Idle line's own dominant cause
            # (a public RTX 3080 MLP at batch 16: host work -42.1% and CUDA graphs -41.7%, launch overhead the
            # dominant cause); fixes/sleep_ahead's host work at -9% still goes before CUDA graphs' -4%
            def tie_group(c: LeverChoice) -> int:
                ties = best.saving_ns - c.saving_ns < TIE * best.baseline_ns
                return (0 if LEVERS[c.lever].cause is dom else 1) if ties else 2

            pick = min(close, key=lambda c: (LEVERS[c.lever].effort, tie_group(c), -c.saving_ns))
            if pick.lever != best.lever:
                # (beside a warm-up, a lever that prices the same cold start's stretches is no alternative: heldout-
                # user6 rtx4090d_resnet_compiled's host work was all in its first step)
                best, runner_up = pick, None if LEVERS[pick.lever].experiment is Experiment.WARM_UP else best
        then = beside = None
        if best is not None and LEVERS[best.lever].effort >= REWRITE:
            # a knob in hand (a one-line change the trace shows applies, with its prediction) goes before a large
            # rewrite that saves up to KNOB_BEFORE_REWRITE times as much, the rewrite following as "then"; beside one
            # that saves more, the knob is said as the line to turn first
            knob = next((c for c in fixes if LEVERS[c.lever].knob is not None
                         and c.saving_ns >= LEVER_FLOOR * c.baseline_ns), None)
            # beside it, not before it: on the H200's adamw_foreach_off pair the graphs measured 0.21 of the span,
            # fused=True 0.46
            in_hand = next((c for c in fixes if LEVERS[c.lever].one_line_for(c.assumption)
                            and c.saving_ns >= LEVER_FLOOR * c.baseline_ns), None)
            # a knob on an idle cause that is not the dominant one gives way to the rewrite on the dominant cause
            # that saves more: the Next follows its own Idle line (the RTX 3080 MLP at batch 16 was told
            # num_workers=4 for -17% beside launch overhead, its dominant cause, that CUDA graphs price at -42%)
            off_cause = knob is not None and _off_cause(LEVERS[knob.lever].cause, dom) \
                and LEVERS[best.lever].cause is dom and best.saving_ns > OFF_CAUSE_KNOB_GIVES_WAY * knob.saving_ns
            if knob is not None and not off_cause and KNOB_BEFORE_REWRITE * knob.saving_ns >= best.saving_ns:
                best, then, runner_up = knob, best, None
            elif in_hand is not None:
                beside = in_hand
        gone = removal_first(best, fixes) if then is None else None
        if gone is not None:
            best, then, runner_up, beside = gone, best, None, None
        if best is not None and best.saving_ns < _mixed_precision_floor(v, roof, busy_ns, span_ns) * best.baseline_ns:
            best = then = beside = runner_up = None   # fp32 math on CUDA cores holds more than the fix can win
        if best is not None:
            spec = LEVERS[best.lever]
            cause = spec.cause
            kind = spec.experiment or EXPERIMENT_FOR_CAUSE[cause]
            gain = by_cause[cause] / span_ns if cause and span_ns else 0.0
            # (a warm-up takes out set-up that lies inside the dominant cause's idle: no lever beaten beside it)
            beaten = next((c for c in choices if LEVERS[c.lever].cause is dom and c.lever != best.lever
                           and not (graphs_blocked and c.lever == CUDA_GRAPHS)
                           and LEVERS[c.lever].experiment is None and c.saving_ns < best.saving_ns), None) \
                if dom is not None and dom is not cause and runner_up is None and then is None \
                and kind is not Experiment.WARM_UP and not _takes_the_host_work(best, dom, by_cause) else None
            if kind is Experiment.WARM_UP:
                then = _steady_loop_fix(steps, choices, by_cause, idle_ns)
                best = priced_by_setup_idle(best, devs)
            waste = weeks_waste(choices, then if kind is Experiment.WARM_UP and then is not None else best,
                                _replays_graphs(devs), launch_bound)   # (a warm-up: its steady gaps recur)
            return NextExperiment(kind, cause, gain, lever=best, waste=waste,
                                  headroom=head if head is not None and head.saving_ns > best.saving_ns else None,
                                  dominant=beaten, construct=_construct_of(fw, cause), close_call=runner_up,
                                  then=then, knob_beside=beside)
        head = by_name.get(HEADROOM)
        # (on a span the device idles most of, an idle cause holding more of it than faster kernels would win is the
        # experiment: hta-a100-80gb-rank0, 66% idle, 32% of the span waiting on copies, was told "move fewer bytes"
        # once its replay priced faster kernels at 8%, where the unchanged replay had missed the span by 6%)
        idle_first = v.regime is Regime.OVERHEAD and dom is not None and dom not in cold and dom is not Cause.OTHER \
            and head is not None and by_cause.get(dom, 0) > head.saving_ns \
            and not (dom is Cause.LAUNCH_OVERHEAD and dry is not None and dry.fills_little)
        if head is not None and head.saving_ns >= LEVER_FLOOR * head.baseline_ns and not idle_first:
            kind = (_unknown_bound_next(v, roof, decode) if v.regime is Regime.UNKNOWN else  # how, unmeasured
                    Experiment.BETTER_KERNELS if v.regime is Regime.LATENCY else    # ... under neither roof
                    Experiment.CHEAPER_ARITHMETIC if v.regime is Regime.COMPUTE else Experiment.FEWER_BYTES)
            # faster kernels are a bound, not a change in hand: said as the bound beside the regime's advice, never
            # as the Next's saving (fresh4 mlp_gemm_roof: "fp8 ... predicted −27%" on GEMMs at 63% of the bf16 peak)
            # (fewer bytes names fusion as its way: fusion is not also the week's waste beside it)
            rest = tuple(c for c in choices if kind is not Experiment.FEWER_BYTES or LEVERS[c.lever].experiment
                         is not Experiment.FUSE)
            waste = weeks_waste(rest, head, _replays_graphs(devs), launch_bound)
            return NextExperiment(kind, None, 0.0, headroom=head, waste=waste)
    gain = by_cause[dom] / span_ns if dom is not None and span_ns else 0.0
    if dom is not None and dom not in cold \
            and not (dom is Cause.LAUNCH_OVERHEAD and dry is not None and dry.fills_little) and (
            v.regime is Regime.OVERHEAD or (dom is not Cause.OTHER and gain >= IDLE_LEVER_FLOOR
            and gain > _kernel_headroom(v, roof, busy_ns, span_ns))):
        return NextExperiment(EXPERIMENT_FOR_CAUSE[dom], dom, gain, construct=_construct_of(fw, dom),
                              waste=waste_beside_words(dom, choices, _replays_graphs(devs), LEVER_FLOOR, launch_bound))
    if v.regime is Regime.UNKNOWN:   # no lever rests on a bound nobody measured
        return NextExperiment(_unknown_bound_next(v, roof, decode), None, v.uncosted_share)
    if v.regime is Regime.LATENCY:   # far below both roofs: neither fewer bytes nor cheaper arithmetic
        return NextExperiment(Experiment.BETTER_KERNELS, None, 0.0)
    if v.regime is Regime.COMPUTE:
        return NextExperiment(Experiment.CHEAPER_ARITHMETIC, None, 0.0)
    return NextExperiment(Experiment.FEWER_BYTES, None, 0.0)


# The host side of a step: its own work and the pageable copies that hold it (a batch's X.to(device) blocks the host
# like its Python does). A knob on one of them is not off the cause where the other dominates: the RTX 3080 loop
# whose 2.1 ms of host time a step follows its pageable input copy is fixed by the copy's knob.
HOST_SIDE = frozenset({Cause.HOST_WORK, Cause.DATA_TRANSFER})


def _off_cause(cause: Cause | None, dom: Cause | None) -> bool:
    """A knob's idle cause is another than the Idle line's dominant one (the host side counts as one)."""
    return cause is not None and cause is not dom and not (cause in HOST_SIDE and dom in HOST_SIDE)


def _takes_the_host_work(best: LeverChoice, dom: Cause, by_cause: dict[Cause, int]) -> bool:
    """The Next's fix takes away host time (its assumption's host_ns) of half the host-work idle or more: the host-work
    lever said beside it would price that same host work as if it could run beside the GPU, which needs its result
    (square_randn: torch.randn(..., device="cuda") removes 1.31 s of CPU randn that the copies upload; beside it
    "taking host work off the critical path predicts only −90%", where overlapping the randn with the ~72 ms of GPU
    work it feeds saves about a tenth)."""
    host = getattr(best.assumption, "host_ns", 0) if best.assumption is not None else 0
    return dom is Cause.HOST_WORK and host > 0 and 2 * host >= by_cause.get(Cause.HOST_WORK, 0)


def _steady_idle_share(steps: Steps | None) -> float:
    """The median steady step's idle over its wall (0 without steps)."""
    s = steps.summary if steps is not None else None
    return s.median_idle_ns / s.median_ns if s is not None and s.median_ns > 0 else 0.0


def _loop_gaps_recur(steps: Steps | None) -> bool:
    """The median steady step idles LOOP_IDLES_TOO of its wall or more: the loop's own gaps recur after a warm-up."""
    return _steady_idle_share(steps) >= LOOP_IDLES_TOO


def _steady_steps_idle(steps: Steps | None) -> bool:
    """The median step idles more than roofline.OVERHEAD_IDLE_SHARE of its wall: the loop is idle-bound itself."""
    return _steady_idle_share(steps) > roof_mod.OVERHEAD_IDLE_SHARE


def _steady_loop_fix(steps: Steps | None, choices: tuple[LeverChoice, ...], by_cause: dict[Cause, int],
                     idle_ns: int) -> LeverChoice | None:
    """Beside a warm-up, the loop's own fix where the steps after the cold start still idle most of each (the median
    step's idle above roofline.OVERHEAD_IDLE_SHARE): the lever for the cause that holds most of those steps' idle,
    where the replay prices it at LEVER_FLOOR or more. A warmed-up profile would show that loop (heldout-user6
    rtx4090d_graphbreaks: "warm up first", then "would waste the week: optimising what this profile shows: its
    biggest gaps do not recur" beside a Regime line whose steady step idles 90%, CUDA graphs priced at −29%)."""
    if not _steady_steps_idle(steps):
        return None
    loop = steps_mod.steady(steps.steps)
    loop = loop[1:] if len(loop) > 1 else loop          # the first of them may still pay the cold start
    held = {c: sum(st.idle_by_cause_ns.get(c, 0) for st in loop) for c in CAUSES}
    cause = max(held, key=held.get)
    fixes = [c for c in choices if LEVERS[c.lever].cause is cause and LEVERS[c.lever].experiment is None
             and calls_for(c, by_cause, idle_ns) and c.saving_ns >= LEVER_FLOOR * c.baseline_ns]
    return max(fixes, key=lambda c: c.saving_ns) if held[cause] > 0 and fixes else None


def calls_for(c: LeverChoice, by_cause: dict[Cause, int], idle_ns: int, tail_ns: int = 0) -> bool:
    """A fix the trace calls for: not the headroom check, acting on something here, its cause holding the
    share of the idle its spec asks for (no cutting of launches where launch overhead holds under a tenth of
    the idle), no warm-up for set-up under a quarter of the span."""
    spec = LEVERS[c.lever]
    if spec.headroom or (c.assumption is not None and c.assumption.count == 0):
        return False
    if spec.experiment is Experiment.WARM_UP:   # a little set-up is a caveat, not the experiment
        return c.saving_ns >= WARMUP_IS_THE_LEVER * c.baseline_ns
    if priced_beyond_the_idle(c, spec.cause, idle_ns, tail_ns):
        return False
    return not spec.idle_floor or by_cause.get(spec.cause, 0) >= spec.idle_floor * idle_ns


def priced_beyond_the_idle(c: LeverChoice, cause: Cause | None, idle_ns: int, tail_ns: int) -> bool:
    """A fix on the host's side of the loop (its host work, its syncs) leaves every kernel as it is: inside the GPU span
    it saves no more than the GPU idles; more comes from the host's time outside the span. Where the host's tail after
    the last GPU activity could hold all of that excess, the replay's host ran ahead into the tail, which is in no step
    (heldout-user9 vllm_h100: remove_syncs -11%, 40.3 ms, on an 89%-busy decode whose whole idle was 28.6 ms, beside
    97 ms of host after the profiler's last kernel). A first iteration's host work before its first launch is priced
    (traces/fixes host_numpy: 24.8 ms predicted beside 21.8 ms of idle and a 0.1 ms tail, -88% measured)."""
    excess = c.saving_ns - IDLE_SLACK * idle_ns - LEVER_FLOOR_NS
    return cause in (Cause.HOST_WORK, Cause.SYNCHRONIZATION) and excess > 0 and tail_ns >= excess


def host_tail_ns(trace: Trace, devs) -> int:
    """The traced host time after the last GPU activity (0 without GPU activity)."""
    if not devs or not len(trace.ev):
        return 0
    return max(int(trace.ev.end.max()) - max(d.span_end for d in devs), 0)


def _replays_graphs(devs) -> bool:
    """The trace launches CUDA/HIP graphs already (graph launches among its launch-gap evidence)."""
    ev = recurring.evidence_of(devs).get(Cause.LAUNCH_OVERHEAD)
    return bool(getattr(ev, "graph_launches", 0))


def _construct_of(fw: framework_mod.Framework | None, cause: Cause | None) -> Construct | None:
    """The construct that holds most of a cause's idle (set-up and the user's own code aside), when it holds most."""
    if fw is None or cause is None:
        return None
    total = sum(x.by_cause_ns.get(cause, 0) for x in fw.constructs)
    top = max((x for x in fw.constructs if x.construct is not Construct.USER), default=None,
              key=lambda x: x.by_cause_ns.get(cause, 0))
    if top is None or not total or top.by_cause_ns.get(cause, 0) < 0.5 * total:
        return None
    return top.construct
def communication_next(v: RegimeVerdict, span_ns: int, choices: tuple[LeverChoice, ...]) -> NextExperiment | None:
    """Communication-bound: the straggler when the collectives mostly wait for a peer, else overlapping them
    with compute (the overlap_comm lever's prediction beside it); None for any other regime."""
    c = v.communication
    if v.regime is not Regime.COMMUNICATION or c is None:
        return None
    overlap = next((x for x in choices if LEVERS[x.lever].experiment is Experiment.OVERLAP_COMM), None)
    if c.mostly_waiting:
        return NextExperiment(Experiment.FIND_STRAGGLER, None, c.wait_ns / span_ns if span_ns else 0.0, waste=overlap)
    waste = choices[-1] if choices and choices[-1] is not overlap else None
    return NextExperiment(Experiment.OVERLAP_COMM, None, c.exposed_ns / span_ns if span_ns else 0.0,
                          lever=overlap, waste=waste)


def weigh_levers(levers: whatif.Levers) -> list[LeverChoice]:
    """Every lever's prediction, largest saving first. remove_syncs names the op whose own syncs
    hold at least half of its saving ("remove the syncs in aten::item")."""
    out = []
    for p in levers.all.levers:
        if LEVERS[p.lever].weighed_only_if_found and p.assumption.count == 0:
            continue   # (overlap_comm on a trace with no collective to move)
        q = levers.sync_op_prediction
        only = levers.sync_op if LEVERS[p.lever].takes_only and q is not None and q.saving_ns >= 0.5 * p.saving_ns \
            else None
        out.append(LeverChoice(p.lever, only, levers.all.baseline_ns, p.predicted_ns, p.assumption))
    return out
