"""Where the profiler slows the traced work a lot, the Next and the week's waste are the fixes that save most and least
without it (triage.unprofiled_choice): a fix that removes host work saves more of the traced span than of the real
one. Where the profiler barely slows the trace, or the traced Next saves nothing without it (the healthy-step rule's
case), the traced choice stands."""
import dataclasses
from pathlib import Path

from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.output.claims_said import Said
from tracetriage.analyzers.triage import unprofiled_choice
from tracetriage.analyzers.triage.lever_choice import LEVER_FLOOR, LeverChoice
from tracetriage.analyzers.triage.next_experiment import NextExperiment, weigh_levers
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.triage.unprofiled_choice import UNPROFILED_MARGIN, by_unprofiled, reweighed

TRACES = Path(__file__).resolve().parent.parent / "traces"
SPAN = 100_000_000


@dataclasses.dataclass
class Run:
    replay_ns: int
    unprofiled_ns: int


@dataclasses.dataclass
class Unprofiled:
    """What the choice asks of the what-if levers: the unprofiled run's spans and each lever's ratio without it."""
    ratios: dict
    slowdown: float = 1.3

    @property
    def unprofiled(self) -> Run:
        return Run(int(SPAN * self.slowdown), SPAN)

    def unprofiled_ratio(self, trace, lever, only=None):
        return self.ratios[lever]


def _choice(lever: str, saving: float) -> LeverChoice:
    return LeverChoice(lever, None, SPAN, int(SPAN * (1 - saving)))


def _most_and_least(cs: tuple) -> NextExperiment:
    """The choosing rule at its core: the fix that saves most is the Next, the one that saves least the waste."""
    return NextExperiment(Experiment.TURN_KNOB, None, 0.0, lever=cs[0], waste=cs[-1])


CHOICES = (_choice("cuda_graphs", 0.30), _choice("fuse", 0.05), _choice("remove_syncs", 0.03))


def test_a_fix_that_saves_most_only_under_the_profiler_gives_way_to_the_one_that_saves_most_without_it():
    levers = Unprofiled({"cuda_graphs": 0.90, "fuse": 0.97, "remove_syncs": 0.75})
    nx = by_unprofiled(_most_and_least(CHOICES), _most_and_least, CHOICES, levers, None, LEVER_FLOOR)
    assert nx.lever.lever == "remove_syncs" and nx.lever.unprofiled_ratio == 0.75
    assert nx.lever.saving_ns == 3_000_000          # the traced figure is still the one said first ...
    assert nx.lever.unprofiled_differs              # ... with its saving without the profiler beside it
    assert nx.waste.lever == "fuse" and nx.waste.unprofiled_ratio == 0.97


def test_the_traced_choice_stands_where_the_profiler_barely_slows_the_trace():
    levers = Unprofiled({"cuda_graphs": 0.90, "fuse": 0.97, "remove_syncs": 0.75}, slowdown=1.05)
    nx = _most_and_least(CHOICES)
    assert reweighed(CHOICES, levers, None) is None
    assert by_unprofiled(nx, _most_and_least, CHOICES, levers, None, LEVER_FLOOR) is nx


def test_a_traced_next_that_saves_nothing_without_the_profiler_is_left_to_the_healthy_step_rule():
    levers = Unprofiled({"cuda_graphs": 0.99, "fuse": 0.97, "remove_syncs": 0.95})
    nx = _most_and_least(CHOICES)
    assert by_unprofiled(nx, _most_and_least, CHOICES, levers, None, LEVER_FLOOR) is nx


def test_another_rewrite_better_only_within_the_replays_error_does_not_replace_the_next():
    close = 1 - (1 - 0.80) - UNPROFILED_MARGIN / 2    # saves half the margin more than the traced Next's 20%
    levers = Unprofiled({"cuda_graphs": 0.80, "fuse": close, "remove_syncs": 0.99})
    nx = _most_and_least(CHOICES)
    assert by_unprofiled(nx, _most_and_least, CHOICES, levers, None, LEVER_FLOOR) is nx


def test_a_fix_that_saves_under_the_profiler_is_not_read_as_slower_without_it():
    # fuse's compiled call is charged the dispatch an H200 measured under the profiler: its replay without the
    # profiler can come out slower than the unchanged one, which no removal of the profiler's cost can make so
    levers = Unprofiled({"cuda_graphs": 0.80, "fuse": 1.09, "remove_syncs": 0.99})
    bare = {c.lever: c for c in reweighed(CHOICES, levers, None)}
    assert bare["fuse"].unprofiled_ratio == 1.0 and bare["fuse"].saving_ns == 0


