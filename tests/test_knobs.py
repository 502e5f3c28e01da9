"""The knobs: each one-line change's prediction from its before trace lands in the spread measured on the GPU
(traces/fixes/knobs and knobs3 on an H200, traces/fixes/loader, knobs4 and knobs5 on an H100: two or three
workloads a knob, 5 profiled and 5 unprofiled runs each), on the dev half the
models were fitted on and on the test half they were not (the first byte of sha256 of the before trace's name: even
is dev)."""
import hashlib
import json
from pathlib import Path

import pytest

from sweep import sweep
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import LEVERS

KNOBS = Path(__file__).resolve().parent.parent / "traces" / "fixes" / "knobs"
FOLDERS = tuple(f for f in (KNOBS, KNOBS.parent / "knobs3", KNOBS.parent / "loader", KNOBS.parent / "knobs4",
                                KNOBS.parent / "knobs5")
                if (f / "measured.json").exists())
SCENARIOS = {f: json.loads((f / "measured.json").read_text())["scenarios"] for f in FOLDERS}
FOLDER_OF = {kind: f for f in FOLDERS for kind in SCENARIOS[f]}
MEASURED = {kind: sc for f in FOLDERS for kind, sc in SCENARIOS[f].items()}
WIDEN = 0.05      # the tolerance around the measured spread
# Test-half pairs the model misses, said in the closing note rather than fitted away.
KNOWN_MISSES: dict[tuple[str, str], str] = {
    ("inference_mode_encoder", "inference_mode"):
        "nn.TransformerEncoderLayer takes its fused fast path once grad is off (aten::_transformer_encoder_layer_fwd: "
        "468 -> 324 kernels, 0.48 measured); the lever prices autograd's bookkeeping only (0.72, a floor)",
    ("channels_last_r18_train", "channels_last"):
        "the NCHW batch-norm twins' shares (fitted on fresh4 resnet50_channels_last, H100) put it at 0.759, 0.002 "
        "under p10 - 0.05; its own traces' kernels fell 35.5 -> 17.1 ms (0.48) but the span, host-bound and noisy "
        "(runs 55-81 ms after, 60-71 ms before), measured 0.919 [0.811, 1.180]; 0.783 before the twins",
    # traces/fixes/knobs4 (an H100): the first check of three levers written from one development pair each, kept as
    # measured (2 of 9 pairs in the spread then, 3 since no_checkpointing prices the recomputed MLP): not fitted away
    ("float64_heat_stencil", "drop_float64"):
        "a memory-bound stencil halves its bytes, yet measured 0.62, not the 0.51 predicted",
    ("convert_images_resnet", "convert_on_gpu"):
        "0.62 predicted, 0.36 measured: the host conversion (8 ms + 2.2 ms), the wide tensor's release (5.2 ms) and "
        "the 4x smaller copy (18.4 -> 4.6 ms) an iteration are priced; the replay still keeps ~12 ms an iteration the "
        "fix removed",
    ("convert_half_features_mlp", "convert_on_gpu"):
        "0.65 predicted, 0.51 measured: under-priced as convert_images_resnet",
    ("checkpoint_encoder_train", "no_checkpointing"):
        "0.82 predicted, 0.54 measured [0.35-0.72]: the recomputed forwards' GPU work is under-counted",
}


def half(kind: str) -> str:
    return "dev" if hashlib.sha256(f"{kind}--before.json.gz".encode()).digest()[0] % 2 == 0 else "test"


PAIRS = [pytest.param(kind, lever, id=f"{half(kind)}-{kind}-{lever}",
                      marks=[pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[(kind, lever)])]
                      if (kind, lever) in KNOWN_MISSES else [])
         for kind, sc in MEASURED.items() for lever in sc["ratio"]]


