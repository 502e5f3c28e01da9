"""capture/realworld_knobs3.py: the sdpa, cudnn_benchmark and inference_mode pairs, checked on the CPU where
they can be (the variant's trace holds the change it names), and the runner's process-a-variant path."""
import gzip
import json

import pytest

torch = pytest.importorskip("torch")

from tracetriage.analyzers.whatif.levers import (  # noqa: E402
    AWAITING_PAIR,
    CUDNN_BENCHMARK,
    INFERENCE_MODE,
    LEVERS,
    SDPA,
)
from tracetriage.capture.fixes import BEFORE, profile_window  # noqa: E402
from tracetriage.capture.realworld import REALWORLD, run  # noqa: E402
from tracetriage.capture.realworld_knobs3 import KNOB3_SCENARIOS  # noqa: E402


def _op_names(path) -> set[str]:
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return {e["name"] for e in events if e.get("cat") == "cpu_op"}


def _profiled_ops(kind: str, fix: str, tmp_path) -> set[str]:
    wl = REALWORLD[kind](device="cpu", fix=fix, iters=1)
    wl.setup()
    out = tmp_path / f"{kind}-{fix}.json.gz"
    profile_window(wl, out)
    return _op_names(out)


def test_a_knob_awaiting_its_pair_is_no_lever_yet_and_every_new_workload_names_a_lever():
    assert not set(AWAITING_PAIR) & set(LEVERS)
    assert {lv for c in KNOB3_SCENARIOS for lv in c.levers} == {SDPA, CUDNN_BENCHMARK, INFERENCE_MODE} <= set(LEVERS)


def test_a_workload_naming_neither_a_lever_nor_an_awaited_knob_is_refused():
    cls = type("Bogus", (REALWORLD["sdpa_vit_infer"],), {"levers": ("flash_everything",), "kind": "bogus"})
    with pytest.raises(ValueError, match="flash_everything"):
        cls(device="cpu")


def test_each_knob_has_three_workloads_in_both_halves():
    from tools.knob_check import half

    for knob in (SDPA, CUDNN_BENCHMARK, INFERENCE_MODE):
        kinds = [c.kind for c in KNOB3_SCENARIOS if knob in c.levers]
        assert len(kinds) == 3
        assert {half(f"{k}--before.json.gz") for k in kinds} == {"dev", "test"}


@pytest.mark.parametrize("kind", ["sdpa_gpt_train", "sdpa_vit_infer"])
def test_the_sdpa_variant_runs_the_fused_op_and_the_before_the_softmax_by_hand(kind, tmp_path):
    before, after = _profiled_ops(kind, BEFORE, tmp_path), _profiled_ops(kind, "sdpa", tmp_path)
    assert "aten::scaled_dot_product_attention" in after and "aten::scaled_dot_product_attention" not in before
    assert "aten::softmax" in before


def test_the_encoder_runs_its_fast_path_only_under_inference_mode(tmp_path):
    before = _profiled_ops("inference_mode_encoder", BEFORE, tmp_path)
    after = _profiled_ops("inference_mode_encoder", "inference_mode", tmp_path)
    assert "aten::_transformer_encoder_layer_fwd" in after and "aten::_transformer_encoder_layer_fwd" not in before


@pytest.mark.slow   # captures two workloads on the CPU in child processes (15 s): the slow step's kind of test
def test_a_process_a_variant_scenario_lands_in_measured_json_like_the_interleaved_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(REALWORLD["sdpa_vit_infer"], "own_process", True)   # the children need not know
    assert run(tmp_path, device="cpu", reps=2, only=["sdpa_vit_infer", "inference_mode_encoder"], smoke=True) == 0
    measured = json.loads((tmp_path / "measured.json").read_text())
    assert not measured["errors"]
    own = measured["scenarios"]["sdpa_vit_infer"]
    assert len(own["span_us"][BEFORE]["runs"]) == len(own["wall_ms"]["sdpa"]["runs"]) == 2
    assert set(own["ratio"]) == set(own["wall_ratio"]) == {"sdpa"}
    assert "aten::scaled_dot_product_attention" in _op_names(tmp_path / "sdpa_vit_infer--sdpa.json.gz")
    assert own["variants"]["sdpa"]["facts"]["cpu_ops"] > 0
    assert "inference_mode_encoder" in measured["scenarios"]                 # the next scenario merged after it
    assert not list(tmp_path.glob("*.child.json"))
