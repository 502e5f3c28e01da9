"""The Next and the week's waste chosen by what each fix saves without the profiler, where the profiler's cost is large.

What any trace of it shows: torch.profiler records every op and runtime call, a few µs of host time each
(tracetriage.analyzers.whatif.unprofiled prices it per event). On a launch- or host-bound loop that time is on the
critical path, so the traced span is longer than the program's: a fix that removes host work removes its recording
too and saves more of the traced span than of the real one, while a fix on kernels (tf32, bf16) saves more of the
real, shorter span than of the traced one. Where the what-if's replay without the profiler says the traced work takes
SLOWDOWN_REWEIGHED times as long as without it or more, each fix the report weighs is replayed without the profiler
too (a second replay per fix, at most WEIGHED_AT_MOST of them, best traced saving first), and the Next and the week's
waste are chosen on those savings, by the same rules (choose_next) as on the traced ones. The figures said stay the
traced ones, with each one's saving without the profiler beside it where the two differ by RATIO_DIFFERS or more
(triage.overhead), the Next's wherever it is another fix than the traced savings would pick, and both where the
traced figures alone would say the waste saves more than the Next.

Where no fix holds up without the profiler, the traced choice stands, and the healthy-step rule
(tracetriage.analyzers.triage.healthy) says so with its figures; so does a traced Next that names no priced fix (a
fix priced only without the profiler would be said as "predicted 0%" of the traced span).

What would make it choose wrongly: a per-event cost model that over-states the profiler's cost on this host (host
fixes then read too small without it: its error on measured pairs is in whatif/unprofiled.py's notes). A trace the
profiler barely slows keeps the traced order: the two orders agree there within the replay's error.
"""
from __future__ import annotations

import dataclasses

from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.triage.overhead import RATIO_DIFFERS
from tracetriage.analyzers.whatif.predict import UNPROFILED_BEST

SLOWDOWN_REWEIGHED = 1.1   # the profiled span predicted this much longer than the unprofiled one, or more
# fixes replayed without the profiler (best traced saving first): the levers' child replays them beside the traced
# replay (whatif.predict.UNPROFILED_BEST)
WEIGHED_AT_MOST = UNPROFILED_BEST
# Another rewrite than the traced Next is picked only where it saves this much more of the span without the profiler:
# each figure is a replay checked to 0.05 (next_experiment.CLOSE_CALL), and the profiler's per-event cost under both
# is a fitted estimate (whatif/unprofiled.py); a knob placed before the traced Next needs the knob-before-rewrite
# rule to hold by the replay's error (_knob_first_holds)
UNPROFILED_MARGIN = 0.10
# a warm-up is priced by its set-up's idle, a graph capture's profile and a communication-bound span's Next by no
# host fix: the profiler's cost on the host does not order them
NOT_REWEIGHED = frozenset({Experiment.WARM_UP, Experiment.PROFILE_REPLAYS, Experiment.OVERLAP_COMM,
                           Experiment.FIND_STRAGGLER})
_FIELDS = ("lever", "waste", "headroom", "dominant", "close_call", "then", "knob_beside")


def slowdown(levers) -> float:
    """The traced work's replay over its replay without the profiler's per-event cost (1.0 where not replayed)."""
    run = getattr(levers, "unprofiled", None)
    if run is None or not run.unprofiled_ns:
        return 1.0
    return run.replay_ns / run.unprofiled_ns


def reweighed(choices: tuple, levers, trace) -> tuple | None:
    """The choices with each one's predicted span the one it would have without the profiler (scaled to the traced
    span so the report's floors read the same way), in that order; None where the profiler's cost is too small to
    change an order or a ratio cannot be replayed."""
    if not choices or slowdown(levers) < SLOWDOWN_REWEIGHED:
        return None
    out = []
    for i, c in enumerate(choices):
        if i >= WEIGHED_AT_MOST:
            break     # (the rest save least under the profiler: left out of the choice rather than replayed)
        # a lever that changed nothing traced changes nothing without the profiler either: no replay
        r = 1.0 if c.saving_ns == 0 else levers.unprofiled_ratio(trace, c.lever, c.only)
        if r is None:
            return None
        if c.saving_ns > 0:
            # the profiler only adds host time: a fix that saves under it saves without it too, and a replay that says
            # otherwise kept a cost measured under the profiler (fuse's compiled call, whose dispatch was timed under
            # it): read as no saving
            r = min(r, 1.0)
        out.append(dataclasses.replace(c, predicted_ns=int(round(r * c.baseline_ns)), unprofiled_ratio=r))
    return tuple(sorted(out, key=lambda c: c.predicted_ns))


