"""Ten levers' predictions beside fixes really made: one before/after pair a lever (capture/pending_pairs2.py, on an
H100; traces/pending2: the before traces and truth.json, each variant timed in 5 unprofiled runs and profiled once).
A blind check: each lever was written from other workloads and none was changed after these pairs came back, so the
misses are said below in numbers, not fitted away. The after traces stay out of the repository (the GPU machine's
64 MiB working-tree limit); the clauses below were read from them."""
import json
from pathlib import Path

import numpy as np
import pytest

from sweep import sweep
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import (
    ACTIVATIONS_ON_GPU,
    CHANNELS_LAST,
    COMPUTE_ONCE,
    CROSS_ENTROPY,
    CUDA_GRAPHS,
    EMBEDDING_MAX_NORM,
    FREEZE_UNOPTIMIZED,
    LOGITS_TO_KEEP,
    MODULE_ROUND_TRIP,
    REDUCE_ON_GPU,
    SPARSE_EMBEDDING,
    WEIGHT_ONLY_INT8,
)

PENDING2 = Path(__file__).resolve().parent.parent / "traces" / "pending2"
TRUTH = {w["name"]: w for w in json.loads((PENDING2 / "truth.json").read_text())["workloads"]}
WIDEN = 0.05      # the same tolerance around the measured spread as tests/test_knobs.py
LEVER = {
    "mistral_decode_bf16_weights": WEIGHT_ONLY_INT8,
    "bert_linear_probe_unfrozen": FREEZE_UNOPTIMIZED,
    "convnext_activations_offloaded": ACTIVATIONS_ON_GPU,
    "gpt2_last_token_scorer_full_logits": LOGITS_TO_KEEP,
    "t5_summarize_reencodes_source": COMPUTE_ONCE,
    "neumf_dense_table_grads": SPARSE_EMBEDDING,
    "unet_onehot_pixel_loss": CROSS_ENTROPY,
    "distilbert_ner_embedding_max_norm": EMBEDDING_MAX_NORM,
    "resnet18_offloaded_between_requests": MODULE_ROUND_TRIP,
    "bart_greedy_host_argmax": REDUCE_ON_GPU,
}
# The report's Next on each before trace today: a pinned fact (a change to the Next rule shows here), not a claim
# that it is right. Three name another lever than the pair's: mistral's step is launch-paced (cuda_graphs beats the
# weights' bytes), distilbert's renorm is small beside its launches, and the U-Net's NCHW convolutions outweigh the
# one-hot loss. t5's names compute_once, a knob that removes work, before CUDA graphs (which named it while
# compute_once found nothing in its 3 runs a step).
NEXT_TODAY = {
    "mistral_decode_bf16_weights": CUDA_GRAPHS,
    "bert_linear_probe_unfrozen": FREEZE_UNOPTIMIZED,
    "convnext_activations_offloaded": ACTIVATIONS_ON_GPU,
    "gpt2_last_token_scorer_full_logits": LOGITS_TO_KEEP,
    "t5_summarize_reencodes_source": COMPUTE_ONCE,
    "neumf_dense_table_grads": SPARSE_EMBEDDING,
    "unet_onehot_pixel_loss": CHANNELS_LAST,
    "distilbert_ner_embedding_max_norm": CUDA_GRAPHS,
    "resnet18_offloaded_between_requests": MODULE_ROUND_TRIP,
    "bart_greedy_host_argmax": REDUCE_ON_GPU,
}
# Misses said rather than fitted away: predicted, measured median [p10, p90] (after/before, unprofiled), the profiled
# ratio, and what the after trace shows the replay leaves out (two profiled steps each side).
KNOWN_MISSES = {
    "convnext_activations_offloaded":
        "predicted 0.282 (0.349 before the hooks' host work was priced, 0.299 before the Python calls between "
        "consecutive hooks were), measured 0.149 [0.148, 0.150], profiled 0.150: the replay prices 70.5 ms of the "
        "83.5 ms of copies over the two steps and the pack and unpack hooks' ops around them, and keeps the kernels "
        "as they ran, but the depthwise convolutions' backward on activations brought back from the host ran ATen's "
        "conv_depthwise2d kernels (9.9 ms), cuDNN's after the fix (kernels 28.3 -> 17.1 ms)",
    "resnet18_offloaded_between_requests":
        "predicted 0.260 (0.224 unprofiled), measured 0.121 [0.119, 0.125], profiled 0.223: the replay now takes the "
        "walk to the host whole and each copying aten::to of the walk back down to a no-op (35 ms of host time over "
        "the two steps, 488 copies with the BatchNorm buffers'), leaving 6.1 ms a profiled step where the fix left "
        "5.3; the gap to the unprofiled ratio is the before's own: 27.1 ms a step unprofiled against 23.6 profiled "
        "(the pageable copies ran slower without the profiler), which no replay of the profiled trace sees",
}
# In the spread by the rule, yet not a hit: mistral's int8 "fix" made the step slower (speedup 0.48x, ratio 2.08).
# Its spread [0.170, 2.178] reaches down to 0.17 only because the before's first run was a cold 22.6 ms (the others
# 1.79-1.85 ms); the lever predicted a saving (0.953) where the user's int8 path did not pay: the int8 products'
# kernels did halve (kernels 3.17 -> 1.67 ms over the two steps, the Triton int8 GEMV 1.35 ms), but the step is
# host-paced and each Linear became a compiled region's host call (Torch-Compiled Region, Dynamo cache lookup: the
# step's outermost host ops 1.96 -> 4.17 ms a step), a cost the replay cannot see in a before trace: the lever's words
# now say the host work its price assumes away where the step is host-paced (the device busy 48% of the span here).
SLOWER_AFTER_THE_FIX = {"mistral_decode_bf16_weights"}