@pytest.mark.parametrize("kind,lever", PAIRS)
def test_a_knobs_prediction_lands_in_the_measured_spread(kind, lever):
    r = MEASURED[kind]["ratio"][lever]
    pred = whatif.predict(load(FOLDER_OF[kind] / f"{kind}--before.json.gz")).lever(lever).predicted_ratio
    if not LEVERS[lever].knob.priced:       # a knob a trace cannot price says no saving, whatever it measured
        assert pred == 1.0, f"{kind} {lever}: an unpriced knob predicted {pred:.3f}"
        return
    assert r["p10"] - WIDEN <= pred <= r["p90"] + WIDEN, \
        f"{kind} {lever}: predicted {pred:.3f}, measured {r['median']:.3f} [{r['p10']:.3f}, {r['p90']:.3f}]"


def test_every_knob_is_measured_on_both_halves():
    from tracetriage.analyzers.whatif.levers import CAPTURE_PENDING

    knobs = [name for name, spec in LEVERS.items() if spec.knob is not None]
    assert len(knobs) >= 5
    for k in knobs:
        if k in CAPTURE_PENDING:
            pairs = sum(k in sc["ratio"] for sc in MEASURED.values())
            assert pairs < 3, f"{k}'s three pairs are in: leave CAPTURE_PENDING"
            continue
        halves = {half(kind) for kind, sc in MEASURED.items() if k in sc["ratio"]}
        assert halves == {"dev", "test"}, k


# The fast suite's share of the per-pair sweeps: each lever's first measured workload (a lever's recogniser and words
# are one code path whatever the workload); the slow step runs the other pairs.
ONE_PER_LEVER = list({lv: k for k, sc in sorted(MEASURED.items(), reverse=True) for lv in sc["ratio"]}.values())
# Pairs whose after trace is kept: every pair's but traces/fixes/knobs5's, which keeps its ONE_PER_LEVER pairs' only
# (the repository must fit the GPU machine's 64 MiB working-tree limit; the predictions need the before traces).
WITH_AFTER = [(k, lv) for k, sc in MEASURED.items() for lv in sc["ratio"]
              if (FOLDER_OF[k] / f"{k}--{lv}.json.gz").exists()]


@pytest.mark.parametrize("kind", sweep(sorted({k for k, _ in WITH_AFTER}), ONE_PER_LEVER))
def test_a_knob_finds_nothing_to_do_on_its_own_after_trace(kind):
    """The after trace has the knob turned: its evidence is gone, so the lever acts on nothing there. DataLoader
    workers are the one knob whose after trace can show more of the same wanted: the workers on
    (_MultiProcessingDataLoaderIter) and the loop still waiting inside their __next__; the lever then prices
    workers that keep up, and never more than the waits that trace shows."""
    from tracetriage.analyzers.whatif.levers import DATALOADER_WORKERS

    for lever in MEASURED[kind]["ratio"]:
        w = whatif.predict(load(FOLDER_OF[kind] / f"{kind}--{lever}.json.gz"))
        after = w.lever(lever)
        if lever == DATALOADER_WORKERS:
            assert after.assumption.workers_on and after.assumption.batch_host_ns == 0, (kind, after.assumption)
            assert after.saving_ns <= after.assumption.waited_ns, (kind, after.assumption)
            continue
        assert after.assumption.count == 0 or after.saving_ns <= 0.02 * w.baseline_ns, \
            (kind, lever, after.assumption)


# --- device- and dtype-aware words ----------------------------------------------------------------------

@pytest.mark.parametrize("device,dtype,said", [
    ("NVIDIA A100-SXM4-80GB", "bf16", []),               # no fp8 below Hopper/Ada
    ("NVIDIA A100-SXM4-80GB", "fp32", ["TF32", "bf16"]),
    ("Tesla V100-SXM2-32GB", "fp32", ["fp16"]),           # no TF32 or bf16 below Ampere
    ("Tesla T4", "fp32", ["fp16"]),
    ("NVIDIA H200", "bf16", ["fp8"]),
    ("NVIDIA L4", "bf16", ["fp8"]),                        # Ada has fp8
])
def test_cheaper_arithmetic_names_only_precisions_the_device_runs_faster(device, dtype, said):
    from tracetriage.analyzers.analyses.peaks import datasheet
    from tracetriage.analyzers.voice.common import cheaper_arithmetic, cheaper_precisions

    pk = datasheet(device)
    assert cheaper_precisions(pk, dtype) == said
    words = cheaper_arithmetic(pk, dtype, headroom=True)
    assert ("fp8" in words) == ("fp8" in said) and ("TF32" in words) == ("TF32" in said)


