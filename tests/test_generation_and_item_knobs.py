"""kv_cache and batch_items on the fresh5 pairs (traces/fresh5, an H100): a generation that re-runs its prefix for
every token (HF generate, use_cache=False) and a detector called image by image; each found on its before trace
with its price, and not on its after trace, nor where a cache or a batch is already there (the GPT decode traces,
a transformer's layers at batch 1)."""
from pathlib import Path

import pytest

from kineto_factory import document, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import USER_ANNOTATION
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import BATCH_ITEMS, CUDA_GRAPHS, KV_CACHE, batch_items, kv_cache
from tracetriage.analyzers.whatif.levers.spec import Context

TRACES = Path(__file__).resolve().parent.parent / "traces"
FRESH5 = TRACES / "fresh5"
MISTRAL = "mistral_generate_no_cache"
RCNN = "fasterrcnn_per_image"
# Decode with a KV cache ([B, 1, H] a step after the prefill) and transformer forwards at batch 1, whose layers repeat.
CACHED = sorted(str(p.relative_to(TRACES)) for p in (*TRACES.glob("gpt-*.json.gz"),
                                                   *(TRACES / "generate").glob("*.json.gz")))


def _context(path: Path) -> Context:
    return Context(load(path), None)           # the recognisers read ops only: no graph needed


def test_a_generation_without_a_cache_is_twenty_forwards_one_token_longer_each():
    (chain,) = kv_cache.find(_context(FRESH5 / f"{MISTRAL}-before.json.gz"))
    assert chain.batch == 8 and len(chain.forwards) == 20
    assert [f.tokens for f in chain.forwards] == list(range(1024, 1044))
    assert all(a.end <= b.start for a, b in zip(chain.forwards, chain.forwards[1:]))


def test_the_cache_turned_on_leaves_no_forward_to_shorten():
    """The after trace's decode forwards take [8, 1, 2048]: one token each, nothing re-run."""
    assert kv_cache.find(_context(FRESH5 / f"{MISTRAL}-after.json.gz")) == []


@pytest.mark.parametrize("name", CACHED)
def test_decode_with_a_kv_cache_is_no_generation_without_one(name):
    assert kv_cache.find(_context(TRACES / name)) == []


def test_kv_cache_prices_the_re_run_forwards_as_one_token_each_and_keeps_the_host():
    """The 19 re-run forwards' kernels fall to a tenth or less; the span falls only to the host's own pace: this
    trace's host dispatches a forward in ~26 ms beside ~27 ms of GPU work (measured: 0.775 profiled, 0.635
    unprofiled on the H100, the after trace's host ~1.5x faster per op on the same prefill forward)."""
    lv = whatif.predict(load(FRESH5 / f"{MISTRAL}-before.json.gz"), [KV_CACHE]).lever(KV_CACHE)
    a = lv.assumption
    assert a.count == 19 and a.forwards == 20 and (a.first_tokens, a.last_tokens) == (1024, 1043)
    assert a.priced_ns < a.kernel_ns / 10 and a.kernel_ns > 450e6
    assert 0.96 <= lv.predicted_ratio <= 0.99


def _forwards(tokens: list[int], batch: int = 2, hidden: int = 64, layers: int = 2) -> list[dict]:
    """A forward per T: `layers` x (q, k, v, o, up, down) linears on [batch, T, hidden], then an LM head on one
    token."""
    ev, t, ext = [], 0, 1
    weights = [[hidden, hidden]] * 4 + [[4 * hidden, hidden], [hidden, 4 * hidden]]
    for n in tokens:
        for _ in range(layers):
            for w in weights:
                x = [batch, n, w[1]]
                ev.append(op("aten::linear", t, t + 500, ext, dims=[x, w, []], types=["float", "float", ""]))
                t, ext = t + 1_000, ext + 1
        ev.append(op("aten::linear", t, t + 500, ext, dims=[[batch, 1, hidden], [100, hidden], []],
                     types=["float", "float", ""]))
        t, ext = t + 5_000, ext + 1
    return ev