def by_unprofiled(nx, choose, choices: tuple, levers, trace, floor: float):
    """`nx` (chosen by `choose` on the traced `choices`), or the Next `choose` makes of the savings without the
    profiler where the profiler's cost is large and a fix holds up without it (module docstring). Its levers are the
    traced choices again, each with its unprofiled ratio, said beside its traced one where the choices differ.
    `floor`: the share of the span under which no lever is named (the healthy-step rule's, too)."""
    if nx.kind in NOT_REWEIGHED or nx.lever is None:
        return nx      # (no fix priced on the traced span: a Next "predicted 0%" beside its unprofiled figure misreads)
    bare = reweighed(choices, levers, trace)
    if bare is None:
        return nx
    ratios = {(c.lever, c.only): c.unprofiled_ratio for c in bare}
    saved = {k: 1 - r for k, r in ratios.items()}
    if saved.get(_key(nx.lever), 1.0) < floor:
        return nx      # (the traced Next holds up to nothing without the profiler: the healthy-step rule's case)
    nu = choose(bare)
    if nu.lever is None or nu.kind in NOT_REWEIGHED:
        return nx
    was, now = _key(nx.lever), _key(nu.lever)
    if now != was and _key(nu.then) != was and was in saved and saved[now] - saved[was] < UNPROFILED_MARGIN:
        return nx      # (another rewrite, better only within the two replays' error: the traced choice stands)
    if now != was and _key(nu.then) == was and was in saved and not _knob_first_holds(saved[now], saved[was]):
        return nx      # (a knob put before the traced Next by a hair: the traced order stands)
    traced = {(c.lever, c.only): c for c in choices}
    out = _traced(nu, traced, ratios)
    w = _key(nx.waste)
    if w is not None and out.waste is not None and w != now and w in saved and _key(out.waste) in saved \
            and saved[_key(out.waste)] > saved[w] - RATIO_DIFFERS and saved[w] <= saved[now]:
        # the traced waste saves about as little without the profiler too: kept, not swapped for a near tie
        out = dataclasses.replace(out, waste=dataclasses.replace(traced[w], unprofiled_ratio=ratios[w]))
    out = _said_relations_hold(out)
    if now != was:
        # another fix than the traced figures would pick: its figure without the profiler is why, said beside
        out = dataclasses.replace(out, lever=dataclasses.replace(out.lever, unprofiled_ranked=True))
    if out.waste is not None and out.waste.saving_ns > out.lever.saving_ns:
        # the traced figures alone would say the waste saves more than the Next: both said without the profiler too
        out = dataclasses.replace(out, lever=dataclasses.replace(out.lever, unprofiled_ranked=True),
                                  waste=dataclasses.replace(out.waste, unprofiled_ranked=True))
    return out


def _key(c) -> tuple | None:
    return None if c is None else (c.lever, c.only)


def _traced(nx, traced: dict, ratios: dict):
    """The NextExperiment with each lever the traced choice of the same fix, carrying its unprofiled ratio."""
    swap = {}
    for f in _FIELDS:
        c = getattr(nx, f)
        if c is not None and (c.lever, c.only) in traced:
            swap[f] = dataclasses.replace(traced[c.lever, c.only], unprofiled_ratio=ratios.get((c.lever, c.only)))
    return dataclasses.replace(nx, **swap)


def _said_relations_hold(nx):
    """The fixes said beside the Next by how they compare with it (about as much, predicts only, headroom beyond it)
    kept only where the traced figures they are said with compare so too: a relation found without the profiler,
    said with the traced figures, would read false."""
    from tracetriage.analyzers.triage.next_experiment import CLOSE_CALL  # (report imports this module)

    lv, swap = nx.lever, {}
    if nx.close_call is not None and abs(nx.close_call.saving_ns - lv.saving_ns) >= CLOSE_CALL * lv.baseline_ns:
        swap["close_call"] = None
    if nx.dominant is not None and nx.dominant.saving_ns >= lv.saving_ns:
        swap["dominant"] = None
    if nx.headroom is not None and nx.headroom.saving_ns <= lv.saving_ns:
        swap["headroom"] = None
    return dataclasses.replace(nx, **swap) if swap else nx


def _knob_first_holds(knob: float, rewrite: float) -> bool:
    """A knob goes before a rewrite that saves up to KNOB_BEFORE_REWRITE times as much (lever_choice); without the
    profiler it does so by more than the replay's error (CLOSE_CALL of the span), or the traced order stands: a
    ResNet-18 at batch 1 (an H200) prices channels_last -28% and CUDA graphs -80% without the profiler (measured -80%),
    3 x 28 over 80 by a point."""
    from tracetriage.analyzers.triage.next_experiment import CLOSE_CALL, KNOB_BEFORE_REWRITE  # (report imports us)

    return KNOB_BEFORE_REWRITE * knob - rewrite >= CLOSE_CALL


def with_unprofiled(nx, levers, trace):
    """The Next lever's ratio without the profiler beside its profiled one (one more replay)."""
    if nx.lever is None or levers is None or getattr(nx.lever.assumption, "idle_ns", 0):
        return nx   # (a warm-up priced by its set-up idle: no replay to run unprofiled)
    r = levers.unprofiled_ratio(trace, nx.lever.lever, nx.lever.only)
    return dataclasses.replace(nx, lever=dataclasses.replace(nx.lever, unprofiled_ratio=r))