def measured_spread(w: dict) -> tuple[float, float]:
    """after/before over every pairing of the unprofiled runs: its p10 and p90."""
    r = sorted(a / b for a in w["after"]["runs_ms"] for b in w["before"]["runs_ms"])
    p10, p90 = np.quantile(r, [0.1, 0.9])
    return float(p10), float(p90)


def test_every_pair_is_measured_and_its_before_trace_kept():
    assert set(TRUTH) == set(LEVER) == set(NEXT_TODAY)
    for name, w in TRUTH.items():
        assert w["status"] == "ok", name
        assert len(w["before"]["runs_ms"]) >= 5 and len(w["after"]["runs_ms"]) >= 5, name
        assert (PENDING2 / f"{name}-before.json.gz").exists(), name


@pytest.mark.parametrize("name", [
    p if p.id not in KNOWN_MISSES else pytest.param(*p.values, id=p.id, marks=[
        *p.marks, pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[p.id])])
    for p in sweep(sorted(TRUTH), ["gpt2_last_token_scorer_full_logits", "neumf_dense_table_grads"],
                   ids=sorted(TRUTH))])
def test_a_levers_prediction_lands_in_the_measured_spread(name):
    p10, p90 = measured_spread(TRUTH[name])
    pred = whatif.predict(load(PENDING2 / f"{name}-before.json.gz")).lever(LEVER[name]).predicted_ratio
    assert p10 - WIDEN <= pred <= p90 + WIDEN, f"{name}: predicted {pred:.3f}, measured [{p10:.3f}, {p90:.3f}]"


@pytest.mark.parametrize("name", sorted(SLOWER_AFTER_THE_FIX))
def test_a_fix_that_made_the_step_slower_is_said_as_slower_not_as_a_hit(name):
    """The run ratios' median says slower, whatever a cold first run does to the spread; the lever predicted a
    saving. Pinned so the in-spread pass above is never read as the lever being right."""
    w = TRUTH[name]
    assert w["speedup"] < 1 and w["after"]["median_ms"] > w["before"]["median_ms"], name
    assert max(w["before"]["runs_ms"]) > 5 * w["before"]["median_ms"], "the cold run that widens the spread"
    pred = whatif.predict(load(PENDING2 / f"{name}-before.json.gz")).lever(LEVER[name]).predicted_ratio
    assert pred < 1.0, name


@pytest.mark.parametrize("name", sweep(sorted(NEXT_TODAY), ["bart_greedy_host_argmax"], ids=sorted(NEXT_TODAY)))
def test_the_reports_next_on_each_before_trace_names_the_lever_it_names_today(name):
    nx = analyze_file(PENDING2 / f"{name}-before.json.gz").next_experiment
    assert nx.lever is not None and nx.lever.lever == NEXT_TODAY[name], (name, nx.kind, nx.lever)


def table_row(name: str) -> str:
    """docs/validation.md's row for a pair, from the committed trace and the model as it is now."""
    w = TRUTH[name]
    p10, p90 = measured_spread(w)
    pred = whatif.predict(load(PENDING2 / f"{name}-before.json.gz")).lever(LEVER[name]).predicted_ratio
    median = w["after"]["median_ms"] / w["before"]["median_ms"]
    verdict = ("miss" if name in KNOWN_MISSES else
               "slower after the fix: a miss" if name in SLOWER_AFTER_THE_FIX else "in the spread")
    return (f"| `{LEVER[name]}` | {name} | {pred:.2f} | {median:.2f} [{p10:.2f}–{p90:.2f}] | "
            f"{1 / w['speedup_profiled']:.2f} | `{NEXT_TODAY[name]}` | {verdict} |")


@pytest.mark.slow
def test_the_validation_table_is_what_the_traces_and_the_model_say_now():
    header = "| lever | workload | predicted | measured, unprofiled | measured, profiled | report's Next | verdict |"
    page = (Path(__file__).resolve().parent.parent / "docs" / "validation.md").read_text(encoding="utf-8")
    rows = page.split(header)[1].split("\n\n")[0].strip().splitlines()[1:]
    assert rows == [table_row(n) for n in sorted(TRUTH, key=lambda n: LEVER[n])]
