"""The knob a trace's construct names: a Python loop over slices (batch_items' second construct: F.embedding_bag,
nn.LSTM), the same model pass twice a step (batch_passes: classifier-free guidance on torch.cat), a value check read
on the host after every layer (value_checks: `if torch.isnan(h).any()`), each found on a small synthetic trace that
shows it, and not where a look-alike shows something else (a stack of layers, the user's own steps, a loss read with
.item(), a loop of identical calls with nothing between them)."""
from pathlib import Path

import pytest

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import (
    BATCH_ITEMS,
    BATCH_PASSES,
    CUDA_GRAPHS,
    VALUE_CHECKS,
    batch_items,
    batch_passes,
    slice_loops,
    value_checks,
)
from tracetriage.analyzers.whatif.levers.spec import Context

FLOAT = "float"


class Timeline:
    """Ops laid one after another on the host, each launching one short kernel (a launch-bound eager loop)."""

    def __init__(self, gap_ns: int = 25_000, kernel_ns: int = 3_000):
        self.ev: list[dict] = []
        self.t, self.ext, self.gap, self.kernel = 10_000, 1, gap_ns, kernel_ns

    def op(self, name: str, dims: list, launches: bool = True, sync: bool = False) -> None:
        start, ext = self.t, self.ext
        self.ev.append(op(name, start, start + self.gap - 1_000, ext, dims=dims, types=[FLOAT] * len(dims)))
        if launches:
            at = start + self.gap // 2
            self.ev.append(call("cudaLaunchKernel", at, at + 5_000, ext, ext))
            self.ev.append(gpu(f"{name.split('::')[-1]}_kernel", at + 6_000, at + 6_000 + self.kernel, ext))
        if sync:
            at = start + self.gap // 2 + 6_000
            self.ev.append(call("cudaStreamSynchronize", at, at + self.kernel + 2_000, None, ext))
        self.t, self.ext = self.t + self.gap, self.ext + 1

    def step(self, body) -> None:
        """A ProfilerStep# range around what body() lays out."""
        start = self.t
        body()
        self.ev.append(annotation(f"ProfilerStep#{len(self.ev)}", start - 1_000, self.t + 1_000))
        self.t += 5_000

    def trace(self, tmp_path: Path, name: str = "t.json.gz"):
        return load(write(tmp_path / name, document(self.ev)), use_cache=False)


def _bags(tl: Timeline, n: int, *, source: int = 2652, growing: bool = False) -> None:
    for i in range(n):
        tl.op("aten::slice", [[source + (i if growing else 0)]], launches=False)
        tl.op("aten::embedding", [[50000, 64], [5 + i % 7]])
        tl.op("aten::sum", [[5 + i % 7, 64]])


def _context(tr) -> Context:
    return Context(tr, None)


def test_a_python_loop_of_embedding_bags_is_found_and_named_embedding_bag(tmp_path):
    tl = Timeline()
    tl.step(lambda: _bags(tl, 16))
    tr = tl.trace(tmp_path)
    (loop,) = slice_loops.find(_context(tr))
    assert (loop.iterations, loop.family, loop.source_shape) == (16, "embedding", (2652,))
    assert loop.body == ("aten::slice", "aten::embedding", "aten::sum")
    lv = whatif.predict(tr, [BATCH_ITEMS, CUDA_GRAPHS])
    assert lv.lever(BATCH_ITEMS).assumption.iterations == 16
    # priced as the launches cut: the launch lever's own replay
    assert lv.lever(BATCH_ITEMS).predicted_ns == lv.lever(CUDA_GRAPHS).predicted_ns
    assert "F.embedding_bag" in batch_items.change_for(lv.lever(BATCH_ITEMS).assumption)


def test_the_report_names_embedding_bag_and_its_claims_hold(tmp_path):
    tl = Timeline()
    tl.step(lambda: _bags(tl, 40))
    out = serialize.report(analyze_trace(tl.trace(tmp_path)))
    nxt = out["lines"][4]
    assert out["next_experiment"]["whatif_lever"] == BATCH_ITEMS
    assert "F.embedding_bag" in nxt and "a Python loop runs 40 iterations" in nxt
    assert "bigger batch" not in nxt            # each sample of a bigger batch is one more iteration
    assert claims.check(out) == []