def test_no_tf32_or_bf16_knob_on_a_device_without_those_tensor_cores():
    from tracetriage.analyzers.analyses.peaks import datasheet
    from tracetriage.analyzers.whatif.levers.knob import has_fast

    assert not has_fast(datasheet("Tesla V100-SXM2-32GB"), "tf32")
    assert not has_fast(datasheet("Tesla T4"), "bf16")
    assert not has_fast(datasheet("NVIDIA A100-SXM4-80GB"), "fp8")
    assert has_fast(datasheet("NVIDIA A100-SXM4-80GB"), "tf32") and has_fast(datasheet("NVIDIA H200"), "fp8")


# --- the catalogue ---------------------------------------------------------------------------------------------

def test_docs_knobs_md_is_the_catalogue():
    from tools.knobs_table import table

    assert (Path(__file__).resolve().parent.parent / "docs" / "knobs.md").read_text() == table()


def test_every_catalogue_row_has_a_lever_or_says_why_not_and_every_knob_is_in_it():
    from tracetriage.analyzers.whatif.levers.catalogue import CATALOGUE

    for e in CATALOGUE:
        assert (e.lever in LEVERS) if e.lever else e.unseen, e.knob
    listed = {e.lever for e in CATALOGUE}
    assert {name for name, spec in LEVERS.items() if spec.knob is not None} <= listed
    assert {e.guide for e in CATALOGUE} >= {"Performance Tuning Guide", "CUDA semantics",
                                             "torch.compile troubleshooting / performance",
                                             "torch.utils.data (DataLoader)"}


def test_every_knob_spec_says_its_line_evidence_devices_model_and_guide():
    for name, spec in LEVERS.items():
        k = spec.knob
        if k is None:
            continue
        assert spec.effort == 1 and spec.experiment is not None, name
        assert all(len(x) > 20 for x in (k.change, k.evidence, k.applies, k.model)) and k.guide, name


# --- diff names the knob ---------------------------------------------------------------------------------------

# Pairs whose diff cannot name the knob, as measured (traces/fixes/knobs5, an H100): the lever finds nothing in the
# before trace, so the diff has no prediction to hold the change against.
DIFF_UNNAMED = {
    ("validate_beta_policy", "validate_args"):
        "the checks off changed nothing the trace shows (2,616 kernels both; 1.05 [0.97-1.14] measured), and the "
        "lever finds no validation to drop (1.00 predicted)",
}



