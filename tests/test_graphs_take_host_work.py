"""A step's CUDA graphs and the host-work lever are no competing levers: a replay runs no host code between the kernels
it captures, so where the Next's graphs save at least what taking the host work away does, the Next says the graphs
take it out with the launches (heldout-user19 h100_mlp_train read "host work holds more of the idle, but taking host
work off the critical path predicts only −24%" beside the graphs' −37%, priced as if the loop's Python survived)."""
from types import SimpleNamespace

from tracetriage.analyzers.triage.lever_choice import LeverChoice
from tracetriage.analyzers.voice.dominant import dominant_clause


def _next(lever: str, saves_ms: float, host_saves_ms: float):
    span = 21_700_000
    return SimpleNamespace(lever=LeverChoice(lever, None, span, span - int(saves_ms * 1e6)),
                           dominant=LeverChoice("no_host_work", None, span, span - int(host_saves_ms * 1e6)))


def test_graphs_that_save_more_take_the_host_work_out_with_the_launches():
    said = dominant_clause(_next("cuda_graphs", 12.6, 5.1))
    assert "take it out with the launches" in said and "alone: −24%" in said
    assert "but" not in said and "only" not in said


def test_another_lever_that_beats_host_work_still_says_it_predicts_only():
    assert dominant_clause(_next("fuse", 12.6, 5.1)).endswith("but taking host work off the critical path "
                                                              "predicts only −24%")
