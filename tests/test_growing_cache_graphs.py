"""CUDA graphs for a decode loop whose KV cache grows a token each step: a graph replays fixed shapes, so
generate()'s default DynamicCache (the attention reads a key one token longer every step) is no graph as written.
fresh12 bart_generate_no_repeat_ngram read "cut launches: capture the step in CUDA graphs
(torch.compile(mode='reduce-overhead'), or torch.cuda.graph by hand) ... predicted −81%" as if a wrapper applied;
the Next says what it takes (a static cache, the decode step compiled) and that the saving is that restructure's
bound. A cache of one fixed length (a static cache) keeps the plain advice."""
import kineto_factory as kf
from kineto_factory import call, document, gpu, op
from other_peoples_traces import US, with_device
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.whatif.levers.growing_cache import find

ATTN = "aten::_scaled_dot_product_efficient_attention"


def _decode(lengths: list[int]) -> dict:
    """One decode step per key length: 40 launch-bound ops (a 3 µs kernel each, 25 µs of dispatch between), the
    20th an attention op whose query holds one token and whose key `length` ([2, 4, length, 8])."""
    ev, t, n = [], 100 * US, 0
    for length in lengths:
        for i in range(40):
            name, dims = (ATTN, [[2, 4, 1, 8], [2, 4, length, 8], [2, 4, length, 8]]) if i == 20 else \
                ("aten::add", [[2, 8], [2, 8]])
            ev += [op(name, t, t + 20 * US, 1 + n, dims=dims, types=["c10::BFloat16"] * len(dims)),
                   call("cudaLaunchKernel", t + 12 * US, t + 18 * US, 5000 + n, 1 + n),
                   gpu(f"void k{i}<float>()", t + 22 * US, t + 25 * US, 5000 + n)]
            t, n = t + 30 * US, n + 1
    return with_device(document(ev), "NVIDIA H100 80GB HBM3")


def _next(tmp_path, lengths):
    out = serialize.report(analyze_file(kf.write(tmp_path / "t.json", _decode(lengths))))
    return out, out["lines"][4]


def test_a_decode_whose_cache_grows_each_step_is_told_graphs_need_a_static_cache(tmp_path):
    out, nx = _next(tmp_path, list(range(1, 13)))
    assert nx.startswith("Next: cut launches, which here takes a restructure"), nx
    assert "keys 1 to 12 tokens long" in nx and 'cache_implementation="static"' in nx
    assert "capture the step in CUDA graphs" not in nx
    assert claims.check(out) == []


def test_a_cache_of_one_length_keeps_the_plain_graph_advice(tmp_path):
    _, nx = _next(tmp_path, [64] * 12)
    assert "capture the step in CUDA graphs" in nx and "static" not in nx


def test_lengths_that_skip_or_are_too_few_are_no_growing_cache(tmp_path):
    from tracetriage.analyzers.loading.load import load
    assert find(load(kf.write(tmp_path / "a.json", _decode([8, 16, 24, 32, 40])))) is None
    assert find(load(kf.write(tmp_path / "b.json", _decode([5, 6, 7])))) is None
    g = find(load(kf.write(tmp_path / "c.json", _decode([5, 6, 7, 8, 9]))))
    assert g is not None and (g.first, g.last, g.calls) == (5, 9, 5)


def test_each_distinct_shape_is_decoded_once_and_counted_for_every_call_that_has_it(tmp_path, monkeypatch):
    # 3 passes over the same 5 lengths: 15 attention calls of 5 shapes (the x5 benchmark trace: 5,940 calls of 6)
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.model.trace import Trace
    trace = load(kf.write(tmp_path / "t.json", _decode([5, 6, 7, 8, 9] * 3)))
    decoded = []
    shapes = Trace.shapes
    monkeypatch.setattr(Trace, "shapes", lambda self, row: decoded.append(row) or shapes(self, row))
    g = find(trace)
    assert g is not None and (g.first, g.last, g.calls) == (5, 9, 15)
    assert len(decoded) == 5