def _claims(**values) -> Said:
    return Said([{"key": k.replace("_", ".", 1), "value": v, "said": f"−{100 * v:.0f}%"} for k, v in values.items()])


def test_the_checker_orders_the_next_and_the_waste_by_their_savings_without_the_profiler_where_both_are_said():
    lines = ["", "", "", "", "Next: ..."]
    both = {"next_saving": 0.03, "waste_saving": 0.05, "next_unprofiled_saving": 0.25}
    assert claims.waste_saves_least(_claims(**both, waste_unprofiled_saving=0.03), lines) == []
    assert claims.waste_saves_least(_claims(**both, waste_unprofiled_saving=0.30), lines) != []
    assert claims.waste_saves_least(_claims(next_saving=0.03, waste_saving=0.05), lines) != []


def test_a_next_chosen_by_its_saving_without_the_profiler_is_not_said_to_save_nothing():
    assert claims.next_saves_something(_claims(next_saving=0.0, next_unprofiled_saving=0.05), "next") == []
    assert claims.next_saves_something(_claims(next_saving=0.0), "next") != []


def test_a_launch_bound_loop_whose_syncs_cost_more_without_the_profiler_names_that_saving():
    """control-sync-light (an H200, .item() after tiny work): under the profiler each launch costs the host so much
    that the GPU rarely waits in the syncs (−3% traced); without it the host runs ahead and waits in each."""
    trace = load(TRACES / "control-sync-light.json.gz")
    a = analyze_trace(trace)
    out = serialize.report(a)
    bare = reweighed(tuple(weigh_levers(a.levers)), a.levers, trace)
    assert bare is not None and unprofiled_choice.slowdown(a.levers) >= unprofiled_choice.SLOWDOWN_REWEIGHED
    nx = a.next_experiment.lever
    assert 1 - nx.unprofiled_ratio >= max(1 - c.unprofiled_ratio for c in bare) - UNPROFILED_MARGIN
    assert "; without the profiler" in out["lines"][4]
    assert claims.check(out) == []


def _knob_before_rewrite(cs: tuple) -> NextExperiment:
    """choose_next's knob-before-rewrite rule alone: channels_last first where it saves a third of the best or more."""
    best, knob = cs[0], next(c for c in cs if c.lever == "channels_last")
    if knob is not best and 3 * knob.saving_ns >= best.saving_ns:
        return NextExperiment(Experiment.TURN_KNOB, None, 0.0, lever=knob, then=best, waste=cs[-1])
    return NextExperiment(Experiment.CUT_LAUNCHES, None, 0.0, lever=best, waste=cs[-1])


KNOB_AND_GRAPHS = (_choice("cuda_graphs", 0.84), _choice("channels_last", 0.27), _choice("fuse", 0.0))


def test_a_knob_put_first_without_the_profiler_by_a_hair_leaves_the_traced_order():
    # a ResNet-18 at batch 1: 3 x 28% over CUDA graphs' 80% by a point, within the replay's error
    levers = Unprofiled({"cuda_graphs": 0.20, "channels_last": 0.72, "fuse": 1.0})
    nx = _knob_before_rewrite(KNOB_AND_GRAPHS)
    assert by_unprofiled(nx, _knob_before_rewrite, KNOB_AND_GRAPHS, levers, None, LEVER_FLOOR) is nx


def test_a_knob_that_holds_up_without_the_profiler_goes_before_the_rewrite():
    # the one-hot fp32 loss: cross-entropy's knob 11% against CUDA graphs' 19% without the profiler (3% vs 31% traced)
    levers = Unprofiled({"cuda_graphs": 0.81, "channels_last": 0.89, "fuse": 1.0})
    choices = (_choice("cuda_graphs", 0.31), _choice("channels_last", 0.03), _choice("fuse", 0.0))
    nx = by_unprofiled(_knob_before_rewrite(choices), _knob_before_rewrite, choices, levers, None, LEVER_FLOOR)
    assert nx.lever.lever == "channels_last" and nx.then.lever == "cuda_graphs" and nx.lever.unprofiled_differs