@pytest.mark.parametrize("kind,lever", sweep(WITH_AFTER, [(k, lv) for k, lv in WITH_AFTER if k in ONE_PER_LEVER]))
def test_diff_names_the_knob_the_change_turned(kind, lever, capsys, request):
    from tracetriage.cli import main

    if (kind, lever) in DIFF_UNNAMED:
        request.applymarker(pytest.mark.xfail(strict=True, reason=DIFF_UNNAMED[(kind, lever)]))

    assert main(["diff", str(FOLDER_OF[kind] / f"{kind}--before.json.gz"),
                 str(FOLDER_OF[kind] / f"{kind}--{lever}.json.gz"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["prediction"]["lever"] == lever
    assert LEVERS[lever].applied_as in " ".join(out["lines"])
    said = next(x for x in out["lines"] if x.startswith("Predicted: "))
    # a knob a trace cannot price is never said to have had a prediction (no made-up 1.00 to compare with)
    assert ("predicted" in said.split(")", 1)[-1]) == LEVERS[lever].knob.priced, said


# --- the Next: ranked by what is in hand ------------------------------------------------------------------------

def _report(kind: str):
    from tracetriage.analyzers.triage.report import analyze_file
    from tracetriage.analyzers.voice.report import five_lines

    a = analyze_file(FOLDER_OF[kind] / f"{kind}--before.json.gz")
    return a, five_lines(a)[4]


def test_the_next_turns_the_knob_in_hand_with_its_line_and_prediction():
    from tracetriage.analyzers.model.verdicts import Experiment

    a, line = _report("tf32_gemm")
    assert a.next_experiment.kind is Experiment.TURN_KNOB and a.next_experiment.lever.lever == "allow_tf32"
    assert "torch.backends.cuda.matmul.allow_tf32 = True" in line and "predicted −86%" in line
    assert "TF32" in line and "fp8" not in line


def test_a_knob_goes_before_a_rewrite_and_the_rewrite_follows_as_then():
    a, line = _report("device_randn")
    assert a.next_experiment.lever.lever == "tensors_on_device"
    nx = a.next_experiment
    assert nx.then is None or LEVERS[nx.then.lever].effort == 3
    assert 'device="cuda"' in line


def test_beside_a_rewrite_that_saves_far_more_the_knob_is_the_line_to_turn_first():
    a, line = _report("channels_last_resnet50")
    nx = a.next_experiment
    assert LEVERS[nx.lever.lever].effort == 3 and nx.knob_beside.lever == "channels_last"
    assert "a one-line knob is in hand first: model = model.to(memory_format=torch.channels_last)" in line


@pytest.mark.parametrize("kind", sweep(sorted(MEASURED), ONE_PER_LEVER))
def test_a_knob_is_never_the_weeks_waste(kind):
    a, _ = _report(kind)
    w = a.next_experiment.waste
    assert w is None or LEVERS[w.lever].knob is None


def test_autocast_that_would_slow_a_host_bound_step_is_not_the_next():
    a, _ = _report("autocast_resnet_train")
    assert a.next_experiment.lever is None or a.next_experiment.lever.lever != "autocast_bf16"


def _host_made_copies(tmp_path, size: int) -> Path:
    """Four steps of `x = torch.zeros(size); x.to("cuda"); y = x @ w` in a synthetic trace, each copy moving 4 MB."""
    import kineto_factory as kf

    events, corr, t = [], 100, 0
    for step in range(4):
        events.append(kf.op("aten::zeros", t, t + 50_000, dims=[[], [], [], [], []],
                            types=["ScalarList", "", "", "", "Scalar"],
                            **{"Concrete Inputs": [f"[{size}]", "", "", "", "False"]}))
        ext = 10 + step
        events += [kf.op("aten::to", t + 60_000, t + 400_000, ext),
                   kf.op("aten::copy_", t + 70_000, t + 390_000, ext),
                   kf.call("cudaMemcpyAsync", t + 80_000, t + 380_000, corr, ext),
                   kf.gpu("Memcpy HtoD (Pageable -> Device)", t + 100_000, t + 370_000, corr, cat="gpu_memcpy",
                          bytes=4 * 1_048_576)]
        events += [kf.op("aten::mm", t + 410_000, t + 430_000, ext + 100),
                   kf.call("cudaLaunchKernel", t + 412_000, t + 420_000, corr + 1, ext + 100),
                   kf.gpu("ampere_sgemm_128x64_nn", t + 425_000, t + 900_000, corr + 1)]
        corr += 2
        t += 1_000_000
    return kf.write(tmp_path / f"zeros{size}.json", kf.document(events))


def test_a_factory_counts_only_where_its_size_makes_the_copys_bytes(tmp_path):
    # a torch.zeros made for something else beside a data batch's copy is not what the copy moves (kineto's public
    # num_workers_4 ResNet trace was told to make its DataLoader batches with torch.randn on the device)
    from tracetriage.analyzers.whatif.levers.tensors_on_device import factory_numel

    made = whatif.predict(load(_host_made_copies(tmp_path, 1_048_576), use_cache=False), levers=["tensors_on_device"])
    other = whatif.predict(load(_host_made_copies(tmp_path, 4), use_cache=False), levers=["tensors_on_device"])
    assert made.lever("tensors_on_device").assumption.count == 4          # 1,048,576 fp32 zeros: the 4 MB copied
    assert other.lever("tensors_on_device").assumption.count == 0         # 4 zeros: not what a 4 MB copy moves
    t = load(KNOBS / "device_randn--before.json.gz")
    randn = next(i for i in range(len(t.ev.name)) if t.name_of(i) == "aten::randn")
    assert factory_numel(t, randn) == 2048 * 2048


def test_a_knobs_evidence_op_is_the_line_the_next_names_before_the_top_hotspots():
    """sdpa's line is the hand-written softmax's, wherever its time ranks (Knob.ops), on a trace with stacks."""
    import os

    from tracetriage.analyzers.model.verdicts import Experiment
    from tracetriage.analyzers.triage import sources
    from tracetriage.analyzers.triage.report import analyze_file

    root = Path(__file__).resolve().parent.parent
    cwd = os.getcwd()
    os.chdir(root)
    try:
        a = analyze_file(root / "traces" / "script-user-train-stacks.json.gz")
    finally:
        os.chdir(cwd)
    src, hot = a.source_lines, a.hotspots
    named = [h.name for h in hot if src.hotspots.get(h.name)]
    top, other = src.hotspots[named[0]][0], next(src.hotspots[n][0] for n in named[1:]
                                                if src.hotspots[n][0] != src.hotspots[named[0]][0])
    assert sources.next_line(Experiment.TURN_KNOB, None, src, hot) == top
    op = next(n for n in named if src.hotspots[n][0] == other)
    assert sources.next_line(Experiment.TURN_KNOB, None, src, hot, ops=("aten::not_here", op)) == other
    assert {"aten::_softmax", "aten::softmax"} <= sources.KNOB_OPS


def test_the_set_to_none_line_claims_no_default_the_trace_contradicts():
    """The knob is named only where zero_grad still fills the gradients: its words must not say set_to_none=True is
    the default there (it is from torch 2.0 on, and this trace shows it off)."""
    a, line = _report("set_to_none_wide")
    change = LEVERS["grads_to_none"].knob.change
    assert "default" not in change and "zero_grad(set_to_none=True)" in line


def test_autocast_prices_the_fp32_fused_attention_kernels_sdpa_swaps_for_bf16_ones():
    """SDPA on fp32 runs the memory-efficient fmha kernels in float (products on CUDA cores); under autocast it picks
    a bf16 kernel (cuDNN, flash) on tensor cores. fresh3's ViT spent 15% of its GPU time there, kept at fp32 time:
    0.46 of the step predicted against 0.367 measured. The fp32 GEMMs' rule does not read fmha's `_f32_` names."""
    from tracetriage.analyzers.whatif.levers.knob import is_fp32_attention_kernel, matrix_precision

    fp32 = ("fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::"
            "Sm80, float, true, false, false, 64, 64, 64, false>::Params)")
    bf16 = ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
            "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)")
    assert matrix_precision(fp32) is None and is_fp32_attention_kernel(fp32)
    assert not is_fp32_attention_kernel(bf16)
    assert not is_fp32_attention_kernel("void at::native::(anonymous namespace)::softmax_warp_forward<float, float, "
                                        "float, 10, false, false>(float*, float const*, int, int, int)")
    t = load(KNOBS / "autocast_gpt2_train--before.json.gz")      # 12 layers' SDPA forward and backward in fp32
    a = whatif.predict(t, ["autocast_bf16"]).levers[0].assumption
    assert a.count == 153 + 24