def test_an_rnn_cell_stepped_over_time_is_named_nn_lstm(tmp_path):
    tl = Timeline()

    def body():
        for _ in range(12):
            tl.op("aten::select", [[256, 128, 32], [], []], launches=False)
            tl.op("aten::lstm_cell", [[256, 32], [[256, 512], [256, 512]], [2048, 32]])
    tl.step(body)
    tr = tl.trace(tmp_path)
    (loop,) = slice_loops.find(_context(tr))
    assert loop.family == "lstm"
    a = whatif.predict(tr, [BATCH_ITEMS]).lever(BATCH_ITEMS).assumption
    assert "nn.LSTM(" in batch_items.change_for(a) and "whole sequence" in batch_items.change_for(a)


def _layers(tl: Timeline, n: int) -> None:
    for _ in range(n):
        tl.op("aten::linear", [[8, 64], [64, 64]])
        tl.op("aten::relu", [[8, 64]])


@pytest.mark.parametrize("why, lay", [
    # a stack of layers repeats its ops, but no op slices one tensor each time
    ("layers", lambda tl: tl.step(lambda: _layers(tl, 16))),
    # the sliced tensor grows each time (a generation's prefix): not one tensor sliced in a loop
    ("growing source", lambda tl: tl.step(lambda: _bags(tl, 16, growing=True))),
    # a loop of four is a model's heads or branches
    ("too few", lambda tl: tl.step(lambda: _bags(tl, 4))),
    # a softmax written out row by row: a loop over slices, but no op names a fused form (left to the launch levers)
    ("no fused form", lambda tl: tl.step(lambda: [(tl.op("aten::select", [[128, 128], [], []], launches=False),
                                                    tl.op("aten::exp", [[128]]), tl.op("aten::sum", [[128]]),
                                                    tl.op("aten::div", [[128], []])) for _ in range(16)])),
    # one iteration a profiler step: the user's own loop of steps
    ("steps", lambda tl: [tl.step(lambda: _bags(tl, 1)) for _ in range(16)]),
])
def test_no_slice_loop_where_the_trace_shows_something_else(tmp_path, why, lay):
    tl = Timeline()
    lay(tl)
    assert slice_loops.find(_context(tl.trace(tmp_path))) == [], why


def test_a_loop_that_holds_little_of_the_span_is_not_the_lever(tmp_path):
    tl = Timeline()

    def body():
        _bags(tl, 8)
        tl.gap = 2_000_000             # then long ops the loop is a sliver beside
        _layers(tl, 4)
    tl.step(body)
    assert slice_loops.find(_context(tl.trace(tmp_path))) == []


def _block(tl: Timeline, layer: int) -> None:
    for name in ("aten::layer_norm", "aten::addmm", "aten::gelu", "aten::addmm", "aten::add"):
        tl.op(name, [[16, 256, 768]])


def _pass(tl: Timeline) -> None:
    """A 22-op model pass: the patch embedding, four blocks of five ops, the head."""
    tl.op("aten::conv2d", [[4, 4, 32, 32], [768, 4, 2, 2]])
    for layer in range(4):
        _block(tl, layer)
    tl.op("aten::linear", [[4, 256, 768], [32, 768]])


def test_two_identical_passes_an_iteration_are_one_forward_on_the_inputs_stacked(tmp_path):
    tl = Timeline()

    def body():
        for _ in range(3):
            _pass(tl)
            _pass(tl)
            tl.op("aten::sub", [[4, 4, 32, 32], [4, 4, 32, 32]])   # eps_c - eps_u
            tl.op("aten::mul", [[4, 4, 32, 32], []])
    tl.step(body)
    tr = tl.trace(tmp_path)
    groups = batch_passes.find(_context(tr))
    assert [(g.passes, g.ops) for g in groups] == [(2, 22)] * 3
    lv = whatif.predict(tr, [BATCH_PASSES]).lever(BATCH_PASSES)
    assert lv.assumption.count == 3 and lv.predicted_ratio < 0.6   # the second walk of each iteration gone
    out = serialize.report(analyze_trace(tr))
    assert "torch.cat([x, x])" in out["lines"][4] and claims.check(out) == []