@pytest.mark.parametrize("tokens, found", [
    ([32, 33, 34], True),                  # the prefill and two forwards one token longer each
    ([32, 33], False),                     # one re-run is no loop
    ([32, 34, 36], False),                 # two tokens a forward: not one generated token at a time
    ([32, 32, 32], False),                 # the same batch again (a benchmark loop)
    ([32, 1, 1, 1], False),                # prefill, then decode with a cache
])
def test_only_forwards_one_token_longer_each_are_a_generation_without_a_cache(tmp_path, tokens, found):
    c = Context(load(write(tmp_path / "gen.json.gz", document(_forwards(tokens))), use_cache=False), None)
    assert bool(kv_cache.find(c)) is found


def test_a_detector_called_image_by_image_is_eight_calls_of_one_image():
    (loop,) = batch_items.find(_context(FRESH5 / f"{RCNN}-before.json.gz"))
    assert loop.items == 8 and loop.ops == 80 and loop.input_shape == (1, 3, 768, 1344)


def test_the_batched_call_is_no_item_loop():
    assert batch_items.find(_context(FRESH5 / f"{RCNN}-after.json.gz")) == []


@pytest.mark.parametrize("name", ["gpt-compile.json.gz", "gpt-graphs.json.gz",
                                  "generate/generate-llama-b1-static.json.gz",
                                  "realworld/hf_llama_generate--static_cache.json.gz"])
def test_a_transformers_layers_at_batch_1_are_no_items(name):
    """Their layers repeat the same linears on [1, T, H], but each starts from the layer before's output: no call
    of the model starts there (no embedding of an item's tokens between them)."""
    assert batch_items.find(_context(TRACES / name)) == []


def test_batch_items_is_priced_as_the_launches_cut_and_named_as_the_next():
    """Measured on the H100: 0.58 of the span profiled, 0.68 unprofiled; the launch lever's price is 0.54 (0.70)."""
    tr = load(FRESH5 / f"{RCNN}-before.json.gz")
    w = whatif.predict(tr, [BATCH_ITEMS, CUDA_GRAPHS])
    assert w.lever(BATCH_ITEMS).predicted_ns == w.lever(CUDA_GRAPHS).predicted_ns
    assert 0.50 <= w.lever(BATCH_ITEMS).predicted_ratio <= 0.60
    from tracetriage.analyzers.output import claims, serialize
    from tracetriage.analyzers.triage.report import analyze_trace

    out = serialize.report(analyze_trace(tr))
    assert out["next_experiment"]["whatif_lever"] == BATCH_ITEMS
    assert "model(frames)" in out["lines"][4] and "8 times in a row on one item each" in out["lines"][4]
    assert claims.check(out) == []
    # priced as the launches cut, it keeps every kernel: a Next below the GPU's own work is caught
    floor = out["kernel_busy_us"] / out["next_experiment"]["baseline_us"]
    out["next_experiment"]["predicted_ratio"] = 0.9 * floor
    assert any("changes no kernel but predicts" in p for p in claims.check(out))


@pytest.mark.parametrize("name", ["realworld/cnn_b1--before.json.gz",
                                  "fixes/knobs3/inference_mode_resnet--before.json.gz"])
def test_calls_a_named_range_marks_one_by_one_are_a_loops_iterations_not_a_batch_at_hand(name):
    """A ResNet at batch 1 called 10 (8) times on the same input, each call inside the user's "iteration" range: the
    same weighted ops on [1, 3, 224, 224], but the user marks them as a loop's iterations (a latency benchmark)."""
    c = _context(TRACES / name)
    assert batch_items.find(c) == []
    names = [c.trace.name_of(int(r)) for r in range(len(c.trace.ev.start)) if c.trace.ev.cat[r] == USER_ANNOTATION]
    assert names.count("iteration") >= 8       # the ranges are what tells them apart: the ops are one item's


@pytest.mark.parametrize("name, lever", [(MISTRAL, KV_CACHE), (RCNN, BATCH_ITEMS)])
def test_diff_names_the_knob_the_fresh5_change_applied(name, lever):
    """The batched detector's fp32 GEMM kernels changed too, which autocast's recogniser reads as its own: one call on
    the batch removed the launch overhead as well (-59.7 ms beside -18.0 ms of kernels), and is the change."""
    from tracetriage.analyzers.triage.diff import applied_lever
    from tracetriage.analyzers.triage.report import analyze_trace

    before, after = (analyze_trace(load(FRESH5 / f"{name}-{side}.json.gz")) for side in ("before", "after"))
    assert applied_lever(before, after)[0] == lever