@pytest.mark.parametrize("why, lay", [
    # one model called six times in a row with nothing between: a loop of calls (batch_items' items), no group
    ("a loop of calls", lambda tl: tl.step(lambda: [_pass(tl) for _ in range(6)])),
    # one pass an iteration, then the update: nothing runs twice
    ("one pass an iteration", lambda tl: tl.step(lambda: [(_pass(tl), tl.op("aten::mul", [[4, 4], []]))
                                                           for _ in range(4)])),
    # a transformer's identical blocks, twice back to back and again: no block reads the raw input (ids, an image)
    ("layers", lambda tl: tl.step(lambda: [(_block(tl, 0), _block(tl, 1), _block(tl, 2), _block(tl, 3),
                                            _block(tl, 0), _block(tl, 1), _block(tl, 2), _block(tl, 3),
                                            tl.op("aten::mul", [[4, 4], []])) for _ in range(3)])),
    # a sampler without guidance: each profiler step a loop of pass-and-update iterations, each reading the one before
    ("iterations of a step", lambda tl: [tl.step(lambda: [(_pass(tl), tl.op("aten::mul", [[4, 4], []]))
                                                          for _ in range(4)]) for _ in range(3)]),
    # two identical steps of the user's loop, each a pass and its update, a profiler step each
    ("the user's steps", lambda tl: [tl.step(lambda: (_pass(tl), tl.op("aten::mul", [[4, 4], []])))
                                     for _ in range(4)]),
])
def test_no_pass_group_where_nothing_runs_twice_within_an_iteration(tmp_path, why, lay):
    tl = Timeline()
    lay(tl)
    assert batch_passes.find(_context(tl.trace(tmp_path))) == [], why


def _checked_layers(tl: Timeline, n: int, predicate: str = "aten::isnan") -> None:
    for _ in range(n):
        tl.op("aten::addmm", [[768], [4096, 768], [768, 768]])
        tl.op(predicate, [[16, 256, 768]])
        tl.op("aten::any", [[16, 256, 768]])
        tl.op("aten::is_nonzero", [[]], launches=False, sync=True)


def test_a_nan_check_after_every_layer_is_found_and_keeps_cuda_graphs_out_of_the_next(tmp_path):
    tl = Timeline()
    tl.step(lambda: _checked_layers(tl, 6))
    tr = tl.trace(tmp_path)
    checks = value_checks.find(_context(tr))
    assert len(checks) == 6 and {c.predicate for c in checks} == {"aten::isnan"}
    a = whatif.predict(tr, [VALUE_CHECKS]).lever(VALUE_CHECKS).assumption
    assert a.per_step == 6 and value_checks.blocks_graphs(a)
    assert "torch.isinf(h)" in value_checks.change_for(
        whatif.predict(_isinf(tmp_path), [VALUE_CHECKS]).lever(VALUE_CHECKS).assumption)
    out = serialize.report(analyze_trace(tr))
    nxt = out["lines"][4]
    assert "reduce-overhead" not in nxt and "CUDA graphs" not in nxt.split("Would waste")[0]
    assert out["next_experiment"]["whatif_lever"] == VALUE_CHECKS and "isnan" in nxt
    assert claims.check(out) == []


def _isinf(tmp_path):
    tl = Timeline()
    tl.step(lambda: _checked_layers(tl, 3, "aten::isinf"))
    return tl.trace(tmp_path, "inf.json.gz")


@pytest.mark.parametrize("why, lay", [
    # a loss read with .item() every iteration: a sync, but no predicate before it (remove_syncs' case)
    ("loss.item()", lambda tl: tl.step(lambda: [(tl.op("aten::mse_loss", [[8, 1], [8, 1]]),
                                                 tl.op("aten::item", [[]], launches=False, sync=True))
                                                for _ in range(6)])),
    # one check at the end of the step is a guard, not a check per layer
    ("one check", lambda tl: tl.step(lambda: _checked_layers(tl, 1))),
])
def test_no_value_check_where_the_read_is_no_check_per_layer(tmp_path, why, lay):
    tl = Timeline()
    lay(tl)
    assert value_checks.find(_context(tl.trace(tmp_path))) == [], why
